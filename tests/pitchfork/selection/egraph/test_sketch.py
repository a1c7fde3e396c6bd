"""pitchfork/selection/egraph/sketch.py: the lifting rules' left sides as op skeletons."""

from __future__ import annotations

from pitchfork.selection.egraph.declare import CONST
from pitchfork.selection.egraph.sketch import MAX_DEPTH, sketches
from pitchfork.selection.lift import lift_rules
from pitchfork.trs.rules import RuleSet, parse_rules


def _depth(s) -> int:
    if not isinstance(s, tuple):
        return 0
    return 1 + max((_depth(a) for a in s[1:]), default=0)


def test_sketches_of_the_lifting_rules() -> None:
    sk = sketches(lift_rules())
    # multiply.rules: saturating_cast<T>(rounding_shr(widening_mul(x_T, y_T), c0)) -> rounding_mul_shr(...)
    assert ("saturating_cast", ("rounding_shr", ("widening_mul", None, None), CONST)) in sk["saturating_cast"]
    # a root-only sketch shows the lifting pass nothing new: none is kept
    assert all(any(a is not None for a in s[1:]) for ss in sk.values() for s in ss)
    assert all(_depth(s) <= MAX_DEPTH for ss in sk.values() for s in ss)
    assert sketches(lift_rules()) is sk  # computed once per rule set


def test_sketch_of_a_rule() -> None:
    rs = RuleSet(parse_rules("r: (x_T + c0) >> c1 -> rounding_shr(x_T, c1) if c0 == 1 << (c1 - 1)\n"))
    assert sketches(rs) == {"shr": (("shr", ("add", None, CONST), CONST),)}


def test_equal_sub_sketches_are_one_object() -> None:
    """sketch.Guide keys its memos by a sub-sketch's id: sketches() makes equal ones one object."""
    subs: dict = {}
    for ss in sketches(lift_rules()).values():
        for s in ss:
            stack = [s]
            while stack:
                x = stack.pop()
                if isinstance(x, tuple):
                    assert subs.setdefault(x, x) is x
                    stack.extend(x[1:])


def _children_unfiltered(guide, n, s):  # type: ignore[no-untyped-def]
    """Guide.children_for without its head test: each operand followed through `Guide.term`."""
    if len(s) != len(n.children) + 1:
        return None
    out = []
    for ch, sub in zip(n.children, s[1:]):
        t = guide.terms.get(ch) if sub is None else guide.term(ch, sub)
        if t is None:
            return None
        out.append(t)
    return tuple(out)


def test_head_test_keeps_children_for_answers(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """children_for's head test (an operand's class must hold a node with the sub-sketch's head) only
    skips pairs `Guide.fit` would reject: on the e-graphs of saturating bench_keys expressions every
    (e-node, sketch) pair gets the same answer with and without it, and some pairs are rejected by it."""
    from benchmarks.variants import DATA, load
    from fpir.text import parse
    from pitchfork.selection.egraph import engine as eng
    from pitchfork.selection.egraph.canon import canonical
    from pitchfork.selection.egraph.extract import extract_all_with_choices
    from pitchfork.selection.egraph.sketch import Guide, _heads_of, _needs

    seen: list = []
    real = eng._lift_pass

    def spy(classes, enc, *a, **k):  # type: ignore[no-untyped-def]
        seen.append((classes, enc))
        return real(classes, enc, *a, **k)

    monkeypatch.setattr(eng, "_lift_pass", spy)
    rs = lift_rules()
    for g in load(DATA.with_name("bench_keys.txt"))[:6]:
        canon, _ = canonical(parse(g.variants[1]))
        eng._saturate_here(canon, rs, eng.Budget(rounds=1, nodes=1_500))
    assert seen
    sk = sketches(eng.pass_rules(rs))
    pairs = rejected = 0
    for classes, enc in seen:
        best, terms = extract_all_with_choices(classes, enc, fold=False)
        fast, slow = Guide(classes, best, terms, enc), Guide(classes, best, terms, enc)
        for n in (n for ns in classes.values() for n in ns if n.children):
            from pitchfork.selection.egraph.declare import parse_ctor

            for s in sk.get(parse_ctor(n.ctor)[0], ()):
                pairs += 1
                want = _children_unfiltered(slow, n, s)
                assert fast.children_for(n, s) == want
                if any(need is not None and need not in _heads_of(classes.get(ch, ()))
                       for ch, need in zip(n.children, _needs(s))):
                    rejected += 1
                    assert want is None
    assert pairs and rejected
