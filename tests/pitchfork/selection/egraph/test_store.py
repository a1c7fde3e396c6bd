"""The on-disk store of shape outcomes (pitchfork/selection/egraph/store.py): a shape saturated in one
process is found by the next (here: with the in-process caches emptied) without saturating; a stored
e-graph result is proved again before use and a tampered one is refused (the shape is saturated
afresh); a different rule set, budget or shape is another key; failures are not stored."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from pitchfork.selection.egraph import engine as eng
from pitchfork.selection.egraph import store
from pitchfork.selection.egraph.canon import canonical
from pitchfork.selection.greedy import lift_rules
from pitchfork.trs.cache import _FORMAT
from pitchfork.trs.rules import RuleSet

GAUSS = ("u8((i16(a_u8) * 2 + (i16(b_u8) * 2 + i16(c_u8) + i16(d_u8) + i16(e_u8)) * 2 + i16(f_u8)"
         " + i16(g_u8) + i16(h_u8) + i16(i_u8) + 8) / 16)")


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The store on, in an empty directory; the engine's in-process caches empty."""
    monkeypatch.setattr(store, "ENABLED", True)
    monkeypatch.setenv("PITCHFORK_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    return tmp_path


def _new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})


def _equal(a, b) -> bool:
    rng = np.random.default_rng(28)
    env = {v.name: rng.integers(v.type.min, v.type.max + 1, 1 << 12).astype(v.type.np_dtype)
           for v in {*a.variables(), *b.variables()}}
    return bool(np.array_equal(np.asarray(evaluate(a, env)), np.asarray(evaluate(b, env))))


def _entry(t, rs=None, budget=eng.SELECTION_BUDGET) -> Path:
    from pitchfork.selection.greedy import normalize_shift_constants

    canon, _ = canonical(normalize_shift_constants(t))
    path = store.entry_path(canon, rs if rs is not None else lift_rules(), budget, True, eng._declared())
    assert path is not None
    return path


def test_stored_outcome_is_used_by_the_next_process(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse(GAUSS)
    first = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert first.source == "egraph" and not first.stored and _entry(t).exists()
    _new_process(monkeypatch)

    def boom(*a, **k):
        raise AssertionError("saturated although the outcome was stored")

    monkeypatch.setattr(eng, "saturate", boom)
    again = eng.lift_egraph(parse(GAUSS.replace("a_u8", "z_u8")), budget=eng.SELECTION_BUDGET)
    assert again.stored and again.source == "egraph" and again.proof  # proved again on load
    assert _equal(parse(GAUSS.replace("a_u8", "z_u8")), again.term)


def test_greedy_outcome_is_stored_too(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse("sub.nsw(x_i32, mul.nsw(i32(y_u32), i32(z_u8)))")  # a benchmark shape the e-graph cannot improve
    first = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert first.source == "greedy" and _entry(t).exists()
    _new_process(monkeypatch)
    again = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert again.stored and again.source == "greedy" and again.term is first.term


def test_tampered_entry_is_refused(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse(GAUSS)
    first = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert first.source == "egraph"
    path = _entry(t)
    fields = pickle.loads(path.read_bytes()[len(_FORMAT):])
    wrong = parse("u8(widening_add(_v0_u8, _v1_u8) >> 4)")  # cheaper than greedy's, and not equal
    fields["term"] = wrong
    path.write_bytes(_FORMAT + pickle.dumps(fields))
    _new_process(monkeypatch)
    again = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert not again.stored and again.source == "egraph" and _equal(t, again.term)
    path.write_bytes(b"garbage")
    _new_process(monkeypatch)
    assert not eng.lift_egraph(t, budget=eng.SELECTION_BUDGET).stored


def test_keys_differ_by_rules_budget_and_shape(fresh: Path) -> None:
    t = parse(GAUSS)
    rs = lift_rules()
    fewer = RuleSet(list(rs.rules)[1:])
    keys = {_entry(t), _entry(t, fewer), _entry(t, budget=eng.Budget(persist=True)),
            _entry(parse(GAUSS.replace("+ 8)", "+ 7)")))}
    assert len(keys) == 4
    assert _entry(parse(GAUSS.replace("a_u8", "z_u8"))) == _entry(t)  # same shape, same key


def test_lift_budget_and_failures_are_not_stored(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse("i16(p_u8) + (0 - i16(q_u8))")
    eng.lift_egraph(t, budget=eng.Budget())  # `lift`'s budget: persist off
    monkeypatch.setattr(eng, "_ROUND", "(run-schedule (no-such-ruleset))")
    res = eng.lift_egraph(t, budget=eng.SELECTION_BUDGET)
    assert "egraph engine failed" in res.note
    assert not (fresh / "egraph").exists() or not any((fresh / "egraph").iterdir())


def test_prelude_is_kept_with_the_rule_caches(fresh: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The compiled egglog prelude is stored apart from the shape store (which the selection harness's
    `rules` state empties) and read back as the very text it compiles to."""
    eng._prelude.cache_clear()
    try:
        text = eng._prelude()
        path = store.prelude_path(eng._declared())
        assert path is not None and path.parent == fresh / store.PRELUDE_KIND and path.exists()
        assert text == eng._build_prelude() == store.load_text(path)
        eng._prelude.cache_clear()
        path.write_bytes((_FORMAT + pickle.dumps("(not a prelude"))[:-3])  # corrupt: rebuilt, not used
        assert eng._prelude() == text
    finally:
        eng._prelude.cache_clear()
