"""Lane-combining ops (`vector_reduce_<op>_x<f>`) and the instructions defined with them: the interpreter and
the per-lane Z3 encoding agree (exhaustively on 8-bit pairs, randomly on wider types and larger factors), both
agree with a plain Python fold, bounds are sound, and wrong lane groupings are refuted."""

from __future__ import annotations

import itertools
from typing import Callable

import numpy as np
import pytest

import pitchfork.targets.arm  # noqa: F401 - registers arm.udot/sdot
import pitchfork.targets.hvx  # noqa: F401
import pitchfork.targets.x86  # noqa: F401
from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import REDUCE_COMBINE, reduce_op, spec
from fpir.term import Term, var
from fpir.text import FPIRSyntaxError, parse
from fpir.types import FPIRTypeError, ScalarType, i8, i16, i32, i64, u8, u16, u32, u64
from fpir.z3enc import equivalent, to_z3_lane
from fpir_testlib import as_dtype, to_unsigned, z3_eval
from pitchfork.selection.bounds import bounds

FOLD: dict[str, Callable[[int, int, ScalarType], int]] = {
    "add": lambda a, b, t: t.wrap(a + b),
    "min": lambda a, b, t: min(a, b),
    "max": lambda a, b, t: max(a, b),
    "saturating_add": lambda a, b, t: max(t.min, min(t.max, a + b)),
}


def _z3_lanes(term: Term, cols: dict[str, np.ndarray], f: int, t: ScalarType) -> np.ndarray:
    """Lane 0 of the term by the Z3 encoding, for each row of `cols[x]` (shape rows x f)."""
    used: dict = {}
    expr = to_z3_lane(term, 0, used=used)
    rows = next(iter(cols.values())).shape[0]
    env = {name: to_unsigned(cols[v.name][:, lane], v.type.bits) for name, (v, lane) in used.items()}
    got = z3_eval(expr, env, rows)
    return np.array([t.wrap(int(g)) for g in got], dtype=object)


def _check(kind: str, t: ScalarType, f: int, data: np.ndarray) -> None:
    term = make(reduce_op(kind, f), var("x", t))
    got_np = evaluate(term, {"x": as_dtype(data.reshape(-1), t)})  # one flat lane axis: rows x f lanes
    assert got_np.shape == (data.shape[0],) and got_np.dtype == t.np_dtype
    want = []
    for row in data:
        acc = int(row[0])
        for v in row[1:]:
            acc = FOLD[kind](acc, int(v), t)
        want.append(acc)
    want_a = np.array(want, dtype=object)
    assert (got_np.astype(object) == want_a).all(), f"{term}: interpreter != fold"
    got_z3 = _z3_lanes(term, {"x": data}, f, t)
    bad = np.flatnonzero(got_z3 != want_a)
    assert not bad.size, f"{term}: Z3 != fold at {list(data[bad[0]])}: {got_z3[bad[0]]} vs {want_a[bad[0]]}"


@pytest.mark.parametrize("kind", sorted(REDUCE_COMBINE))
@pytest.mark.parametrize("t", [u8, i8], ids=str)
def test_exhaustive_8bit_pairs(kind: str, t: ScalarType) -> None:
    vals = np.arange(t.min, t.max + 1)
    data = np.array(list(itertools.product(vals, vals)), dtype=object)
    _check(kind, t, 2, data)


@pytest.mark.parametrize("kind", sorted(REDUCE_COMBINE))
@pytest.mark.parametrize("t", [u16, i16, u32, i32, u64, i64], ids=str)
@pytest.mark.parametrize("f", [3, 4, 8])
def test_random_wider(kind: str, t: ScalarType, f: int) -> None:
    rng = np.random.default_rng(t.bits * 10 + f)
    data = np.array([[int(v) for v in rng.integers(t.min, t.max, size=f, endpoint=True, dtype=t.np_dtype)]
                     for _ in range(600)], dtype=object)
    data[:50] = t.max  # saturation / wrap at the top
    data[50:100] = t.min
    _check(kind, t, f, data)


@pytest.mark.parametrize("text, arg_types", [
    ("arm.udot(x_u32, y_u8, z_u8)", (u32, u8, u8)), ("arm.sdot(x_i32, y_i8, z_i8)", (i32, i8, i8)),
    ("hvx.vrmpy(x_i32, y_u8, z_i8)", (i32, u8, i8)), ("x86.pmaddwd_pairs(y_i16, z_i16)", (i16, i16)),
    ("x86.pmaddubsw_pairs(y_u8, z_i8)", (u8, i8)), ("hvx.vdmpy_pairs(y_u8, z_i8)", (u8, i8)),
    ("hvx.vdmpy_pairs_acc(x_i32, y_i16, z_i8)", (i32, i16, i8)),
])
def test_instruction_semantics_interp_vs_z3(text: str, arg_types: tuple) -> None:
    """A lane-combining instruction's definition, interpreted and encoded, agrees on random groups."""
    term = parse(text)
    s = spec(term.op)
    rng = np.random.default_rng(7)
    rows = 400
    cols: dict[str, np.ndarray] = {}
    env: dict[str, np.ndarray] = {}
    for i, a in enumerate(term.args):
        f = s.lane_factor(i)
        block = rng.integers(a.type.min, a.type.max, size=(rows, f), endpoint=True).astype(object)
        block[:40] = a.type.min
        block[40:80] = a.type.max
        cols[a.name] = block
        env[a.name] = as_dtype(block.reshape(-1), a.type)
    got_np = evaluate(term, env).astype(object)
    got_z3 = _z3_lanes(term, cols, 1, term.type)
    assert (got_np == got_z3).all()


def test_factor_is_part_of_the_name_and_checked() -> None:
    assert spec("vector_reduce_add_x16").reduce == ("add", 16)  # any factor exists
    with pytest.raises(FPIRTypeError):
        spec("vector_reduce_mul_x2")  # no such family
    with pytest.raises(FPIRTypeError):
        evaluate(parse("vector_reduce_add_x4(x_u8)"), {"x": np.arange(6, dtype=np.uint8)})  # 6 lanes, f = 4
    with pytest.raises(FPIRSyntaxError, match="takes 1 argument"):
        parse("vector_reduce_add_x4(x_u8, y_u8)")


def test_grouping_is_adjacent_lanes() -> None:
    # Nested reductions compose; other groupings are refuted with a per-lane counterexample.
    assert equivalent(parse("vector_reduce_add_x4(u16(x_u8))"),
                      parse("vector_reduce_add_x2(vector_reduce_add_x2(u16(x_u8)))")).valid
    wrong = equivalent(parse("vector_reduce_add_x4(x_u8)"), parse("vector_reduce_add_x2(x_u8)"))
    assert wrong.status == "INVALID" and "x@2" in wrong.counterexample
    # udot sums four adjacent products, not two.
    assert not equivalent(parse("x_u32 + vector_reduce_add_x2(u32(widening_mul(y_u8, z_u8)))"),
                          parse("arm.udot(x_u32, y_u8, z_u8)")).valid
    # pmaddubsw saturates the pair sum: a wrapping add is not it.
    assert not equivalent(parse("vector_reduce_add_x2(widening_mul(y_u8, z_i8))"),
                          parse("x86.pmaddubsw_pairs(y_u8, z_i8)")).valid
    # max then min is not min then max of a group.
    assert not equivalent(parse("vector_reduce_max_x2(x_i8)"), parse("vector_reduce_min_x2(x_i8)")).valid


def test_unsound_rule_is_rejected() -> None:
    from pitchfork.trs.rules import parse_rule
    from synth.verify import verify_rule

    bad = parse_rule("bad: vector_reduce_add_x4(u32(widening_mul(y_u8, z_u8))) -> arm.udot(0, y_u8, z_u8) + 1")
    assert verify_rule(bad).status != "VALID"
    bad2 = parse_rule("bad2: vector_reduce_add_x2(widening_mul(x_u8, y_i8)) -> x86.pmaddubsw_pairs(x_u8, y_i8)")
    assert verify_rule(bad2).status != "VALID"


def test_bounds_are_sound() -> None:
    term = parse("vector_reduce_add_x4(u32(widening_mul(x_u8, y_u8)))")
    assert bounds(term) == (0, 4 * 255 * 255)
    assert bounds(parse("vector_reduce_saturating_add_x4(i16(x_i8))")) == (-512, 508)
    assert bounds(parse("vector_reduce_max_x4(u16(x_u8))")) == (0, 255)
    rng = np.random.default_rng(3)
    for text in ("vector_reduce_add_x3(i16(x_i8))", "vector_reduce_min_x2(x_i16 >> 3)"):
        t = parse(text)
        lo, hi = bounds(t)
        v = t.variables()[0]
        got = evaluate(t, {"x": rng.integers(v.type.min, v.type.max, size=3 * 2 * 500, endpoint=True)})
        assert lo <= int(got.min()) and int(got.max()) <= hi
