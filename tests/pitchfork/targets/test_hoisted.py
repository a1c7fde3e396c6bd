"""Work on uniform operands alone (pitchfork/targets/hoisted.py): computed once outside the loop."""

from __future__ import annotations

from fpir.ops import make
from fpir.term import Term, const, var
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.targets import target_cost
from pitchfork.targets.hoisted import hoisted

I16 = parse_type("i16")


def test_a_node_is_hoisted_when_its_leaves_are_uniform_or_constant() -> None:
    w, x = var("w", I16, uniform=True), var("x", I16)
    bias = make("mul", make("add", w, w), const(128, I16), fold=False)  # (w + w) * 128: one uniform leaf
    assert hoisted(bias) and hoisted(make("add", w, w))
    assert not hoisted(make("add", const(1, I16), const(2, I16), fold=False))  # constants alone: as before
    assert not hoisted(make("add", x, w)) and not hoisted(w) and not hoisted(x)
    assert not hoisted(parse("v0_i16 + 3"))  # a plain variable


def test_hoisted_work_costs_no_instructions_but_keeps_its_tie_breaks() -> None:
    w, x = var("w", I16, uniform=True), var("x", I16)
    inner = make("add", w, w)
    assert target_cost(inner)[0] == 0 and target_cost(inner)[1] == 32
    assert target_cost(make("add", x, inner))[0] == 1


def test_a_deep_chain_does_not_recurse() -> None:
    w = var("w", I16, uniform=True)
    t: Term = w
    for _ in range(10_000):
        t = make("add", t, w, fold=False)
    assert hoisted(t)
