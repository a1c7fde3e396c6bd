"""`pitchfork-synth`: offline rule synthesis (paper section 4) from the benchmarks or expression files.

    pitchfork-synth                          # all available benchmarks, lifting + ARM/HVX/x86 lowering
    pitchfork-synth --quick                  # CI-sized: sobel3x3, a few left sides per stage
    pitchfork-synth --from my_exprs.txt      # mine your own expressions (one FPIR expression a line)
    pitchfork-synth --jobs 2 | --cluster tcp://host:8786 --time-limit 3600
    pitchfork-synth --bring-up arm64          # lowering from the instruction table alone, + rediscovery

Writes lift.rules and lower_<isa>.rules (see synth/output.py) into the output directory, `-o DIR`,
by default `./pitchfork-synth-out` in the current directory (created, its path printed; the task cache
goes to DIR/.synth-cache); `--write-rules` writes into rules/synthesized/ instead (what the compiler
loads) with the cache in .synth-cache/ at the repository root. Nothing is written into the source
tree unless asked. Prints a summary table. Errors in input files are reported as file:line:col and
skipped.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Optional, Sequence

from synth.driver import QUICK_BENCHMARKS, Options, RunReport, run

#: `--deep-share` with a time limit: one left side's search may spend a tenth of a stage's time
#: limit (in counted work, synth/meter.py), so at least ten deep searches fit in a round
DEFAULT_DEEP_SHARE = 0.1
#: The default output directory, relative to the current directory (never the source tree).
DEFAULT_OUT_NAME = "pitchfork-synth-out"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="pitchfork-synth", description="Synthesize lifting and lowering rules (offline)."
    )
    p.add_argument(
        "--benchmark",
        "-b",
        action="append",
        default=[],
        help="benchmark name (repeatable; default: all available)",
    )
    p.add_argument(
        "--from",
        dest="files",
        action="append",
        default=[],
        metavar="FILE",
        help="expression file (one FPIR expression per line); with --from only, no benchmarks are used",
    )
    p.add_argument(
        "--isa", action="append", default=[], help="lowering ISA (arm64, hvx128, x86-avx2; default: all)"
    )
    p.add_argument(
        "--stage", action="append", choices=["lift", "lower"], default=[], help="stages (default: both)"
    )
    p.add_argument(
        "--bring-up",
        metavar="ISA",
        default=None,
        help="synthesize the ISA's lowering from its instruction table alone (its hand-written and "
        "committed synthesized lowering rules hidden) and report how much of the hand-written "
        "lowering it rediscovers (synth/bringup.py)",
    )
    p.add_argument(
        "--quick", action="store_true", help="CI-sized run: sobel3x3, at most --max-lhs 6 per stage"
    )
    p.add_argument(
        "--max-lhs", type=int, default=0, help="left sides per stage, most frequent first (0: all)"
    )
    p.add_argument(
        "--max-lower-lhs",
        type=int,
        default=None,
        metavar="N",
        help="left sides per lowering stage (default: --max-lhs)",
    )
    p.add_argument("--max-nodes", type=int, default=10, help="nodes per left side (default 10)")
    p.add_argument("--max-vars", type=int, default=3, help="skip left sides with more variables (default 3)")
    p.add_argument(
        "--instructions-pass", action="store_true",
        help="lowering: a left side over budget is searched again over the ISA's instructions alone "
             "(two-instruction right sides; slower per left side)",
    )
    p.add_argument(
        "--first-pass", type=int, default=None, metavar="TERMS",
        help="lowering: search every left side with at most TERMS terms first, then those over budget "
        "with --max-terms (default 10000 with --bring-up, else 0: one pass); a --time-limit then cuts "
        "only the deep searches",
    )
    p.add_argument(
        "--deep-share", type=float, default=None, metavar="F",
        help="lowering: one left side's search may spend at most this share of the stage's budget "
        "(--time-limit or --work-limit), counted in Z3 resource units and enumeration steps, not seconds, "
        "so the verdict does not depend on load (synth/meter.py; default 0.1 with a budget, else no cap; "
        "0: no cap)",
    )
    p.add_argument(
        "--no-topdown", action="store_true",
        help="lowering: no goal-directed search from the root down after the levels run over budget "
        "(synth/topdown.py; on by default)",
    )
    p.add_argument(
        "--max-terms", type=int, default=200_000, help="candidate terms (argument combinations) per left side and CEGIS round (default 200000)"
    )
    p.add_argument("--rlimit", type=int, default=20_000_000, help="Z3 resource limit per query")
    p.add_argument("--jobs", "-j", type=int, default=1,
                   help="local worker processes: above 1, a local Dask cluster of that many one-thread workers "
                        "(synth/driver.py local_cluster); the same rule files as --jobs 1")
    p.add_argument("--cluster", metavar="ADDRESS", help="run the tasks on this Dask distributed scheduler")
    p.add_argument(
        "--time-limit",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="per stage (and lowering round): a work budget of this many seconds at the fixed rate of "
        "synth/meter.py (2,000,000 Z3 units or 125,000 enumeration steps a second), not a clock: tasks are "
        "handed out in a fixed order while the counted work of those before them is below it, so the same "
        "command writes the same rules under any load, with any --jobs or --cluster",
    )
    p.add_argument(
        "--work-limit", type=int, default=0, metavar="UNITS",
        help="per stage: the work budget in units (synth/meter.py), instead of --time-limit's",
    )
    p.add_argument(
        "--wall-limit", type=float, default=0.0, metavar="SECONDS",
        help="per stage: a wall-clock safety stop (default: none). When it fires the summary says so: "
        "that stage's rules then depend on the machine's load",
    )
    p.add_argument("--output", "-o", "--out", dest="out", type=Path, default=None,
                   help=f"output directory for the rule files (default: ./{DEFAULT_OUT_NAME} in the current "
                        "directory)")
    p.add_argument("--write-rules", action="store_true",
                   help="write into rules/synthesized/ (the rules the compiler loads), cache in .synth-cache/")
    p.add_argument("--cache", type=Path, default=None,
                   help="cache directory (default: OUTPUT/.synth-cache; with --write-rules .synth-cache/)")
    p.add_argument("--no-write", action="store_true", help="search only; write no rule file")
    p.add_argument(
        "--report-json",
        type=Path,
        default=None,
        metavar="FILE",
        help="also write the run's summary (wall time, rules per minute, search throughput) as JSON "
        "(benchmarks/synth_run.json is what benchmarks/RESULTS.md quotes)",
    )
    p.add_argument(
        "--no-ablation",
        action="store_true",
        help="skip the leave-one-out ablation that a run writing rules on benchmarks ends with (not "
        "run with --quick): the rules that make a benchmark's static estimate worse are withdrawn "
        "(synth/loo.py)",
    )
    p.add_argument("--no-progress", action="store_true")
    p.add_argument(
        "--rounds",
        type=int,
        default=None,
        metavar="N",
        help="lowering rounds per ISA (default 1; 5 with --bring-up): each round is planned against the "
        "rules the earlier ones wrote, so a left side's children are lowered as the compiler will lower "
        "them; a round that writes nothing ends the stage",
    )
    p.add_argument(
        "--peephole",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="after the lowering rounds, one more over the instruction pairs of the corpus as the rules "
        "written so far lower it (synth/peephole.py; default: on with --bring-up, else off)",
    )
    p.add_argument(
        "--hide-rule",
        action="append",
        default=[],
        metavar="NAME",
        help="leave this existing rule out of the baseline TRS (shows synthesis finding it)",
    )
    return p


def options(args: argparse.Namespace) -> Options:
    from benchmarks import registry

    if args.benchmark:
        unknown = [b for b in args.benchmark if b not in registry.NAMES]
        if unknown:
            raise SystemExit(
                f"pitchfork-synth: unknown benchmark {unknown[0]!r} (known: {', '.join(registry.NAMES)})"
            )
        benches = tuple(args.benchmark)
    elif args.quick:
        benches = QUICK_BENCHMARKS
    elif args.files:
        benches = ()
    else:
        benches = tuple(_available(registry))
    from pitchfork.targets import canonical

    try:
        isas = tuple(canonical(i) for i in args.isa) or Options.isas
    except ValueError as e:
        raise SystemExit(f"pitchfork-synth: {e}") from None
    for f in args.files:
        if not Path(f).is_file():
            raise SystemExit(f"pitchfork-synth: no such file: {f}")
    bring_up: tuple[str, ...] = ()
    if args.bring_up:
        try:
            isa = canonical(args.bring_up)
        except ValueError as e:
            raise SystemExit(f"pitchfork-synth: {e}") from None
        from synth.bringup import bring_up_hidden

        isas, args.stage, bring_up = (isa,), ["lower"], bring_up_hidden(isa)
    o = Options(
        benchmarks=benches,
        files=tuple(args.files),
        isas=isas,
        stages=tuple(args.stage) or Options.stages,
        max_nodes=args.max_nodes,
        max_vars=args.max_vars,
        instructions_pass=args.instructions_pass,
        topdown=not args.no_topdown,
        max_lhs=args.max_lhs or (6 if args.quick else 0),
        max_lower_lhs=args.max_lower_lhs if args.max_lower_lhs is not None else (args.max_lhs or (6 if args.quick else 0)),
        max_terms=args.max_terms,
        rlimit=args.rlimit,
        jobs=args.jobs,
        cluster=args.cluster,
        time_limit=args.time_limit,
        work_limit=args.work_limit,
        wall_limit=args.wall_limit,
        write=not args.no_write,
        progress=not args.no_progress,
        hide=tuple(args.hide_rule) + bring_up,
        rounds=args.rounds if args.rounds is not None else (5 if bring_up else 1),
        peephole=args.peephole if args.peephole is not None else bool(bring_up),
        first_pass_terms=args.first_pass if args.first_pass is not None else (10_000 if bring_up else 0),
        deep_share=args.deep_share if args.deep_share is not None else (
            DEFAULT_DEEP_SHARE if args.time_limit > 0 or args.work_limit > 0 else 0.0),
    )
    if o.deep_share < 0:
        raise SystemExit(f"pitchfork-synth: --deep-share must not be negative (got {o.deep_share})")
    if o.time_limit < 0 or o.work_limit < 0 or o.wall_limit < 0:
        raise SystemExit("pitchfork-synth: --time-limit, --work-limit and --wall-limit must not be negative")
    if o.rounds < 1:
        raise SystemExit(f"pitchfork-synth: --rounds must be at least 1 (got {o.rounds})")
    if args.write_rules and args.out is not None:
        raise SystemExit("pitchfork-synth: --write-rules writes into rules/synthesized/; it does not take -o")
    if not args.write_rules:  # never the source tree by default
        out = (args.out if args.out is not None else Path(DEFAULT_OUT_NAME)).resolve()
        o = _with(o, out_dir=out, cache_dir=out / ".synth-cache")
    if args.cache is not None:
        o = _with(o, cache_dir=args.cache)
    return o


def _available(registry: object) -> list[str]:
    """Benchmarks whose module imports (one that is broken is reported and skipped)."""
    out = []
    for name in registry.NAMES:  # type: ignore[attr-defined]
        try:
            registry.get(name)  # type: ignore[attr-defined]
        except Exception as e:  # noqa: BLE001
            print(f"pitchfork-synth: benchmark {name} skipped ({type(e).__name__}: {e})", file=sys.stderr)
            continue
        out.append(name)
    return out


def _with(o: Options, **kw: object) -> Options:
    from dataclasses import replace

    return replace(o, **kw)  # type: ignore[arg-type]


def summary(report: RunReport) -> str:
    from io import StringIO

    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"pitchfork-synth: {report.corpus_entries} corpus entries, {report.seconds:.1f} s")
    for col in (
        "stage",
        "LHS seen",
        "cached",
        "run",
        "not run",
        "already optimal",
        "synthesized",
        "generalized",
        "written",
        "rejected (why)",
        "seconds",
    ):
        table.add_column(col, justify="right" if col not in ("stage", "rejected (why)") else "left")
    for name, st in report.stages.items():
        if name == "corpus":
            table.add_row("corpus", str(st.seen), "", "", "", "", "", "", "", "", f"{st.seconds:.1f}")
            continue
        rejected = {k: v for k, v in st.outcomes.items() if k not in ("optimal", "synthesized", "trivial")}
        rejected.update({f"{k}": v for k, v in st.decisions.items() if k != "written"})
        why = ", ".join(f"{k} {v}" for k, v in sorted(rejected.items())) or "-"
        table.add_row(
            name,
            str(st.seen),
            str(st.cached),
            str(st.run),
            str(st.not_run),
            str(st.outcomes.get("optimal", 0) + st.outcomes.get("trivial", 0)),
            str(st.outcomes.get("synthesized", 0)),
            str(st.generalized),
            str(st.written),
            why,
            f"{st.seconds:.1f}",
        )
    buf = StringIO()
    Console(file=buf, width=160).print(table)
    return buf.getvalue()


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parser().parse_args(argv)
    opts = options(args)
    if opts.write:
        print(f"output directory: {opts.out_dir}", file=sys.stderr)
    report = run(opts)
    for e in report.corpus_errors:
        print(e, file=sys.stderr)
    print(summary(report))
    for name, st in report.stages.items():
        if st.work_budget:
            print(f"{name}: work {st.work / 1e6:.1f}M of a {st.work_budget / 1e6:.1f}M-unit budget")
        if st.wall_stopped:
            print(f"{name}: the wall-clock safety stop (--wall-limit) ended it: its rules depend on the load")
    for stage, path in report.files.items():
        new = sum(st.written for k, st in report.stages.items() if k == stage or k.startswith(f"{stage} round "))
        print(f"{stage}: {new} new rule(s) -> {path}")
    for stage, counts in report.census.items():
        firing = sum(1 for n in counts.values() if n)
        gone = report.dropped.get(stage, [])
        print(f"census {stage}: {firing} of {len(counts)} synthesized rules fire on the corpus"
              + (f"; dropped {', '.join(n for n, _ in gone)}" if gone else ""))
    minutes = report.seconds / 60
    total = sum(st.written for k, st in report.stages.items() if k != "corpus")
    print(
        f"{total} rules written in {report.seconds:.1f} s "
        f"({total / minutes if minutes > 0 else 0:.2f} rules/minute)"
    )
    if args.bring_up and opts.write:
        _report_bring_up(opts, report)
    if opts.write and opts.benchmarks and not args.quick and not args.no_ablation:
        _ablation(opts)
    if args.report_json is not None:
        write_report_json(args.report_json, report, argv)
    return 1 if report.corpus_errors else 0


def _ablation(opts: Options) -> None:
    from benchmarks.harness.tables import geomean
    from synth.loo import ablate_and_withdraw, static_gain

    data, gone = ablate_and_withdraw(opts.out_dir, opts.benchmarks, opts.isas)
    for isa in opts.isas:
        gains = [g for c in data["cells"] if c["isa"] == isa and (g := static_gain(c)) is not None]
        worst = min(gains, default=1.0)
        print(f"leave-one-out {isa}: geomean {geomean(gains) if gains else 1.0:.3f}x over {len(gains)} "
              f"benchmarks, worst {worst:.3f}x")
    for name, why in sorted(gone.items()):
        print(f"withdrawn {name}: {why}")
    print(f"ablation -> {opts.out_dir / 'RESULTS_ABLATION.md'}")


def _report_bring_up(opts: Options, report: RunReport) -> None:
    """Rediscovery of the hand-written lowering (synth/bringup.py), printed and written as
    bringup-<isa>.json into the output directory."""
    import json

    import math

    from synth.bringup import rediscovery, selection_costs
    from synth.cost import cost_unit
    from synth.stages import ISA_STEMS
    from synth.output import existing_rules

    isa = opts.isas[0]
    rules = existing_rules(opts.out_dir / f"lower_{ISA_STEMS[isa]}.rules")
    exprs = [t for ts in report.inputs.get(isa, {}).values() for t in ts]
    rep = rediscovery(isa, exprs, rules)
    print(f"bring-up {rep.summary()} (strict judge)")
    comp = rediscovery(isa, exprs, rules, judge="compiler")
    print(f"bring-up {comp.summary()} (compiler judge: the root's share of the lifted sub-term lowered by each rule set)")
    costs = selection_costs(isa, report.inputs.get(isa, {}), rules)
    ratios = [h / s for h, s in costs.values() if h and s]
    geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios)) if ratios else 1.0
    print(f"bring-up {isa}: selected {cost_unit(isa)}, hand-written lowering / synthesized alone: geomean "
          f"{geo:.3f}x over {len(ratios)} sources, worst {min(ratios, default=1.0):.3f}x (a proxy for the "
          "harness's static estimate: no trip counts)")
    path = opts.out_dir / f"bringup-{isa}.json"
    path.write_text(json.dumps({
        "isa": isa, "synthesized_rules": len(rules), "hand_rules": rep.hand_rules,
        "exercised": rep.exercised, "rediscovered": rep.rediscovered, "share": rep.share,
        "site_share": rep.site_share, "not_rediscovered_example": rep.examples,
        "compiler_judge": {"exercised": comp.exercised, "rediscovered": comp.rediscovered, "share": comp.share,
                           "site_share": comp.site_share, "not_rediscovered_example": comp.examples},
        "selection_instructions": {k: {"hand": h, "synthesized": s} for k, (h, s) in costs.items()},
        "selection_geomean_hand_over_synthesized": geo,
    }, indent=1) + "\n")
    print(f"bring-up report -> {path}")


def write_report_json(path: Path, report: RunReport, argv: Optional[Sequence[str]]) -> None:
    """The run's numbers, for benchmarks/RESULTS.md (benchmarks/harness/ablation.py quotes them)."""
    import datetime
    import json
    import os
    import subprocess

    run = [r for rs in report.results.values() for r in rs if not r.get("cached")]  # this invocation's
    terms = sum(r.get("terms", 0) for r in run)
    search_s = sum(r.get("search_seconds", 0.0) for r in run)
    total = sum(st.written for k, st in report.stages.items() if k != "corpus")
    git = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    data = {
        "command": "pitchfork-synth " + " ".join(sys.argv[1:] if argv is None else argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git": git,
        "cores": os.cpu_count(),
        "load_average": [round(x, 1) for x in os.getloadavg()],
        "seconds": round(report.seconds, 1),
        "written": total,
        "written_by_stage": {k: st.written for k, st in report.stages.items() if k != "corpus"},
        "rules_per_minute": total / (report.seconds / 60) if report.seconds > 0 else 0.0,
        "terms": terms,
        "terms_per_second": terms / search_s if search_s > 0 else 0.0,
        "tasks": len(run),
        "stages": {
            k: {
                "seen": st.seen, "cached": st.cached, "run": st.run, "not_run": st.not_run,
                "outcomes": dict(st.outcomes), "decisions": dict(st.decisions), "generalized": st.generalized,
                "written": st.written, "seconds": round(st.seconds, 1),
                "work": st.work, "work_budget": st.work_budget, "wall_stopped": st.wall_stopped,
            }
            for k, st in report.stages.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


if __name__ == "__main__":
    sys.exit(main())
