"""Bounds inference is sound: every evaluated lane of every sub-term lies inside bounds(sub-term).

Random terms over every primitive and FPIR op (tests/pitchfork/trs/termgen.py), evaluated with the
numpy interpreter on random and edge inputs. Also checks the cache, `assume` ranges, and a few exact
intervals the lifting predicates rely on.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from trs.termgen import fpir_terms, inputs_for, integer_terms

from fpir import FPIR_OPS, parse
from fpir.interp import evaluate
from fpir.term import Term
from pitchfork.selection.bounds import bounds

RNG = np.random.default_rng(2024)


def _check_sound(term: Term) -> set[str]:
    env = inputs_for(term, RNG, lanes=32)
    seen = set()
    for t in term.walk():
        if t.is_var or t.is_const:
            continue
        seen.add(t.op)
        lo, hi = bounds(t)
        assert t.type.min <= lo <= hi <= t.type.max, (str(t), lo, hi)
        vals = [int(v) for v in np.asarray(evaluate(t, env)).ravel()]
        assert lo <= min(vals) and max(vals) <= hi, f"{t}: values {min(vals)}..{max(vals)} outside [{lo}, {hi}]"
    return seen


def test_bounds_sound_on_random_terms_with_every_op() -> None:
    ops: set[str] = set()

    @settings(max_examples=700, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(fpir_terms())
    def check(term: Term) -> None:
        ops.update(_check_sound(term))

    check()
    assert len(ops & set(FPIR_OPS)) >= len(FPIR_OPS) // 2, sorted(ops)


def test_bounds_sound_for_every_op_at_every_type_instance() -> None:
    """Deterministic coverage: each op over variables of every operand-type combination it accepts
    (u8 .. i32), and over narrowed operands (x >> k, x & mask, clamps) so intervals are not all full."""
    import itertools

    from trs.termgen import SMALL

    from fpir.ops import make
    from fpir.opspec import OPS
    from fpir.term import const, var
    from fpir.types import FPIRTypeError

    def operands(t):  # type: ignore[no-untyped-def]
        x = var(f"x{t.name}", t)
        yield x
        yield make("shr", x, const(t.bits // 2, t))
        if t.signed:
            yield make("max", make("min", x, const(5, t)), const(-3, t))

    covered = set()
    for name, sp in OPS.items():
        if sp.kind != "fpir" and name not in ("abs", "div", "mod", "shl", "shr", "mul", "add", "sub"):
            continue
        for types in itertools.product(SMALL, repeat=sp.arity):
            for result in (SMALL if sp.explicit_type else (None,)):
                for args in itertools.islice(itertools.product(*[operands(t) for t in types]), 4):
                    try:
                        term = make(name, *args, type=result)
                    except FPIRTypeError:
                        break
                    covered.add(name)
                    _check_sound(term)
    assert set(FPIR_OPS) <= covered


def test_bounds_sound_on_random_integer_idioms() -> None:
    @settings(max_examples=400, deadline=None, derandomize=True,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(integer_terms())
    def check(term: Term) -> None:
        _check_sound(term)

    check()


def test_signed_division_by_a_possibly_negative_divisor() -> None:
    t = parse("a_u8 / b_u8")
    assert bounds(t) == (0, 255)
    t = parse("i16(a_u8) / b_i16")
    lo, hi = bounds(t)
    assert lo <= -255 and hi >= 255  # 255 / -1 = -255 (Euclidean division)
    env = {"a": np.array([255, 255, 7], dtype=np.uint8), "b": np.array([-1, 1, -2], dtype=np.int16)}
    vals = evaluate(t, env)
    assert lo <= vals.min() and vals.max() <= hi


def test_bounds_used_by_lifting_predicates_are_tight() -> None:
    assert bounds(parse("widening_add(a_u8, b_u8)")) == (0, 510)
    assert bounds(parse("widening_sub(a_u8, b_u8)")) == (-255, 255)
    assert bounds(parse("widening_mul(a_i16, b_i16)")) == (-32768 * 32767, 32768 * 32768)
    assert bounds(parse("widening_add(a_u8, c_u8) + widening_shl(b_u8, 1)")) == (0, 1020)
    assert bounds(parse("absd(a_i8, b_i8)")) == (0, 255)
    assert bounds(parse("saturating_cast<u8>(a_i16)")) == (0, 255)
    assert bounds(parse("a_u16 >> 8")) == (0, 255)


def test_bounds_with_assumed_ranges_and_cache() -> None:
    t = parse("a_u8 + b_u8")
    assert bounds(t) == (0, 255)  # may wrap: the whole type
    assert bounds(t, {"a": (0, 10), "b": (0, 20)}) == (0, 30)
    assert bounds(t) == (0, 255)  # assumptions do not leak into the shared cache


def test_and_with_a_non_negative_operand_is_bounded_by_it() -> None:
    # the rounding bit of a rounding shift of a signed value: 0 or 1, so the generic expansion of
    # an i32 rounding_mul_shr can see that its i64 result fits i32 (no clamp; mul on x86)
    assert bounds(parse("(a_i64 >> 30) & 1")) == (0, 1)
    assert bounds(parse("a_i16 & 255")) == (0, 255)
    assert bounds(parse("a_i16 & b_i16")) == (-32768, 32767)
    rng = np.random.default_rng(3)
    for text in ("(a_i64 >> 30) & 1", "a_i16 & 255", "a_i8 & (b_i8 >> 1 & 63)"):
        t = parse(text)
        lo, hi = bounds(t)
        env = inputs_for(t, rng, 200)
        v = np.asarray(evaluate(t, env))
        assert lo <= v.min() and v.max() <= hi, text
