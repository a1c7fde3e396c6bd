"""Float `vector_reduce_<op>` as Halide 21's CodeGen_LLVM::codegen_vector_reduce emits it.

Float reductions come from `.atomic().vectorize(r)` updates (`f() += in(r)`: Halide writes
`f[0] = vector_reduce_add(in[ramp]) + f[0]`) and from rfactor. FPIR has no floats, so they bypass
selection like every float expression (floats.py) and are emitted the way Halide's code generator
writes them, so that LLVM turns them into the same instructions:

* a reduction folded with its operand: `vector_reduce_op(v) op x` (either side, matching op) is the
  reduction with initial value x (try_to_fold_vector_reduce);
* to one lane, add / mul / min / max over 2..16 lanes (a power of two; not float64 on arm64, where
  Halide's codegen_vector_reduce does not use LLVM's reductions and takes the steps below):
  `llvm.vector.reduce.{fadd,fmul,fmin,fmax}` carrying Halide's fast-math flags (none under
  strict_float: an ordered reduction); fadd / fmul take the initial value (0 / 1 without one),
  fmin / fmax take none and the initial value is combined after, `min(init, r)` as Halide's Min;
* to one lane over k > 1 native vectors (x86-avx2 256 bits, arm64 128, hvx128 1024): the k
  native slices combined in order with the op, then reduced as above with the initial value;
* otherwise, an even factor f > 2 reduces to half the input lanes first and then to the output;
  any other factor combines the f strided slices in order, starting from the initial value.

On arm64 a factor-2 step of add / min / max goes first, as in CodeGen_ARM's
codegen_pairwise_vector_reduce (its .ll for arm-64-linux read with compile_to_llvm_assembly):
`llvm.aarch64.neon.{faddp,fminp,fmaxp}` over the low and high halves of each 4 or 8 input lanes
(float32: 2-lane overload for one or two output lanes, 4-lane otherwise; float64: faddp.v2f64 only,
there is no float64 fminp / fmaxp entry, so those take the generic steps; one output lane from two
input lanes and poison; an output width that is no multiple of the call's is padded with poison
lanes, as Halide pads 3 lanes to a 4-lane call, and sliced back), no fast-math flags on the call,
then the initial value combined after, `init op r`. Lane i is `v[2i] op v[2i+1]` in one
instruction, so a halving chain (8 -> 4 -> 2) is pairwise at every step, as Halide's CodeGen_LLVM
recursion through the virtual codegen_vector_reduce is. A factor-2 product has no pairwise form
and takes the generic steps (slices combined in order from the initial value).

float16 (Halide 21's modules for x86-64-linux-avx2-fma-f16c and arm-64-linux-arm_fp16): on arm_fp16
on half like float32 (LLVM's reductions on <N x half>, faddp/fminp/fmaxp on 4 or 8 halves); on x86
the value converted to float32, reduced from no initial value, converted back (fptrunc) and then
combined with the initial value on half (`_widened_half`).

Where Halide emulates float16 (arm64 without arm_fp16, hvx128) floats_half_emulated.py lowers a float16
reduction first: the float32 reduction of the widened value, rounded once, inside the emulated
operation that combines the initial value (Halide's arm-64-linux and hexagon-32-noos-hvx-hvx_128
modules; on hvx128 the float32 reduction takes the steps above: float16x64 to one lane is the two
native halves added, the strided halves added, then `llvm.vector.reduce.fadd.v16f32` from 0.0; to
several lanes refused there, where Halide's own Hexagon code generation aborts).

bfloat16 reductions are lowered before they get here too (floats_bfloat.py: Halide's generic steps,
each rounded to bfloat16; to one lane refused there, as Halide 21 cannot compile those either).

A factor-2 sum whose value Halide's lossless_cast narrows to half its width (`narrows`, a port of its
float cases: a float64 sum of float64(uint16), a float32 sum of float32(float16), ...) is not a pairwise
add: CodeGen_ARM then asks for a widening pairwise add, which no float type has, and takes the generic
steps (so does the emulated float16 reduction on arm64, a float32 sum of float32(float16)).

Refused by name (a fallback at compile time): on arm64 a factor-2 step on a strict_float target, which
Halide 21 never produces (no float vector_reduce there: nothing to compare with), and a float16 sum of a
constant (Halide would ask float8 whether it holds it).

Invariant: the reduction is built from the same operations in the same grouping as Halide's module
(checked against Halide's realize for the target, tests/pitchfork/codegen/test_float_reduce.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Optional

from llvmlite import ir

from pitchfork.backend.machine import get_target
from pitchfork.codegen.base import Unsupported
from pitchfork.codegen.float_math import FloatOps, declare
from pitchfork.codegen.ir_constants import undef
from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType

if TYPE_CHECKING:
    from pitchfork.codegen.floats import FloatEmitter

#: the binary operator that matches each reduction (Halide's try_to_fold_vector_reduce)
FOLDS = {"+": "add", "*": "mul", "min": "min", "max": "max"}
_INTRINSIC = {"add": "fadd", "mul": "fmul", "min": "fmin", "max": "fmax"}
#: Neon's pairwise instructions (CodeGen_ARM's pairwise_add / pairwise_min / pairwise_max, float32)
_PAIRWISE = {"add": "faddp", "min": "fminp", "max": "fmaxp"}


def folded(e: H.BinOp) -> Optional[tuple[H.VectorReduce, H.Expr]]:
    """(reduction, initial value) when `e` is `vector_reduce_op(v) op x` or `x op vector_reduce_op(v)`
    with a float reduction whose op matches, as Halide folds it; None otherwise."""
    op = FOLDS.get(e.op)
    if op is None:
        return None
    for red, other in ((e.a, e.b), (e.b, e.a)):
        if isinstance(red, H.VectorReduce) and red.op == op and red.type.is_float:
            return red, other
    return None


class FloatReducer:
    """Emits float reductions through a FloatEmitter (its ops, flags and target)."""

    def __init__(self, fe: FloatEmitter) -> None:
        self.fe, self.b, self.target = fe, fe.b, fe.cg.target

    def _refuse(self, e: H.VectorReduce, why: str) -> Unsupported:
        return Unsupported(f"floating-point vector_reduce_{e.op} ({e.value.type} to {e.type}): {why}", self.fe.node)

    def _binop(self, op: str) -> Callable[[ir.Value, ir.Value], ir.Value]:
        o = self.fe.ops
        return {"add": o.add, "mul": o.mul, "min": o.min, "max": o.max}[op]

    def emit(self, e: H.VectorReduce, init: Optional[H.Expr]) -> ir.Value:
        t = e.type
        if e.op not in _INTRINSIC:
            raise self._refuse(e, "no such float reduction in Halide")
        if t.code != "float" or t.bits not in (16, 32, 64):
            raise self._refuse(e, f"{t.elem} reductions are not compiled")
        if t.bits == 16 and self.fe.emulate_half:  # (lowered before they get here: floats_half_emulated)
            raise self._refuse(e, "a float16 reduction where Halide emulates float16 that was not lowered to "
                                  "float32")
        n, m = e.value.type.lanes, t.lanes
        if n % m:
            raise self._refuse(e, "the input lanes are not a multiple of the output lanes")
        start = self.fe.emit(init) if init is not None else None
        if t.bits == 16 and self.target == "x86-avx2":
            return self._widened_half(e, start)
        return self._reduce(e, self.fe.emit(e.value), m, start)

    def _widened_half(self, e: H.VectorReduce, start: Optional[ir.Value]) -> ir.Value:
        """x86 (float16 not native arithmetic): Halide 21's module reduces the value converted to float32
        from no initial value, converts the result back to half (fptrunc), then combines the initial value
        on half: `init op half(reduce(float(v)))` (its x86-64-linux-avx2-fma-f16c .ll)."""
        f32 = HType("float", 32, e.type.lanes)
        wide = H.VectorReduce(e.op, H.Cast(HType("float", 32, e.value.type.lanes), e.value), f32)
        # (the emitter's own float32 conversions: fpext to float32, fptrunc back to half)
        r = self.fe._from_f32(self._reduce(wide, self.fe._to_f32(e.value), e.type.lanes, None), e.type)
        return r if start is None else self._binop(e.op)(start, r)

    def _reduce(self, e: H.VectorReduce, v: ir.Value, m: int, start: Optional[ir.Value]) -> ir.Value:
        n = v.type.count if isinstance(v.type, ir.VectorType) else 1
        f = n // m
        native = get_target(self.target).vector_bits // e.type.bits  # a native vector's lanes
        combine = self._binop(e.op)
        if (f == 2 and self.target == "arm64" and e.op in _PAIRWISE and (e.type.bits == 32 or e.op == "add")
                and not (e.op == "add" and narrows(e.value, e.type.bits // 2, self.fe.node))):
            return self._pairwise(e, v, m, start)  # (CodeGen_ARM tries its pairwise reductions first)
        # (a sum Halide narrows losslessly to half its width asks for a widening pairwise add, which no
        # float type has: its generic steps below)
        # (LLVM's total reductions: not float64 on arm64, as in Halide's codegen_vector_reduce)
        if m == 1 and 2 <= n <= 16 and n & (n - 1) == 0 and not (e.type.bits == 64 and self.target == "arm64"):
            return self._intrinsic(e.op, v, start)
        if m == 1 and f > native and f % native == 0:
            acc = self._slice(v, 0, 1, native)
            for i in range(1, f // native):
                acc = combine(acc, self._slice(v, i * native, 1, native))
            return self._reduce(e, acc, 1, start)
        if f > 2 and f % 2 == 0:
            half = self._reduce(e, v, n // 2, None)
            return self._reduce(e, half, m, start)
        acc = start
        for i in range(f):
            part = self._slice(v, i, f, m)
            acc = part if acc is None else combine(acc, part)
        assert acc is not None
        return acc

    def _pairwise(self, e: H.VectorReduce, v: ir.Value, m: int, start: Optional[ir.Value]) -> ir.Value:
        """arm64, 2m lanes to m: Neon's pairwise op on each chunk's low and high halves, concatenated,
        then `start op r` (codegen_pairwise_vector_reduce; its call_overloaded_intrin picks the 2-lane
        overload for m <= 2 and splits wider results into 4-lane calls)."""
        why = self._pairwise_refusal(e, m)
        if why:
            raise self._refuse(e, f"Halide's arm64 pairwise step is not compiled here: {why}")
        # the 64-bit overload (2 x float32, 4 x float16) for outputs that fit, else the 128-bit one (float64:
        # only 2 x float64)
        short = max(2, 64 // e.type.bits)
        lanes = short if m <= short else 128 // e.type.bits
        vt = ir.VectorType(v.type.element, lanes)
        fn = declare(self.fe.cg.module, f"llvm.aarch64.neon.{_PAIRWISE[e.op]}", vt, [vt, vt])
        parts = [self.b.call(fn, [self._lanes(v, 2 * c, lanes), self._lanes(v, 2 * c + lanes, lanes)])
                 for c in range(0, m, lanes)]
        while len(parts) & (len(parts) - 1):  # padded to a power-of-two count (lanes past m: poison)
            parts.append(undef(vt))
        while len(parts) > 1:  # concatenated in order
            parts = [self._concat(parts[i], parts[i + 1]) for i in range(0, len(parts), 2)]
        r = parts[0]
        if m == 1:
            r = self.b.extract_element(r, ir.Constant(ir.IntType(32), 0))
        elif m < r.type.count:  # (an output width that is no multiple of the call's: 3 lanes of a 4-lane call)
            r = self._lanes(r, 0, m)
        return r if start is None else self._binop(e.op)(start, r)

    def _pairwise_refusal(self, e: H.VectorReduce, m: int) -> str:
        """Why Halide's pairwise form is not reproduced for this reduction ('' when it is): a strict_float
        target, where Halide 21 never makes a float vector_reduce (its associativity check does not see
        through strict_add / strict_min ...: the update stays a serial loop, which we compile as such),
        so there is no module to compare with."""
        if self.fe.ops.strict:
            return "strict_float (Halide 21 makes no float vector_reduce there to compare with)"
        return ""

    def _lanes(self, v: ir.Value, begin: int, count: int) -> ir.Value:
        """`count` consecutive lanes of v from `begin`; lanes past its end are poison (from undef)."""
        n = v.type.count
        idx = [i if i < n else n for i in range(begin, begin + count)]
        return self.b.shuffle_vector(v, undef(v.type), ir.Constant(ir.VectorType(ir.IntType(32), count), idx))

    def _concat(self, a: ir.Value, c: ir.Value) -> ir.Value:
        """a's lanes then c's (equal widths)."""
        k = a.type.count
        mask = ir.Constant(ir.VectorType(ir.IntType(32), 2 * k), list(range(2 * k)))
        return self.b.shuffle_vector(a, c, mask)

    def _intrinsic(self, op: str, v: ir.Value, start: Optional[ir.Value]) -> ir.Value:
        """`llvm.vector.reduce.<fop>.vNfB` with Halide's flags; fadd / fmul with their start value."""
        ops = self.fe.ops
        elem = v.type.element
        bits = 16 if isinstance(elem, ir.HalfType) else 32 if isinstance(elem, ir.FloatType) else 64
        name = f"llvm.vector.reduce.{_INTRINSIC[op]}.v{v.type.count}f{bits}"
        if op in ("add", "mul"):
            s = start if start is not None else FloatOps.const(elem, 0.0 if op == "add" else 1.0)
            fn = declare(self.fe.cg.module, name, elem, [elem, v.type])
            return self.b.call(fn, [s, v], fastmath=ops.flags)
        fn = declare(self.fe.cg.module, name, elem, [v.type])
        r = self.b.call(fn, [v], fastmath=ops.flags)
        return r if start is None else self._binop(op)(start, r)

    def _slice(self, v: ir.Value, begin: int, stride: int, count: int) -> ir.Value:
        idx = [begin + stride * i for i in range(count)]
        out = self.b.shuffle_vector(v, undef(v.type), ir.Constant(ir.VectorType(ir.IntType(32), count), idx))
        return out if count > 1 else self.b.extract_element(out, ir.Constant(ir.IntType(32), 0))


def can_represent(t: HType, o: HType) -> bool:
    """Halide 21's Type::can_represent(Type) for scalar element types (lanes are equal where it is asked):
    a float holds every float of at most its bits, float64 every integer of at most 32 bits, float32 of at
    most 16 (not float16 of 8: Halide 21's module for a float32 sum of float32(uint8) still has faddp),
    a float a bfloat of fewer bits."""
    if (t.code, t.bits) == (o.code, o.bits):
        return True
    if t.code == "int":
        return o.code == "int" and o.bits <= t.bits or o.code == "uint" and o.bits < t.bits
    if t.code == "uint":
        return o.code == "uint" and o.bits <= t.bits
    if t.code == "bfloat":
        return o.code == "bfloat" and o.bits <= t.bits
    if t.code == "float":
        if o.code == "bfloat":
            return t.bits > o.bits
        return o.code == "float" and o.bits <= t.bits or t.bits == 64 and o.bits <= 32 or t.bits == 32 and o.bits <= 16
    return False


def _holds_constant(bits: int, value: float, node: H.Node | None) -> bool:
    """Halide's Type::can_represent(int64 / double) for Float(bits): the value survives the round trip."""
    import numpy as np

    types = {16: np.float16, 32: np.float32, 64: np.float64}
    if bits not in types:  # (Halide has no such float type to compare with)
        raise Unsupported(f"a float{2 * bits} sum of a constant (Halide would ask whether float{bits} holds it)",
                          node)
    with np.errstate(over="ignore"):
        return bool(np.float64(types[bits](value)) == value)


def narrows(e: H.Expr, bits: int, node: H.Node | None = None) -> bool:
    """Whether Halide 21's lossless_cast(Float(bits), e) is defined for the float value `e` of a sum
    (CodeGen_ARM's pairwise add then asks for a widening pairwise add, which no float type has, and takes
    the generic steps). Its float cases, in its order: the type itself or one it can represent; a cast
    that loses nothing, of a value that narrows; a broadcast or shuffle of values that narrow; a constant
    the narrow type holds. Nothing else narrows to a float (its Add / Min / ... cases are for integer
    targets). `node` is named by a refusal (a sum of a constant asked of a float type Halide lacks).
    Halide 21's own modules agree (probed on arm-64-linux, sums by 2 lanes):
    float64 of float64(uint8 / uint16 / int16 widening_mul / float32 / float16 / min(uint8) / uint16
    widening_add): no faddp; of select(...): faddp; float32 of float32(float16(uint8)): no faddp; of
    float32(uint8 / uint16 / ...): faddp."""
    t = HType("float", bits, e.type.lanes)
    if (e.type.code, e.type.bits) == ("float", bits) or can_represent(t, e.type):
        return True
    if isinstance(e, H.Cast):
        return can_represent(e.type, e.value.type) and narrows(e.value, bits, node)
    if isinstance(e, H.Broadcast):
        return narrows(e.value, bits, node)
    if isinstance(e, (H.IntImm, H.FloatImm)):
        return _holds_constant(bits, e.value, node)
    if isinstance(e, H.Shuffle):
        return all(narrows(v, bits, node) for v in e.vectors)
    return False
