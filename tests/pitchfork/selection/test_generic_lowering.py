"""The generic lowering (rules/lower/generic.rules + pitchfork.selection.lower.expand_fpir).

* every rule is Z3-VALID at every type instance (synth.verify.verify_rule, with its fallbacks for
  multiplier identities, whose integer encoding is itself checked against the interpreter here);
* every FPIR op has a rule, for every type it accepts, and its expansion contains no FPIR op;
* expansions agree with the interpreter on random and edge inputs for every op and type;
* the width cap: no expansion needs a type wider than the cap when the op itself is not wider
  (no i128 for 64-bit mul_shr; 32-bit-only arithmetic for a 32-bit one under the HVX cap);
* priority is file order.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
import z3

from fpir.interp import evaluate
from fpir.ops import FPIR_OPS, make
from fpir.opspec import OPS, spec
from fpir.term import Term, var
from fpir.text import parse
from fpir.types import INT_TYPES, ScalarType
from pitchfork.selection.lower import expand_fpir, generic_rules, select_instructions, widest
from synth.verify import verify_rule
from synth import verify_fallback as F
from synth.verify_fallback import Unsupported, to_int

RULES = generic_rules().rules


def test_rule_file_loads_and_every_fpir_op_has_a_rule() -> None:
    roots = {op for r in RULES for op in r.root_ops}
    missing = [op for op in FPIR_OPS if op not in roots]
    assert not missing, f"FPIR ops without a generic rule: {missing}"


@pytest.mark.parametrize("rule", RULES, ids=[r.name for r in RULES])
def test_rule_is_valid(rule) -> None:  # type: ignore[no-untyped-def]
    res = verify_rule(rule, rlimit=40_000_000)
    assert res.status == "VALID", f"{rule.text()}\n{res.summary()}"
    assert res.instances, "the rule never applies"


# ---------------------------------------------------------------------------------------------
# Every FPIR op, every type: expansion is primitive-only and agrees with the interpreter


def _signatures(op: str) -> list[tuple[ScalarType, ...]]:
    """Operand types the op accepts (from its type rule), restricted to user types."""
    s = spec(op)
    out = []
    for combo in itertools.product(INT_TYPES, repeat=s.arity):
        try:
            s.type_rule(list(combo), None)
        except Exception:  # noqa: BLE001
            continue
        out.append(combo)
    return out


def _values(rng: np.random.Generator, t: ScalarType, n: int) -> np.ndarray:
    edges = [t.min, t.max, 0, 1, t.wrap(-1), t.min + 1, t.max - 1]
    small = [t.wrap(int(v)) for v in rng.integers(-3, t.bits + 3, n)]
    rand = [t.wrap(int(v)) for v in rng.integers(0, 1 << 62, n) * 4 + rng.integers(0, 4, n)]
    pick = rng.integers(0, 3, n)
    vals = [edges[i % len(edges)] if p == 0 else small[i] if p == 1 else rand[i] for i, p in enumerate(pick)]
    return np.array(vals, dtype=object).astype(t.np_dtype)


def _instances() -> list[tuple[str, tuple[ScalarType, ...], ScalarType]]:
    out = []
    for op in FPIR_OPS:
        if op == "saturating_cast":
            out += [(op, (a,), b) for a in INT_TYPES for b in INT_TYPES if a != b]
            continue
        out += [(op, sig, None) for sig in _signatures(op)]  # type: ignore[misc]
    return out


INSTANCES = _instances()


@pytest.mark.parametrize("op,sig,rt", INSTANCES,
                         ids=[f"{o}-{'-'.join(map(str, s))}{'-' + str(r) if r else ''}" for o, s, r in INSTANCES])
def test_expansion_matches_interpreter(op: str, sig: tuple[ScalarType, ...], rt) -> None:  # type: ignore[no-untyped-def]
    args = [var(f"v{i}", t) for i, t in enumerate(sig)]
    term = make(op, *args, type=rt)
    rng = np.random.default_rng(hash((op, sig)) % 2**32)
    env = {f"v{i}": _values(rng, t, 400) for i, t in enumerate(sig)}
    for cap in (64, 32, None):
        low = expand_fpir(term, cap)
        assert all(OPS[t.op].kind == "primitive" for t in low.walk() if t.args), str(low)
        np.testing.assert_array_equal(evaluate(low, env), evaluate(term, env), err_msg=f"cap={cap}: {low}")
    # constant shift amounts take their own rules (rounding_shr by c, mul_shr by c...)
    if op in ("rounding_shr", "rounding_shl", "saturating_shl", "widening_shl", "widening_shr", "mul_shr",
              "rounding_mul_shr"):
        at = sig[-1]
        for c in sorted({0, 1, 2, sig[0].bits - 1, sig[0].bits, sig[0].bits + 1, 2 * sig[0].bits, -1, -sig[0].bits}):
            if not at.contains(c):
                continue
            from fpir.term import const

            t2 = make(op, *args[:-1], const(c, at))
            low = expand_fpir(t2)
            np.testing.assert_array_equal(evaluate(low, env), evaluate(t2, env), err_msg=f"amount {c}: {low}")


# ---------------------------------------------------------------------------------------------
# Width cap


@pytest.mark.parametrize("text", ["mul_shr(x_u64, y_u64, z_u64)", "rounding_mul_shr(x_i64, y_i64, 63)",
                                  "mul_shr(x_i64, y_i64, 64)", "rounding_mul_shr(x_u64, y_u64, z_u64)",
                                  "saturating_add(x_i64, y_i64)", "halving_add(x_u64, y_u64)",
                                  "saturating_cast<i32>(x_i64)"])
def test_no_i128_for_64_bit_ops(text: str) -> None:
    assert widest(expand_fpir(parse(text), 64)) == 64
    for target in ("x86-avx2", "arm64", "hvx128"):
        assert widest(select_instructions(parse(text), target, "llvm").final) == 64


@pytest.mark.parametrize("text", ["rounding_mul_shr(x_i32, y_i32, 31)", "mul_shr(x_u32, y_u32, 32)",
                                  "mul_shr(x_i32, y_i32, z_u32)"])
def test_32_bit_safe_mul_shr_on_hvx(text: str) -> None:
    t = parse(text)
    assert widest(expand_fpir(t, 64)) == 64  # x86 / ARM: LLVM's own 32x32->64 multiply is best
    assert widest(expand_fpir(t, 32)) == 32  # the paper's 32-bit-safe lowering
    assert widest(select_instructions(t, "hvx128", "llvm").final) == 32


def test_widening_of_the_widest_type_keeps_its_width() -> None:
    t = parse("widening_add(x_u64, y_u64)")
    assert widest(expand_fpir(t, 64)) == 128


# ---------------------------------------------------------------------------------------------
# Priority = file order, and the expansions are the efficient ones


def test_priority_is_file_order() -> None:
    assert str(expand_fpir(parse("halving_add(x_u8, y_u8)"))) == "(x_u8 & y_u8) + ((x_u8 ^ y_u8) >> 1)"
    # widening_shr by a constant: the narrow shift comes first (widening_shr_const before widening_shr)
    assert str(expand_fpir(parse("widening_shr(x_u8, 3)"))) == "u16(x_u8 >> 3)"
    # saturating_cast: only the bound that can be hit
    assert str(expand_fpir(parse("saturating_cast<u8>(x_u16)"))) == "u8(min(x_u16, 255))"
    assert str(expand_fpir(parse("saturating_cast<u16>(x_i8)"))) == "u16(max(x_i8, 0))"
    assert str(expand_fpir(parse("saturating_cast<i16>(x_u8)"))) == "i16(x_u8)"


@pytest.mark.parametrize("text", ["halving_add(x_i16, y_i16)", "rounding_halving_add(x_u32, y_u32)",
                                  "halving_sub(x_u8, y_u8)", "saturating_add(x_i8, y_i8)",
                                  "saturating_sub(x_u64, y_u64)", "absd(x_i32, y_i32)", "rounding_shr(x_i16, 5)",
                                  "rounding_shr(x_u8, y_i8)", "saturating_shl(x_i16, y_u16)"])
def test_no_wider_type(text: str) -> None:
    t = parse(text)
    assert widest(expand_fpir(t)) == t.type.bits


# ---------------------------------------------------------------------------------------------
# The integer encoding of the verification fallback agrees with the interpreter


def test_integer_encoding_matches_interpreter() -> None:
    texts = ["x_u32 * y_u32 + 7", "(x_i16 >> 3) - (y_i16 & 255)", "u8(x_i32) + u8(y_i32)", "reinterpret<i16>(x_u16)",
             "select(x_i8 < y_i8, x_i8, ~y_i8)", "min(x_u64, y_u64) * 3", "u16(widening_mul(x_u8, y_u8) >> 4)",
             "x_i64 << 5", "abs(x_i32)", "max(x_i16, y_i16) - i16(z_u16 >> 1)",
             # sign masks (0 or all ones) and a value: encoded as a select
             "reinterpret<u32>(reinterpret<i32>(x_u32) >> 31) & y_u32", "y_i16 & (x_i16 >> 15)",
             "u8(x_i8 >> 7) & y_u8"]
    rng = np.random.default_rng(3)
    for text in texts:
        t = parse(text)
        vs = {v.name: v for v in t.variables()}
        for _ in range(20):
            env = {n: int(_values(rng, v.type, 1)[0]) for n, v in vs.items()}
            ienv = {n: (z3.IntVal(x), x, x) for n, x in env.items()}
            F._SIDE.clear()
            F._DIVMOD.clear()
            try:
                enc = to_int(t, ienv)[0]
            except Unsupported:
                pytest.fail(f"{text} should be encodable")
            # purified divisions come with side conditions: solve rather than simplify
            s = z3.Solver()
            s.add(*F._SIDE)
            r = z3.Int("result")
            s.add(r == enc)
            assert s.check() == z3.sat
            want = int(np.asarray(evaluate(t, env)).item())
            assert s.model().eval(r).as_long() == want, (text, env)


@pytest.mark.parametrize("text", ["(x_u16 >> 15) & y_u16", "(x_i16 >> 14) & y_i16", "u16(x_i32 >> 31) & y_u16"])
def test_integer_encoding_rejects_and_with_other_masks(text: str) -> None:
    """Only a signed value shifted by bits - 1 (through same-width casts) is taken as 0 or all ones: an
    unsigned shift gives 0 or 1, a shorter one other values; a narrowing cast (a mask too) is not
    recognised, so it stays unsupported rather than guessed."""
    with pytest.raises(Unsupported):
        to_int(parse(text), {v.name: (z3.Int(v.name), v.type.min, v.type.max) for v in parse(text).variables()})


def test_integer_encoding_of_variable_shifts_matches_interpreter() -> None:
    """Shifts by a symbolic amount (a rule constant such as `widening_shl(x_T, c0)`) are encoded as a
    case split over the amounts; the amount stays a Z3 symbol here, so the split itself is checked,
    including negative amounts and amounts at and beyond the width."""
    texts = ["x_i16 << y_i16", "x_u16 >> y_u16", "x_i8 >> y_i8", "x_u8 << y_u8", "widening_shl(x_u8, y_u8)",
             "widening_shl(x_i8, y_i8)"]
    rng = np.random.default_rng(5)
    for text in texts:
        t = parse(text)
        xt, yt = t.args[0].type, t.args[1].type
        amounts = [0, 1, yt.bits // 2, yt.bits - 1, yt.bits, yt.bits + 1, yt.max]
        amounts += [-1, -yt.bits, yt.min] if yt.signed else []
        for k in amounts:
            x = int(_values(rng, xt, 1)[0])
            F._SIDE.clear()
            F._DIVMOD.clear()
            y = z3.Int("y")
            enc = to_int(t, {"x": (z3.IntVal(x), x, x), "y": (y, yt.min, yt.max)})[0]
            s = z3.Solver()
            s.add(*F._SIDE, y == k)
            r = z3.Int("result")
            s.add(r == enc)
            assert s.check() == z3.sat
            want = int(np.asarray(evaluate(t, {"x": x, "y": k})).item())
            assert s.model().eval(r).as_long() == want, (text, x, k)


def test_integer_encoding_of_a_shift_whose_amounts_all_lie_beyond_the_width() -> None:
    """An amount whose whole interval lies beyond +-bits (a rule constant bounded to, say, 11..18 on
    an 8-bit shift) gives the result of the nearest end: the case split must not come out empty
    (it did, and the x86 synthesis tasks with such a constant ended in an AssertionError)."""
    cases = [("x_u8 >> y_u8", (11, 18), 13), ("x_u8 << y_u8", (9, 200), 9), ("x_i8 >> y_i8", (10, 100), 77),
             ("x_i8 >> y_i8", (-100, -10), -12), ("x_i16 << y_i16", (-40, -17), -30)]
    rng = np.random.default_rng(6)
    for text, (lo, hi), k in cases:
        t = parse(text)
        for x in [int(v) for v in _values(rng, t.args[0].type, 4)]:
            F._SIDE.clear()
            F._DIVMOD.clear()
            y = z3.Int("y")
            enc = to_int(t, {"x": (z3.IntVal(x), x, x), "y": (y, lo, hi)})[0]
            s = z3.Solver()
            r = z3.Int("result")
            s.add(*F._SIDE, y == k, r == enc)
            assert s.check() == z3.sat
            want = int(np.asarray(evaluate(t, {"x": x, "y": k})).item())
            assert s.model().eval(r).as_long() == want, (text, x, k)


def test_saturating_cast_of_an_in_range_value_is_a_plain_cast() -> None:
    # mul's i32 rounding_mul_shr of a pmaddwd-sized product: the i64 rounded product cannot leave
    # i32, so no clamp (a compare and a blend per vector on x86) is emitted
    t = parse("rounding_mul_shr(i32(widening_mul(a_i16, b_i16) >> 2), c_i32, 31)")
    out = expand_fpir(t, 64)
    assert {n.op for n in out.walk()} & {"min", "max", "select"} == set(), str(out)
    t2 = parse("rounding_mul_shr(a_i32, c_i32, 31)")  # a full-range product can saturate: clamped
    assert {n.op for n in expand_fpir(t2, 64).walk()} & {"min", "max", "select"}
    rng = np.random.default_rng(4)
    env = {"a": rng.integers(-32768, 32768, 256).astype(np.int16),
           "b": rng.integers(-32768, 32768, 256).astype(np.int16),
           "c": rng.integers(-2**31, 2**31, 256).astype(np.int32)}
    assert np.array_equal(evaluate(t, env), evaluate(out, env))
