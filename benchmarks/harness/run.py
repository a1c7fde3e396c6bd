"""The benchmark harness driver: `python -m benchmarks` / `pitchfork bench`.

For each selected benchmark x ISA it runs one worker process (`worker.py`: compile with both isels,
Halide 21, time on x86, weighted static estimate everywhere), shows progress bars, and writes
`results.json`, `RESULTS.md`, `speedup.png` and `compile_time.png` into the output directory
(`report.py`). A worker that crashes or times out becomes failure rows; the run always completes.

Invariant: nothing is written into the source tree unless asked. The output directory is `-o DIR`,
by default `./pitchfork-bench-out` in the current directory (created, its path printed);
`--write-results` writes into `benchmarks/` instead, refreshing the committed RESULTS.md, plots and
baseline.json (the run trimmed to what a later comparison reads, benchmarks/harness/compare.py). The
full results.json (~5 MB: loop tables, histograms, assembly blocks) goes there too but is not committed
(.gitignore): what the repository keeps of a run is its report and its trimmed figures.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from benchmarks.common import ISAS

#: Where `--write-results` writes: the committed results in benchmarks/.
RESULTS_DIR = Path(__file__).resolve().parent.parent
#: The default output directory, relative to the current directory (never the source tree).
DEFAULT_OUT_NAME = "pitchfork-bench-out"
from benchmarks.harness.variants import VARIANTS  # noqa: E402 - the contenders of a run


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--quick", action="store_true", help="small sizes (each benchmark's quick_size), 3 repetitions")
    p.add_argument("--bench", action="append", default=[], metavar="NAME",
                   help="benchmark(s) to run (repeatable or comma-separated; default: all available)")
    p.add_argument("--isa", action="append", default=[], metavar="ISA",
                   help=f"ISA(s) among {', '.join(ISAS)} (repeatable or comma-separated; default: all)")
    p.add_argument("--reps", type=int, default=None, help="timing repetitions on x86 (default 15, --quick 3)")
    p.add_argument("--psets", choices=("first", "all"), default=None,
                   help="parameter sets per benchmark: 'all' (default for a full run) or 'first' (default with "
                        "--quick); rows are labelled by parameter set")
    p.add_argument("--static-size", choices=("quick", "timing"), default="quick",
                   help="input size of the counted static-estimate runs (default: quick_size; qemu is slow)")
    p.add_argument("--exclude-rules-from", metavar="BENCHMARK", default="self",
                   help="leave-one-out: do not use synthesized rules learned from this benchmark (default "
                        "'self': from the benchmark being compiled, as the paper's Figure 5; 'none': use them all)")
    p.add_argument("--output-dir", "-o", default=None, help="where results.json, RESULTS.md and the "
                   f"PNGs go (default ./{DEFAULT_OUT_NAME} in the current directory)")
    p.add_argument("--write-results", action="store_true",
                   help="write into benchmarks/ (refresh the committed RESULTS.md, baseline.json and plots; "
                        "the full results.json is written there too, not committed)")
    p.add_argument("--engine", choices=("greedy", "egraph"), default="greedy",
                   help="lifting engine of isel=pitchfork (default greedy; egraph: pitchfork/selection/egraph)")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds per benchmark x ISA worker")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--baseline", metavar="RESULTS_JSON", default=None,
                   help="an earlier run's results.json (or its trimmed baseline.json, benchmarks/baselines/*.json): "
                        "RESULTS.md gets a before/after section beside it")


def command_line(args: argparse.Namespace, prog: str = "pitchfork bench") -> str:
    """The command that reproduces `args` (options in canonical spelling)."""
    parts = [prog]
    if args.quick:
        parts.append("--quick")
    for b in _split(args.bench):
        parts += ["--bench", b]
    for i in _split(args.isa):
        parts += ["--isa", i]
    if args.reps is not None:
        parts += ["--reps", str(args.reps)]
    if args.psets is not None and args.psets != default_psets(args):
        parts += ["--psets", args.psets]
    if args.static_size != "quick":
        parts += ["--static-size", args.static_size]
    if args.exclude_rules_from != "self":
        parts += ["--exclude-rules-from", args.exclude_rules_from]
    if getattr(args, "engine", "greedy") != "greedy":
        parts += ["--engine", args.engine]
    if getattr(args, "write_results", False):
        parts.append("--write-results")
    elif args.output_dir is not None:
        parts += ["-o", str(args.output_dir)]
    if args.seed != 1:
        parts += ["--seed", str(args.seed)]
    if getattr(args, "baseline", None):
        parts += ["--baseline", args.baseline]
    return " ".join([prog, *(shlex.quote(p) for p in parts[1:])])


def output_dir(args: argparse.Namespace) -> Path:
    """The run's output directory: benchmarks/ with --write-results, else -o DIR, else
    ./pitchfork-bench-out (relative to the current directory, never the package's)."""
    if getattr(args, "write_results", False):
        return RESULTS_DIR
    return Path(args.output_dir if args.output_dir is not None else DEFAULT_OUT_NAME).resolve()


def default_psets(args: argparse.Namespace) -> str:
    return "first" if args.quick else "all"


def param_set_indices(bench_name: str, mode: str) -> list[int]:
    """The parameter sets a run covers for one benchmark (index 0 alone if the module fails to load:
    its worker then reports the failure)."""
    from benchmarks import registry

    if mode == "first":
        return [0]
    try:
        return list(range(len(registry.get(bench_name).param_sets)))
    except Exception:  # noqa: BLE001 - reported as failure rows by the worker
        return [0]


def _split(items: Sequence[str]) -> list[str]:
    return [x.strip() for it in items for x in it.split(",") if x.strip()]


def _versions() -> dict[str, str]:
    out: dict[str, str] = {"python": platform.python_version()}
    try:
        import halide

        out["halide"] = getattr(halide, "__version__", "") or "21 (pip)"
    except Exception:  # noqa: BLE001
        pass
    try:
        import llvmlite
        import llvmlite.binding as llvm

        out["llvmlite"] = llvmlite.__version__
        out["llvm (llvmlite)"] = ".".join(map(str, llvm.llvm_version_info))
    except Exception:  # noqa: BLE001
        pass
    from benchmarks.harness.static import llvm_tool

    for tool in ("llvm-mca",):
        try:
            txt = subprocess.run([llvm_tool(tool), "--version"], capture_output=True, text=True).stdout
            out[tool] = next((ln.strip() for ln in txt.splitlines() if "version" in ln.lower()), "")
        except Exception:  # noqa: BLE001
            pass
    for q in ("qemu-aarch64", "qemu-hexagon"):
        try:
            out[q] = subprocess.run([q, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
        except Exception:  # noqa: BLE001
            pass
    try:
        out["git"] = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                    cwd=Path(__file__).resolve().parent).stdout.strip()
    except Exception:  # noqa: BLE001
        pass
    return out


def _machine() -> dict[str, Any]:
    cpu = ""
    try:
        for ln in Path("/proc/cpuinfo").read_text().splitlines():
            if ln.startswith("model name"):
                cpu = ln.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    from benchmarks.harness.static import host_mcpu

    from benchmarks.harness.measure import call_overheads

    try:
        overheads: dict[str, float] = call_overheads()
    except Exception:  # noqa: BLE001 - informative only
        overheads = {}
    return {"cpu": cpu, "llvm_host_cpu": host_mcpu(), "cores": os.cpu_count(), "platform": platform.platform(),
            "load_average": os.getloadavg(), "call_overhead_us": overheads}


def _param_sets_json(bench_name: str, indices: list[int]) -> dict[str, Any]:
    """index -> the parameter set's values (for the report's labels)."""
    from benchmarks import registry

    try:
        b = registry.get(bench_name)
        return {str(i): {k: v for k, v in b.param_sets[i].items()} for i in indices}
    except Exception:  # noqa: BLE001
        return {}


def run_worker(job: dict[str, Any], timeout: float, on_progress: Any) -> list[dict[str, Any]]:
    """Run one worker process. If it dies (an LLVM or Halide abort), each contender is run again in a
    worker of its own, so one contender's crash fails only its own row."""
    rows = _run_worker(job, timeout, on_progress)
    variants = job.get("variants", VARIANTS)
    if len(variants) > 1 and all(r.get("died") for r in rows):
        rows = [r for v in variants for r in _run_worker({**job, "variants": [v]}, timeout, on_progress)]
    return rows


def _run_worker(job: dict[str, Any], timeout: float, on_progress: Any) -> list[dict[str, Any]]:
    """Run one worker process; failure rows if it crashes, times out or writes nothing."""
    with tempfile.TemporaryDirectory(prefix="pf-bench-job-") as d:
        jp, rp = os.path.join(d, "job.json"), os.path.join(d, "rows.json")
        with open(jp, "w") as f:
            json.dump(job, f)
        env = dict(os.environ, HL_NUM_THREADS="1", PYTHONUNBUFFERED="1")
        cmd = [sys.executable, "-m", "benchmarks.harness.worker", jp, rp]
        errlog = open(os.path.join(d, "stderr"), "w+")
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=errlog, text=True, env=env,
                                cwd=str(Path(__file__).resolve().parent.parent.parent))
        deadline = time.monotonic() + timeout
        why = ""
        assert proc.stdout is not None
        for line in proc.stdout:
            if line.startswith("@progress "):
                try:
                    on_progress(json.loads(line[10:]))
                except ValueError:
                    pass
            if time.monotonic() > deadline:
                proc.kill()
                why = f"worker exceeded {timeout:.0f} s"
                break
        rc = proc.wait()
        if os.path.exists(rp) and not why:
            with open(rp) as f:
                return json.load(f)
        errlog.seek(0)
        tail = errlog.read().strip().splitlines()[-3:]
        why = why or f"worker died (status {rc}): {' | '.join(tail)}"[:600]
    return [{"bench": job["bench"], "isa": job["isa"], "variant": v, "pset": int(job.get("param_set", 0)),
             "status": "failed", "errors": [why], "died": True} for v in job.get("variants", VARIANTS)]


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m benchmarks") -> int:
    ap = argparse.ArgumentParser(prog=prog, description="PITCHFORK vs LLVM alone vs Halide 21 on the SPEC benchmarks")
    add_arguments(ap)
    args = ap.parse_args(argv)
    return run(args, command_line(args, prog))


def run(args: argparse.Namespace, command: Optional[str] = None) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from benchmarks import registry
    from benchmarks.harness import report
    from benchmarks.harness.compare import load, write_trimmed

    console = Console(stderr=True)
    benches = _split(args.bench) or registry.available()
    unknown = [b for b in benches if b not in registry.NAMES]
    isas = _split(args.isa) or list(ISAS)
    bad_isa = [i for i in isas if i not in ISAS]
    if unknown or bad_isa:
        console.print(f"error: unknown {'benchmark' if unknown else 'ISA'} {', '.join(unknown or bad_isa)} "
                      f"(known: {', '.join(registry.NAMES if unknown else ISAS)})")
        return 2
    if getattr(args, "baseline", None):
        try:
            load(args.baseline)
        except (OSError, ValueError) as e:
            console.print(f"error: --baseline {args.baseline}: {e}")
            return 2
    if getattr(args, "write_results", False) and args.output_dir is not None:
        console.print("error: --write-results writes into benchmarks/; it does not take -o")
        return 2
    if args.reps is not None and args.reps < 1:
        console.print("error: --reps must be at least 1")
        return 2
    reps = args.reps or (3 if args.quick else 15)
    psets_mode = args.psets or default_psets(args)
    psets = {b: param_set_indices(b, psets_mode) for b in benches}
    out_dir = output_dir(args)
    out_dir.mkdir(parents=True, exist_ok=True)
    console.print(f"output directory: {out_dir}")
    sizes: dict[str, Any] = {}
    for b in benches:
        try:
            bm = registry.get(b)
            sizes[b] = {"timing": list(bm.quick_size if args.quick else bm.timing_size),
                        "static": list(bm.quick_size if args.static_size == "quick" or args.quick
                                       else bm.timing_size)}
        except Exception as e:  # noqa: BLE001 - reported as failure rows by the worker
            sizes[b] = {"error": str(e)}
    console.print(f"[bold]pitchfork bench[/]: {len(benches)} benchmark(s) x {', '.join(isas)}; "
                  f"{'quick' if args.quick else 'full'} sizes; parameter sets: {psets_mode}; "
                  f"x86 timing {reps} interleaved repetitions; "
                  f"static estimates at the {'quick' if args.quick else args.static_size} size")
    for b in benches:
        s = sizes[b]
        if "timing" in s:
            console.print(f"  {b}: timing size {'x'.join(map(str, s['timing']))}, static size "
                          f"{'x'.join(map(str, s['static']))}")
    rows: list[dict[str, Any]] = []
    t_start = time.time()
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  TextColumn("{task.fields[step]}"), console=console) as progress:
        total = progress.add_task("benchmarks x ISAs x parameter sets",
                                  total=sum(len(psets[b]) for b in benches) * len(isas), step="")
        # one worker per benchmark x ISA x parameter set
        for b, isa, pi in [(b, isa, pi) for b in benches for isa in isas for pi in psets[b]]:
            sub = progress.add_task(f"  {b} {isa}" + (f" p{pi}" if len(psets[b]) > 1 else ""), total=None,
                                    step="start")

            def on_progress(ev: dict[str, Any], sub: Any = sub) -> None:
                if "rep" in ev:
                    progress.update(sub, total=ev["reps"], completed=ev["rep"], step=ev["step"])
                else:
                    progress.update(sub, step=ev.get("step", ""))

            excl = None if args.exclude_rules_from == "none" else args.exclude_rules_from
            job = {"bench": b, "isa": isa, "quick": bool(args.quick), "reps": reps, "seed": args.seed,
                   "static_size": "quick" if args.quick else args.static_size, "param_set": pi,
                   "exclude_rules_from": b if excl == "self" else excl, "engine": getattr(args, "engine", "greedy")}
            got = run_worker(job, args.timeout, on_progress)
            rows += got
            bad = [r for r in got if r["status"] != "ok"]
            progress.update(sub, step="ok" if not bad else f"[red]{len(bad)} failed[/]", total=1, completed=1)
            progress.advance(total)
    meta = {"command": command or command_line(args), "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "seconds": round(time.time() - t_start, 1), "quick": bool(args.quick), "reps": reps,
            "static_size": "quick" if args.quick else args.static_size, "sizes": sizes,
            "psets": psets_mode, "param_sets": {b: _param_sets_json(b, psets[b]) for b in benches},
            "exclude_rules_from": args.exclude_rules_from, "baseline": args.baseline,
            "benchmarks": benches, "isas": isas,
            "machine": _machine(), "versions": _versions()}
    data = {"meta": meta, "rows": rows}
    with open(out_dir / "results.json", "w") as f:
        json.dump(data, f, indent=1)
    write_trimmed(data, out_dir / "baseline.json")  # what a later --baseline reads, to keep
    from benchmarks.harness import ablation_rows

    ablation_rows.write(data, out_dir)  # Figure 7 from this run's own rows (never stale)
    report.write_all(data, out_dir)
    console.print(report.console_summary(data))
    console.print(f"wrote {out_dir / 'results.json'} (trimmed: {out_dir / 'baseline.json'}), {out_dir / 'RESULTS.md'}, "
                  f"{out_dir / 'speedup.png'}, {out_dir / 'compile_time.png'}")
    return 0
