"""benchmarks/SYNTH_RESULTS.md from a synthesis run's summary (`pitchfork-synth --report-json`).

    python -m synth.report [benchmarks/synth_run.json] [benchmarks/SYNTH_RESULTS.md]

The page states the command, the machine, per-stage outcomes (left sides seen, run, already
optimal, over budget, synthesized, written, rejected and why), the wall time, rules per minute and
the search throughput, and lists the rules now in rules/synthesized/ with their provenance. It is
regenerated, never edited by hand; the notes at the end come from `NOTES` below.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

#: What the numbers alone do not say (kept here so the page stays generated).
NOTES = """\
## How the search got faster

The previous search (session 1) built one `Term` per candidate and evaluated it on the examples one
at a time: about 1.1k terms/s on 12 lifting left sides of the benchmarks on this loaded machine
(2k terms/s on a quieter one), and most searches ran out of their 3000-term budget. `synth/bank.py`
builds the grammar's terms bottom-up by cost level in numpy batches over all example inputs at
once, keeps one representative per fingerprint of values (observational equivalence), prunes terms
with more operations than the current form, and shares a bank between left sides of one grammar.
Measured on the same 12 left sides and machine: about 69k terms/s (60x); the full run gives each left
side 200,000 candidates instead of 3000, and its average throughput is quoted above (lower: most
levels of the operation-limited lifting grammars are small, so per-call overhead weighs more). Budgets and rlimits are
counts, so the rules do not depend on machine load.

## Section 4.3 generalizations

Constants become symbolic constants, `1 << c0` / `log2(c0)` relations or ranges found by binary
search; types become polymorphic (width and sign) where every instance verifies. Narrowing: when a
left side narrows a variable `x` to `N`, the search runs again with `x` restricted to `N`'s range
(examples clamped, Z3 told so); a right side found there becomes a rule under `fits(x, N)`, where
truncating and saturating narrowing agree (e.g. `cast<A>(cast<B>(x_T)) -> reinterpret<A>(x_T) if
A == signed(T) && B == narrow(T) && fits(x_T, B)`); it is re-verified with that predicate and kept
only if it makes the rewriter's result cheaper on its example with `x` clamped. A lifting rule that
would also fire on constants and produce a non-canonical form gets `is_variable(x)` guards instead of
being dropped.
"""


def _rules(stem: str) -> list[str]:
    p = ROOT / "rules" / "synthesized" / f"{stem}.rules"
    if not p.exists():
        return []
    return [ln for ln in p.read_text().splitlines() if ln.strip() and not ln.startswith("#")]


def markdown(s: dict[str, Any]) -> str:
    L = ["# Rule synthesis (`pitchfork-synth`) on the 16 benchmarks", "",
         f"Command{'s (one run in several invocations, resumed from the cache)' if s.get('invocations') else ''}: "
         f"`{s['command']}` (git {s.get('git', '?')}, {s.get('date', '')}), under `nice -n 10`, "
         f"on the shared {s.get('cores', 2)}-core development machine (load average at the end "
         f"{', '.join(str(x) for x in s.get('load_average', []))}: other engineers' jobs).", "",
         f"* **Wall time {s['seconds'] / 60:.1f} min**, **{s['written']} rules written** "
         f"({', '.join(f'{k}: {v}' for k, v in s.get('written_by_stage', {}).items())}): "
         f"**{s['rules_per_minute']:.2f} rules per minute**.",
         f"* Search throughput {s.get('terms_per_second', 0):,.0f} candidate terms/s over {s.get('terms', 0):,} "
         f"candidates ({s.get('tasks', 0)} tasks).", ""]
    if s.get("invocations"):
        L += ["Invocations (the wall time above is their sum, an upper bound where two ran at the same time):", ""]
        L += [f"{i + 1}. `{v['command']}`: {v['seconds'] / 60:.1f} min, {v.get('tasks', 0)} tasks, "
              f"{v.get('written', 0)} rules written{' (stopped; its finished tasks resumed from the cache)' if v.get('interrupted') else ''}"
              for i, v in enumerate(s["invocations"])]
        L += [""]
    L += [
"| stage | LHS | run | not run | already optimal | over budget | synthesized | written | rejected at selection | seconds |",
         "|---|---|---|---|---|---|---|---|---|---|"]
    for name, st in s.get("stages", {}).items():
        if name == "corpus":
            continue
        oc, dec = st.get("outcomes", {}), st.get("decisions", {})
        rej = ", ".join(f"{k} {v}" for k, v in sorted(dec.items()) if k != "written") or "-"
        L.append(f"| {name} | {st['seen']} | {st['run'] + st['cached']} | {st['not_run']} | "
                 f"{oc.get('optimal', 0) + oc.get('trivial', 0)} | {oc.get('budget', 0) + oc.get('solver', 0)} | "
                 f"{oc.get('synthesized', 0)} | {st['written']} | {rej} | {st['seconds']:.0f} |")
    L += ["", "\"over budget\": no proven cheaper right side among the candidates the budget allows; "
          "\"already optimal\": none exists in the grammar within the cost bound.", ""]
    L += ["## Rules now in rules/synthesized/ (all runs; each re-verified by Z3 at every type instance, "
          "`tests/synth/test_output.py::test_every_committed_synthesized_rule_verifies`)", ""]
    for stem, title in (("lift", "Lifting"), ("lower_arm_neon", "ARM lowering"), ("lower_hvx", "HVX lowering"),
                        ("lower_x86_avx2", "x86 lowering")):
        rules = _rules(stem)
        L += [f"### {title}: {len(rules)}", ""]
        L += ["```"] + [r.split("  # ", 1)[0] for r in rules] + ["```", ""] if rules else ["(none)", ""]
    L.append(NOTES)
    return "\n".join(L)


def interrupted_part(cache: Path, kind: str, seconds: float, command: str) -> dict[str, Any]:
    """The summary of an invocation that was stopped before writing its own (its finished tasks are
    in the cache, which is how the next invocation resumed): tasks of `kind` in the cache."""
    from collections import Counter

    rs = [json.loads(ln) for ln in cache.read_text().splitlines() if ln.strip()]
    rs = [r for r in rs if r.get("task", {}).get("kind") == kind]
    terms = sum(r.get("terms", 0) for r in rs)
    search_s = sum(r.get("search_seconds", 0.0) for r in rs)
    return {
        "command": command, "seconds": seconds, "written": 0, "written_by_stage": {}, "rules_per_minute": 0.0,
        "terms": terms, "terms_per_second": terms / search_s if search_s else 0.0, "tasks": len(rs),
        "stages": {kind: {"seen": len(rs), "cached": 0, "run": len(rs), "not_run": 0,
                          "outcomes": dict(Counter(r["status"] for r in rs)), "decisions": {}, "generalized": 0,
                          "written": 0, "seconds": seconds}},
        "interrupted": True,
    }


def combine(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """One summary for a run made of several invocations (resumed from the cache): wall times and
    rules add up; each stage is reported by the last invocation that finished it."""
    total_s = sum(p["seconds"] for p in parts)
    written = sum(p["written"] for p in parts)
    terms = sum(p.get("terms", 0) for p in parts)
    search_s = sum(p.get("terms", 0) / p["terms_per_second"] for p in parts if p.get("terms_per_second"))
    stages: dict[str, Any] = {}
    by_stage: dict[str, int] = {}
    for p in parts:
        for k, st in p.get("stages", {}).items():
            if k == "corpus":
                continue
            prev = stages.get(k)
            if prev is None or not p.get("interrupted"):
                merged = dict(st)
                if prev is not None:  # an earlier invocation ran part of this stage: add its time
                    merged["seconds"] = st["seconds"] + prev["seconds"]
                stages[k] = merged
        for k, v in p.get("written_by_stage", {}).items():
            by_stage[k] = by_stage.get(k, 0) + v
    for k, st in stages.items():  # rules written by every invocation that ran the stage
        st["written"] = by_stage.get(k, st.get("written", 0))
        st["decisions"] = dict(st.get("decisions", {}), written=st["written"])
    last = parts[-1]
    return {
        "command": " ; ".join(p["command"] + (" (interrupted)" if p.get("interrupted") else "") for p in parts),
        "date": last.get("date", ""), "git": last.get("git", ""), "cores": last.get("cores", 2),
        "load_average": last.get("load_average", []), "seconds": total_s, "written": written,
        "written_by_stage": by_stage, "rules_per_minute": written / (total_s / 60) if total_s else 0.0,
        "terms": terms, "terms_per_second": terms / search_s if search_s else 0.0,
        "tasks": sum(p.get("tasks", 0) for p in parts), "stages": stages,
        "invocations": [{k: p.get(k) for k in ("command", "seconds", "written", "tasks", "interrupted")} for p in parts],
    }


def main(argv: list[str]) -> int:
    """`python -m synth.report [RUN.json ...] [-o SYNTH_RESULTS.md]`: several summaries are combined
    (benchmarks/synth_run.json is written with the combination)."""
    out = ROOT / "benchmarks" / "SYNTH_RESULTS.md"
    if "-o" in argv:
        i = argv.index("-o")
        out = Path(argv[i + 1])
        argv = argv[:i] + argv[i + 2 :]
    srcs = [Path(a) for a in argv] or [ROOT / "benchmarks" / "synth_run.json"]
    parts = [json.loads(p.read_text()) for p in srcs]
    data = parts[0] if len(parts) == 1 else combine(parts)
    if len(parts) > 1:
        (ROOT / "benchmarks" / "synth_run.json").write_text(json.dumps(data, indent=1) + "\n")
    out.write_text(markdown(data))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
