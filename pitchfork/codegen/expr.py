"""Emit LLVM IR (llvmlite.ir) for an FPIR term over vectors of a chosen lane count.

The term must contain only primitive ops and target instructions (run `pitchfork.selection.lower` first; FPIR
ops left in a term are expanded here through `pitchfork.selection.lower.expand_fpir` as a safety net). Every
primitive is emitted with its exact FPIR/Halide semantics, never relying on LLVM undefined
behaviour: shifts by out-of-range or negative amounts, Euclidean division and modulo, division by
zero and INT_MIN / -1 are all spelled out. Booleans (u1) are `<N x i1>`.

Helpers for target instruction emitters: `split`/`concat` to and from native-width chunks (padding
short vectors), `intrinsic` to declare-or-reuse an intrinsic, `hvx_call` for the <32 x i32> HVX
calling convention.
"""

from __future__ import annotations

from typing import Callable, Hashable, Mapping, Optional, Sequence

from llvmlite import ir

from fpir.opspec import spec
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.codegen.ir_constants import mask, splat, undef, vector_type


def int_type(t: ScalarType) -> ir.IntType:
    return ir.IntType(t.bits)


def vec_type(t: ScalarType, lanes: int) -> ir.VectorType:
    return vector_type(t.bits, lanes)  # shared (pitchfork/codegen/ir_constants.py)


class ExprEmitter:
    def __init__(
        self, builder: ir.IRBuilder, lanes: int, env: dict[str, ir.Value], target: object = None,
        streams: Optional[Mapping[str, tuple[Hashable, int]]] = None, hvx_pairs: bool = False,
        to_one_lane: Optional[Callable[..., Optional[ir.Value]]] = None, lane_order: bool = True,
    ) -> None:
        self.b = builder
        self.lanes = lanes
        self.env = env
        self.target = target
        #: a selected (isel=pitchfork) lowering of a reduction to one lane, tried before the generic
        #: one: (emitter, combine, value, type) -> 1-lane value or None (pitchfork/codegen/hvx_reduce.py)
        self.to_one_lane = to_one_lane
        #: facts about the values in `env` (pitchfork.trs.predicate.Streams): which variables read one
        #: stream of memory at which element offsets, for instructions that read a sliding window (vtmpy)
        self.streams = streams or {}
        #: hvx128 (isel=pitchfork): adds and subtracts spanning several registers on register pairs
        #: (see `_hvx_pairwise`)
        self.hvx_pairs = hvx_pairs
        #: x86 (isel=pitchfork): pack operands computed in the pack's lane order (pitchfork.codegen.lane_order;
        #: the "x86_lane_order" pass: LoopNestCodegen.term_emitter sets it on every emitter of a loop
        #: nest's terms; expression kernels, pitchfork/codegen/kernel.py, run no pass list and keep it on)
        self.lane_order = lane_order
        self.module: ir.Module = builder.module
        self._memo: dict[tuple[Term, int], ir.Value] = {}

    # ---- helpers -------------------------------------------------------------------------
    def vt(self, t: ScalarType, lanes: Optional[int] = None) -> ir.VectorType:
        return vec_type(t, lanes or self.lanes)

    def splat(self, value: int, t: ScalarType, lanes: Optional[int] = None) -> ir.Constant:
        n = lanes or self.lanes
        return splat(t.bits, t.wrap(value), n)  # shared (pitchfork/codegen/ir_constants.py)

    def intrinsic(self, name: str, ret: ir.Type, args: Sequence[ir.Type]) -> ir.Function:
        fn = self.module.globals.get(name)
        if fn is None:
            fn = ir.Function(self.module, ir.FunctionType(ret, list(args)), name=name)
        return fn

    def call(self, name: str, ret: ir.Type, args: Sequence[ir.Value]) -> ir.Value:
        return self.b.call(self.intrinsic(name, ret, [a.type for a in args]), list(args))

    def split(self, v: ir.Value, chunk: int) -> list[ir.Value]:
        """Chunks of `chunk` lanes (the last padded with undefined lanes).

        A widened value (zext/sext, or a lane-wise op over one) that spans several registers and is cut
        into pieces smaller than a register is first cut into whole registers *before* the widening,
        each widened on its own: LLVM 22's VectorCombine turns a sub-register slice of a multi-register
        `zext` into a `zext` of a sub-register slice, which AArch64 selects as ext + zip + bic instead of
        ushll2 (and smlal instead of smlal2); one register-wide extension per half is what its type
        legalizer (and LLVM 21, under Halide) produces."""
        n = v.type.count
        if n == chunk:
            return [v]
        reg = self._register_lanes(v.type)
        if reg and chunk < reg < n and n % reg == 0 and reg % chunk == 0 and _widened(v, 2):
            return [p for r in range(0, n, reg) for p in self.split(self._slice(v, r, reg, 2), chunk)]
        if n < chunk:
            idx = [i if i < n else n for i in range(chunk)]  # lane n of the undef operand
            return [self.b.shuffle_vector(v, undef(v.type), _mask(idx))]
        if n % chunk:
            pad = chunk - n % chunk
            v = self.b.shuffle_vector(v, undef(v.type), _mask(list(range(n + pad))))
            n += pad
        return [
            self.b.shuffle_vector(v, undef(v.type), _mask(list(range(i, i + chunk))))
            for i in range(0, n, chunk)
        ]

    def _register_lanes(self, vt: ir.VectorType) -> Optional[int]:
        """Lanes of `vt`'s element type in one native register of this emitter's target (None: unknown)."""
        if self.target is None or not isinstance(vt.element, ir.IntType):
            return None
        from pitchfork.backend.machine import get_target

        bits = get_target(self.target).vector_bits
        return bits // vt.element.width if bits % vt.element.width == 0 else None

    def _slice(self, v: ir.Value, start: int, count: int, depth: int) -> ir.Value:
        """Lanes [start, start + count) of `v`, taken below its widening casts and lane-wise ops."""
        if depth > 0 and isinstance(v, ir.CastInstr) and v.opname in ("zext", "sext"):
            src = self._slice(v.operands[0], start, count, 0)
            return self.b.zext(src, ir.VectorType(v.type.element, count)) if v.opname == "zext" \
                else self.b.sext(src, ir.VectorType(v.type.element, count))
        if depth > 0 and isinstance(v, ir.Instruction) and v.opname in _LANE_WISE and len(v.operands) == 2:
            a, c = (self._slice(o, start, count, depth - 1) for o in v.operands)
            return getattr(self.b, _LANE_WISE[v.opname])(a, c)
        return self.b.shuffle_vector(v, undef(v.type), _mask(list(range(start, start + count))))

    def concat(self, parts: Sequence[ir.Value], lanes: Optional[int] = None) -> ir.Value:
        """Concatenate chunks and keep the first `lanes` lanes: lane j of the result is lane j - n of
        the part that holds it (n: the lanes of the parts before it), for every j below the total.

        The parts are concatenated pairwise, the second of each pair padded (or cut) to the first's
        length, which is that concatenation when the parts have one length (the last may be shorter).
        Parts of other lengths (a whole-register HVX window beside a narrower vector, as a Halide
        `interleave_vectors(a[ramp(9, 1, 2)], t, t, t)` gives) are padded to one length first and the
        lanes picked out of that: the pairwise padding put undefined lanes in the middle (f(x) =
        a[x / 4] bounded to 47 lanes and vectorized by 8 ran wrong in 4 lanes on hvx128)."""
        parts = list(parts)
        want = lanes or self.lanes
        counts = [p.type.count for p in parts]
        if len(set(counts)) > 1 and not _pairwise_is_concatenation(counts, want):
            size = max(counts)
            padded = [p if n == size else self.b.shuffle_vector(p, undef(p.type), _mask([min(j, n) for j in range(size)]))
                      for p, n in zip(parts, counts)]
            whole = self.concat(padded, size * len(parts))
            idx = [k * size + i for k, n in enumerate(counts) for i in range(n)][:want]
            idx += [whole.type.count] * (want - len(idx))  # beyond the parts: undefined
            return self.b.shuffle_vector(whole, undef(whole.type), _mask(idx))
        while len(parts) > 1:
            nxt = []
            for i in range(0, len(parts) - 1, 2):
                a, c = parts[i], parts[i + 1]
                if a.type.count != c.type.count:  # pad the shorter one
                    c = self.b.shuffle_vector(
                        c,
                        undef(c.type),
                        _mask([j if j < c.type.count else c.type.count for j in range(a.type.count)]),
                    )
                nxt.append(self.b.shuffle_vector(a, c, _mask(list(range(a.type.count * 2)))))
            if len(parts) % 2:
                nxt.append(parts[-1])
            parts = nxt
        v = parts[0]
        want = lanes or self.lanes
        if v.type.count != want:
            v = self.b.shuffle_vector(v, undef(v.type), _mask(list(range(want))))
        return v

    def map_chunks(
        self, args: Sequence[ir.Value], chunk: int, fn: Callable[..., ir.Value], lanes: Optional[int] = None
    ) -> ir.Value:
        """Apply fn to corresponding `chunk`-lane pieces of args and concatenate the results."""
        pieces = [self.split(a, chunk) for a in args]
        outs = [fn(*ps) for ps in zip(*pieces)]
        return self.concat(outs, lanes)

    def bitcast(self, v: ir.Value, t: ir.Type) -> ir.Value:
        return v if v.type == t else self.b.bitcast(v, t)

    def hvx_call(
        self,
        name: str,
        args: Sequence[ir.Value],
        result: ir.VectorType,
        pair_result: bool = False,
        pair_args: Sequence[bool] = (),
    ) -> ir.Value:
        """Call `llvm.hexagon.V6.<name>.128B` with <32 x i32> (<64 x i32> pairs) operands."""
        w32 = ir.VectorType(ir.IntType(32), 32)
        w64 = ir.VectorType(ir.IntType(32), 64)
        cast_args = []
        for i, a in enumerate(args):
            if isinstance(a.type, ir.VectorType):
                pair = pair_args[i] if i < len(pair_args) else False
                cast_args.append(self.bitcast(a, w64 if pair else w32))
            else:
                cast_args.append(a)
        r = self.call(f"llvm.hexagon.V6.{name}.128B", w64 if pair_result else w32, cast_args)
        return self.bitcast(r, result)

    # ---- emission ------------------------------------------------------------------------
    def emit(self, term: Term) -> ir.Value:
        """The value of `term` at this emitter's lane count. Operands of lane-combining ops are emitted at
        their own lane count (result lanes x the op's factor for that operand), so values are memoized
        per (term, lanes)."""
        top = self.lanes
        try:
            for t, lanes in _schedule(term, top):
                if (t, lanes) not in self._memo:
                    self.lanes = lanes
                    self._memo[(t, lanes)] = self._node(t)
        finally:
            self.lanes = top
        return self._memo[(term, top)]

    def _node(self, t: Term) -> ir.Value:
        if t.op == "var":
            v = self.env[t.name]
            if v.type != self.vt(t.type):
                raise TypeError(f"value for {t.name} has type {v.type}, expected {self.vt(t.type)}")
            return v
        if t.op == "const":
            return self.splat(t.value, t.type)
        s = spec(t.op)
        args = [self._memo[(a, self.lanes * s.lane_factor(i))] for i, a in enumerate(t.args)]
        if s.kind == "target":
            return s.meta["emit"](self, args, t)
        if s.kind == "fpir":
            from pitchfork.selection.lower import expand_fpir

            return self.emit(expand_fpir(t))
        if s.reduce is not None:
            return self.reduce_lanes(s.reduce[0], s.reduce[1], args[0], t.type)
        return getattr(self, f"_p_{t.op}")(t, args)

    def reduce_lanes(self, combine: str, f: int, v: ir.Value, t: ScalarType) -> ir.Value:
        """The generic lowering of a lane-combining op (what every ISA gets, and all that LLVM alone
        gets), as Halide's own code generator emits a `VectorReduce` that no peephole took:
        * to one lane, LLVM's `llvm.vector.reduce.<op>` when LLVM has one (add, min, max), so each
          backend picks its across-lane instructions (uaddlv, vphaddd, shuffles);
        * otherwise, while the factor is even and above 2, pairs of adjacent lanes first (the even and
          odd lanes combined: LLVM matches e.g. pmaddwd / uaddlp from that shape; not for a signed
          saturating add, whose value depends on the order), then the last factor's strided slices (slice k holds lanes k, f+k, 2f+k, ...) folded left to right."""
        m = self.lanes
        if m == 1 and self.to_one_lane is not None:
            got = self.to_one_lane(self, combine, v, t)
            if got is not None:
                return got
        if m == 1 and t.bits > 1 and combine in _VECTOR_REDUCE:
            name = _VECTOR_REDUCE[combine] if combine == "add" else \
                ("s" if t.signed else "u") + _VECTOR_REDUCE[combine]
            n = v.type.count
            r = self.call(f"llvm.vector.reduce.{name}.v{n}i{t.bits}", int_type(t), [v])
            one = self.b.insert_element(undef(ir.VectorType(int_type(t), 1)), r,
                                        ir.Constant(ir.IntType(32), 0))
            return one
        # Regrouping is exact for associative ops; a signed saturating add is folded in lane order
        # (its FPIR meaning), so it is never staged.
        while f > 2 and f % 2 == 0 and not (combine == "saturating_add" and t.signed):
            v = self._fold_slices(combine, 2, v, t, v.type.count // 2)
            f //= 2
        return self._fold_slices(combine, f, v, t, m)

    def _fold_slices(self, combine: str, f: int, v: ir.Value, t: ScalarType, m: int) -> ir.Value:
        """Lanes [i*f, (i+1)*f) of v combined into lane i of the m-lane result (f strided slices)."""
        from fpir.ops import make
        from fpir.term import var
        from pitchfork.selection.lower import expand_fpir

        und = undef(v.type)
        env: dict[str, ir.Value] = {}
        acc: Optional[Term] = None
        for k in range(f):
            name = f"lane{k}"
            env[name] = self.b.shuffle_vector(v, und, _mask([j * f + k for j in range(m)]))
            x = var(name, t)
            acc = x if acc is None else make(combine, acc, x)
        assert acc is not None
        return ExprEmitter(self.b, m, env, self.target).emit(expand_fpir(acc))

    # primitives ---------------------------------------------------------------------------
    def _p_add(self, t: Term, a: list) -> ir.Value:
        return self._hvx_pairwise("add", a) or self.b.add(a[0], a[1])

    def _p_sub(self, t: Term, a: list) -> ir.Value:
        return self._hvx_pairwise("sub", a) or self.b.sub(a[0], a[1])

    def _hvx_pairwise(self, op: str, a: list) -> Optional[ir.Value]:
        """A wrapping add/sub of values spanning an even number of HVX registers, one `Vdd = vadd(Vuu,
        Vvv)` per register pair, as Halide's Hexagon code has it. Emitted as a plain `add` over 4
        registers whose operands are concatenations of per-register results (accumulations, valigns),
        LLVM's InstCombine narrows it to one add per register; over `vcombine`d pairs it stays one
        instruction per pair (gaussian7x7's column pass: 16 adds -> 8, and with its valigned taps
        emitted at first use, 26 spill accesses -> 2: loop 287 -> 238 instructions). Operands that
        are not plain concatenations of registers (a de-interleaved pair's interleave) are left to
        LLVM, which cancels their shuffles against the consumer's (gaussian3x3: 39 instructions, 51
        when paired)."""
        v = a[0]
        if not self.hvx_pairs or not isinstance(v.type, ir.VectorType):
            return None
        bits, n = v.type.element.width, v.type.count
        reg = 1024 // bits if bits in (8, 16, 32) else 0
        if not reg or n % (2 * reg):
            return None
        parts = [_register_parts(x, reg) for x in a]
        if any(p is None for p in parts):
            return None
        w32, w64 = ir.VectorType(ir.IntType(32), 32), ir.VectorType(ir.IntType(32), 64)
        pair = ir.VectorType(ir.IntType(bits), 2 * reg)
        ops = []
        for x, ps in zip(a, parts):
            regs = [self.bitcast(r, w32) for r in (self.split(x, reg) if isinstance(x, ir.Constant) else ps)]
            ops.append([self.bitcast(self.call("llvm.hexagon.V6.vcombine.128B", w64, [regs[k + 1], regs[k]]), pair)
                        for k in range(0, len(regs), 2)])
        fn = self.b.add if op == "add" else self.b.sub
        return self.concat([fn(x, y) for x, y in zip(*ops)], n)

    def _p_mul(self, t: Term, a: list) -> ir.Value:
        return self.b.mul(a[0], a[1])

    def _p_and(self, t: Term, a: list) -> ir.Value:
        return self.b.and_(a[0], a[1])

    def _p_or(self, t: Term, a: list) -> ir.Value:
        return self.b.or_(a[0], a[1])

    def _p_xor(self, t: Term, a: list) -> ir.Value:
        return self.b.xor(a[0], a[1])

    def _p_not(self, t: Term, a: list) -> ir.Value:
        return self.b.not_(a[0])

    def _minmax(self, t: Term, a: list, kind: str) -> ir.Value:
        if t.type.bits == 1:
            return (self.b.and_ if kind == "min" else self.b.or_)(a[0], a[1])
        pre = "s" if t.type.signed else "u"
        vt = self.vt(t.type)
        return self.call(f"llvm.{pre}{kind}.v{self.lanes}i{t.type.bits}", vt, a)

    def _p_min(self, t: Term, a: list) -> ir.Value:
        return self._minmax(t, a, "min")

    def _p_max(self, t: Term, a: list) -> ir.Value:
        return self._minmax(t, a, "max")

    def _cmp(self, t: Term, a: list, op: str) -> ir.Value:
        at = t.args[0].type
        if at.signed:
            return self.b.icmp_signed(op, a[0], a[1])
        return self.b.icmp_unsigned(op, a[0], a[1])

    def _p_eq(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, "==")

    def _p_ne(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, "!=")

    def _p_lt(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, "<")

    def _p_le(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, "<=")

    def _p_gt(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, ">")

    def _p_ge(self, t: Term, a: list) -> ir.Value:
        return self._cmp(t, a, ">=")

    def _p_select(self, t: Term, a: list) -> ir.Value:
        return self.b.select(a[0], a[1], a[2])

    def _p_abs(self, t: Term, a: list) -> ir.Value:
        if not t.args[0].type.signed:
            return a[0]
        vt = self.vt(t.type)
        return self.call(f"llvm.abs.v{self.lanes}i{t.type.bits}", vt, [a[0], ir.Constant(ir.IntType(1), 0)])

    def _p_cast(self, t: Term, a: list) -> ir.Value:
        src, dst = t.args[0].type, t.type
        if dst.bits == 1:
            return self.b.icmp_unsigned("!=", a[0], self.splat(0, src))
        if dst.bits == src.bits:
            return a[0]
        if dst.bits < src.bits:
            return self.b.trunc(a[0], self.vt(dst))
        if src.signed:
            return self.b.sext(a[0], self.vt(dst))
        return self.b.zext(a[0], self.vt(dst))

    def _p_reinterpret(self, t: Term, a: list) -> ir.Value:
        return a[0]  # LLVM integers carry no sign

    def _shift(self, t: Term, a: list, left: bool) -> ir.Value:
        x, amt = a
        ty = t.type
        bits = ty.bits
        amount_t = t.args[1]
        if amount_t.is_const:
            v = amount_t.value
            if v < 0:
                left, v = not left, -v
            return self._const_shift(x, ty, v, left)
        fwd = self._var_shift(x, ty, amt, left)
        if not amount_t.type.signed:
            return fwd
        neg = self.b.icmp_signed("<", amt, self.splat(0, amount_t.type))
        back = self._var_shift(x, ty, self.b.sub(self.splat(0, amount_t.type), amt), not left)
        return self.b.select(neg, back, fwd)

    def _const_shift(self, x: ir.Value, ty: ScalarType, v: int, left: bool) -> ir.Value:
        bits = ty.bits
        if v == 0:
            return x
        if v >= bits:
            if left or not ty.signed:
                return self.splat(0, ty)
            v = bits - 1
        c = self.splat(v, ty)
        if left:
            return self.b.shl(x, c)
        return self.b.ashr(x, c) if ty.signed else self.b.lshr(x, c)

    def _var_shift(self, x: ir.Value, ty: ScalarType, amt: ir.Value, left: bool) -> ir.Value:
        """Shift by an amount read as unsigned; amounts >= bits give 0 (or the sign fill)."""
        bits = ty.bits
        big = self.b.icmp_unsigned(">=", amt, self.splat(bits, ty))
        if left:
            return self.b.select(big, self.splat(0, ty), self.b.shl(x, amt))
        if ty.signed:
            clamped = self.b.select(big, self.splat(bits - 1, ty), amt)
            return self.b.ashr(x, clamped)
        return self.b.select(big, self.splat(0, ty), self.b.lshr(x, amt))

    def _p_shl(self, t: Term, a: list) -> ir.Value:
        return self._shift(t, a, True)

    def _p_shr(self, t: Term, a: list) -> ir.Value:
        return self._shift(t, a, False)

    def _p_div(self, t: Term, a: list) -> ir.Value:
        return self._divmod(t, a, True)

    def _p_mod(self, t: Term, a: list) -> ir.Value:
        return self._divmod(t, a, False)

    def _divmod(self, t: Term, a: list, is_div: bool) -> ir.Value:
        x, y = a
        ty = t.type
        zero, one = self.splat(0, ty), self.splat(1, ty)
        d = t.args[1]
        if d.is_const and d.value > 0 and d.value & (d.value - 1) == 0:
            # A power of two: Euclidean division is floor division here, a shift (arithmetic for
            # signed), and the remainder the low bits; as Halide's own code generator emits it.
            # LLVM does not recover the shift from the sdiv/srem correction below, and the shift
            # matters for loop bounds: a trip count `e >> 4` lets strength reduction count the
            # induction variable in bytes (16 * (e >> 4) is free to it), `sdiv` + fix-up does not.
            k = d.value.bit_length() - 1
            if not is_div:
                return self.b.and_(x, self.splat(d.value - 1, ty))
            return (self.b.ashr if ty.signed else self.b.lshr)(x, self.splat(k, ty))
        if d.is_const and d.value > 0:
            if not ty.signed:
                return (self.b.udiv if is_div else self.b.urem)(x, y)
            q, r = self.b.sdiv(x, y), self.b.srem(x, y)
            neg = self.b.icmp_signed("<", r, zero)
            if is_div:
                return self.b.select(neg, self.b.sub(q, one), q)
            return self.b.select(neg, self.b.add(r, y), r)
        if d.is_const and d.value == 0:
            return zero
        if not ty.signed:
            is0 = self.b.icmp_unsigned("==", y, zero)
            safe = self.b.select(is0, one, y)
            res = (self.b.udiv if is_div else self.b.urem)(x, safe)
            return self.b.select(is0, zero, res)
        m1 = self.splat(-1, ty)
        is0 = self.b.icmp_signed("==", y, zero)
        ism1 = self.b.icmp_signed("==", y, m1)
        safe = self.b.select(self.b.or_(is0, ism1), one, y)
        q, r = self.b.sdiv(x, safe), self.b.srem(x, safe)
        rneg = self.b.icmp_signed("<", r, zero)
        ypos = self.b.icmp_signed(">", y, zero)
        if is_div:
            fixed = self.b.select(rneg, self.b.select(ypos, self.b.sub(q, one), self.b.add(q, one)), q)
            res = self.b.select(ism1, self.b.sub(zero, x), fixed)
        else:
            res = self.b.select(rneg, self.b.select(ypos, self.b.add(r, y), self.b.sub(r, y)), r)
            res = self.b.select(ism1, zero, res)
        return self.b.select(is0, zero, res)


def _schedule(term: Term, lanes: int) -> list[tuple[Term, int]]:
    """Post-order (term, lane count) pairs needed to emit `term` at `lanes` lanes."""
    out: list[tuple[Term, int]] = []
    seen: set[tuple[Term, int]] = set()
    stack: list[tuple[Term, int, bool]] = [(term, lanes, False)]
    while stack:
        t, n, expanded = stack.pop()
        if expanded:
            out.append((t, n))
            continue
        if (t, n) in seen:
            continue
        seen.add((t, n))
        stack.append((t, n, True))
        if t.args:
            s = spec(t.op)
            for i in reversed(range(len(t.args))):
                stack.append((t.args[i], n * s.lane_factor(i), False))
    return out


#: lane-wise combining op -> LLVM's across-lane reduction (min/max get an s/u prefix by signedness)
_VECTOR_REDUCE = {"add": "add", "min": "min", "max": "max"}


#: lane-wise binary instructions a register slice is pushed through (opname -> IRBuilder method)
_LANE_WISE = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor"}


def _constant(v: ir.Value) -> bool:
    return isinstance(v, ir.Constant) or (isinstance(v, ir.CastInstr) and isinstance(v.operands[0], ir.Constant))


def _widened(v: ir.Value, depth: int) -> bool:
    """Is `v` a zext/sext, or a lane-wise op (at most `depth` deep) of one and constants (which
    InstCombine folds into the bare extension, e.g. usubl(x, 0) = zext(x) - zext(0))? An op with another
    non-constant widened operand is left whole: LLVM keeps it (usubl/usubl2 of both 16-byte registers)."""
    if isinstance(v, ir.CastInstr):
        return v.opname in ("zext", "sext")
    if not (depth > 0 and isinstance(v, ir.Instruction) and v.opname in _LANE_WISE and len(v.operands) == 2):
        return False
    a, b = v.operands
    return (_widened(a, depth - 1) and _constant(b)) or (_constant(a) and _widened(b, depth - 1))


def shuffle_mask(v: ir.instructions.ShuffleVector) -> Optional[list[int]]:
    """The lane indices of a shufflevector's constant mask, or None if a lane is undefined."""
    idx = [getattr(c, "constant", c) for c in v.operands[2].constant]
    return idx if all(isinstance(i, int) for i in idx) else None


def _register_parts(v: ir.Value, reg: int) -> Optional[list[ir.Value]]:
    """The `reg`-lane values `v` concatenates (`ExprEmitter.concat`'s identity shuffles), or None
    where `v` is built otherwise (a permutation of registers). A constant is its own parts."""
    n = v.type.count
    if n == reg or isinstance(v, ir.Constant):
        return [v]
    if isinstance(v, ir.instructions.ShuffleVector):
        x, y, _ = v.operands
        idx = shuffle_mask(v)
        if x.type.count == y.type.count == n // 2 and idx == list(range(n)):
            lo, hi = _register_parts(x, reg), _register_parts(y, reg)
            return lo + hi if lo is not None and hi is not None else None
    return None


def _pairwise_is_concatenation(counts: Sequence[int], want: int) -> bool:
    """Whether `ExprEmitter.concat`'s pairwise scheme (each pair's second part padded or cut to the
    first's length) on parts of `counts` lanes gives their plain concatenation in its first `want`
    lanes. Lanes are followed as runs (part, first lane, lanes); -1 is padding."""
    runs: list[list[tuple[int, int, int]]] = [[(k, 0, n)] for k, n in enumerate(counts)]
    while len(runs) > 1:
        nxt = []
        for i in range(0, len(runs) - 1, 2):
            a, c = runs[i], runs[i + 1]
            la, lc = sum(r[2] for r in a), sum(r[2] for r in c)
            if lc < la:
                c = c + [(-1, 0, la - lc)]
            elif lc > la:
                cut, left = [], la
                for k, lo, n in c:
                    if left > 0:
                        cut.append((k, lo, min(n, left)))
                    left -= n
                c = cut
            nxt.append(a + c)
        if len(runs) % 2:
            nxt.append(runs[-1])
        runs = nxt
    # the plain concatenation's runs, cut to `want` lanes, must start the result
    need, at = min(want, sum(counts)), 0
    for (k, lo, n), part in zip(runs[0], range(len(counts))):
        if at >= need:
            return True
        if (k, lo) != (part, 0) or (n < counts[part] and at + n < need):
            return False
        at += n
    return at >= need


def _mask(idx: Sequence[int]) -> ir.Constant:
    return mask(idx)  # shared (pitchfork/codegen/ir_constants.py)
