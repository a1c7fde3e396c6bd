"""The greedy lifting TRS (paper section 3.2): the lifting rule set, its rewriter, shift-constant spelling.

The rule set is every `rules/lift/*.rules` file plus `rules/synthesized/lift.rules` (unless turned
off or filtered through `pitchfork.selection.synthesized.configure`), loaded once per setting (the
cache is dropped when the synthesized rules' folder changes: `synthesized.on_directory_change`).
`lifter().rewrite(normalize_shift_constants(term))` rewrites bottom-up to a fixed point under the
target-agnostic cost; the result is semantically identical to the input (every rule is verified;
see synth/verify.py). This module sits below both lifting engines: the e-graph
(pitchfork/selection/egraph/engine.py) runs it each round, and pitchfork/selection/lift.py, the
entry point that picks an engine, re-exports it.
"""

from __future__ import annotations

from functools import lru_cache
from operator import is_not
from pathlib import Path
from typing import Iterable, Optional

from fpir.ops import make
from fpir.opspec import spec
from fpir.term import Term
from fpir.text import retype_shift_constant
from pitchfork.selection.synthesized import (
    SynthConfig,
    effective,
    on_directory_change,
    synthesized_files,
    synthesized_rules,
)
from pitchfork.trs.rewriter import Rewriter, RewriteStats
from pitchfork.trs.rules import RuleSet, load_rule_file

RULES_DIR = Path(__file__).resolve().parents[2] / "rules"

def lift_rule_files(include_synthesized: bool = True) -> list[Path]:
    files = sorted((RULES_DIR / "lift").glob("*.rules"))
    if include_synthesized:
        files += synthesized_files("lift")
    return files


def lift_rules(include_synthesized: Optional[bool] = None,
               exclude_from: Optional[str | Iterable[str]] = None) -> RuleSet:
    """Hand-written lifting rules plus the synthesized ones. `include_synthesized` defaults to the
    `--no-synthesized` switch (pitchfork.selection.synthesized); synthesized rules learned from `exclude_from`,
    from the benchmark excluded by the current context (pitchfork/trs/provenance.py) or from those
    set with `pitchfork.selection.synthesized.configure(exclude_from=...)` are left out (leave-one-out)."""
    inc, excl = effective(include_synthesized, exclude_from)
    return _lift_rules(inc, excl)


@lru_cache(maxsize=32)
def _lift_rules(include_synthesized: bool, exclude_from: frozenset[str]) -> RuleSet:
    rules = [r for p in lift_rule_files(False) for r in load_rule_file(p)]
    rules += synthesized_rules("lift", SynthConfig(include_synthesized, exclude_from))
    return RuleSet(rules)


on_directory_change(_lift_rules.cache_clear)


def lifter(rules: Optional[RuleSet] = None, trace: bool | str = False) -> Rewriter:
    return Rewriter(rules if rules is not None else lift_rules(), trace=trace)


def normalize_shift_constants(term: Term) -> Term:
    """`term` with every constant amount of a primitive shift written at the other signedness
    (`x_i32 >> u32(15)`, Halide's spelling) retyped as `x_i32 >> 15` (fpir.text.retype_shift_constant:
    same value, same meaning), so one lifting rule covers every spelling. FPIR ops keep theirs: an
    unsigned rounding_shr amount is what Halide's rounding_shift_right gives, and x86 selects by it
    (rules/lower/x86_avx2.rules rounding_shr_halved). Over distinct nodes (Term.walk, post-order:
    arguments first); flags kept."""
    memo: dict[Term, Term] = {}
    for t in term.walk():
        args = [memo[a] for a in t.args]
        if t.op in ("shl", "shr"):  # not the FPIR ops: their amount type is a selection fact (rounding_shr_halved)
            args = retype_shift_constant(t.op, args)
        changed = any(map(is_not, args, t.args))
        memo[t] = make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, flags=t.attrs) if changed else t
    return memo[term]


def lift_with_stats(term: Term, rules: Optional[RuleSet] = None,
                    trace: bool | str = False) -> tuple[Term, RewriteStats]:
    rw = lifter(rules, trace)
    out = rw.rewrite(normalize_shift_constants(term))
    return out, rw.stats
