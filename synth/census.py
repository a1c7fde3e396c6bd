"""The firing census that ends every synthesis run: which synthesized rules the compiler uses.

Every whole expression of the run's corpus goes through selection as the compiler runs it (lifted
with `normalize_shift_constants` and the lifting TRS; lowered per ISA by that ISA's TRS and cost),
with the rules of the run's output folder loaded, and the rewriter's `stats.fired` are counted per
synthesized rule. A rule of the run's output files that never fires is dropped from its file, with
the reason in `RunReport.dropped` ("never fires": no node of the corpus matches it with a cheaper
result; "shadowed": it matched, but another rule's result was always at least as cheap), but only
when every benchmark or file its provenance names is in this run's corpus (a quick run on one
benchmark does not judge rules learned from others).

Invariant: the lifting census runs and drops first, then the lowering census sees the lifting
rules that remain (dropping a lifting rule can change what lowering sees).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Optional

from fpir.term import Term
from pitchfork.selection.synthesized import provenance
from pitchfork.trs.rules import RuleSet
from synth.stages import ISA_STEMS, stage_inputs, stage_path

if TYPE_CHECKING:
    from synth.driver import Options, RunReport


def _synth_names(stage: str) -> set[str]:
    from pitchfork.selection.synthesized import synthesized_rules

    if stage == "lift":
        return {r.name for r in synthesized_rules("lift")}
    return {r.name for r in synthesized_rules(f"lower_{ISA_STEMS[stage.split(':', 1)[1]]}")}


def fire_counts(
    stage: str, inputs: dict[str, list[Term]], hide: tuple[str, ...] = (), rules: Optional[RuleSet] = None
) -> tuple[Counter, Counter]:
    """(firings, matched-but-not-cheaper counts) per rule name, over the whole expressions, with the
    rules named in `hide` left out (as the run's tasks leave them out). `rules`: the stage's rule set
    to count (default: the one loaded now)."""
    from pitchfork.selection.lift import lift_rules, lifter, normalize_shift_constants
    from pitchfork.trs.rewriter import Rewriter
    from synth.tasks import _without

    exprs = list(dict.fromkeys(t for ts in inputs.values() for t in ts))
    if stage == "lift":
        lw = lifter(_without(rules if rules is not None else lift_rules(), hide))
        for t in exprs:
            lw.rewrite(normalize_shift_constants(t))
        return lw.stats.fired, lw.stats.not_decreasing
    from pitchfork.targets import load_target

    info = load_target(stage.split(":", 1)[1])
    lw = lifter(_without(lift_rules(), hide))
    rw = Rewriter(_without(rules if rules is not None else info.rules, hide), cost=info.cost)
    for t in exprs:
        rw.rewrite(lw.rewrite(normalize_shift_constants(t)))
    return rw.stats.fired, rw.stats.not_decreasing


def census_and_drop(
    stages: list[str], inputs: dict[str, dict[str, list[Term]]], opts: "Options", report: "RunReport"
) -> None:
    from synth.output import write_rules
    from synth.rulesnap import activate, hidden, take

    sources = {s for per_isa in inputs.values() for s in per_isa}
    order = [s for s in stages if s == "lift"] + [s for s in stages if s != "lift"]
    for stage in order:
        activate(take(opts.out_dir))  # the rules as they stand after earlier drops
        fired, lost = fire_counts(stage, stage_inputs(stage, inputs), opts.hide)
        names = _synth_names(stage) - hidden(opts.hide)
        report.census[stage] = {n: fired.get(n, 0) for n in sorted(names)}
        path, header = stage_path(stage, opts.out_dir)
        if not path.exists():
            continue
        drop: list[tuple[str, str]] = []
        for line in path.read_text().splitlines():
            if not line.strip() or line.startswith("#") or ":" not in line:
                continue
            name = line.split(":", 1)[0].strip()
            src = set(provenance(line))
            if fired.get(name, 0) or not src or not src <= sources:
                continue
            why = "shadowed: matched, never cheaper than the other rules" if lost.get(name) else "never fires"
            drop.append((name, f"{why} on the corpus ({', '.join(sorted(sources))})"))
        if drop:
            write_rules(path, [], header, [n for n, _ in drop])
            report.dropped.setdefault(stage, []).extend(drop)
            st = report.stages.get(stage)
            if st is not None:
                st.decisions["census-dropped"] += len(drop)
