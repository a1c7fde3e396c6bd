"""`pitchfork bench --suite apps`: the public apps suite (benchmarks/apps/) timed on x86, PITCHFORK
against Halide 21, same algorithm, same upstream schedule, same thread count.

One run times every app at 1 and at 2 threads. Halide's runtime reads its thread count
(`HL_NUM_THREADS`) once per process, so each thread count runs in its own child process
(`python -m benchmarks.harness.apps_suite --child N`) with HL_NUM_THREADS=N; inside a child the two
contenders are timed interleaved (measure.time_interleaved: each repetition calls both, in rotating
order) after checking that PITCHFORK's output matches Halide's within the app's tolerance. PITCHFORK's
kernel is called through `CompiledPipeline.prepare` (bound arrays, one call of the JIT'd code); Halide
realizes into one preallocated buffer (halide21.HalideRunner). The ratio is the paired median
(measure.paired_ratio). Results: a table on stdout and `apps.json` / `APPS.md` in the output folder.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Sequence

THREADS = (1, 2)


def _child(apps: Sequence[str], threads: int, reps: int, quick: bool) -> list[dict[str, Any]]:
    import halide as hl
    import numpy as np

    from benchmarks.apps import APPS
    from benchmarks.apps.common import HALIDE_TARGETS
    from benchmarks.harness.halide21 import bind
    from benchmarks.harness.measure import paired_ratio, time_interleaved
    from pitchfork.api import compile as pf_compile

    rows = []
    for name in apps:
        mod = APPS[name]
        app = mod.build("x86-avx2")
        size = app.test_size if quick else app.timing_size
        rng = np.random.default_rng(1)
        values = app.make_inputs(rng, size)
        out_size = app.output_size(size)
        row: dict[str, Any] = {"app": name, "threads": threads, "size": list(out_size)}
        t0 = time.perf_counter()
        prog = pf_compile(app.output, list(app.args), target="x86-avx2", name=name)
        row["pitchfork_compile_s"] = time.perf_counter() - t0
        if prog.fallback_reason:
            row["error"] = f"fell back to Halide: {prog.fallback_reason}"
            rows.append(row)
            continue
        call = prog.prepare(*values, size=out_size)
        # Halide 21 on a fresh copy of the same app (same algorithm and schedule)
        happ = mod.build("x86-avx2")
        keep = bind(happ.args, values)
        pipe = hl.Pipeline(happ.output)
        target = hl.Target(HALIDE_TARGETS["x86-avx2"])
        t0 = time.perf_counter()
        pipe.compile_jit(target)
        row["halide_compile_s"] = time.perf_counter() - t0
        hbuf = pipe.realize(list(out_size), target)
        call()
        ours = np.asarray(call.outputs[0]).astype(np.float64)
        theirs = np.asarray(hbuf).astype(np.float64)
        diff = float(np.abs(ours - theirs).max())
        row["max_abs_diff"], row["tolerance"] = diff, app.tolerance
        if diff > app.tolerance:
            row["error"] = f"output differs from Halide's by {diff} (tolerance {app.tolerance})"
        timings = time_interleaved({"pitchfork": lambda: call(), "halide21": lambda: pipe.realize(hbuf)}, reps)
        row["pitchfork_ms"] = timings["pitchfork"].median_ms
        row["halide21_ms"] = timings["halide21"].median_ms
        row["speedup"] = paired_ratio(timings["halide21"].to_json(), timings["pitchfork"].to_json())
        row["timings"] = {k: v.to_json() for k, v in timings.items()}
        del keep
        rows.append(row)
    return rows


def run_apps(args: argparse.Namespace) -> int:
    """Run the suite (children per thread count), print and write the figures."""
    from benchmarks.apps import APPS

    names = [b for b in (args.bench or APPS) if b in APPS]
    unknown = [b for b in (args.bench or []) if b not in APPS]
    if unknown:
        print(f"error: unknown app(s) {', '.join(unknown)}; the apps are {', '.join(APPS)}", file=sys.stderr)
        return 2
    reps = args.reps or (3 if args.quick else 15)
    out_dir = Path(args.output_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict[str, Any]] = []
    for n in THREADS:
        env = dict(os.environ, HL_NUM_THREADS=str(n))
        cmd = [sys.executable, "-m", "benchmarks.harness.apps_suite", "--child", str(n), "--reps", str(reps),
               *(["--quick"] if args.quick else []), *names]
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=args.timeout)
        if p.returncode != 0:
            print(f"error: the {n}-thread run failed:\n{p.stderr[-2000:]}", file=sys.stderr)
            return 1
        rows += json.loads(p.stdout.strip().splitlines()[-1])
    (out_dir / "apps.json").write_text(json.dumps(rows, indent=1))
    text = report(rows)
    (out_dir / "APPS.md").write_text(text)
    print(text)
    return 0 if not any("error" in r for r in rows) else 1


def report(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["# Apps suite: PITCHFORK vs Halide 21 on x86-avx2 (same schedule, same threads)", "",
             "| app | size | threads | PITCHFORK ms | Halide 21 ms | speedup (paired median) | max diff / tol |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        size = "x".join(map(str, r["size"]))
        if "pitchfork_ms" not in r:
            lines.append(f"| {r['app']} | {size} | {r['threads']} | - | - | - | {r.get('error', '')} |")
            continue
        sp = r["speedup"]
        lines.append(f"| {r['app']} | {size} | {r['threads']} | {r['pitchfork_ms']:.3f} | {r['halide21_ms']:.3f} | "
                     f"{sp:.2f}x | {r['max_abs_diff']:.3g} / {r['tolerance']:g}"
                     f"{' ERROR' if 'error' in r else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite")
    ap.add_argument("--child", type=int, required=True, help="thread count (HL_NUM_THREADS is already set)")
    ap.add_argument("--reps", type=int, default=15)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("apps", nargs="*")
    a = ap.parse_args(argv)
    import warnings

    warnings.simplefilter("ignore")
    rows = _child(a.apps, a.child, a.reps, a.quick)
    print(json.dumps(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
