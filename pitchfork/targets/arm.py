"""AArch64 Neon instruction table (ISA_INTRINSICS.md section 2.2): every instruction the ARM lowering
rules (rules/lower/arm_neon.rules) may emit, declared once.

Each entry gives the signatures the instruction exists for, its lane-wise meaning as FPIR text over
x, y, z, its cost and how to emit it for any lane count. The cost model counts instructions (each
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
likewise with `vector_reduce_add_x2`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir

from fpir.ops import expansion, make, spec, template
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.targets.base import Signature, encodable, immediate, target_op

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
    from pitchfork.emit.expr import ExprEmitter

    body, names = template(t.op, tuple(a.type for a in t.args), t.type)
    return ExprEmitter(em.b, em.lanes, dict(zip(names, args)), em.target).emit(_primitives(body))


def _intrinsic(op: str) -> Emit:
    """Same lane width everywhere: `<op>.v<n>i<bits>` applied register by register."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        n = _chunk(em.lanes, bits)
        return em.map_chunks(
            args, n, lambda *xs: em.call(f"{NEON}.{op}.v{n}i{bits}", _vec(bits, n), list(xs))
        )

    return emit


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


# ---------------------------------------------------------------------------------------------
# Same-width arithmetic

target_op("arm.uhadd", _same(U8_32, 2), "halving_add(x, y)", _intrinsic("uhadd"), llvm=f"{NEON}.uhadd")
target_op("arm.shadd", _same(I8_32, 2), "halving_add(x, y)", _intrinsic("shadd"), llvm=f"{NEON}.shadd")
target_op("arm.uhsub", _same(U8_32, 2), "halving_sub(x, y)", _intrinsic("uhsub"), llvm=f"{NEON}.uhsub")
target_op("arm.shsub", _same(I8_32, 2), "halving_sub(x, y)", _intrinsic("shsub"), llvm=f"{NEON}.shsub")
target_op(
    "arm.urhadd", _same(U8_32, 2), "rounding_halving_add(x, y)", _intrinsic("urhadd"), llvm=f"{NEON}.urhadd"
)
target_op(
    "arm.srhadd", _same(I8_32, 2), "rounding_halving_add(x, y)", _intrinsic("srhadd"), llvm=f"{NEON}.srhadd"
)
target_op("arm.uqadd", _same(U8_64, 2), "saturating_add(x, y)", _intrinsic("uqadd"), llvm=f"{NEON}.uqadd")
target_op("arm.sqadd", _same(I8_64, 2), "saturating_add(x, y)", _intrinsic("sqadd"), llvm=f"{NEON}.sqadd")
target_op("arm.uqsub", _same(U8_64, 2), "saturating_sub(x, y)", _intrinsic("uqsub"), llvm=f"{NEON}.uqsub")
target_op("arm.sqsub", _same(I8_64, 2), "saturating_sub(x, y)", _intrinsic("sqsub"), llvm=f"{NEON}.sqsub")
target_op(
    "arm.abs", [f"{t} -> {_unsigned(t)}" for t in I8_64], "abs(x)", _intrinsic("abs"), llvm=f"{NEON}.abs"
)
# neg has no intrinsic (LLVM selects it from `sub 0, x`); sqneg saturates -MIN to MAX.
target_op("arm.neg", _same((*U8_64, *I8_64), 1), "0 - x", _generic, llvm="sub zeroinitializer, x")
target_op("arm.sqneg", _same(I8_64, 1), "saturating_sub(0, x)", _intrinsic("sqneg"), llvm=f"{NEON}.sqneg")

# ---------------------------------------------------------------------------------------------
# Absolute difference

target_op("arm.uabd", _same(U8_32, 2), "absd(x, y)", _intrinsic("uabd"), llvm=f"{NEON}.uabd")
target_op(
    "arm.sabd",
    [f"{t}, {t} -> {_unsigned(t)}" for t in I8_32],
    "absd(x, y)",
    _intrinsic("sabd"),
    llvm=f"{NEON}.sabd",
)
target_op(
    "arm.uaba",
    _same(U8_32, 3),
    "x + absd(y, z)",
    _accumulate_absd("uabd"),
    llvm=f"add acc, {NEON}.uabd (generic pattern)",
)
target_op(
    "arm.saba",
    [f"{_unsigned(t)}, {t}, {t} -> {_unsigned(t)}" for t in I8_32],
    "x + absd(y, z)",
    _accumulate_absd("sabd"),
    llvm=f"add acc, {NEON}.sabd (generic pattern)",
)
target_op(
    "arm.uabdl",
    [f"{t}, {t} -> {_wide(t)}" for t in U8_32],
    lambda s: f"{s.result}(absd(x, y))",
    _widening_absd("uabd"),
    llvm=f"zext ({NEON}.uabd a, b) (generic pattern)",
)
target_op(
    "arm.sabdl",
    [f"{t}, {t} -> {_unsigned(_wide(t))}" for t in I8_32],
    lambda s: f"{s.result}(absd(x, y))",
    _widening_absd("sabd"),
    llvm=f"zext ({NEON}.sabd a, b) (generic pattern)",
)
target_op(
    "arm.uabal",
    [f"{_wide(t)}, {t}, {t} -> {_wide(t)}" for t in U8_32],
    lambda s: f"x + {s.result}(absd(y, z))",
    _accumulate_absd_long("uabd"),
    llvm=f"add acc, zext ({NEON}.uabd a, b) (generic pattern)",
)
target_op(
    "arm.sabal",
    [f"{_unsigned(_wide(t))}, {t}, {t} -> {_unsigned(_wide(t))}" for t in I8_32],
    lambda s: f"x + {s.result}(absd(y, z))",
    _accumulate_absd_long("sabd"),
    llvm=f"add acc, zext ({NEON}.sabd a, b) (generic pattern)",
)

# ---------------------------------------------------------------------------------------------
# Widening add / sub / shift (no intrinsics: generic zext/sext patterns)

target_op(
    "arm.uaddl",
    [f"{t}, {t} -> {_wide(t)}" for t in U8_32],
    "widening_add(x, y)",
    _generic,
    llvm="add (zext a), (zext b)",
)
target_op(
    "arm.saddl",
    [f"{t}, {t} -> {_wide(t)}" for t in I8_32],
    "widening_add(x, y)",
    _generic,
    llvm="add (sext a), (sext b)",
)
target_op(
    "arm.usubl",
    [f"{t}, {t} -> {_signed(_wide(t))}" for t in U8_32],
    "widening_sub(x, y)",
    _generic,
    llvm="sub (zext a), (zext b)",
)
target_op(
    "arm.ssubl",
    [f"{t}, {t} -> {_wide(t)}" for t in I8_32],
    "widening_sub(x, y)",
    _generic,
    llvm="sub (sext a), (sext b)",
)
target_op(
    "arm.uaddw",
    [f"{_wide(t)}, {t} -> {_wide(t)}" for t in U8_32],
    "extending_add(x, y)",
    _generic,
    llvm="add acc, (zext b)",
)
target_op(
    "arm.saddw",
    [f"{_wide(t)}, {t} -> {_wide(t)}" for t in I8_32],
    "extending_add(x, y)",
    _generic,
    llvm="add acc, (sext b)",
)
target_op(
    "arm.usubw",
    [f"{_wide(t)}, {t} -> {_wide(t)}" for t in U8_32],
    "extending_sub(x, y)",
    _generic,
    llvm="sub acc, (zext b)",
)
target_op(
    "arm.ssubw",
    [f"{_wide(t)}, {t} -> {_wide(t)}" for t in I8_32],
    "extending_sub(x, y)",
    _generic,
    llvm="sub acc, (sext b)",
)
# ushll/sshll #c for c in [0, bits - 1]; c = bits is shll. Any other amount emits the same exact
# pattern, which LLVM then lowers as it likes.
target_op(
    "arm.ushll",
    [f"{t}, {t} -> {_wide(t)}" for t in U8_32],
    "widening_shl(x, y)",
    _generic,
    llvm="shl (zext a), c",
)
target_op(
    "arm.sshll",
    [f"{t}, {t} -> {_wide(t)}" for t in I8_32],
    "widening_shl(x, y)",
    _generic,
    llvm="shl (sext a), c",
)

# ---------------------------------------------------------------------------------------------
# Widening multiply and multiply-accumulate

target_op(
    "arm.umull",
    [f"{t}, {t} -> {_wide(t)}" for t in U8_32],
    "widening_mul(x, y)",
    _widening_mul("umull"),
    llvm=f"{NEON}.umull",
)
target_op(
    "arm.smull",
    [f"{t}, {t} -> {_wide(t)}" for t in I8_32],
    "widening_mul(x, y)",
    _widening_mul("smull"),
    llvm=f"{NEON}.smull",
)
target_op(
    "arm.umlal",
    [f"{_wide(t)}, {t}, {t} -> {_wide(t)}" for t in U8_32],
    "x + widening_mul(y, z)",
    _multiply_accumulate("umull", False),
    llvm=f"add acc, {NEON}.umull (generic pattern)",
)
target_op(
    "arm.smlal",
    [f"{_wide(t)}, {t}, {t} -> {_wide(t)}" for t in I8_32],
    "x + widening_mul(y, z)",
    _multiply_accumulate("smull", False),
    llvm=f"add acc, {NEON}.smull (generic pattern)",
)
target_op(
    "arm.umlsl",
    [f"{_wide(t)}, {t}, {t} -> {_wide(t)}" for t in U8_32],
    "x - widening_mul(y, z)",
    _multiply_accumulate("umull", True),
    llvm=f"sub acc, {NEON}.umull (generic pattern)",
)
target_op(
    "arm.smlsl",
    [f"{_wide(t)}, {t}, {t} -> {_wide(t)}" for t in I8_32],
    "x - widening_mul(y, z)",
    _multiply_accumulate("smull", True),
    llvm=f"sub acc, {NEON}.smull (generic pattern)",
)

# ---------------------------------------------------------------------------------------------
# Fixed-point multiplies (Q15 / Q31)


def _q(op: str) -> Callable[[Signature], str]:
    return lambda s: f"{op}(x, y, {s.args[0].bits - 1})"


target_op(
    "arm.sqdmulh", _same(("i16", "i32"), 2), _q("mul_shr"), _intrinsic("sqdmulh"), llvm=f"{NEON}.sqdmulh"
)
target_op(
    "arm.sqrdmulh",
    _same(("i16", "i32"), 2),
    _q("rounding_mul_shr"),
    _intrinsic("sqrdmulh"),
    llvm=f"{NEON}.sqrdmulh",
)

# ---------------------------------------------------------------------------------------------
# Shifts by a signed lane amount (its low byte)


def _by_low_byte(op: str) -> Callable[[Signature], str]:
    return lambda s: f"{op}(x, {_sext_low_byte('y', s.args[1])})"


target_op(
    "arm.urshl",
    [f"{t}, {_signed(t)} -> {t}" for t in U8_64],
    _by_low_byte("rounding_shl"),
    _intrinsic("urshl"),
    llvm=f"{NEON}.urshl (constant negative amount: urshr)",
)
target_op(
    "arm.srshl",
    _same(I8_64, 2),
    _by_low_byte("rounding_shl"),
    _intrinsic("srshl"),
    llvm=f"{NEON}.srshl (constant negative amount: srshr)",
)
# Rounding shift right by an immediate in [1, bits] and accumulate (ursra/srsra #c).
target_op(
    "arm.ursra",
    _same(U8_64, 3),
    "x + rounding_shr(y, z)",
    _shift_right_accumulate("urshl"),
    encodable=_RSRA_IMM,
    llvm=f"add acc, {NEON}.urshl(y, splat(-c)) (ursra)",
)
target_op(
    "arm.srsra",
    [f"{t}, {t}, {_unsigned(t)} -> {t}" for t in I8_64],
    "x + rounding_shr(y, z)",
    _shift_right_accumulate("srshl"),
    encodable=_RSRA_IMM,
    llvm=f"add acc, {NEON}.srshl(y, splat(-c)) (srsra)",
)
target_op(
    "arm.uqshl",
    [f"{t}, {_signed(t)} -> {t}" for t in U8_64],
    _by_low_byte("saturating_shl"),
    _intrinsic("uqshl"),
    llvm=f"{NEON}.uqshl",
)
target_op(
    "arm.sqshl", _same(I8_64, 2), _by_low_byte("saturating_shl"), _intrinsic("sqshl"), llvm=f"{NEON}.sqshl"
)
target_op(
    "arm.sqshlu",
    [f"{t}, {t} -> {_unsigned(t)}" for t in I8_32],
    lambda s: f"saturating_cast<{s.result}>(widening_shl(x, y))",
    _immediate_shift("sqshlu"),
    llvm=f"{NEON}.sqshlu (immediate in [0, bits - 1])",
    encodable=_SQSHLU_IMM,
)

# ---------------------------------------------------------------------------------------------
# Saturating narrowing


def _cast_to_result(inner: str) -> Callable[[Signature], str]:
    return lambda s: f"saturating_cast<{s.result}>({inner})"


_WIDE_I = ("i16", "i32", "i64")
_WIDE_U = ("u16", "u32", "u64")

target_op(
    "arm.sqxtn",
    [f"{t} -> {_narrow(t)}" for t in _WIDE_I],
    _cast_to_result("x"),
    _narrowing("sqxtn"),
    llvm=f"{NEON}.sqxtn",
)
target_op(
    "arm.uqxtn",
    [f"{t} -> {_narrow(t)}" for t in _WIDE_U],
    _cast_to_result("x"),
    _narrowing("uqxtn"),
    llvm=f"{NEON}.uqxtn",
)
target_op(
    "arm.sqxtun",
    [f"{t} -> {_unsigned(_narrow(t))}" for t in _WIDE_I],
    _cast_to_result("x"),
    _narrowing("sqxtun"),
    llvm=f"{NEON}.sqxtun",
)

# ---------------------------------------------------------------------------------------------
# Narrowing shifts by an immediate in [1, output bits]

_NARROW_SAME = [f"{t}, {t} -> {_narrow(t)}" for t in (*_WIDE_U, *_WIDE_I)]
_NARROW_I = [f"{t}, {t} -> {_narrow(t)}" for t in _WIDE_I]
_NARROW_U = [f"{t}, {t} -> {_narrow(t)}" for t in _WIDE_U]
_NARROW_IU = [f"{t}, {t} -> {_unsigned(_narrow(t))}" for t in _WIDE_I]

target_op("arm.shrn", _NARROW_SAME, lambda s: f"{s.result}(x >> y)", _shrn, llvm="trunc (lshr x, c)",
          encodable=_NARROW_IMM)
target_op(
    "arm.rshrn",
    _NARROW_SAME,
    lambda s: f"{s.result}(rounding_shr(x, y))",
    _narrowing_shift("rshrn"),
    llvm=f"{NEON}.rshrn",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.sqshrn", _NARROW_I, _cast_to_result("x >> y"), _narrowing_shift("sqshrn"), llvm=f"{NEON}.sqshrn",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.uqshrn", _NARROW_U, _cast_to_result("x >> y"), _narrowing_shift("uqshrn"), llvm=f"{NEON}.uqshrn",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.sqshrun", _NARROW_IU, _cast_to_result("x >> y"), _narrowing_shift("sqshrun"), llvm=f"{NEON}.sqshrun",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.sqrshrn",
    _NARROW_I,
    _cast_to_result("rounding_shr(x, y)"),
    _narrowing_shift("sqrshrn"),
    llvm=f"{NEON}.sqrshrn",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.uqrshrn",
    _NARROW_U,
    _cast_to_result("rounding_shr(x, y)"),
    _narrowing_shift("uqrshrn"),
    llvm=f"{NEON}.uqrshrn",
    encodable=_NARROW_IMM,
)
target_op(
    "arm.sqrshrun",
    _NARROW_IU,
    _cast_to_result("rounding_shr(x, y)"),
    _narrowing_shift("sqrshrun"),
    llvm=f"{NEON}.sqrshrun",
    encodable=_NARROW_IMM,
)

# ---------------------------------------------------------------------------------------------
# High half of a wrapping add / sub, narrowed (plain or rounding): bits h..2h-1 of x +- y (+ 2^(h-1))

_HIGH_HALF = [f"{t}, {t} -> {_narrow(t)}" for t in (*_WIDE_U, *_WIDE_I)]


def _high_half(op: str, rounding: bool) -> Callable[[Signature], str]:
    def text(s: Signature) -> str:
        h = s.result.bits
        rnd = f" + {1 << (h - 1)}" if rounding else ""
        # Wrapping in the source type, then the high half: computed on the unsigned reinterpretation
        # so that the shift is logical (the kept bits are the same either way).
        u = _unsigned(s.args[0].name)
        return f"{s.result}(reinterpret<{u}>(x {op} y{rnd}) >> {h})"

    return text


target_op("arm.addhn", _HIGH_HALF, _high_half("+", False), _high_narrow(False), llvm="trunc (lshr (add x, y), h)")
target_op("arm.subhn", _HIGH_HALF, _high_half("-", False), _high_narrow(True), llvm="trunc (lshr (sub x, y), h)")
target_op("arm.raddhn", _HIGH_HALF, _high_half("+", True), _narrowing("raddhn"), llvm=f"{NEON}.raddhn")
target_op("arm.rsubhn", _HIGH_HALF, _high_half("-", True), _narrowing("rsubhn"), llvm=f"{NEON}.rsubhn")


# ---------------------------------------------------------------------------------------------
# Dot products (lane-combining, ISA_INTRINSICS.md 2.2): acc[j] += sum_k y[4j+k] * z[4j+k]


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


def _dot_semantics(sg: Signature) -> str:
    return f"x + vector_reduce_add_x4({sg.result.name}(widening_mul(y, z)))"


target_op("arm.udot", ["u32, u8, u8 -> u32", "i32, u8, u8 -> i32"], _dot_semantics, _dot("udot"),
          llvm=f"{NEON}.udot", lanes=(1, 4, 4))
target_op("arm.sdot", ["i32, i8, i8 -> i32"], _dot_semantics, _dot("sdot"), llvm=f"{NEON}.sdot", lanes=(1, 4, 4))


# ---------------------------------------------------------------------------------------------
# Pairwise adds (lane-combining by 2): uaddlp/saddlp widen, uadalp/sadalp accumulate, addp keeps the type


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


def _addp(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """addp Vd, Vn, Vm = the pair sums of Vn then of Vm: one instruction per two source registers."""
    bits = t.type.bits
    n = 128 // bits
    xs = em.split(args[0], n)
    if len(xs) % 2:
        xs.append(xs[-1])  # a padding register: its sums land in lanes beyond the result
    parts = [em.call(f"{NEON}.addp.v{n}i{bits}", _vec(bits, n), [a, b]) for a, b in zip(xs[::2], xs[1::2])]
    return em.concat(parts, em.lanes)


target_op("arm.uaddlp", ["u8 -> u16", "u16 -> u32", "u32 -> u64"], lambda sg: f"vector_reduce_add_x2({sg.result.name}(x))",
          _pairwise_long("uaddlp", False), llvm=f"{NEON}.uaddlp", lanes=(2,))
target_op("arm.saddlp", ["i8 -> i16", "i16 -> i32", "i32 -> i64"], lambda sg: f"vector_reduce_add_x2({sg.result.name}(x))",
          _pairwise_long("saddlp", False), llvm=f"{NEON}.saddlp", lanes=(2,))
target_op("arm.uadalp", ["u16, u8 -> u16", "u32, u16 -> u32", "u64, u32 -> u64"],
          lambda sg: f"x + vector_reduce_add_x2({sg.result.name}(y))", _pairwise_long("uaddlp", True),
          llvm=f"add + {NEON}.uaddlp (uadalp)", lanes=(1, 2))
target_op("arm.sadalp", ["i16, i8 -> i16", "i32, i16 -> i32", "i64, i32 -> i64"],
          lambda sg: f"x + vector_reduce_add_x2({sg.result.name}(y))", _pairwise_long("saddlp", True),
          llvm=f"add + {NEON}.saddlp (sadalp)", lanes=(1, 2))
target_op("arm.addp", _same((*U8_64, *I8_64), 1), "vector_reduce_add_x2(x)", _addp, llvm=f"{NEON}.addp",
          lanes=(2,))
