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
