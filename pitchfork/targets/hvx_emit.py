"""HVX emission helpers shared by the instruction tables (hvx.py, hvx_dot.py, hvx_shift.py).

Holds what the per-instruction declarations are built from, and nothing target-table specific:
LLVM IR helpers for HVX registers and pairs (`_interleave`, `_deinterleave`, `_halves`, ...), the
static lane-layout analysis of operand terms (`_layout`), the emitter factories for each instruction
shape (lane-wise, widening, accumulating, vmpa, narrowing, by-scalar), `_declare` (which registers
a target op and records its layout class) and the cost constants.

HVX lane order (ISA_INTRINSICS 2.3.1). Intrinsics take `<32 x i32>` registers (V) or `<64 x i32>`
register pairs (W). A register holds 1024 bits; a value of 2b-bit lanes that comes from one register
of b-bit lanes fills a pair. Widening instructions (vadd/vsub/vmpy/vmpa with a pair result) write a
*de-interleaved* pair: the low register holds the results of the even input lanes, the high one those
of the odd lanes. Interleaving narrowings (`vsat`, `vround`, `vasr ...:sat`) do the inverse: even
output lanes come from the low input register. `vpack ...:sat` narrows an in-order pair in order.

Invariant: every emitter returns values in natural lane order, so lane-wise semantics hold for any
lane count (operands are split into native registers with `em.split`, the last one padded). Order is
restored with *single-source* `shufflevector`s on the typed pair (`_interleave`, `_deinterleave`);
LLVM cancels a de-interleave that meets an interleave and sinks these shuffles through generic
lane-wise ops (add, sub, min, ...), so a chain widening op -> lane-wise ops -> interleaving narrowing
keeps its data de-interleaved and needs no `vshuff`/`vdeal` at all (the layout Halide tracks by hand).
Emitters pick the form by a static look at the operand terms (`_layout`): e.g. a saturating narrowing
of a de-interleaved value uses `vsat`, of an in-order value `vpack:sat`. Operands an instruction needs
as a scalar (`Rt`) must be constants of the accepted range; otherwise the emitter falls back to the
instruction's own semantics (generic code), so the declared semantics hold for every operand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import Any

from llvmlite import ir

from fpir.ops import expansion
from fpir.term import Term
from pitchfork.codegen.ir_constants import mask
from pitchfork.targets.base import Signature, target_op

REG_BITS = 1024

# ---------------------------------------------------------------------------------------------
# IR helpers


def _vec(bits: int, lanes: int) -> ir.VectorType:
    return ir.VectorType(ir.IntType(bits), lanes)


def _mask(idx: Sequence[int]) -> ir.Constant:
    return mask(idx)  # shared (pitchfork/codegen/ir_constants.py)


def _shuffle(em: Any, v: ir.Value, idx: Sequence[int]) -> ir.Value:
    return em.b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), _mask(idx))


def _interleave(em: Any, p: ir.Value) -> ir.Value:
    """[even results | odd results] (a widening instruction's pair) -> natural lane order."""
    n = p.type.count
    h = n // 2
    return _shuffle(em, p, [i // 2 + (h if i % 2 else 0) for i in range(n)])


def _deinterleave(em: Any, v: ir.Value) -> ir.Value:
    """Natural lane order -> [even lanes | odd lanes] (what interleaving narrowings read)."""
    n = v.type.count
    return _shuffle(em, v, [2 * i for i in range(n // 2)] + [2 * i + 1 for i in range(n // 2)])


def _halves(em: Any, v: ir.Value) -> tuple[ir.Value, ir.Value]:
    n = v.type.count
    return _shuffle(em, v, range(n // 2)), _shuffle(em, v, range(n // 2, n))


def _join(em: Any, lo: ir.Value, hi: ir.Value) -> ir.Value:
    return em.b.shuffle_vector(lo, hi, _mask(range(2 * lo.type.count)))


def _i32(v: int) -> ir.Constant:
    v &= 0xFFFFFFFF
    return ir.Constant(ir.IntType(32), v - (1 << 32) if v >= 1 << 31 else v)


def _replicate(value: int, bits: int) -> ir.Constant:
    """A scalar operand `Rt` holding `value` in every byte (bits 8) or halfword (bits 16) lane."""
    if bits == 8:
        return _i32((value & 0xFF) * 0x01010101)
    if bits == 16:
        return _i32((value & 0xFFFF) * 0x00010001)
    return _i32(value)


def _is_broadcast(v: ir.Value) -> bool:
    """`v` is a splat built as Halide leaves and kernels build it: a single-lane insertelement, or a
    shufflevector of one with an all-zero mask."""
    if isinstance(v, ir.instructions.InsertElement):
        return isinstance(v.type, ir.VectorType) and v.type.count == 1
    if not isinstance(v, ir.instructions.ShuffleVector):
        return False
    src, mask = v.operands[0], v.operands[2]
    return (isinstance(src, ir.instructions.InsertElement) and isinstance(src.operands[2], ir.Constant)
            and src.operands[2].constant == 0 and isinstance(mask, ir.Constant)
            and all(getattr(m, "constant", m) == 0 for m in mask.constant))


def _uniform(em: Any, t: Term) -> bool:
    """Every lane of `t` has the same value: its leaves are constants or variables the emitter's
    environment holds as splats (a Param, a value loaded once), combined by lane-wise ops only."""
    from fpir.opspec import spec

    for n in t.walk():
        if n.is_const:
            continue
        if n.op == "var":
            v = em.env.get(n.name)
            if v is None or not _is_broadcast(v):
                return False
            continue
        s = spec(n.op)
        if getattr(s, "reduce", None) or getattr(s, "combines_lanes", False) or getattr(s, "lanes", None):
            return False
    return True


def _runtime_rt(em: Any, v: ir.Value, bits: int) -> ir.Value:
    """Rt from lane 0 of the uniform vector `v` (LLVM folds the extract into the scalar and hoists
    what is loop-invariant): the `bits`-bit value replicated over the 32-bit register."""
    s = em.b.extract_element(v, ir.Constant(ir.IntType(32), 0))
    w = s.type.width
    i32 = ir.IntType(32)
    if w > bits:
        s = em.b.trunc(s, ir.IntType(bits))
    if bits == 32:
        return s if w == 32 else (em.b.zext(s, i32) if w < 32 else em.b.trunc(s, i32))
    s = em.b.zext(s, i32)
    return em.b.mul(s, _i32(0x01010101 if bits == 8 else 0x00010001))


def _fallback(em: Any, t: Term) -> ir.Value:
    """Emit the instruction's own semantics (used when an operand is not a usable constant)."""
    return em.emit(expansion(t))


def _const(t: Term) -> int | None:
    return t.value if t.is_const else None


def _key(t: Term) -> tuple[str, ...]:
    return tuple(a.type.name for a in t.args)


# ---------------------------------------------------------------------------------------------
# Lane layout of operand terms

NATURAL, DEINT, ANY = "natural", "deint", "any"
_DEINT_OPS: set[str] = set()  # instructions whose pair result is naturally de-interleaved
_LANEWISE_OPS: set[str] = set()  # same-width lane-wise instructions that follow their operands' layout
_LANEWISE_PRIMS = frozenset({"add", "sub", "mul", "and", "or", "xor", "not", "min", "max", "reinterpret"})


@lru_cache(maxsize=65536)
def _layout(t: Term, uniform: frozenset[str] = frozenset()) -> str:
    """Which lane order is cheapest to produce `t` in: DEINT if it is computed from widening
    instructions' results by lane-wise same-width ops only (so its value exists de-interleaved
    before the restoring shuffle), ANY for constants and for values equal in every lane (variables
    named in `uniform`, the splats of the emitter's environment: `_layouts`, and lane-wise ops of
    those only), else NATURAL. Only a cost choice: every emitter is exact in either order."""
    if t.is_const:
        return ANY
    if not t.args:
        return ANY if t.op == "var" and t.name in uniform else NATURAL
    if t.op in _DEINT_OPS:
        return DEINT
    kinds = {_layout(a, uniform) for a in t.args} - {ANY}
    if not kinds and not _combines_lanes(t.op):
        return ANY  # e.g. a widened splat: every lane the same
    lanewise = t.op in _LANEWISE_PRIMS or t.op in _LANEWISE_OPS or (
        t.op in ("shl", "shr") and _layout(t.args[1], uniform) == ANY)
    if not lanewise or any(a.type.bits != t.type.bits for a in t.args):
        return NATURAL
    if kinds == {DEINT}:
        return DEINT
    return ANY if not kinds else NATURAL


def _combines_lanes(op: str) -> bool:
    from fpir.opspec import spec

    s = spec(op)
    return bool(getattr(s, "reduce", None) or getattr(s, "combines_lanes", False) or getattr(s, "lanes", None))


def _layouts(em: Any) -> frozenset[str]:
    """The names of the emitter's environment bound to splats (the `uniform` of `_layout`),
    computed once per emitter."""
    got = getattr(em, "_hvx_uniform_names", None)
    if got is None:
        got = frozenset(k for k, v in em.env.items() if _is_broadcast(v))
        em._hvx_uniform_names = got
    return got


# ---------------------------------------------------------------------------------------------
# Emitters

Table = Mapping[tuple[str, ...], Any]


def _lanewise(table: Table, pairs: bool = False) -> Callable[..., ir.Value]:
    """Same-width lane-wise instruction (V, V) -> V; follows the operands' lane layout.

    With `pairs` the instruction also has a register-pair form (`<name>.dv`: Vdd = op(Vuu, Vvv), one
    instruction for two registers, Halide's choice for double-width vectors), written when the
    operands span a whole number of pairs. It takes both registers' resources in one packet, so it
    can cost a packet (add hvx128: 8 -> 9) as well as save an instruction (mul hvx128: 26 -> 25 in
    13 packets): pitchfork/backend/hvx_pairs.py keeps it only where the backend's schedule of every
    loop takes no more packets with it, and splits it into single-register instructions elsewhere."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        name = table[_key(t)]
        bits = t.type.bits
        n = REG_BITS // bits
        rt = _vec(bits, n)
        whole_pairs = pairs and all(a.type.count % (2 * n) == 0 for a in args)
        if whole_pairs:
            def on_pair(*ps: ir.Value) -> ir.Value:
                return em.hvx_call(f"{name}.dv", ps, _vec(bits, 2 * n), pair_result=True,
                                   pair_args=[True] * len(ps))
        if _layout(t, _layouts(em)) == DEINT:
            def pairwise(*ps: ir.Value) -> ir.Value:
                if whole_pairs:
                    return _interleave(em, on_pair(*[_deinterleave(em, p) for p in ps]))
                halves = [_halves(em, _deinterleave(em, p)) for p in ps]
                lo = em.hvx_call(name, [h[0] for h in halves], rt)
                hi = em.hvx_call(name, [h[1] for h in halves], rt)
                return _interleave(em, _join(em, lo, hi))

            return em.map_chunks(args, 2 * n, pairwise)
        if whole_pairs:
            return em.map_chunks(args, 2 * n, on_pair)
        return em.map_chunks(args, n, lambda *xs: em.hvx_call(name, xs, rt))

    return emit


def _scalar_form(em: Any, args: Sequence[ir.Value], t: Term, scalar: Table,
                 first: int) -> tuple[str, ir.Value, int] | None:
    """The by-scalar form when operand `first` or `first + 1` (the two multiplicands) is a constant
    or a uniform runtime value (a splat Param): (intrinsic, Rt, index of the vector multiplicand).
    `scalar` is keyed by the operand types with the scalar one last, and gives (intrinsic, Rt lane
    bits). A constant wins over a runtime splat."""
    key = _key(t)
    for runtime in (False, True):
        for const_at, vec_at in ((first + 1, first), (first, first + 1)):
            k = (*key[:first], key[vec_at], key[const_at])
            if k not in scalar:
                continue
            name, rbits = scalar[k]
            c = _const(t.args[const_at])
            if not runtime and c is not None:
                # Onto a signed accumulator a u8 tap <= 127 is taken as the i8 tap it also is: vmpybus.acc
                # rather than vmpyub.acc (Halide's choice for an i16 sum), same cost; the product of a u8
                # by it is below 2^15, so the 16-bit wrapping accumulation is the same bits.
                signed = (*k[:first], k[first], "i8")
                if first == 1 and k[0][0] == "i" and k[1:] == ("u8", "u8") and 0 <= c <= 127 and signed in scalar:
                    name, rbits = scalar[signed]
                return name, _replicate(c, rbits), vec_at
            if runtime and c is None and _uniform(em, t.args[const_at]):
                return name, _runtime_rt(em, args[const_at], rbits), vec_at
    return None


def _vector_form(table: Table, t: Term) -> tuple[str, bool]:
    entry = table[_key(t)]
    return entry if isinstance(entry, tuple) else (entry, False)


def _widening(table: Table, scalar: Table | None = None) -> Callable[..., ir.Value]:
    """(V, V) -> W with a de-interleaved result. `table[(tx, ty)]` is the vector form, or
    (name, True) when the intrinsic takes the operands swapped; `scalar[(tx, tc)]` is
    (name, Rt lane bits) for the form whose operand of type tc is a constant (either operand)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[0].type.bits
        n = REG_BITS // bits
        out = _vec(2 * bits, n)
        form = _scalar_form(em, args, t, scalar or {}, 0)
        if form is not None:
            sname, rt, at = form
            return em.map_chunks([args[at]], n, lambda a: _interleave(em, em.hvx_call(sname, [a, rt], out, True)))
        name, swap = _vector_form(table, t)
        xs = list(reversed(args)) if swap else list(args)
        return em.map_chunks(xs, n, lambda a, b: _interleave(em, em.hvx_call(name, [a, b], out, True)))

    return emit


def _accumulate(table: Table, scalar: Table | None = None) -> Callable[..., ir.Value]:
    """(W, V, V) -> W: acc + f(y, z) on a de-interleaved accumulator (keys: operand type names;
    `scalar` as for `_widening`, keyed (acc, vector, constant))."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[1].type.bits
        n = REG_BITS // bits
        out = _vec(2 * bits, n)
        form = _scalar_form(em, args, t, scalar or {}, 1)
        if form is not None:
            sname, rt, at = form

            def by_scalar(a: ir.Value, x: ir.Value) -> ir.Value:
                p = em.hvx_call(sname, [_deinterleave(em, a), x, rt], out, True, (True, False))
                return _interleave(em, p)

            return em.map_chunks([args[0], args[at]], n, by_scalar)
        name, swap = _vector_form(table, t)
        acc, y, z = args
        if swap:
            y, z = z, y

        def by_vector(a: ir.Value, u: ir.Value, w: ir.Value) -> ir.Value:
            p = em.hvx_call(name, [_deinterleave(em, a), u, w], out, True, (True, False, False))
            return _interleave(em, p)

        return em.map_chunks([acc, y, z], n, by_vector)

    return emit


def _vmpa(table: Table, acc: bool = False) -> Callable[..., ir.Value]:
    """vmpa(x, y, c0, c1) = c0 * widen(x) + c1 * widen(y) (acc: a + ..., the accumulator first): pair
    (lo = x, hi = y), Rt = [c0 c1 c0 c1]. Taps that are constants or uniform runtime values (filter
    taps loaded once) go to Rt; per-lane taps get two vector multiplies (vmpy, vmpy.acc)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        x_t, y_t, c0_t, c1_t = t.args[first:first + 4]
        name = table[(x_t.type.name, c0_t.type.name)] + (".acc" if acc else "")
        c0, c1 = _const(c0_t), _const(c1_t)
        if c0 is not None and c1 is not None:
            rt: ir.Value = _i32((c0 & 0xFF) | (c1 & 0xFF) << 8 | (c0 & 0xFF) << 16 | (c1 & 0xFF) << 24)
        elif all(_const(c) is not None or _uniform(em, c) for c in (c0_t, c1_t)):
            b0, b1 = (em.b.and_(_runtime_rt(em, args[first + 2 + k], 32), _i32(0xFF)) for k in (0, 1))
            rt = em.b.mul(em.b.or_(b0, em.b.shl(b1, _i32(8))), _i32(0x00010001))
        elif x_t.type.bits != 8:  # (16-bit data by i8 taps: no vector x vector form)
            return _fallback(em, t)
        else:
            from fpir.ops import make

            first_product = make("hvx.vmpy_acc", t.args[0], x_t, c0_t) if acc else make("hvx.vmpy", x_t, c0_t)
            return em.emit(make("hvx.vmpy_acc", first_product, y_t, c1_t))
        bits = x_t.type.bits
        n = REG_BITS // bits
        out = _vec(2 * bits, n)

        def one(*vs: ir.Value) -> ir.Value:
            head = [_deinterleave(em, vs[0])] if acc else []
            pair = (True, True) if acc else (True,)
            return _interleave(em, em.hvx_call(name, [*head, _join(em, vs[-2], vs[-1]), rt], out, True, pair))

        return em.map_chunks(args[:first + 2], n, one)

    return emit


def _narrowing(pack: Table, sat: Table, amount: Callable[[Term], int | None] | None = None,
               special: Callable[[Term, int], str | None] | None = None) -> Callable[..., ir.Value]:
    """2n-bit lanes -> n-bit lanes. `pack[type]` names an in-order `vpack` form (Vu = hi, Vv = lo),
    `sat[type]` an interleaving form (`vsat`/`vround`/`vasr`), used when the operand is
    de-interleaved or no pack form exists. With `amount`, the interleaving form takes the scalar
    shift Rt = amount(t) (None: not encodable, emit the semantics); `special(t, shift)` may name a
    dedicated instruction without Rt (vround for a shift by half the width)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        key = t.args[0].type.name
        obits = t.type.bits
        n = REG_BITS // obits
        rt = _vec(obits, n)
        extra: list[ir.Value] = []
        entry = sat.get(key)
        name = entry[0] if isinstance(entry, tuple) else entry
        if isinstance(entry, tuple):
            extra = [_i32(entry[1])]
        if amount is not None:
            sh = amount(t)
            runtime = None if sh is not None else _runtime_amount(em, args, t, amount)
            if sh is None and runtime is None:
                return _fallback(em, t)
            alt = special(t, sh) if special is not None and sh is not None else None
            if alt is not None:
                name = alt
            else:
                extra = [_i32(sh) if sh is not None else runtime]
        elif key in pack and (name is None or _layout(t.args[0], _layouts(em)) != DEINT):
            pname = pack[key]

            def packed(x: ir.Value) -> ir.Value:
                lo, hi = _halves(em, x)
                return em.hvx_call(pname, [hi, lo], rt)

            return em.map_chunks([args[0]], n, packed)
        assert name is not None

        def interleaving(x: ir.Value) -> ir.Value:
            lo, hi = _halves(em, _deinterleave(em, x))
            return em.hvx_call(name, [hi, lo, *extra], rt)

        return em.map_chunks([args[0]], n, interleaving)

    return emit


def _shift_amount(lo: int, hi: int, runtime: tuple[int, int] | None = None) -> Callable[[Term], int | None]:
    """The constant shift Rt when it lies in [lo, hi]. `runtime` = the range a uniform runtime
    amount must provably lie in to be passed as Rt (the instruction reads only the low bits of Rt)."""
    def amount(t: Term) -> int | None:
        c = _const(t.args[1])
        return c if c is not None and lo <= c <= hi else None

    amount.runtime = runtime or (lo, hi)  # type: ignore[attr-defined]
    return amount


def _runtime_amount(em: Any, args: Sequence[ir.Value], t: Term, amount: Callable[[Term], int | None]) -> ir.Value | None:
    """Rt for a shift amount that is not a constant but uniform (a splat Param) with bounds inside
    the range the instruction reads exactly; None otherwise."""
    from pitchfork.selection.bounds import bounds

    lo, hi = getattr(amount, "runtime", (1, 0))
    y = t.args[1]
    if y.is_const or not _uniform(em, y):
        return None
    ylo, yhi = bounds(y)
    if ylo < lo or yhi > hi:
        return None
    return _runtime_rt(em, args[1], 32)


def _scalar_or_fallback(name: str, rbits: int) -> Callable[..., ir.Value]:
    """(V, R) -> V with the second operand a constant scalar."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        c = _const(t.args[1])
        if c is None:
            return _fallback(em, t)
        bits = t.type.bits
        n = REG_BITS // bits
        rt = _vec(bits, n)
        r = _replicate(c, rbits)
        return em.map_chunks([args[0]], n, lambda a: em.hvx_call(name, [a, r], rt))

    return emit


def _declare(name: str, signatures: Sequence[str], semantics: Any, emit: Callable[..., ir.Value],
             cost: int, llvm: str, layout: str = NATURAL) -> None:
    target_op(name, signatures, semantics, emit, cost=cost, llvm=llvm)
    if layout == DEINT:
        _DEINT_OPS.add(name)
    elif layout == "lanewise":
        _LANEWISE_OPS.add(name)


def _sigs(table: Table, result: Callable[[tuple[str, ...]], str]) -> list[str]:
    return [f"{', '.join(k)} -> {result(k)}" for k in table]


def _wide_name(name: str) -> str:
    return f"{name[0]}{int(name[1:]) * 2}"


def _unsigned(name: str) -> str:
    return "u" + name[1:]


# ---------------------------------------------------------------------------------------------
# Cost model: one packet slot per instruction writing one register, two for a register pair
# (widening instructions, accumulations). Generic primitives cost 1, FPIR ops left to the generic
# expansion 8 (pitchfork.targets.target_cost).

ONE, PAIR = 1, 2

