"""HVX emitters: one factory per instruction shape, from which the table (pitchfork/targets/hvx.py) builds
each instruction's emitter by handing it the instruction's intrinsics.

Shapes: same-width lane-wise (`lanewise`, with the register-pair `.dv` form; natural order through the
shape every ISA shares, `base.register_by_register`), widening to a de-interleaved pair (`widening`,
with the by-scalar Rt forms), accumulating onto a pair (`accumulate`), `vmpa`, narrowing (`narrowing`:
in-order `vpack` or interleaving `vsat` / `vround` / `vasr` with a shift Rt), by a scalar or the
declared meaning (`scalar_or_fallback`), the non-widening multiplies (`vmpyi`), even / odd halves
(`select_half`), shift-accumulate (`shift_acc`), the zero-point multiply-accumulate
(`zero_point_acc`), and the lane-combining dot products (`vrmpy`, `taps`, `dot_vv`, `pairs`, `vtmpy`).
The intrinsic names live in the table, keyed by operand type names (`Table`), never here.

Invariant (pitchfork/targets/hvx_lanes.py): every emitter returns its value in natural lane order,
for any lane count, and emits the instruction's declared semantics (`fallback`) for an operand it
cannot encode (a scalar Rt that is not a constant, or not a uniform value, in the accepted range), so
the declared semantics hold for every operand.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llvmlite import ir

from fpir.ops import make
from fpir.term import Term
from pitchfork.selection.bounds import bounds
from pitchfork.targets.base import register_by_register
from pitchfork.targets.hvx_lanes import (DEINT, REG_BITS, const_value, deinterleave, fallback, halves, i32_const,
                                         interleave, join, layout_of, operand_types, replicate, runtime_rt,
                                         shuffle, uniform, vec)
from pitchfork.trs.predicate import is_stream

#: an instruction's intrinsics by operand type names: a name, or (name, True) for an intrinsic that
#: takes the operands swapped, or (name, Rt lane bits) for a by-scalar form
Table = Mapping[tuple[str, ...], Any]

# ---------------------------------------------------------------------------------------------
# Lane-wise, widening, accumulating, narrowing

def lanewise(table: Table, pairs: bool = False) -> Callable[..., ir.Value]:
    """Same-width lane-wise instruction (V, V) -> V; follows the operands' lane layout.

    With `pairs` the instruction also has a register-pair form (`<name>.dv`: Vdd = op(Vuu, Vvv), one
    instruction for two registers, Halide's choice for double-width vectors), written when the
    operands span a whole number of pairs. It takes both registers' resources in one packet, so it
    can cost a packet (add hvx128: 8 -> 9) as well as save an instruction (mul hvx128: 26 -> 25 in
    13 packets): pitchfork/backend/hvx_pairs.py keeps it only where the backend's schedule of every
    loop takes no more packets with it, and splits it into single-register instructions elsewhere."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        name = table[operand_types(t)]
        bits = t.type.bits
        n = REG_BITS // bits
        rt = vec(bits, n)
        whole_pairs = pairs and all(a.type.count % (2 * n) == 0 for a in args)
        if whole_pairs:
            def on_pair(*ps: ir.Value) -> ir.Value:
                return em.hvx_call(f"{name}.dv", ps, vec(bits, 2 * n), pair_result=True,
                                   pair_args=[True] * len(ps))
        if layout_of(em, t) == DEINT:
            def pairwise(*ps: ir.Value) -> ir.Value:
                if whole_pairs:
                    return interleave(em, on_pair(*[deinterleave(em, p) for p in ps]))
                hs = [halves(em, deinterleave(em, p)) for p in ps]
                lo = em.hvx_call(name, [h[0] for h in hs], rt)
                hi = em.hvx_call(name, [h[1] for h in hs], rt)
                return interleave(em, join(em, lo, hi))

            return em.map_chunks(args, 2 * n, pairwise)
        if whole_pairs:
            return em.map_chunks(args, 2 * n, on_pair)
        return natural(em, args, t)

    natural = register_by_register(lambda t, n: table[operand_types(t)], lambda em, t: REG_BITS // t.type.bits,
                                   _hvx_call)
    return emit


def _hvx_call(em: Any, name: str, regs: Sequence[ir.Value], result: ir.VectorType) -> ir.Value:
    return em.hvx_call(name, regs, result)


def _scalar_form(em: Any, args: Sequence[ir.Value], t: Term, scalar: Table,
                 first: int) -> tuple[str, ir.Value, int] | None:
    """The by-scalar form when operand `first` or `first + 1` (the two multiplicands) is a constant
    or a uniform runtime value (a splat Param): (intrinsic, Rt, index of the vector multiplicand).
    `scalar` is keyed by the operand types with the scalar one last, and gives (intrinsic, Rt lane
    bits). A constant wins over a runtime splat."""
    key = operand_types(t)
    for runtime in (False, True):
        for const_at, vec_at in ((first + 1, first), (first, first + 1)):
            k = (*key[:first], key[vec_at], key[const_at])
            if k not in scalar:
                continue
            name, rbits = scalar[k]
            c = const_value(t.args[const_at])
            if not runtime and c is not None:
                # Onto a signed accumulator a u8 tap <= 127 is taken as the i8 tap it also is: vmpybus.acc
                # rather than vmpyub.acc (Halide's choice for an i16 sum), same cost; the product of a u8
                # by it is below 2^15, so the 16-bit wrapping accumulation is the same bits.
                signed = (*k[:first], k[first], "i8")
                if first == 1 and k[0][0] == "i" and k[1:] == ("u8", "u8") and 0 <= c <= 127 and signed in scalar:
                    name, rbits = scalar[signed]
                return name, replicate(c, rbits), vec_at
            if runtime and c is None and uniform(em, t.args[const_at]):
                return name, runtime_rt(em, args[const_at], rbits), vec_at
    return None


def _vector_form(table: Table, t: Term) -> tuple[str, bool]:
    entry = table[operand_types(t)]
    return entry if isinstance(entry, tuple) else (entry, False)


def widening(table: Table, scalar: Table | None = None) -> Callable[..., ir.Value]:
    """(V, V) -> W with a de-interleaved result. `table[(tx, ty)]` is the vector form, or
    (name, True) when the intrinsic takes the operands swapped; `scalar[(tx, tc)]` is
    (name, Rt lane bits) for the form whose operand of type tc is a constant (either operand)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[0].type.bits
        n = REG_BITS // bits
        out = vec(2 * bits, n)
        form = _scalar_form(em, args, t, scalar or {}, 0)
        if form is not None:
            sname, rt, at = form
            return em.map_chunks([args[at]], n, lambda a: interleave(em, em.hvx_call(sname, [a, rt], out, True)))
        name, swap = _vector_form(table, t)
        xs = list(reversed(args)) if swap else list(args)
        return em.map_chunks(xs, n, lambda a, b: interleave(em, em.hvx_call(name, [a, b], out, True)))

    return emit


def accumulate(table: Table, scalar: Table | None = None) -> Callable[..., ir.Value]:
    """(W, V, V) -> W: acc + f(y, z) on a de-interleaved accumulator (keys: operand type names;
    `scalar` as for `widening`, keyed (acc, vector, constant))."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[1].type.bits
        n = REG_BITS // bits
        out = vec(2 * bits, n)
        form = _scalar_form(em, args, t, scalar or {}, 1)
        if form is not None:
            sname, rt, at = form

            def by_scalar(a: ir.Value, x: ir.Value) -> ir.Value:
                p = em.hvx_call(sname, [deinterleave(em, a), x, rt], out, True, (True, False))
                return interleave(em, p)

            return em.map_chunks([args[0], args[at]], n, by_scalar)
        name, swap = _vector_form(table, t)
        acc, y, z = args
        if swap:
            y, z = z, y

        def by_vector(a: ir.Value, u: ir.Value, w: ir.Value) -> ir.Value:
            p = em.hvx_call(name, [deinterleave(em, a), u, w], out, True, (True, False, False))
            return interleave(em, p)

        return em.map_chunks([acc, y, z], n, by_vector)

    return emit


def vmpa(table: Table, acc: bool = False) -> Callable[..., ir.Value]:
    """vmpa(x, y, c0, c1) = c0 * widen(x) + c1 * widen(y) (acc: a + ..., the accumulator first): pair
    (lo = x, hi = y), Rt = [c0 c1 c0 c1]. Taps that are constants or uniform runtime values (filter
    taps loaded once) go to Rt; per-lane taps get two vector multiplies (vmpy, vmpy.acc)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        x_t, y_t, c0_t, c1_t = t.args[first:first + 4]
        name = table[(x_t.type.name, c0_t.type.name)] + (".acc" if acc else "")
        c0, c1 = const_value(c0_t), const_value(c1_t)
        if c0 is not None and c1 is not None:
            rt: ir.Value = i32_const((c0 & 0xFF) | (c1 & 0xFF) << 8 | (c0 & 0xFF) << 16 | (c1 & 0xFF) << 24)
        elif all(const_value(c) is not None or uniform(em, c) for c in (c0_t, c1_t)):
            b0, b1 = (em.b.and_(runtime_rt(em, args[first + 2 + k], 32), i32_const(0xFF)) for k in (0, 1))
            rt = em.b.mul(em.b.or_(b0, em.b.shl(b1, i32_const(8))), i32_const(0x00010001))
        elif x_t.type.bits != 8:  # (16-bit data by i8 taps: no vector x vector form)
            return fallback(em, t)
        else:
            first_product = make("hvx.vmpy_acc", t.args[0], x_t, c0_t) if acc else make("hvx.vmpy", x_t, c0_t)
            return em.emit(make("hvx.vmpy_acc", first_product, y_t, c1_t))
        bits = x_t.type.bits
        n = REG_BITS // bits
        out = vec(2 * bits, n)

        def one(*vs: ir.Value) -> ir.Value:
            head = [deinterleave(em, vs[0])] if acc else []
            pair = (True, True) if acc else (True,)
            return interleave(em, em.hvx_call(name, [*head, join(em, vs[-2], vs[-1]), rt], out, True, pair))

        return em.map_chunks(args[:first + 2], n, one)

    return emit


def narrowing(pack: Table, sat: Table, amount: Callable[[Term], int | None] | None = None,
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
        rt = vec(obits, n)
        extra: list[ir.Value] = []
        entry = sat.get(key)
        name = entry[0] if isinstance(entry, tuple) else entry
        if isinstance(entry, tuple):
            extra = [i32_const(entry[1])]
        if amount is not None:
            sh = amount(t)
            runtime = None if sh is not None else _runtime_amount(em, args, t, amount)
            if sh is None and runtime is None:
                return fallback(em, t)
            alt = special(t, sh) if special is not None and sh is not None else None
            if alt is not None:
                name = alt
            else:
                extra = [i32_const(sh) if sh is not None else runtime]
        elif key in pack and (name is None or layout_of(em, t.args[0]) != DEINT):
            pname = pack[key]

            def packed(x: ir.Value) -> ir.Value:
                lo, hi = halves(em, x)
                return em.hvx_call(pname, [hi, lo], rt)

            return em.map_chunks([args[0]], n, packed)
        assert name is not None

        def interleaving(x: ir.Value) -> ir.Value:
            lo, hi = halves(em, deinterleave(em, x))
            return em.hvx_call(name, [hi, lo, *extra], rt)

        return em.map_chunks([args[0]], n, interleaving)

    return emit


def shift_amount(lo: int, hi: int, runtime: tuple[int, int] | None = None) -> Callable[[Term], int | None]:
    """The constant shift Rt when it lies in [lo, hi]. `runtime` = the range a uniform runtime
    amount must provably lie in to be passed as Rt (the instruction reads only the low bits of Rt)."""
    def amount(t: Term) -> int | None:
        c = const_value(t.args[1])
        return c if c is not None and lo <= c <= hi else None

    amount.runtime = runtime or (lo, hi)  # type: ignore[attr-defined]
    return amount


def _in_runtime_range(y: Term, amount: Callable[[Term], int | None]) -> bool:
    """A non-constant shift amount whose bounds lie inside the range the instruction reads exactly
    (`shift_amount`'s `runtime`)."""
    lo, hi = getattr(amount, "runtime", (1, 0))
    if y.is_const:
        return False
    ylo, yhi = bounds(y)
    return lo <= ylo and yhi <= hi


def _runtime_amount(em: Any, args: Sequence[ir.Value], t: Term, amount: Callable[[Term], int | None]) -> ir.Value | None:
    """Rt for a shift amount that is not a constant but uniform (a splat Param) with bounds inside
    the range the instruction reads exactly; None otherwise."""
    y = t.args[1]
    if not _in_runtime_range(y, amount) or not uniform(em, y):
        return None
    return runtime_rt(em, args[1], 32)


def amount_encodable(amount: Callable[[Term], int | None]) -> Callable[[Term], bool]:
    """`encodable` (pitchfork/targets/base.py) for a `narrowing` instruction with the shift Rt =
    `amount(t)`: a constant in range, or a runtime amount that is uniform (`is_uniform_term`: built from
    the frontend's splats) with bounds in the runtime range, the amounts `narrowing` emits as the
    instruction. Any other amount (a splat Param with no clamp: depthwise_conv's `u32` output shift)
    is emitted as the declared semantics, and the target cost then charges it as such, as it charges
    every instruction it cannot encode: synthesis with `hvx.vasr_rnd_sat_h(x, splat)` costed as one
    instruction kept a rule whose code was the semantics written out (hvx128 depthwise_conv 1.013x ->
    0.976x of hand lowering, session 27)."""
    from pitchfork.trs.predicate import is_uniform_term

    def check(t: Term) -> bool:
        y = t.args[1]
        return amount(t) is not None or (_in_runtime_range(y, amount) and is_uniform_term(y))

    # the answer depends on the amount's bounds: synthesis poses such an ISA's uniform tasks inside the
    # narrower ranges the corpus saw too (synth/tasks.py `bounds_encodable_isa`)
    check.reads_bounds = True  # type: ignore[attr-defined]
    return check


def scalar_or_fallback(name: str, rbits: int) -> Callable[..., ir.Value]:
    """(V, R) -> V with the second operand a constant scalar."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        c = const_value(t.args[1])
        if c is None:
            return fallback(em, t)
        bits = t.type.bits
        n = REG_BITS // bits
        rt = vec(bits, n)
        r = replicate(c, rbits)
        return em.map_chunks([args[0]], n, lambda a: em.hvx_call(name, [a, r], rt))

    return emit


# ---------------------------------------------------------------------------------------------
# Multiplies by a scalar, non-widening multiplies, halves, the zero-point multiply-accumulate

def vector_or_scalar(vector: Table, scalar: str, rbits: int) -> Callable[..., ir.Value]:
    """(V, V) -> V by the lane-wise `vector` form; by a constant second operand, the scalar form
    `scalar` with Rt = the constant in every `rbits`-bit lane (vmpyhvsrs / vmpyhsrs: Halide's choice,
    no splat register)."""
    by_vector, by_scalar = lanewise(vector), scalar_or_fallback(scalar, rbits)

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return by_scalar(em, args, t) if t.args[1].is_const else by_vector(em, args, t)

    return emit


def half_width_round(names: Mapping[str, str]) -> Callable[[Term, int], str | None]:
    def special(t: Term, sh: int) -> str | None:
        return names.get(t.args[0].type.name) if sh == t.type.bits else None

    return special


def scalar_or_sequence(scalar: str, rbits: int, sequence: Callable[[Term], Term]) -> Callable[..., ir.Value]:
    """By a constant second operand the scalar form `scalar` (Rt = the constant in every `rbits`-bit
    lane); else the term `sequence(t)` of other declared instructions, exactly equal (vmpyhss: for a
    vector, vmpy(Vu.h, Vv.h) then vasr(.w, .w, #15):sat)."""
    by_scalar = scalar_or_fallback(scalar, rbits)

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return by_scalar(em, args, t) if t.args[1].is_const else em.emit(sequence(t))

    return emit


def zero_point_acc(table: Table) -> Callable[..., ir.Value]:
    """(x - y) << c as x * 2^c accumulated onto -(y << c): the by-scalar multiply-accumulate
    `table[(x type, y type)]` = (name, Rt lane bits) with Rt = 2^c, for a constant c below x's width;
    any other c emits the declared meaning."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return _zero_point_acc(em, args, t, table)

    return emit


def _zero_point_acc(em: Any, args: Sequence[ir.Value], t: Term, table: Table) -> ir.Value:
    c = const_value(t.args[2])
    bits = t.args[0].type.bits
    if c is None or not 0 <= c < bits:
        return fallback(em, t)
    name, rbits = table[operand_types(t)[:2]]
    n = REG_BITS // bits
    out = vec(2 * bits, n)
    y = args[1]
    wide = ir.VectorType(ir.IntType(t.type.bits), y.type.count)
    if y.type != wide:  # a zero point of the data's type: zero-extend it
        y = em.b.zext(y, wide)
    acc = em.b.sub(ir.Constant(y.type, None), em.b.shl(y, ir.Constant(y.type, [c] * y.type.count)))
    rt = replicate(1 << c, rbits)

    def one(a: ir.Value, x: ir.Value) -> ir.Value:
        return interleave(em, em.hvx_call(name, [deinterleave(em, a), x, rt], out, True, (True, False)))

    return em.map_chunks([acc, args[0]], n, one)


def _follow_layout(em: Any, t: Term, args: Sequence[ir.Value], n: int,
                   f: Callable[..., ir.Value]) -> ir.Value:
    """Apply the one-register, lane-wise `f` to `args` in the lane order `t` is cheapest in: on a
    de-interleaved operand (a widening instruction's pair) `f` runs on the two de-interleaved halves
    and the result is re-interleaved, so LLVM cancels the shuffles against the neighbours' and a chain
    widening op -> vmpyi -> accumulate keeps its pairs de-interleaved (as `lanewise` does)."""
    if layout_of(em, t) != DEINT:
        return em.map_chunks(args, n, f)

    def pairwise(*ps: ir.Value) -> ir.Value:
        hs = [halves(em, deinterleave(em, p)) for p in ps]
        return interleave(em, join(em, f(*[h[0] for h in hs]), f(*[h[1] for h in hs])))

    return em.map_chunks(args, 2 * n, pairwise)


def vmpyi(scalar: Mapping[int, Sequence[tuple[str, int]]], vector: Mapping[int, str],
          acc: bool) -> Callable[..., ir.Value]:
    """x * y (acc: x + y * z), every lane modulo 2^bits; signedness does not change the low bits. By a
    constant, the first by-scalar form of `scalar[bits]` ((name, Rt lane bits), in order) whose Rt holds
    it; else the vector form `vector[bits]`; else the declared meaning. Lane-wise, so it follows its
    operands' lane order (`_follow_layout`)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        n = REG_BITS // bits
        rt = vec(bits, n)
        first = 1 if acc else 0
        sfx = ".acc" if acc else ""
        head = [args[0]] if acc else []
        for c_at, v_at in ((first + 1, first), (first, first + 1)):
            c = const_value(t.args[c_at])
            if c is None:
                continue
            sc = ((c + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # as a signed lane value
            for name, rbits in scalar[bits]:
                if -(1 << (rbits - 1)) <= sc < 1 << (rbits - 1):
                    r = replicate(sc, rbits)
                    return _follow_layout(em, t, [*head, args[v_at]], n,
                                          lambda *xs, name=name, r=r: em.hvx_call(name + sfx, [*xs, r], rt))
        if bits in vector:
            name = vector[bits] + sfx
            return _follow_layout(em, t, [*head, args[first], args[first + 1]], n,
                                  lambda *xs: em.hvx_call(name, xs, rt))
        return fallback(em, t)

    return emit


def select_half(pack: Mapping[int, str], shuffles: Mapping[int, str]) -> Callable[..., ir.Value]:
    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        obits = t.type.bits
        n = REG_BITS // obits
        rt = vec(obits, n)
        if layout_of(em, t.args[0]) == DEINT:
            name = shuffles[obits]

            def interleaving(x: ir.Value) -> ir.Value:
                lo, hi = halves(em, deinterleave(em, x))
                return em.hvx_call(name, [hi, lo], rt)

            return em.map_chunks([args[0]], n, interleaving)
        pname = pack[obits]

        def packed(x: ir.Value) -> ir.Value:
            lo, hi = halves(em, x)
            return em.hvx_call(pname, [hi, lo], rt)

        return em.map_chunks([args[0]], n, packed)

    return emit


# ---------------------------------------------------------------------------------------------
# Dot products (lane-combining or over interleaved operands), 3-tap filter

def _word_splat(v: ir.Value) -> ir.Value | None:
    """The i32 `w` if `v` is a splat of one 32-bit word (any lane type), else None: a constant whose
    words are all equal, or the IR the Halide codegen writes for a repeated short vector (`_repeat`:
    bitcast(shufflevector(insertelement(undef, w, 0), undef, zeroinitializer)))."""
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.VectorType) and isinstance(v.constant, list) \
            and isinstance(v.type.element, ir.IntType):
        bits = v.type.element.width
        if 32 % bits or any(not isinstance(c.constant, int) for c in v.constant):
            return None
        per = 32 // bits
        vals = [c.constant & ((1 << bits) - 1) for c in v.constant]
        if len(vals) % per or vals != vals[:per] * (len(vals) // per):
            return None
        return i32_const(sum(x << (bits * k) for k, x in enumerate(vals[:per])))
    if isinstance(v, ir.CastInstr) and v.opname == "bitcast":
        v = v.operands[0]
    if not (isinstance(v, ir.ShuffleVector) and isinstance(v.type.element, ir.IntType)
            and v.type.element.width == 32):
        return None
    src, _, mask = v.operands
    if not (isinstance(mask, ir.Constant) and all(getattr(c, "constant", c) == 0 for c in mask.constant)):
        return None
    if isinstance(src, ir.InsertElement) and isinstance(src.operands[2], ir.Constant) \
            and src.operands[2].constant == 0:
        return src.operands[1]
    return None


def vrmpy(by_vector: Table, by_word: Table) -> Callable[..., ir.Value]:
    """acc + the 4-lane dot products of y and z, by the accumulating forms (`by_vector[(acc, y, z)]`,
    the name ending in .acc), one register of 32 words per 128 bytes of each data operand: by a scalar
    register (`by_word[(data, word)]`) where an operand repeats one word (matmul's broadcast row of A),
    else vector x vector."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return _vrmpy(em, args, t, by_vector, by_word)

    return emit


def _vrmpy(em: Any, args: Sequence[ir.Value], t: Term, by_vector: Table, by_word: Table) -> ir.Value:
    rt = vec(32, REG_BITS // 32)
    types = tuple(a.type.name for a in t.args[1:])
    # Into a constant 0, the plain form (Vd.w = vrmpy(..)): no zero register per output register,
    # which LLVM kept live across conv3x3a32's loop and spilled.
    zero = const_value(t.args[0]) == 0

    def call(name: str, a: ir.Value, ops: list[ir.Value]) -> ir.Value:
        return em.hvx_call(name[:-len(".acc")], ops, rt) if zero else em.hvx_call(name, [a, *ops], rt)

    for data, word in ((1, 2), (2, 1)):
        name = by_word.get((t.args[data].type.name, t.args[word].type.name))
        w = _word_splat(args[word]) if name is not None else None
        if w is not None:
            accs, ys = em.split(args[0], REG_BITS // 32), em.split(args[data], REG_BITS // 8)
            return em.concat([call(name, a, [y, w]) for a, y in zip(accs, ys)], em.lanes)
    name = by_vector[(t.args[0].type.name, *types)]
    accs, ys, zs = (em.split(a, REG_BITS // b) for a, b in zip(args, (32, 8, 8)))
    return em.concat([call(name, a, [y, z]) for a, y, z in zip(accs, ys, zs)], em.lanes)


def _taps_rt(cs: Sequence[int]) -> ir.Constant:
    reps = [cs[k % len(cs)] & 0xFF for k in range(4)]
    return i32_const(reps[0] | reps[1] << 8 | reps[2] << 16 | reps[3] << 24)


def _interleave_n(em: Any, vs: Sequence[ir.Value]) -> ir.Value:
    """interleave_vectors(vs): lane f*i + k = vs[k] lane i."""
    f, n = len(vs), vs[0].type.count
    whole = em.concat(list(vs), f * n)
    return shuffle(em, whole, [k * n + i for i in range(n) for k in range(f)])


def taps(table: Table, f: int, acc: bool) -> Callable[..., ir.Value]:
    """(acc,) x_0..x_{f-1}, c_0..c_{f-1} -> one vdmpy/vrmpy(.acc) per register of interleaved data."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        cs = [const_value(a) for a in t.args[first + f:first + 2 * f]]
        if any(c is None for c in cs):
            return fallback(em, t)
        data = t.args[first].type
        key = (data.name, t.args[first + f].type.name) + ((t.type.name,) if f == 4 else ())
        name = table[key] + (".acc" if acc else "")
        per_reg = REG_BITS // data.bits // f  # result lanes per register of interleaved data
        out = vec(t.type.bits, per_reg)
        rt = _taps_rt([c for c in cs if c is not None])

        def one(*vs: ir.Value) -> ir.Value:
            x = _interleave_n(em, vs[first:first + f])
            return em.hvx_call(name, ([vs[0]] if acc else []) + [x, rt], out)

        return em.map_chunks(args[:first + f], per_reg, one)

    return emit


# ---- four-way dot products of two vector sets: vrmpy(Vu, Vv) on both sets interleaved ----------------
# sum_k x_k * a_k over four separate byte vectors x_0..x_3 and a_0..a_3 (Halide's vrmpy(v.ub, v.ub) check:
# u32(x) * u32(x) + u32(y) * u32(y) + ...): per four registers of each set, the set interleaved by two
# levels of vshuff (bytes, then halfwords: four vshuff; LLVM shares them when the sets are the same
# vectors), then one vector x vector vrmpy per register, results in natural lane order. Declared lane-wise
# over the de-interleaved operands, like vrmpy_taps.
def _interleave_pair(em: Any, x: ir.Value, y: ir.Value, bits: int) -> ir.Value:
    """The `bits`-wide elements of two equal byte vectors interleaved (x first): one vshuff per register pair."""
    t = ir.VectorType(ir.IntType(bits), x.type.count * 8 // bits)
    p = interleave(em, join(em, em.bitcast(x, t), em.bitcast(y, t)))
    return em.bitcast(p, ir.VectorType(ir.IntType(8), 2 * x.type.count))


def dot_vv(table: Table, acc: bool) -> Callable[..., ir.Value]:
    """Per four data registers: bytes of (x, y) and of (z, w) interleaved, then halfwords of the two
    results (Halide's vshuff sequence: four vshuff per operand set), one vrmpy per register
    (`table[(result, x, a)]`, the accumulating name; the plain form drops its .acc)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        key = (t.type.name, t.args[first].type.name, t.args[first + 4].type.name)
        name = table[key] if acc else table[key][:-len(".acc")]
        per_reg = REG_BITS // 32
        out = vec(32, per_reg)

        def quad(vs: Sequence[ir.Value]) -> list[ir.Value]:
            whole = _interleave_pair(em, _interleave_pair(em, vs[0], vs[1], 8), _interleave_pair(em, vs[2], vs[3], 8), 16)
            return em.split(whole, REG_BITS // 8)

        def four(*vs: ir.Value) -> ir.Value:
            xs, ys = quad(vs[first:first + 4]), quad(vs[first + 4:first + 8])
            accs = em.split(vs[0], per_reg) if acc else [None] * len(xs)
            return em.concat([em.hvx_call(name, ([a] if acc else []) + [x, y], out) for a, x, y in zip(accs, xs, ys)],
                             4 * per_reg)

        return em.map_chunks(list(args), 4 * per_reg, four)

    return emit


def pairs(table: Mapping[str, str], acc: bool) -> Callable[..., ir.Value]:
    """(acc +) the pair sums of x times one constant tap c: `table[x type]` with Rt = c in every byte,
    one instruction per register of data, results in natural lane order; a tap that is not a
    constant emits the declared meaning."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        c = const_value(t.args[first + 1])
        if c is None:
            return fallback(em, t)
        bits = t.args[first].type.bits
        name = table[t.args[first].type.name] + (".acc" if acc else "")
        rt = _taps_rt([c, c])
        out = vec(2 * bits, REG_BITS // (2 * bits))
        xs = em.split(args[first], REG_BITS // bits)
        accs = em.split(args[0], REG_BITS // (2 * bits)) if acc else [None] * len(xs)
        return em.concat([em.hvx_call(name, ([a] if acc else []) + [x, rt], out) for a, x in zip(accs, xs)],
                         em.lanes)

    return emit


def pair_dot(name: str) -> Callable[..., ir.Value]:
    """(V.h, V.h) -> V.w combining each pair of adjacent lanes (vdmpyhvsat): one `name` per register of
    16-bit data, results in natural lane order."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        out = vec(32, REG_BITS // 32)
        xs, ys = (em.split(a, REG_BITS // 16) for a in args)
        return em.concat([em.hvx_call(name, [x, y], out) for x, y in zip(xs, ys)], em.lanes)

    return emit


def vtmpy(table: Table) -> Callable[..., ir.Value]:
    """x, y, z, c0, c1 -> c0*x + c1*y + z: one vtmpy (`table[(data, tap)]`) per register of x (A) and of
    z (B), only where the emitter's stream facts say x, y, z read one stream at offsets o, o+1, o+2 and
    the vector has an even number of lanes (pitchfork/targets/hvx.py gives the lane semantics); else
    the declared meaning."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return _vtmpy(em, args, t, table)

    return emit


def _vtmpy(em: Any, args: Sequence[ir.Value], t: Term, table: Table) -> ir.Value:
    c0, c1 = const_value(t.args[3]), const_value(t.args[4])
    if c0 is None or c1 is None or not is_stream(t.args[:3], em.streams) or args[0].type.count % 2:
        return fallback(em, t)
    bits = t.args[0].type.bits
    n = REG_BITS // bits
    out = vec(2 * bits, n)
    rt = _taps_rt([c0, c1])

    def one(a: ir.Value, b: ir.Value) -> ir.Value:
        pair = em.hvx_call(table[(t.args[0].type.name, t.args[3].type.name)], [join(em, a, b), rt], out,
                           True, (True,))
        return interleave(em, pair)

    return em.map_chunks([args[0], args[2]], n, one)


# ---------------------------------------------------------------------------------------------
# Shift and accumulate

def shift_acc(names: Mapping[str, str]) -> Callable[..., ir.Value]:
    """x + (y << c) / x + (y >> c): `names[type]` with Rt = c, for a constant c in [0, bits) (the
    instruction reads its amount modulo the lane width); any other amount emits the declared meaning.
    Lane-wise and of one width, so it follows its operands' lane order."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        return _shift_acc(em, args, t, names)

    return emit


def _shift_acc(em: Any, args: Sequence[ir.Value], t: Term, names: Mapping[str, str]) -> ir.Value:
    bits = t.type.bits
    c = const_value(t.args[2])
    if c is None or not 0 <= c < bits:
        return fallback(em, t)
    name = names[t.type.name]
    n = REG_BITS // bits
    rt = vec(bits, n)
    amount = i32_const(c)
    if layout_of(em, t) == DEINT:
        def pairwise(x: ir.Value, y: ir.Value) -> ir.Value:
            (xl, xh), (yl, yh) = halves(em, deinterleave(em, x)), halves(em, deinterleave(em, y))
            lo = em.hvx_call(name, [xl, yl, amount], rt)
            hi = em.hvx_call(name, [xh, yh, amount], rt)
            return interleave(em, join(em, lo, hi))

        return em.map_chunks(list(args[:2]), 2 * n, pairwise)
    return em.map_chunks(list(args[:2]), n, lambda x, y: em.hvx_call(name, [x, y, amount], rt))
