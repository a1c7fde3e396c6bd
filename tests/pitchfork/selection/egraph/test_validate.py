"""Translation validation (pitchfork/selection/egraph/validate.py) and the per-shape cache (canon.py):
abstraction of shared sub-terms proves what it should and never proves a false equality; renaming is
a bijection that keeps types, flags and uniform leaves; one shape is saturated once and its result,
renamed, is exact for every expression of that shape; multi-flag nodes are encoded; errors on the
egglog thread become one-line notes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.term import var
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.selection.egraph import engine as eng
from pitchfork.selection.egraph.canon import canonical, rename
from pitchfork.selection.egraph.validate import abstract_shared, validate_result
from pitchfork.selection.lift import lift

GAUSS = ("u8((i16({0}_u8) * 2 + (i16({1}_u8) * 2 + i16({2}_u8) + i16({3}_u8) + i16({4}_u8)) * 2 + i16({5}_u8)"
         " + i16({6}_u8) + i16({7}_u8) + i16({8}_u8) + 8) / 16)")


def _names(prefix: str, start: int) -> list[str]:
    return [f"{prefix}{start + i}" for i in range(9)]


def _random_equal(a, b, seed: int = 28) -> bool:
    rng = np.random.default_rng(seed)
    env = {v.name: rng.integers(v.type.min, v.type.max + 1, 1 << 14).astype(v.type.np_dtype)
           for v in {*a.variables(), *b.variables()}}
    return bool(np.array_equal(np.asarray(evaluate(a, env)), np.asarray(evaluate(b, env))))


def test_abstract_shared_replaces_maximal_common_subterms() -> None:
    a = parse("(u16(x_u8) + u16(y_u8)) * 2 + u16(z_u8)")
    b = parse("((u16(x_u8) + u16(y_u8)) << 1) + u16(z_u8)")
    sa, sb = abstract_shared(a, b)
    pairs = [("_shared0_u16", "_shared1_u16"), ("_shared1_u16", "_shared0_u16")]
    assert (str(sa), str(sb)) in [(f"{p} * 2 + {q}", f"({p} << 1) + {q}") for p, q in pairs], (str(sa), str(sb))
    assert abstract_shared(a, a) == (var("_shared0", a.type),) * 2


def test_abstraction_never_proves_a_false_equality() -> None:
    # equal only because of the shared sub-term's range (u16(x) < 256): the abstracted query is not
    # VALID, and the full query (against the input) then decides, here INVALID
    greedy = parse("(u32(x_u16) + 1) >> 16 + u32(y_u16)")
    wrong = parse("(u32(x_u16) + 2) >> 16 + u32(y_u16)")  # differs at x = 65534 (32 input bits: not exhausted)
    why, how = validate_result(greedy, wrong, greedy, 1_000_000)
    assert why.startswith("translation validation INVALID") and how == ""
    # true only for the shared sub-term's range: abstraction fails, the full proof succeeds
    a = parse("(u32(x_u16) + u32(y_u16)) >> 17")  # the sum is below 2^17: both sides are 0
    b = parse("((u32(x_u16) + u32(y_u16)) >> 18) << 1")
    why, how = validate_result(a, b, a, 1_000_000)
    assert (why, how) == ("", "full")


def test_exhaustion_proves_and_refutes_small_inputs() -> None:
    a = parse("(i32(a_u8) - 7) * i32(b_u8)")
    good = parse("extending_add(i32(widening_mul(i8(-7), b_u8)), widening_mul(b_u8, a_u8))")
    assert validate_result(a, good, None, 1) == ("", "exhaustive")  # no Z3 resources needed
    why, how = validate_result(a, parse("i32(widening_mul(a_u8, b_u8))"), None, 1)
    assert why.startswith("translation validation INVALID by exhaustion (a = 0, b = 1)") and how == ""
    # with flag facts a difference outside them does not refute: Z3 decides under the facts
    flagged = parse("add.nsw(x_i8, y_i8)")
    assert validate_result(flagged, parse("saturating_add(x_i8, y_i8)"), None, 1_000_000) == ("", "full")


def test_shared_proof_on_the_gaussian_row_is_cheap() -> None:
    t = parse(GAUSS.format(*_names("row", 0)))
    res = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert res.source == "egraph" and res.proof == "shared", res.note
    assert _random_equal(t, res.term)


def test_canonical_is_a_bijection_keeping_attributes() -> None:
    t = parse("add.nsw(i32(x_i16), i32(y_i16)) + c0_i32")
    u = var("s", parse_type("u8"), uniform=True)
    from fpir.ops import make

    t = make("add", t, make("cast", u, type=parse_type("i32")))
    c, back = canonical(t)
    assert rename(c, back) is t
    assert {v.name for v in c.variables()} == {"_v0", "_v1", "_v2", "c0"}
    assert any(v.is_uniform_leaf for v in c.variables())
    assert "nsw" in str(c)


def test_same_shape_saturated_once_and_exact_for_each(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    first = parse(GAUSS.format(*_names("load", 0)))
    second = parse(GAUSS.format(*_names("load", 9)))
    r1 = eng.lift_egraph(first, budget=eng.SELECTION_BUDGET)
    r2 = eng.lift_egraph(second, budget=eng.SELECTION_BUDGET)
    assert "same shape" in r2.note and "same shape" not in r1.note
    assert r2.source == "egraph" and {v.name for v in r2.term.variables()} == {f"load{i}" for i in range(9, 18)}
    assert _random_equal(second, r2.term)


def test_deferred_result_is_proved_once_per_shape_by_prove(monkeypatch: pytest.MonkeyPatch) -> None:
    """lift_egraph(defer=True) (selection) leaves an e-graph result PENDING; `prove` proves it, and a
    later expression of the shape comes back proved without a second proof."""
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    monkeypatch.setattr(eng, "_PROOFS", {})
    first = parse(GAUSS.format(*_names("load", 0)))
    res = eng.lift_egraph(first, budget=eng.SELECTION_BUDGET, defer=True)
    assert res.source == "egraph" and res.proof == eng.PENDING and not eng._PROOFS
    proved = eng.prove(res)
    assert proved.source == "egraph" and proved.term is res.term and proved.proof in ("exhaustive", "shared", "full")
    assert len(eng._PROOFS) == 1 and eng.prove(proved) is proved
    second = eng.lift_egraph(parse(GAUSS.format(*_names("load", 9))), budget=eng.SELECTION_BUDGET, defer=True)
    assert second.proof == proved.proof and len(eng._PROOFS) == 1
    # without defer, lift_egraph proves before it returns (lift, pitchfork lift, --explain)
    assert eng.lift_egraph(first, budget=eng.SELECTION_BUDGET).proof == proved.proof


def test_prove_refuses_a_wrong_result_with_a_one_line_note(monkeypatch: pytest.MonkeyPatch) -> None:
    """A wrong e-graph result (here planted in the shape cache, as a broken rule would make it) is
    refused by `prove`: greedy's result with a one-line note, and the shape's outcome is greedy's from
    then on."""
    from dataclasses import replace

    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    monkeypatch.setattr(eng, "_PROOFS", {})
    t = parse(GAUSS.format(*_names("load", 0)))
    assert eng.lift_egraph(t, budget=eng.SELECTION_BUDGET, defer=True).source == "egraph"
    (key, (rs, shape)), = eng._SHAPES.items()
    wrong = parse("u8(widening_add(_v0_u8, _v1_u8) >> 4)")  # cheaper than greedy's, and not equal
    eng._SHAPES[key] = (rs, replace(shape, term=wrong))
    eng._RESULTS.clear()
    res = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET, defer=True)
    assert res.source == "egraph" and res.proof == eng.PENDING
    out = eng.prove(res)
    assert out.source == "greedy" and out.term is res.greedy_term is lift(t)
    assert "translation validation" in out.note and "\n" not in out.note
    again = eng.lift_egraph(parse(GAUSS.format(*_names("load", 9))), budget=eng.SELECTION_BUDGET, defer=True)
    assert again.source == "greedy" and again.proof == ""


def test_multi_flag_nodes_are_encoded() -> None:
    t = parse("saturating_cast<i16>(shl.inrange.nsw(1, i32(x_u8 >> 5)) + i32(y_i16) * 2)")
    res = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert "egraph engine failed" not in res.note, res.note
    assert _random_equal(t, res.term)


def test_error_on_the_egglog_thread_is_a_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    monkeypatch.setattr(eng, "_ROUND", "(run-schedule (no-such-ruleset))")
    t = parse("i16(p_u8) + (0 - i16(q_u8))")
    out: list = []
    th = threading.Thread(target=lambda: out.append(eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)))
    th.start()
    th.join()
    assert out[0].source == "greedy" and out[0].term is lift(t)
    assert "egraph engine failed" in out[0].note and "\n" not in out[0].note


def test_ops_registered_after_the_prelude_are_opaque() -> None:
    from fpir.ops import make
    from fpir.opspec import OPS, reduce_op

    eng._prelude()  # declared now; a reduction factor no pipeline used yet is registered below
    free = next(f for f in (3, 5, 6, 7, 9, 11, 13) if f"vector_reduce_max_x{f}" not in OPS)
    op = reduce_op("max", free)  # registered on demand
    assert op not in eng._declared()
    t = make(op, parse("i32(x_i16) * 2 + i32(y_i16) * 2"))
    res = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert res.rounds > 0 and "egraph engine failed" not in res.note, res.note
