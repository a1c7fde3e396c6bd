"""Lifting: rewrite integer vector expressions into FPIR (paper section 3.2), with either engine.

`lift(term)` runs the greedy lifting TRS (pitchfork/selection/greedy.py, whose rule set, rewriter and
shift-constant normalization are re-exported here as the lifting layer's public names);
`lift(term, engine="egraph")` or a `lift_engine("egraph")` block (what selection reads through
`current_engine`) uses equality saturation (pitchfork/selection/egraph), never worse than greedy.
Either result is semantically identical to the input (every rule is verified; see synth/verify.py).
The greedy TRS lives below this module so the e-graph engine can run it without importing the
module that dispatches to the engine.
"""

from __future__ import annotations

from contextlib import contextmanager
from contextvars import ContextVar
from typing import Iterator, Optional

from fpir.term import Term
from pitchfork.selection.greedy import (  # re-exported: the lifting layer's public names
    RULES_DIR,
    lift_rule_files,
    lift_rules,
    lift_with_stats,
    lifter,
    normalize_shift_constants,
)
from pitchfork.trs.rules import RuleSet

__all__ = ["ENGINES", "RULES_DIR", "check_engine", "current_engine", "lift", "lift_engine", "lift_rule_files",
           "lift_rules", "lift_with_stats", "lifter", "normalize_shift_constants"]

ENGINES = ("greedy", "egraph")
_ENGINE: ContextVar[str] = ContextVar("pitchfork_lift_engine", default="greedy")


def check_engine(engine: str) -> str:
    if engine not in ENGINES:
        raise ValueError(f"unknown lifting engine {engine!r} (one of {', '.join(ENGINES)})")
    return engine


@contextmanager
def lift_engine(engine: str) -> Iterator[None]:
    """Inside this block, selection (pitchfork.selection.lower.select_instructions, so `pitchfork
    select` and `pitchfork.compile`) lifts with `engine`."""
    token = _ENGINE.set(check_engine(engine))
    try:
        yield
    finally:
        _ENGINE.reset(token)


def current_engine() -> str:
    return _ENGINE.get()


def lift(term: Term, rules: Optional[RuleSet] = None, engine: str = "greedy") -> Term:
    """`engine="egraph"`: equality saturation (pitchfork/selection/egraph), never worse than greedy."""
    if engine == "egraph":
        # imported here, not at the top, only so greedy lifting (`pitchfork lift`) does not load the
        # e-graph engine and what it may load; it is an edge of the import graph all the same
        from pitchfork.selection.egraph.engine import lift_egraph

        return lift_egraph(term, rules).term
    check_engine(engine)
    return lifter(rules).rewrite(normalize_shift_constants(term))

