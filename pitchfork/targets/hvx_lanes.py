"""HVX registers and lane order: the IR helpers every HVX emitter uses, and the static lane-layout analysis.

HVX lane order (ISA_INTRINSICS 2.3.1). Intrinsics take `<32 x i32>` registers (V) or `<64 x i32>`
register pairs (W). A register holds 1024 bits; a value of 2b-bit lanes that comes from one register
of b-bit lanes fills a pair. Widening instructions (vadd/vsub/vmpy/vmpa with a pair result) write a
*de-interleaved* pair: the low register holds the results of the even input lanes, the high one those
of the odd lanes. Interleaving narrowings (`vsat`, `vround`, `vasr ...:sat`) do the inverse: even
output lanes come from the low input register. `vpack ...:sat` narrows an in-order pair in order.

Invariant kept by every emitter (pitchfork/targets/hvx_emit.py): it returns values in natural lane
order, so lane-wise semantics hold for any lane count (operands are split into native registers with
`em.split`, the last one padded). Order is restored with *single-source* `shufflevector`s on the
typed pair (`interleave`, `deinterleave`); LLVM cancels a de-interleave that meets an interleave and
sinks these shuffles through generic lane-wise ops (add, sub, min, ...), so a chain widening op ->
lane-wise ops -> interleaving narrowing keeps its data de-interleaved and needs no `vshuff`/`vdeal`
at all (the layout Halide tracks by hand). Emitters pick the form by a static look at the operand
terms (`layout`), which reads each instruction's declared `layout` (the table's rows,
pitchfork/targets/hvx.py): e.g. a saturating narrowing of a de-interleaved value uses `vsat`, of an
in-order value `vpack:sat`. Only a cost choice: every emitter is exact in either order.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from llvmlite import ir

from fpir.ops import expansion
from fpir.opspec import spec
from fpir.term import Term
from pitchfork.codegen.ir_constants import mask, undef

REG_BITS = 1024

# ---------------------------------------------------------------------------------------------
# IR helpers


def vec(bits: int, lanes: int) -> ir.VectorType:
    return ir.VectorType(ir.IntType(bits), lanes)


def shuffle(em: Any, v: ir.Value, idx: Sequence[int]) -> ir.Value:
    return em.b.shuffle_vector(v, undef(v.type), mask(idx))


def interleave(em: Any, p: ir.Value) -> ir.Value:
    """[even results | odd results] (a widening instruction's pair) -> natural lane order."""
    n = p.type.count
    h = n // 2
    return shuffle(em, p, [i // 2 + (h if i % 2 else 0) for i in range(n)])


def deinterleave(em: Any, v: ir.Value) -> ir.Value:
    """Natural lane order -> [even lanes | odd lanes] (what interleaving narrowings read)."""
    n = v.type.count
    return shuffle(em, v, [2 * i for i in range(n // 2)] + [2 * i + 1 for i in range(n // 2)])


def halves(em: Any, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    n = v.type.count
    return shuffle(em, v, range(n // 2)), shuffle(em, v, range(n // 2, n))


def join(em: Any, lo: ir.Value, hi: ir.Value) -> ir.Value:
    return em.b.shuffle_vector(lo, hi, mask(range(2 * lo.type.count)))


def i32_const(v: int) -> ir.Constant:
    v &= 0xFFFFFFFF
    return ir.Constant(ir.IntType(32), v - (1 << 32) if v >= 1 << 31 else v)


def replicate(value: int, bits: int) -> ir.Constant:
    """A scalar operand `Rt` holding `value` in every byte (bits 8) or halfword (bits 16) lane."""
    if bits == 8:
        return i32_const((value & 0xFF) * 0x01010101)
    if bits == 16:
        return i32_const((value & 0xFFFF) * 0x00010001)
    return i32_const(value)


def is_broadcast(v: ir.Value) -> bool:
    """`v` is a splat built as Halide leaves and kernels build it: a single-lane insertelement, or a
    shufflevector of one with an all-zero mask."""
    if isinstance(v, ir.instructions.InsertElement):
        return isinstance(v.type, ir.VectorType) and v.type.count == 1
    if not isinstance(v, ir.instructions.ShuffleVector):
        return False
    src, m = v.operands[0], v.operands[2]
    return (isinstance(src, ir.instructions.InsertElement) and isinstance(src.operands[2], ir.Constant)
            and src.operands[2].constant == 0 and isinstance(m, ir.Constant)
            and all(getattr(c, "constant", c) == 0 for c in m.constant))


def uniform(em: Any, t: Term) -> bool:
    """Every lane of `t` has the same value: its leaves are constants or variables the emitter's
    environment holds as splats (a Param, a value loaded once), combined by lane-wise ops only."""
    for n in t.walk():
        if n.is_const:
            continue
        if n.op == "var":
            v = em.env.get(n.name)
            if v is None or not is_broadcast(v):
                return False
            continue
        s = spec(n.op)
        if getattr(s, "reduce", None) or getattr(s, "combines_lanes", False) or getattr(s, "lanes", None):
            return False
    return True


def runtime_rt(em: Any, v: ir.Value, bits: int) -> ir.Value:
    """Rt from lane 0 of the uniform vector `v` (LLVM folds the extract into the scalar and hoists
    what is loop-invariant): the `bits`-bit value replicated over the 32-bit register."""
    s = em.b.extract_element(v, ir.Constant(ir.IntType(32), 0))
    w = s.type.width
    t32 = ir.IntType(32)
    if w > bits:
        s = em.b.trunc(s, ir.IntType(bits))
    if bits == 32:
        return s if w == 32 else (em.b.zext(s, t32) if w < 32 else em.b.trunc(s, t32))
    s = em.b.zext(s, t32)
    return em.b.mul(s, i32_const(0x01010101 if bits == 8 else 0x00010001))


def fallback(em: Any, t: Term) -> ir.Value:
    """Emit the instruction's own semantics: every emitter's answer to an operand it cannot encode (not
    a usable constant), so the declared semantics hold for every operand."""
    return em.emit(expansion(t))


def declared_meaning(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """The emitter of an instruction declared as a sequence of other declared instructions: its
    semantics, emitted as they are written."""
    return fallback(em, t)


def const_value(t: Term) -> int | None:
    return t.value if t.is_const else None


def operand_types(t: Term) -> tuple[str, ...]:
    """The operand type names: how the table's intrinsic maps are keyed."""
    return tuple(a.type.name for a in t.args)


# ---------------------------------------------------------------------------------------------
# Lane layout of operand terms

NATURAL, DEINT, ANY = "natural", "deint", "any"
#: the `layout` a table row declares (base.target_op): a widening instruction's de-interleaved pair
#: result, or a same-width lane-wise instruction that follows its operands' layout
DEINT_RESULT, LANEWISE = "deint", "lanewise"
_LANEWISE_PRIMS = frozenset({"add", "sub", "mul", "and", "or", "xor", "not", "min", "max", "reinterpret"})


def _declared(op: str) -> str:
    s = spec(op)
    return s.meta.get("layout", "") if s.kind == "target" else ""


@lru_cache(maxsize=65536)
def layout(t: Term, uniform_names: frozenset[str] = frozenset()) -> str:
    """Which lane order is cheapest to produce `t` in: DEINT if it is computed from widening
    instructions' results by lane-wise same-width ops only (so its value exists de-interleaved
    before the restoring shuffle), ANY for constants and for values equal in every lane (variables
    named in `uniform_names`, the splats of the emitter's environment: `layouts`, and lane-wise ops
    of those only), else NATURAL. Only a cost choice: every emitter is exact in either order."""
    if not t.args:
        return layout_step(t, (), uniform_names)
    if _declared(t.op) == DEINT_RESULT:
        return DEINT
    return layout_step(t, tuple(layout(a, uniform_names) for a in t.args), uniform_names)


def layout_step(t: Term, arg_layouts: tuple[str, ...], uniform_names: frozenset[str] = frozenset()) -> str:
    """`layout(t)` from its operands' layouts (`arg_layouts`, in order): the one step of the analysis,
    for callers that walk terms bottom-up themselves (the HVX lowering cost, pitchfork/targets/hvx_cost.py)."""
    if t.is_const:
        return ANY
    if not t.args:
        return ANY if t.op == "var" and t.name in uniform_names else NATURAL
    declared = _declared(t.op)
    if declared == DEINT_RESULT:
        return DEINT
    kinds = set(arg_layouts) - {ANY}
    if not kinds and not _combines_lanes(t.op):
        return ANY  # e.g. a widened splat: every lane the same
    if not is_lanewise(t, arg_layouts):
        return NATURAL
    if kinds == {DEINT}:
        return DEINT
    return ANY if not kinds else NATURAL


def is_lanewise(t: Term, arg_layouts: tuple[str, ...]) -> bool:
    """`t` is computed lane by lane in whichever order its operands are in (a same-width lane-wise
    primitive or LANEWISE instruction, a shift by a uniform amount): what `layout_step` follows."""
    return (t.op in _LANEWISE_PRIMS or _declared(t.op) == LANEWISE
            or (t.op in ("shl", "shr") and arg_layouts[1] == ANY)) and all(a.type.bits == t.type.bits for a in t.args)


def _combines_lanes(op: str) -> bool:
    s = spec(op)
    return bool(getattr(s, "reduce", None) or getattr(s, "combines_lanes", False) or getattr(s, "lanes", None))


def layouts(em: Any) -> frozenset[str]:
    """The names of the emitter's environment bound to splats (the `uniform_names` of `layout`),
    computed once per emitter."""
    got = getattr(em, "_hvx_uniform_names", None)
    if got is None:
        got = frozenset(k for k, v in em.env.items() if is_broadcast(v))
        em._hvx_uniform_names = got
    return got


def layout_of(em: Any, t: Term) -> str:
    """`layout(t)` with the emitter's splats as uniform values."""
    return layout(t, layouts(em))
