"""`python3 -m benchmarks.variants.selection [--isa ISA ...] [--bench NAME ...] [--repeat N] [--cache MODE ...] [-o DIR]
[--write-results]`:
each SPEC benchmark (first parameter set) compiled with both lifting engines; per benchmark the
selection time (CompileStats.selection_seconds: lifting + lowering of every vector expression, and
for the e-graph engine building its egglog program on first use) and its CPU time (`_CpuClock`: what
the wall time is without waiting for a core, which on a shared machine is most of it), what the e-graph engine did
(expressions gated, same shape as an earlier one, shape outcome found in the on-disk store, shapes
saturated, results cheaper than greedy's by the target-agnostic cost, and of those the ones selection
keeps because they also lower cheaper by the target's cost, pitchfork/selection/lower.py, which alone
are proved equal to the input before use: engine.prove) and
whether the two engines produced the same assembly (then every static estimate is equal too; where it
differs, compare with the harness: `python3 -m benchmarks --quick --bench NAME --isa ISA --engine egraph
-o DIR`).

Each engine compiles the whole benchmark list in a fresh process of its own (`--engine-only`), so
neither inherits the other's in-process caches, and each pays its own one-time costs (rule loading, the
e-graph's egglog program) as a user's compile would. With `--repeat N` the two run N times in
alternating order (greedy, egraph, egraph, greedy, ...) and each benchmark's time is the median of its
N runs. The on-disk caches (PITCHFORK_CACHE_DIR: parsed rule files, lark tables, the e-graph's shape
store) are stated, never inherited from the user's: each `--cache` mode (default: all three) gives
every child the same kind of directory, for both engines alike:

* `cold`: an empty directory per process (a first-ever compile: both engines parse their rules, the
  e-graph saturates every shape);
* `rules`: the rule caches warm (one unmeasured compile of the list per engine fills them: greedy's
  parsed rule files, and the e-graph's compiled egglog prelude, engine._prelude, which is the rule
  files of rules/egraph/ compiled to egglog text), the e-graph's shape store emptied before every
  process (each egraph process saturates every shape: the strictest state for the e-graph, and the one
  earlier sessions measured);
* `warm`: every cache warm, the shape store included (one unmeasured compile per engine fills them):
  a pipeline compiled again.

Writes selection.json in DIR (default ./variants-out); the cache directories live in DIR/cache.
`--write-results` also replaces the generated section of benchmarks/variants/RESULTS.md with this run's
totals (never without the flag)."""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

ENGINES = ("greedy", "egraph")
CACHE_MODES = ("cold", "rules", "warm")


class _CpuClock:
    """The CPU time selection takes, beside `CompileStats.selection_seconds` (wall): the selecting
    thread's CPU time inside `select_instructions` plus the egglog thread's inside each saturation
    (`engine._saturate_here`, which the selecting thread waits for without using CPU). On a machine
    shared with other jobs the wall time also counts waiting for a core (and, for the e-graph engine,
    for its thread to be woken), which this does not."""

    def __init__(self) -> None:
        from pitchfork.selection import lower
        from pitchfork.selection.egraph import engine as eg

        self.seconds = 0.0
        select, saturate = lower.select_instructions, eg._saturate_here

        def timed(fn):  # type: ignore[no-untyped-def]
            def run(*args, **kwargs):  # type: ignore[no-untyped-def]
                t0 = time.thread_time()
                try:
                    return fn(*args, **kwargs)
                finally:
                    self.seconds += time.thread_time() - t0
            return run

        # looked up at each call (pitchfork/codegen imports select_instructions where it selects, and
        # engine.saturate hands the egglog thread _saturate_here by its module-level name)
        lower.select_instructions = timed(select)
        eg._saturate_here = timed(saturate)


def run_engine(engine: str, isa: str, names: list[str]) -> list[dict]:
    """Compile `names` for `isa` with `engine` in this process; one row per benchmark."""
    import pitchfork
    from benchmarks import registry
    from pitchfork.selection.egraph import engine as eg

    clock = _CpuClock()
    rows = []
    for name in names:
        bench = registry.get(name)
        row: dict = {"bench": name, "isa": isa, "engine": engine}
        f, fargs = bench.build(isa, bench.param_sets[0])
        eg._RESULTS.clear()  # per-expression results of this benchmark only (shapes stay cached, as in a real process)
        cpu0 = clock.seconds
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prog = pitchfork.compile(f, fargs, target=isa, isel="pitchfork", name=name, fallback=False,
                                         engine=engine)
        except Exception as e:  # noqa: BLE001 - a row, never a stopped run
            row["error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            rows.append(row)
            continue
        row["selection_s"] = prog.stats.selection_seconds
        row["selection_cpu_s"] = clock.seconds - cpu0
        row["compile_s"] = time.perf_counter() - t0
        row["vector_expressions"] = prog.stats.vector_expressions
        row["asm"] = hashlib.sha1(prog.assembly().encode()).hexdigest()
        if engine == "egraph":
            kinds: Counter = Counter()
            for r in eg._RESULTS.values():
                kinds["gated" if r.rounds == 0 and r.note.startswith("greedy result fully lifted") else
                      "same_shape" if "same shape" in r.note else "stored" if r.stored else "saturated"] += 1
                if r.source == "egraph":
                    kinds[f"egraph_{r.proof or 'unproved'}"] += 1
            row["egraph"] = dict(kinds)
            # Z3 is imported only to prove a result selection keeps (engine.prove): so far in this process
            row["z3_imported"] = "z3" in sys.modules
        rows.append(row)
    return rows


def _child(engine: str, isa: str, names: list[str], cache: Path) -> list[dict]:
    cmd = [sys.executable, "-m", "benchmarks.variants.selection", "--engine-only", engine, "--isa", isa]
    for n in names:
        cmd += ["--bench", n]
    env = {**os.environ, "PITCHFORK_CACHE_DIR": str(cache)}
    out = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{engine} run failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _measure(isa: str, mode: str, names: list[str], repeat: int, base: Path) -> list[dict]:
    """Both engines on `names` for `isa`, `repeat` times in alternating order, every process with the
    caches of `mode` (module docstring); one row per benchmark."""
    import shutil
    import tempfile

    base.mkdir(parents=True, exist_ok=True)
    warm = base / f"{isa}-{mode}"
    shutil.rmtree(warm, ignore_errors=True)
    if mode != "cold":  # unmeasured compiles that fill the caches
        _child("greedy", isa, names, warm)
        _child("egraph", isa, names, warm)  # `rules`: for its compiled prelude (the shape store is emptied)
    runs: dict[str, list[list[dict]]] = {e: [] for e in ENGINES}
    for i in range(repeat):
        for engine in ENGINES if i % 2 == 0 else ENGINES[::-1]:
            if mode == "cold":
                cache = Path(tempfile.mkdtemp(prefix="cold-", dir=base))
            else:
                cache = warm
                if mode == "rules":
                    shutil.rmtree(warm / "egraph", ignore_errors=True)
            runs[engine].append(_child(engine, isa, names, cache))
            if mode == "cold":
                shutil.rmtree(cache, ignore_errors=True)
    rows = []
    for j, name in enumerate(names):
        row: dict = {"bench": name, "isa": isa, "cache": mode}
        for engine in ENGINES:
            rs = [r[j] for r in runs[engine]]
            if any("error" in r for r in rs):
                row[f"{engine}_error"] = next(r["error"] for r in rs if "error" in r)
                continue
            row[f"{engine}_selection_s"] = statistics.median(r["selection_s"] for r in rs)
            row[f"{engine}_selection_cpu_s"] = statistics.median(r["selection_cpu_s"] for r in rs)
            row[f"{engine}_runs_s"] = [r["selection_s"] for r in rs]
            row["vector_expressions"] = rs[0]["vector_expressions"]
            row[f"{engine}_asm"] = rs[0]["asm"]
            if engine == "egraph":
                row["egraph"] = rs[0]["egraph"]
        row["same_code"] = row.get("greedy_asm") is not None and row.get("greedy_asm") == row.get("egraph_asm")
        rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    from benchmarks import registry

    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.variants.selection")
    ap.add_argument("--isa", action="append", default=[], help="repeatable (default x86-avx2)")
    ap.add_argument("--bench", action="append", default=[])
    ap.add_argument("--repeat", type=int, default=1, help="runs per engine, alternating order (default 1)")
    ap.add_argument("--cache", action="append", choices=CACHE_MODES, default=[],
                    help="on-disk cache state of every process, repeatable (default: all)")
    ap.add_argument("-o", "--output", default="variants-out")
    ap.add_argument("--write-results", action="store_true",
                    help="replace the generated section of benchmarks/variants/RESULTS.md with this run's totals")
    ap.add_argument("--label", default="", help="a line saying what this run measured (which code, which "
                    "session), written with the totals by --write-results and into selection.json")
    ap.add_argument("--engine-only", choices=ENGINES, help=argparse.SUPPRESS)  # the child process
    args = ap.parse_args(argv)
    names = args.bench or list(registry.NAMES)
    isas = args.isa or ["x86-avx2"]
    if args.engine_only:
        print(json.dumps(run_engine(args.engine_only, isas[0], names)))
        return 0
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    try:
        load = os.getloadavg()[0]
    except OSError:
        load = None
    modes = args.cache or list(CACHE_MODES)
    rows: list[dict] = []
    for isa in isas:
        for mode in modes:
            rows += _measure(isa, mode, names, args.repeat, out / "cache")
    summary: dict = {"load_average_1min_at_start": load, "repeat": args.repeat, "label": args.label}
    for isa in isas:
        for mode in modes:
            rs = [r for r in rows if r["isa"] == isa and r["cache"] == mode]
            tg = sum(r.get("greedy_selection_s", 0.0) for r in rs)
            te = sum(r.get("egraph_selection_s", 0.0) for r in rs)
            cg = sum(r.get("greedy_selection_cpu_s", 0.0) for r in rs)
            ce = sum(r.get("egraph_selection_cpu_s", 0.0) for r in rs)
            summary[f"{isa}/{mode}"] = {"greedy_selection_s": tg, "egraph_selection_s": te,
                                        "ratio": te / tg if tg else None,
                                        "greedy_selection_cpu_s": cg, "egraph_selection_cpu_s": ce,
                                        "cpu_ratio": ce / cg if cg else None,
                                        "same_code": sum(r["same_code"] for r in rs), "benchmarks": len(rs)}
    try:
        summary["load_average_1min_at_end"] = os.getloadavg()[0]
    except OSError:
        pass
    (out / "selection.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    from rich.console import Console
    from rich.table import Table

    con = Console(width=160)
    for key in (k for k in summary if "/" in k):
        isa, mode = key.split("/")
        tab = Table("benchmark", "exprs", "greedy s", "egraph s", "ratio",
                    "e-graph: gated/same shape/stored/saturated/cheaper/kept and proved",
                    "same code", title=f"selection time per engine ({isa}, caches {mode}; each engine in its own "
                    f"process, median of {args.repeat}; load {load:.1f} at start)" if load is not None else key)
        for r in (r for r in rows if r["isa"] == isa and r["cache"] == mode):
            g, e = r.get("greedy_selection_s"), r.get("egraph_selection_s")
            k = r.get("egraph", {})
            won = sum(v for kk, v in k.items() if kk.startswith("egraph_"))
            kept = won - k.get("egraph_pending", 0)  # proved only when selection keeps it (engine.prove)
            tab.add_row(r["bench"], str(r.get("vector_expressions", "")),
                        f"{g:.2f}" if g is not None else r.get("greedy_error", ""),
                        f"{e:.2f}" if e is not None else r.get("egraph_error", ""),
                        f"{e / g:.1f}x" if g and e is not None else "",
                        f"{k.get('gated', 0)}/{k.get('same_shape', 0)}/{k.get('stored', 0)}/{k.get('saturated', 0)}/{won}/{kept}",
                        "yes" if r["same_code"] else "NO")
        s = summary[key]
        tab.add_row("total", "", f"{s['greedy_selection_s']:.2f}", f"{s['egraph_selection_s']:.2f}",
                    f"{s['ratio']:.2f}x" if s["ratio"] else "", "", f"{s['same_code']}/{s['benchmarks']}")
        tab.add_row("total CPU", "", f"{s['greedy_selection_cpu_s']:.2f}", f"{s['egraph_selection_cpu_s']:.2f}",
                    f"{s['cpu_ratio']:.2f}x" if s["cpu_ratio"] else "", "", "")
        con.print(tab)
    print(f"wrote {out / 'selection.json'}")
    if args.write_results:
        from benchmarks.variants.results import RESULTS, write_section

        write_section(TITLE, _markdown(summary, rows, argv if argv is not None else sys.argv[1:]))
        print(f"replaced the section '{TITLE}' of {RESULTS}")
    return 0


TITLE = "Selection time on the 16 benchmarks (generated)"


def _markdown(summary: dict, rows: list[dict], argv: list[str]) -> str:
    """This run's totals for RESULTS.md (`--write-results`)."""

    def fmt(x: float | None) -> str:
        return "?" if x is None else f"{x:.1f}"

    lines = [f"## {TITLE}", ""] + ([f"Run: {summary['label']}", ""] if summary.get("label") else []) + [
             f"`python3 -m benchmarks.variants.selection {shlex.join(argv)}`; load average (1 min) "
             f"{fmt(summary.get('load_average_1min_at_start'))} at the start, {fmt(summary.get('load_average_1min_at_end'))} "
             f"at the end; each engine in its own process, the two alternating, median of {summary['repeat']} per "
             "benchmark. Selection time: `CompileStats.selection_seconds` (lifting and lowering of every vector "
             "expression; for the e-graph engine also building its egglog program) summed over the benchmarks; "
             "CPU: the selecting thread's CPU time in selection plus the egglog thread's in saturation (what the wall "
             "time is without waiting for a core or for a thread to be woken).", "",
             "| ISA | caches | greedy s | e-graph s | e-graph / greedy | greedy CPU s | e-graph CPU s | CPU e-graph / greedy "
             "| shapes saturated / from the store | same assembly |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for key, s in summary.items():
        if "/" not in key:
            continue
        isa, mode = key.split("/")
        rs = [r for r in rows if r["isa"] == isa and r["cache"] == mode]
        sat = sum(r.get("egraph", {}).get("saturated", 0) for r in rs)
        stored = sum(r.get("egraph", {}).get("stored", 0) for r in rs)
        ratio = f"{s['ratio']:.2f}x" if s["ratio"] else "?"
        cpu = f"{s['cpu_ratio']:.2f}x" if s.get("cpu_ratio") else "?"
        lines.append(f"| {isa} | {mode} | {s['greedy_selection_s']:.2f} | {s['egraph_selection_s']:.2f} | {ratio} | "
                     f"{s.get('greedy_selection_cpu_s', 0.0):.2f} | {s.get('egraph_selection_cpu_s', 0.0):.2f} | {cpu} | "
                     f"{sat} / {stored} | {s['same_code']}/{s['benchmarks']} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
