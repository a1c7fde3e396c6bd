"""Lifting: rewrite integer vector expressions into FPIR with the lifting TRS (paper section 3.2).

The rule set is every `rules/lift/*.rules` file plus `rules/synthesized/lift*.rules`, loaded once.
`lift(term)` rewrites bottom-up to a fixed point under the target-agnostic cost; the result is
semantically identical to the input (every rule is verified; see synth/verify.py).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Iterable, Optional

from fpir.term import Term
from pitchfork.trs.rewriter import Rewriter, RewriteStats
from pitchfork.trs.rules import RuleSet

RULES_DIR = Path(__file__).resolve().parent.parent / "rules"


def lift_rule_files(include_synthesized: bool = True) -> list[Path]:
    files = sorted((RULES_DIR / "lift").glob("*.rules"))
    if include_synthesized:
        files += sorted((RULES_DIR / "synthesized").glob("lift*.rules"))
    return files


def lift_rules(include_synthesized: bool = True, exclude_from: Optional[str] = None) -> RuleSet:
    """The lifting rules; `exclude_from` drops rules learned from that benchmark (leave-one-out, see
    pitchfork/trs/provenance.py). Defaults to the benchmark excluded by the current context."""
    from pitchfork.trs.provenance import excluded_benchmark

    return _lift_rules(include_synthesized, exclude_from or excluded_benchmark())


@lru_cache(maxsize=8)
def _lift_rules(include_synthesized: bool, exclude_from: Optional[str]) -> RuleSet:
    if exclude_from is None:
        return RuleSet.from_files(lift_rule_files(include_synthesized))
    from pitchfork.trs.provenance import load_filtered

    return RuleSet(load_filtered(lift_rule_files(include_synthesized), exclude_from))


def lifter(rules: Optional[RuleSet] = None, trace: bool = False) -> Rewriter:
    return Rewriter(rules if rules is not None else lift_rules(), trace=trace)


def lift(term: Term, rules: Optional[RuleSet] = None) -> Term:
    return lifter(rules).rewrite(term)


def lift_with_stats(term: Term, rules: Optional[RuleSet] = None, trace: bool = False) -> tuple[Term, RewriteStats]:
    rw = lifter(rules, trace)
    out = rw.rewrite(term)
    return out, rw.stats
