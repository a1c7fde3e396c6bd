"""The lifting pass's head start (engine._mark_fixed): the greedy TRS's fixed points, renamed as the
e-graph sees them, are recorded as their own liftings in the pass rewriter's memo only where rewriting
them with the pass's rules (lifting rules + rules/egraph/bounded.rules) would leave them as they are,
so selection's e-graph results are the same with and without it."""

from __future__ import annotations

import pytest

from benchmarks.variants import DATA, load
from fpir.text import parse
from pitchfork.selection.egraph import engine as eng
from pitchfork.selection.egraph.canon import canonical, rename_all
from pitchfork.selection.greedy import lifter, lift_rules, normalize_shift_constants
from pitchfork.trs.rewriter import Rewriter

#: every benchmark's key expression, as its Halide source writes it, and one rewritten spelling
KEYS = [t for g in load(DATA.with_name("bench_keys.txt")) for t in g.variants[:2]]


def _greedy_fixed(text: str) -> list:
    """The greedy TRS's fixed points while lifting `text`, renamed canonically (as engine.py does)."""
    norm = normalize_shift_constants(parse(text))
    lw = lifter()
    lw.rewrite(norm)
    _, back = canonical(norm)
    forward = {v: k for k, v in back.items()}
    return rename_all([t for t, r in lw._memo.items() if r is t and t.args], forward)


def test_bounded_rule_roots_are_known() -> None:
    assert eng._bounded_roots() == frozenset({"shr", "mul"})


@pytest.mark.parametrize("text", KEYS)
def test_marked_terms_are_what_the_pass_rewriter_gives(text: str) -> None:
    fixed = _greedy_fixed(text)
    marked = Rewriter(eng.pass_rules(lift_rules()))
    eng._mark_fixed(marked, fixed)
    got = [t for t, r in marked._memo.items() if r is t]
    assert got or all(any(x.op in ("shr", "mul") for x in t.walk()) for t in fixed)
    for t in got:
        fresh = Rewriter(eng.pass_rules(lift_rules()))  # no memo: rewrites every node
        assert fresh.rewrite(t) is t, str(t)
        assert not any(x.op in ("shr", "mul") for x in t.walk())


def test_terms_under_a_bounded_root_are_not_marked() -> None:
    t = parse("(widening_shl(a_u8, 2) * 3) >> 2")
    rw = Rewriter(eng.pass_rules(lift_rules()))
    eng._mark_fixed(rw, [t])
    assert t not in rw._memo and t.args[0] not in rw._memo
    assert rw._memo.get(t.args[0].args[0]) is t.args[0].args[0]  # widening_shl(a, 2): no bounded root


@pytest.mark.parametrize("text", [
    "i16(a_u8) * 4 + i16(b_u8) * 4 + i16(c_u8) * 6 + i16(d_u8) + i16(e_u8)",  # gaussian5x5's rows
    "u8((i16(u16(a_u8) * 2 + u16(b_u8) + u16(c_u8)) * 2 + i16(u16(d_u8) * 2 + u16(e_u8) + u16(f_u8)) + 8) / 16)",
    "saturating_cast<i16>((i32(a_u8) * 97088 - i32(b_u8) * 97088 + 16384) >> 15)",
])
def test_selection_results_are_the_same_without_it(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = parse(text)

    def fresh() -> None:  # new shape caches, and a pass rewriter with an empty memo on the egglog thread
        monkeypatch.setattr(eng, "_RESULTS", {})
        monkeypatch.setattr(eng, "_SHAPES", {})
        eng.saturate(parse("a_u8 + b_u8"), lift_rules(), eng.Budget(rounds=1))  # starts the egglog thread
        assert eng._WORKER is not None
        eng._WORKER.call(lambda: eng._LOCAL.__dict__.pop("rewriters", None))

    fresh()
    with monkeypatch.context() as m:
        m.setattr(eng, "_mark_fixed", lambda rw, fixed: None)
        without = eng.lift_egraph(t, lift_rules(), eng.SELECTION_BUDGET)
    fresh()
    with_marks = eng.lift_egraph(t, lift_rules(), eng.SELECTION_BUDGET)
    assert (with_marks.term, with_marks.extracted, with_marks.source) == \
        (without.term, without.extracted, without.source)


def test_greedy_is_not_rerun_on_its_own_result(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the extraction is greedy's own result, the greedy TRS is not run on it again: it is a fixed
    point of the TRS (rewriting it leaves it as it is and fires nothing), which is what the shortcut
    assumes."""
    from pitchfork.selection import greedy

    t = parse("saturating_cast<u8>((i32(a_u8) * 3 + i32(b_u8) * 5 + 8) >> 4)")
    calls: list = []
    real = greedy.lift_with_stats
    monkeypatch.setattr(greedy, "lift_with_stats", lambda term, rules=None, trace=False: calls.append(term) or real(term, rules, trace))
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", {})
    res = eng.lift_egraph(t, lift_rules(), eng.SELECTION_BUDGET)
    assert res.extracted is res.greedy_term, (str(res.extracted), str(res.greedy_term))
    assert not calls
    lifted, stats = real(res.greedy_term)
    assert lifted is res.greedy_term and not stats.fired


def test_pass_rules_share_the_lifting_rules_compiled_rows() -> None:
    """engine._SharedRows: per op, the pass rule set's rows are the lifting rule set's own row objects
    followed by bounded.rules' rows, and match what compiling the pass rule set afresh gives (same rule,
    pattern and root type in the same order, a predicate where the rule has one)."""
    from pitchfork.trs.compiled import CompiledRules

    rs = lift_rules()
    pr = eng.pass_rules(rs)
    shared, fresh = pr.compiled(), CompiledRules(pr.index)
    assert isinstance(shared, eng._SharedRows)
    bounded = {r.name for r in eng.load_rule_file(eng.BOUNDED_FILE)}
    for op in pr.index:
        got, want = shared._op_rows(op), fresh._op_rows(op)
        assert [(r[0], r[1], r[4]) for r in got] == [(r[0], r[1], r[4]) for r in want], op
        assert [r[3] is None for r in got] == [r[3] is None for r in want], op
        lifting = rs.compiled()._op_rows(op) if op in rs.index else []
        assert all(a is b for a, b in zip(got, lifting)) and len(got) == len(lifting) + sum(
            r[0].name in bounded for r in got), op



class _NoCheapest(dict):
    """A `best` map whose lookups miss: the lifting pass then unions every lifting it finds."""

    def get(self, key: object, default: object = None) -> object:
        return default


ROWS = [
    "i16(a_u8) * 4 + i16(b_u8) * 4 + i16(c_u8) * 6 + i16(d_u8) + i16(e_u8)",  # gaussian5x5's rows
    "u8((i16(u16(a_u8) * 2 + u16(b_u8) + u16(c_u8)) * 2 + i16(u16(d_u8) * 2 + u16(e_u8) + u16(f_u8)) + 8) / 16)",
    "u8(min(absd(u16(a_u8) * 2 + u16(b_u8) + u16(c_u8), u16(d_u8) * 2 + u16(e_u8) + u16(f_u8)), 255))",  # sobel
]


@pytest.mark.parametrize("text", ROWS)
@pytest.mark.parametrize("budget", [eng.SELECTION_BUDGET, eng.Budget(rounds=2)])
def test_a_class_holds_its_cheapest_term(text: str, budget: eng.Budget) -> None:
    """Why the lifting pass may leave out a union whose lifted term is its e-class's cheapest term
    (engine._lift_pass): that term, as the pass builds it (extract_all_with_choices, fold=False), is
    made of the e-graph's own nodes, so it is in the class already."""
    from pitchfork.selection.egraph.extract import extract_all_with_choices
    from pitchfork.selection.egraph.view import EGraphView

    t = canonical(normalize_shift_constants(parse(text)))[0]
    seen: list = []
    real = eng._lift_pass

    def spy(classes, enc, *a, **k):  # type: ignore[no-untyped-def]
        seen.append((classes, enc))
        return real(classes, enc, *a, **k)

    eng._WORKER is None or eng._WORKER.call(lambda: eng._LOCAL.__dict__.pop("rewriters", None))
    with pytest.MonkeyPatch.context() as m:
        m.setattr(eng, "_lift_pass", spy)
        eng.saturate(t, lift_rules(), budget, fixed=[lifter().rewrite(t)])
    assert seen
    for classes, enc in seen:
        _, best = extract_all_with_choices(classes, enc, fold=False)
        view = EGraphView.of(classes, next(iter(classes)), enc)
        ids = {c: i for i, c in enumerate(classes)}
        memo: dict = {}
        assert all(view.class_of(term, memo) == ids[c] for c, term in best.items())


@pytest.mark.parametrize("text", ROWS)
def test_selection_results_are_the_same_with_every_union(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Leaving those unions out sends fewer actions and extracts the same term on these rows (egglog
    still counts a re-sent node as new for its rules, so the e-graphs themselves may differ a little)."""
    t = canonical(normalize_shift_constants(parse(text)))[0]
    greedy = lifter().rewrite(t)

    def run(send_all: bool) -> tuple:
        eng._WORKER is None or eng._WORKER.call(lambda: eng._LOCAL.__dict__.pop("rewriters", None))
        with monkeypatch.context() as m:
            if send_all:
                real = eng.extract_all_with_choices
                m.setattr(eng, "extract_all_with_choices", lambda *a, **k: (real(*a, **k)[0], _NoCheapest(real(*a, **k)[1])))
            out, res = eng.saturate(t, lift_rules(), eng.SELECTION_BUDGET, fixed=[greedy])
        return out, res.lift_unions

    fewer, every = run(False), run(True)
    assert fewer[0] is every[0]
    assert fewer[1] < every[1]
