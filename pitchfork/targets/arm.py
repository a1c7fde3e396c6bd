"""AArch64 Neon instruction table (ISA_INTRINSICS.md section 2.2): every instruction the ARM lowering
rules (rules/lower/arm_neon.rules) may emit, declared once.

Each row of `TABLE` (a `base.Inst`, declared by `base.declare`) gives the signatures the instruction
exists for (`_sigs` spells a family from one shape: '{w}, {t} -> {w}'), its lane-wise meaning as FPIR
text over x, y, z, its cost and how to emit it for any lane count. The cost model counts instructions (each
costs 1 per native register; a fused form is one instruction where the unfused sequence needs two or
three), the measure the paper's Figure 3 compares. Emission:

* intrinsic instructions call `llvm.aarch64.neon.<op>.<suffix>` on 128-bit registers (a 64-bit one
  when the whole vector fits); widening ones (umull, smull, umlal, ...) read 64-bit halves, which LLVM
  turns into the `...2` forms for the high halves; narrowing ones return 64-bit halves;
* instructions LLVM has no intrinsic for (uaddl, usubl, uaddw, ushll, shrn, addhn, subhn, neg, uabdl,
  uaba, uabal, umlal, ursra) are emitted as the exact generic IR pattern LLVM's instruction selection
  turns into them (section 2.2.4; ursra is `add acc, urshl(y, splat(-c))`);
* immediates (narrowing shifts, sqshlu) must be IR constants in the instruction's range; for any
  other operand the emitter falls back to the primitive expansion of the declared meaning, so the
  semantics hold for every operand, and the lowering rules only fire where the immediate is legal.

Hardware facts encoded in the meanings (checked by running under qemu-aarch64 in
tests/pitchfork/targets/test_arm.py): the register shift instructions (urshl, srshl, sqshl, uqshl)
read only the low byte of each shift lane as a signed amount, so their meaning sign-extends that
byte; `sabd` returns the unsigned difference. The dot products (udot/sdot, feature `dotprod`) combine lanes:
lane j of the i32 accumulator adds the four products of byte lanes 4j..4j+3, declared with
`vector_reduce_add_x4` and operand lanes (1, 4, 4); the pairwise adds (uaddlp/saddlp/uadalp/sadalp/addp)
likewise with `vector_reduce_add_x2`, and umaxp/smaxp/uminp/sminp with `vector_reduce_max/min_x2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir

from fpir.ops import expansion, make, template
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.targets.base import Inst, Signature, declare, encodable, immediate, register_by_register

NEON = "llvm.aarch64.neon"
U8_32 = ("u8", "u16", "u32")
I8_32 = ("i8", "i16", "i32")
U8_64 = (*U8_32, "u64")
I8_64 = (*I8_32, "i64")

Emit = Callable[[Any, Sequence[ir.Value], Term], ir.Value]


# ---------------------------------------------------------------------------------------------
# Signature helpers


def _wide(t: str) -> str:
    return f"{t[0]}{2 * int(t[1:])}"


def _narrow(t: str) -> str:
    return f"{t[0]}{int(t[1:]) // 2}"


def _signed(t: str) -> str:
    return "i" + t[1:]


def _unsigned(t: str) -> str:
    return "u" + t[1:]


def _same(types: Sequence[str], arity: int) -> list[str]:
    return [", ".join([t] * arity) + f" -> {t}" for t in types]


def _sigs(shape: str, types: Sequence[str]) -> list[str]:
    """One signature per type t of `shape`, in which {t} is t, {u}/{s} its unsigned/signed twin, {w}/{n}
    the type twice/half as wide, {uw}/{sw}/{un} the unsigned or signed wide or narrow type:
    `_sigs("{w}, {t} -> {w}", U8_32)` is uaddw's 'u16, u8 -> u16', 'u32, u16 -> u32', 'u64, u32 -> u64'."""
    return [shape.format(t=t, u=_unsigned(t), s=_signed(t), w=_wide(t), n=_narrow(t), uw=_unsigned(_wide(t)),
                         sw=_signed(_wide(t)), un=_unsigned(_narrow(t))) for t in types]


def _sext_low_byte(name: str, t: ScalarType) -> str:
    """The signed shift amount a Neon register shift reads: the low byte of the lane, sign-extended."""
    return name if t.bits == 8 else f"{t.name}(i8({name}))"


# ---------------------------------------------------------------------------------------------
# Emitters


def _vec(bits: int, lanes: int) -> ir.VectorType:
    return ir.VectorType(ir.IntType(bits), lanes)


def _chunk(lanes: int, bits: int) -> int:
    """Lanes per register: a 64-bit register when the whole vector fits in one, else 128-bit ones."""
    return 64 // bits if lanes * bits <= 64 and bits < 64 else 128 // bits


def _primitives(term: Term) -> Term:
    """`term` with every FPIR/target op replaced by its definition, down to primitive ops."""
    memo: dict[Term, Term] = {}
    for u in term.walk():
        if not u.args:
            memo[u] = u
            continue
        s = spec(u.op)
        v = make(u.op, *[memo[a] for a in u.args], type=u.type if s.explicit_type else None)
        if spec(v.op).kind != "primitive" and v.args:
            v = _primitives(expansion(v))
        memo[u] = v
    return memo[term]


def _generic(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """The instruction's own meaning as primitive IR (zext/sext, add, shl, trunc, ...). For the
    instructions without an intrinsic this is exactly the pattern LLVM selects them from."""
    from pitchfork.codegen.expr import ExprEmitter

    body, names = template(t.op, tuple(a.type for a in t.args), t.type)
    return ExprEmitter(em.b, em.lanes, dict(zip(names, args)), em.target).emit(_primitives(body))


def _intrinsic(op: str) -> Emit:
    """Same lane width everywhere: `<op>.v<n>i<bits>` applied register by register (the shape every ISA
    shares, base.register_by_register)."""
    return register_by_register(lambda t, n: f"{NEON}.{op}.v{n}i{t.type.bits}",
                                lambda em, t: _chunk(em.lanes, t.type.bits))


def _accumulate_absd(op: str) -> Emit:
    """uaba/saba: `add acc, uabd(y, z)` (LLVM folds the add into the accumulating form)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        n = _chunk(em.lanes, bits)

        def one(acc: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
            return em.b.add(acc, em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), [y, z]))

        return em.map_chunks(args, n, one)

    return emit


def _narrowing(op: str) -> Emit:
    """sqxtn/uqxtn/sqxtun (one operand), raddhn/rsubhn (two): `<op>.v<n>i<bits/2>(<n x i<bits>>, ...)`,
    one 128-bit source register per operand at a time."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        src = t.args[0].type.bits
        n = 128 // src
        return em.map_chunks(
            args, n, lambda *xs: em.call(f"{NEON}.{op}.v{n}i{src // 2}", _vec(src // 2, n), list(xs))
        )

    return emit


#: which uses of the immediate-operand instructions encode (anything else is emitted generically and
#: costed so, pitchfork/targets/base.py `encodable`)
_NARROW_IMM = immediate(1, 1, lambda bits: bits // 2)  # shrn/rshrn/sq(r)shr(u)n/uq(r)shrn #c, c in [1, bits/2]
_SQSHLU_IMM = immediate(1, 0, lambda bits: bits - 1)  # sqshlu #c, c in [0, bits - 1]
_RSRA_IMM = immediate(2, 1, lambda bits: bits)  # ursra/srsra #c, c in [1, bits]
_WIDEN_IMM = immediate(1, 0, lambda bits: bits)  # ushll/sshll #c, c in [0, bits] (bits: shll)


def _narrowing_shift(op: str) -> Emit:
    """rshrn/sqshrn/uqrshrn/...: `<op>.v<n>i<bits/2>(<n x i<bits>>, i32 imm)`, imm in [1, bits/2]."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        src = t.args[0].type.bits
        if not encodable(t):
            return _generic(em, args, t)
        n = 128 // src
        imm = ir.Constant(ir.IntType(32), t.args[1].value)
        name = f"{NEON}.{op}.v{n}i{src // 2}"
        return em.map_chunks(args[:1], n, lambda x: em.call(name, _vec(src // 2, n), [x, imm]))

    return emit


def _shrn(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """shrn #c has no intrinsic: LLVM selects it from `trunc (lshr x, c)` (for c <= bits/2 the kept
    bits are the same for a logical and an arithmetic shift)."""
    src = t.args[0].type
    if not encodable(t):
        return _generic(em, args, t)
    shifted = em.b.lshr(args[0], em.splat(t.args[1].value, src))
    return em.b.trunc(shifted, _vec(src.bits // 2, em.lanes))


def _immediate_shift(op: str) -> Emit:
    """sqshlu #c: the intrinsic with a constant splat shift vector (LLVM selects the immediate form)."""
    inner = _intrinsic(op)

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        if not encodable(t):
            return _generic(em, args, t)
        return inner(em, args, t)

    return emit


def _widening_mul(op: str) -> Emit:
    """umull/smull: `<op>.v<n>i<2 bits>(<n x i<bits>>, <n x i<bits>>)` on 64-bit halves."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[0].type.bits
        n = 64 // bits
        return em.map_chunks(
            args, n, lambda x, y: em.call(f"{NEON}.{op}.v{n}i{2 * bits}", _vec(2 * bits, n), [x, y])
        )

    return emit


def _multiply_accumulate(op: str, subtract: bool) -> Emit:
    """umlal/smlal/umlsl/smlsl: `add/sub acc, umull(y, z)`, which LLVM fuses (section 2.2.4)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[1].type.bits
        n = 64 // bits

        def one(acc: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
            p = em.call(f"{NEON}.{op}.v{n}i{2 * bits}", _vec(2 * bits, n), [y, z])
            return em.b.sub(acc, p) if subtract else em.b.add(acc, p)

        return em.map_chunks(args, n, one)

    return emit


def _widening_absd(op: str) -> Emit:
    """uabdl/sabdl: `zext (uabd a, b)` on 64-bit halves, which LLVM selects as uabdl / uabdl2."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[0].type.bits
        n = 64 // bits

        def one(x: ir.Value, y: ir.Value) -> ir.Value:
            d = em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), [x, y])
            return em.b.zext(d, _vec(2 * bits, n))

        return em.map_chunks(args, n, one)

    return emit


def _accumulate_absd_long(op: str) -> Emit:
    """uabal/sabal: `add acc, zext (uabd y, z)` on 64-bit halves (LLVM fuses it into uabal / uabal2)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.args[1].type.bits
        n = 64 // bits

        def one(acc: ir.Value, y: ir.Value, z: ir.Value) -> ir.Value:
            d = em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), [y, z])
            return em.b.add(acc, em.b.zext(d, _vec(2 * bits, n)))

        return em.map_chunks(args, n, one)

    return emit


def _shift_right_accumulate(op: str) -> Emit:
    """ursra/srsra #c: `add acc, urshl(y, splat(-c))`, which LLVM selects as the accumulating
    immediate form for c in [1, bits]; any other amount emits the declared meaning."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        if not encodable(t):
            return _generic(em, args, t)
        n = _chunk(em.lanes, bits)
        amount = ir.Constant(_vec(bits, n), [ir.Constant(ir.IntType(bits), -t.args[2].value)] * n)

        def one(acc: ir.Value, y: ir.Value) -> ir.Value:
            return em.b.add(acc, em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), [y, amount]))

        return em.map_chunks(args[:2], n, one)

    return emit


def _high_narrow(subtract: bool) -> Emit:
    """addhn/subhn have no intrinsic: LLVM selects them from `trunc (lshr (add|sub x, y), bits/2)`."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        src = t.args[0].type
        v = em.b.sub(args[0], args[1]) if subtract else em.b.add(args[0], args[1])
        shifted = em.b.lshr(v, em.splat(src.bits // 2, src))
        return em.b.trunc(shifted, _vec(src.bits // 2, em.lanes))

    return emit


def _dot(op: str) -> Emit:
    """udot/sdot `<op>.v4i32.v16i8(acc, a, b)` per 128-bit register (v2i32.v8i8 when the result fits
    in 64 bits); the byte operands arrive with 4x the result's lanes."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        n = 2 if em.lanes * 32 <= 64 else 4
        accs, ys, zs = em.split(args[0], n), em.split(args[1], 4 * n), em.split(args[2], 4 * n)
        name = f"{NEON}.{op}.v{n}i32.v{4 * n}i8"
        parts = [em.call(name, _vec(32, n), [a, y, z]) for a, y, z in zip(accs, ys, zs)]
        return em.concat(parts, em.lanes)

    return emit


def _pairwise_long(op: str, accumulate: bool) -> Emit:
    """`<op>.v<n>i<2b>.v<2n>i<b>` per 128-bit source register; the accumulating form adds it to the
    accumulator, which LLVM fuses into uadalp/sadalp."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        src = t.args[-1].type.bits
        n = 64 // src  # result lanes per 128-bit source register
        name = f"{NEON}.{op}.v{n}i{2 * src}.v{2 * n}i{src}"
        parts = [em.call(name, _vec(2 * src, n), [x]) for x in em.split(args[-1], 2 * n)]
        if accumulate:
            parts = [em.b.add(a, p) for a, p in zip(em.split(args[0], n), parts)]
        return em.concat(parts, em.lanes)

    return emit


def _pairwise(op: str) -> Emit:
    """addp/umaxp/smaxp/uminp/sminp Vd, Vn, Vm = the pair results of Vn then of Vm: one instruction per
    two source registers."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        n = 128 // bits
        xs = em.split(args[0], n)
        if len(xs) % 2:
            xs.append(xs[-1])  # a padding register: its pairs land in lanes beyond the result
        parts = [em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), [a, b]) for a, b in zip(xs[::2], xs[1::2])]
        return em.concat(parts, em.lanes)

    return emit


_addp = _pairwise("addp")


# ---------------------------------------------------------------------------------------------
# Semantics that depend on the signature


def _typed(text: str) -> Callable[[Signature], str]:
    """Semantics naming the result type: {r} in `text` is the signature's result type."""
    return lambda s: text.format(r=s.result.name)


def _q(op: str) -> Callable[[Signature], str]:
    """sqdmulh/sqrdmulh: a Q15/Q31 multiply, i.e. `op(x, y, bits - 1)`."""
    return lambda s: f"{op}(x, y, {s.args[0].bits - 1})"


def _by_low_byte(op: str) -> Callable[[Signature], str]:
    return lambda s: f"{op}(x, {_sext_low_byte('y', s.args[1])})"


def _high_half(op: str, rounding: bool) -> Callable[[Signature], str]:
    """Bits h..2h-1 of x +- y (+ 2^(h-1) when rounding), h the result's bits."""

    def text(s: Signature) -> str:
        h = s.result.bits
        rnd = f" + {1 << (h - 1)}" if rounding else ""
        # Wrapping in the source type, then the high half: computed on the unsigned reinterpretation
        # so that the shift is logical (the kept bits are the same either way).
        u = _unsigned(s.args[0].name)
        return f"{s.result}(reinterpret<{u}>(x {op} y{rnd}) >> {h})"

    return text


# ---------------------------------------------------------------------------------------------
# The instruction table: one row per instruction (mnemonic, signatures, meaning, emitter, and the LLVM
# spelling where it is not the intrinsic `llvm.aarch64.neon.<mnemonic>`). Every cost is 1.

_WIDE_I = ("i16", "i32", "i64")
_WIDE_U = ("u16", "u32", "u64")
_NARROW_SAME = _sigs("{t}, {t} -> {n}", (*_WIDE_U, *_WIDE_I))
_NARROW_I = _sigs("{t}, {t} -> {n}", _WIDE_I)
_NARROW_U = _sigs("{t}, {t} -> {n}", _WIDE_U)
_NARROW_IU = _sigs("{t}, {t} -> {un}", _WIDE_I)

TABLE: tuple[Inst, ...] = (
    # ---- Same-width arithmetic
    Inst("uhadd", _same(U8_32, 2), "halving_add(x, y)", _intrinsic("uhadd")),
    Inst("shadd", _same(I8_32, 2), "halving_add(x, y)", _intrinsic("shadd")),
    Inst("uhsub", _same(U8_32, 2), "halving_sub(x, y)", _intrinsic("uhsub")),
    Inst("shsub", _same(I8_32, 2), "halving_sub(x, y)", _intrinsic("shsub")),
    Inst("urhadd", _same(U8_32, 2), "rounding_halving_add(x, y)", _intrinsic("urhadd")),
    Inst("srhadd", _same(I8_32, 2), "rounding_halving_add(x, y)", _intrinsic("srhadd")),
    Inst("uqadd", _same(U8_64, 2), "saturating_add(x, y)", _intrinsic("uqadd")),
    Inst("sqadd", _same(I8_64, 2), "saturating_add(x, y)", _intrinsic("sqadd")),
    Inst("uqsub", _same(U8_64, 2), "saturating_sub(x, y)", _intrinsic("uqsub")),
    Inst("sqsub", _same(I8_64, 2), "saturating_sub(x, y)", _intrinsic("sqsub")),
    Inst("abs", _sigs("{t} -> {u}", I8_64), "abs(x)", _intrinsic("abs")),
    # neg has no intrinsic (LLVM selects it from `sub 0, x`); sqneg saturates -MIN to MAX.
    Inst("neg", _same((*U8_64, *I8_64), 1), "0 - x", _generic, "sub zeroinitializer, x"),
    Inst("sqneg", _same(I8_64, 1), "saturating_sub(0, x)", _intrinsic("sqneg")),
    # ---- Absolute difference
    Inst("uabd", _same(U8_32, 2), "absd(x, y)", _intrinsic("uabd")),
    Inst("sabd", _sigs("{t}, {t} -> {u}", I8_32), "absd(x, y)", _intrinsic("sabd")),
    Inst("uaba", _same(U8_32, 3), "x + absd(y, z)", _accumulate_absd("uabd"),
         f"add acc, {NEON}.uabd (generic pattern)"),
    Inst("saba", _sigs("{u}, {t}, {t} -> {u}", I8_32), "x + absd(y, z)", _accumulate_absd("sabd"),
         f"add acc, {NEON}.sabd (generic pattern)"),
    Inst("uabdl", _sigs("{t}, {t} -> {w}", U8_32), _typed("{r}(absd(x, y))"), _widening_absd("uabd"),
         f"zext ({NEON}.uabd a, b) (generic pattern)"),
    Inst("sabdl", _sigs("{t}, {t} -> {uw}", I8_32), _typed("{r}(absd(x, y))"), _widening_absd("sabd"),
         f"zext ({NEON}.sabd a, b) (generic pattern)"),
    Inst("uabal", _sigs("{w}, {t}, {t} -> {w}", U8_32), _typed("x + {r}(absd(y, z))"),
         _accumulate_absd_long("uabd"), f"add acc, zext ({NEON}.uabd a, b) (generic pattern)"),
    Inst("sabal", _sigs("{uw}, {t}, {t} -> {uw}", I8_32), _typed("x + {r}(absd(y, z))"),
         _accumulate_absd_long("sabd"), f"add acc, zext ({NEON}.sabd a, b) (generic pattern)"),
    # ---- Widening add / sub / shift (no intrinsics: generic zext/sext patterns)
    Inst("uaddl", _sigs("{t}, {t} -> {w}", U8_32), "widening_add(x, y)", _generic, "add (zext a), (zext b)"),
    Inst("saddl", _sigs("{t}, {t} -> {w}", I8_32), "widening_add(x, y)", _generic, "add (sext a), (sext b)"),
    Inst("usubl", _sigs("{t}, {t} -> {sw}", U8_32), "widening_sub(x, y)", _generic, "sub (zext a), (zext b)"),
    Inst("ssubl", _sigs("{t}, {t} -> {w}", I8_32), "widening_sub(x, y)", _generic, "sub (sext a), (sext b)"),
    Inst("uaddw", _sigs("{w}, {t} -> {w}", U8_32), "extending_add(x, y)", _generic, "add acc, (zext b)"),
    Inst("saddw", _sigs("{w}, {t} -> {w}", I8_32), "extending_add(x, y)", _generic, "add acc, (sext b)"),
    Inst("usubw", _sigs("{w}, {t} -> {w}", U8_32), "extending_sub(x, y)", _generic, "sub acc, (zext b)"),
    Inst("ssubw", _sigs("{w}, {t} -> {w}", I8_32), "extending_sub(x, y)", _generic, "sub acc, (sext b)"),
    # ushll/sshll #c for c in [0, bits - 1]; c = bits is shll. Any other amount emits the same exact
    # pattern, which LLVM then lowers as it likes: by a vector it is no instruction (extend, ushl per
    # register of the wide result: softmax's sqxtn(sshll(1, y)) is 12 instructions per 16 lanes where
    # sqshl(1, y) is 2, llc-22 cortex-a76), so it is costed as that generic code (`encodable`)
    Inst("ushll", _sigs("{t}, {t} -> {w}", U8_32), "widening_shl(x, y)", _generic, "shl (zext a), c",
         encodable=_WIDEN_IMM),
    Inst("sshll", _sigs("{t}, {t} -> {w}", I8_32), "widening_shl(x, y)", _generic, "shl (sext a), c",
         encodable=_WIDEN_IMM),
    # ---- Widening multiply and multiply-accumulate
    Inst("umull", _sigs("{t}, {t} -> {w}", U8_32), "widening_mul(x, y)", _widening_mul("umull")),
    Inst("smull", _sigs("{t}, {t} -> {w}", I8_32), "widening_mul(x, y)", _widening_mul("smull")),
    Inst("umlal", _sigs("{w}, {t}, {t} -> {w}", U8_32), "x + widening_mul(y, z)",
         _multiply_accumulate("umull", False), f"add acc, {NEON}.umull (generic pattern)"),
    Inst("smlal", _sigs("{w}, {t}, {t} -> {w}", I8_32), "x + widening_mul(y, z)",
         _multiply_accumulate("smull", False), f"add acc, {NEON}.smull (generic pattern)"),
    Inst("umlsl", _sigs("{w}, {t}, {t} -> {w}", U8_32), "x - widening_mul(y, z)",
         _multiply_accumulate("umull", True), f"sub acc, {NEON}.umull (generic pattern)"),
    Inst("smlsl", _sigs("{w}, {t}, {t} -> {w}", I8_32), "x - widening_mul(y, z)",
         _multiply_accumulate("smull", True), f"sub acc, {NEON}.smull (generic pattern)"),
    # ---- Fixed-point multiplies (Q15 / Q31)
    Inst("sqdmulh", _same(("i16", "i32"), 2), _q("mul_shr"), _intrinsic("sqdmulh")),
    Inst("sqrdmulh", _same(("i16", "i32"), 2), _q("rounding_mul_shr"), _intrinsic("sqrdmulh")),
    # ---- Shifts by a signed lane amount (its low byte)
    # plain register shifts: a negative amount shifts right (logical / arithmetic), FPIR's `<<`
    Inst("ushl", _sigs("{t}, {s} -> {t}", U8_64), _by_low_byte("shl"), _intrinsic("ushl")),
    Inst("sshl", _same(I8_64, 2), _by_low_byte("shl"), _intrinsic("sshl")),
    Inst("urshl", _sigs("{t}, {s} -> {t}", U8_64), _by_low_byte("rounding_shl"), _intrinsic("urshl"),
         f"{NEON}.urshl (constant negative amount: urshr)"),
    Inst("srshl", _same(I8_64, 2), _by_low_byte("rounding_shl"), _intrinsic("srshl"),
         f"{NEON}.srshl (constant negative amount: srshr)"),
    # Rounding shift right by an immediate in [1, bits] and accumulate (ursra/srsra #c).
    Inst("ursra", _same(U8_64, 3), "x + rounding_shr(y, z)", _shift_right_accumulate("urshl"),
         f"add acc, {NEON}.urshl(y, splat(-c)) (ursra)", encodable=_RSRA_IMM),
    Inst("srsra", _sigs("{t}, {t}, {u} -> {t}", I8_64), "x + rounding_shr(y, z)", _shift_right_accumulate("srshl"),
         f"add acc, {NEON}.srshl(y, splat(-c)) (srsra)", encodable=_RSRA_IMM),
    Inst("uqshl", _sigs("{t}, {s} -> {t}", U8_64), _by_low_byte("saturating_shl"), _intrinsic("uqshl")),
    Inst("sqshl", _same(I8_64, 2), _by_low_byte("saturating_shl"), _intrinsic("sqshl")),
    Inst("sqshlu", _sigs("{t}, {t} -> {u}", I8_32), _typed("saturating_cast<{r}>(widening_shl(x, y))"),
         _immediate_shift("sqshlu"), f"{NEON}.sqshlu (immediate in [0, bits - 1])", encodable=_SQSHLU_IMM),
    # ---- Saturating narrowing
    Inst("sqxtn", _sigs("{t} -> {n}", _WIDE_I), _typed("saturating_cast<{r}>(x)"), _narrowing("sqxtn")),
    Inst("uqxtn", _sigs("{t} -> {n}", _WIDE_U), _typed("saturating_cast<{r}>(x)"), _narrowing("uqxtn")),
    Inst("sqxtun", _sigs("{t} -> {un}", _WIDE_I), _typed("saturating_cast<{r}>(x)"), _narrowing("sqxtun")),
    # ---- Narrowing shifts by an immediate in [1, output bits]
    Inst("shrn", _NARROW_SAME, _typed("{r}(x >> y)"), _shrn, "trunc (lshr x, c)", encodable=_NARROW_IMM),
    Inst("rshrn", _NARROW_SAME, _typed("{r}(rounding_shr(x, y))"), _narrowing_shift("rshrn"), encodable=_NARROW_IMM),
    Inst("sqshrn", _NARROW_I, _typed("saturating_cast<{r}>(x >> y)"), _narrowing_shift("sqshrn"),
         encodable=_NARROW_IMM),
    Inst("uqshrn", _NARROW_U, _typed("saturating_cast<{r}>(x >> y)"), _narrowing_shift("uqshrn"),
         encodable=_NARROW_IMM),
    Inst("sqshrun", _NARROW_IU, _typed("saturating_cast<{r}>(x >> y)"), _narrowing_shift("sqshrun"),
         encodable=_NARROW_IMM),
    Inst("sqrshrn", _NARROW_I, _typed("saturating_cast<{r}>(rounding_shr(x, y))"), _narrowing_shift("sqrshrn"),
         encodable=_NARROW_IMM),
    Inst("uqrshrn", _NARROW_U, _typed("saturating_cast<{r}>(rounding_shr(x, y))"), _narrowing_shift("uqrshrn"),
         encodable=_NARROW_IMM),
    Inst("sqrshrun", _NARROW_IU, _typed("saturating_cast<{r}>(rounding_shr(x, y))"),
         _narrowing_shift("sqrshrun"), encodable=_NARROW_IMM),
    # ---- High half of a wrapping add / sub, narrowed (plain or rounding): bits h..2h-1 of x +- y (+ 2^(h-1))
    Inst("addhn", _NARROW_SAME, _high_half("+", False), _high_narrow(False), "trunc (lshr (add x, y), h)"),
    Inst("subhn", _NARROW_SAME, _high_half("-", False), _high_narrow(True), "trunc (lshr (sub x, y), h)"),
    Inst("raddhn", _NARROW_SAME, _high_half("+", True), _narrowing("raddhn")),
    Inst("rsubhn", _NARROW_SAME, _high_half("-", True), _narrowing("rsubhn")),
    # ---- Dot products (lane-combining, ISA_INTRINSICS.md 2.2): acc[j] += sum_k y[4j+k] * z[4j+k]
    Inst("udot", ["u32, u8, u8 -> u32", "i32, u8, u8 -> i32"],
         _typed("x + vector_reduce_add_x4({r}(widening_mul(y, z)))"), _dot("udot"), lanes=(1, 4, 4)),
    Inst("sdot", ["i32, i8, i8 -> i32"], _typed("x + vector_reduce_add_x4({r}(widening_mul(y, z)))"), _dot("sdot"),
         lanes=(1, 4, 4)),
    # ---- Pairwise adds (lane-combining by 2): uaddlp/saddlp widen, uadalp/sadalp accumulate, addp
    # keeps the type
    Inst("uaddlp", _sigs("{t} -> {w}", U8_32), _typed("vector_reduce_add_x2({r}(x))"),
         _pairwise_long("uaddlp", False), lanes=(2,)),
    Inst("saddlp", _sigs("{t} -> {w}", I8_32), _typed("vector_reduce_add_x2({r}(x))"),
         _pairwise_long("saddlp", False), lanes=(2,)),
    Inst("uadalp", _sigs("{w}, {t} -> {w}", U8_32), _typed("x + vector_reduce_add_x2({r}(y))"),
         _pairwise_long("uaddlp", True), f"add + {NEON}.uaddlp (uadalp)", lanes=(1, 2)),
    Inst("sadalp", _sigs("{w}, {t} -> {w}", I8_32), _typed("x + vector_reduce_add_x2({r}(y))"),
         _pairwise_long("saddlp", True), f"add + {NEON}.saddlp (sadalp)", lanes=(1, 2)),
    Inst("addp", _same((*U8_64, *I8_64), 1), "vector_reduce_add_x2(x)", _addp, lanes=(2,)),
    # pairwise max/min (lane-combining by 2; no 64-bit lanes)
    Inst("umaxp", _same(U8_32, 1), "vector_reduce_max_x2(x)", _pairwise("umaxp"), lanes=(2,)),
    Inst("smaxp", _same(I8_32, 1), "vector_reduce_max_x2(x)", _pairwise("smaxp"), lanes=(2,)),
    Inst("uminp", _same(U8_32, 1), "vector_reduce_min_x2(x)", _pairwise("uminp"), lanes=(2,)),
    Inst("sminp", _same(I8_32, 1), "vector_reduce_min_x2(x)", _pairwise("sminp"), lanes=(2,)),
)

declare("arm", TABLE, default_llvm=lambda mnemonic: f"{NEON}.{mnemonic}")
