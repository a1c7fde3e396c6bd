"""`python -m benchmarks.harness.apps_suite_alloc`: does our heap allocator's layout cost an app time
against Halide 21's `halide_malloc`? An interleaved A/B of allocator (and gather) variants of PITCHFORK's
code for one app of the apps suite (x86), with Halide 21 beside them.

Why: interpolate was measured 3-5% slower than Halide 21 without huge pages (session 31) with the same
code and parallel structure. The two heaps differ in the layout alone (both call glibc `malloc` once
per buffer, the same buffers): Halide 21's x86 runtime asks `malloc(bytes + 64)` and returns the first
64-byte boundary a word past it; ours (pitchfork/codegen/alloc.py) asks `malloc(bytes + PADDING + 128
+ 8)` and returns the first 128-byte boundary a word past it, so every block is 584 bytes longer and the
blocks after it sit at other page offsets (4 KiB aliasing between a loop's load and store streams
depends on them). The variants, each compiled in its own process (the constants patched before
compiling; nothing in the source tree changes):

* `p`: PITCHFORK as it is; `h`: Halide 21's JIT (its own runtime and `halide_malloc`);
* `p64`: the heap blocks aligned to 64 bytes as Halide's (`ALLOC_ALIGN` 64 in the heap functions);
* `p0pad`: no PADDING bytes after a buffer (for this measurement only: our loads may need them; the
  output is checked against Halide's all the same);
* `p64_0pad`: both, so the blocks' sizes and placement are Halide's;
* `pgather` / `pnogather`: not the allocator but the codegen pass `x86_float_gathers` forced on / off
  (float32 gathers as vgatherdps or lane by lane; its default follows the host CPU, see
  pitchfork/codegen/float_gather_cpu.py, whose figures came from this tool).

Each worker runs 3 warm-up calls, then `--calls` timed ones, and reports the median wall and CPU time per
call (CPU: `time.process_time`, every thread of the process; on a shared machine it moves far less than
wall time). Workers run one at a time, the variants rotated every round. Printed: per thread count and
variant, the medians over rounds and their ratio to Halide's, and the largest output difference from
Halide's output. Scratch files go to a temporary folder; nothing is written under the source tree.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

VARIANTS = ("p", "p64", "p0pad", "p64_0pad", "pgather", "pnogather", "h")


def worker(app_name: str, variant: str, calls: int, quick: bool, out_path: str, no_huge_pages: bool) -> None:
    """One variant in this process: compile, warm up, time `calls` calls; print one line of JSON, save the
    output to `out_path`."""
    import halide as hl
    import numpy as np

    from benchmarks.harness.apps_suite import disable_huge_pages, placed_output

    if no_huge_pages:
        disable_huge_pages()  # before the first large allocation
    from benchmarks.apps import APPS
    from benchmarks.apps.common import HALIDE_TARGETS
    from benchmarks.harness.halide21 import bind

    app = APPS[app_name].build("x86-avx2")
    size = app.test_size if quick else app.timing_size
    values = app.make_inputs(np.random.default_rng(1), size)
    out_size = app.output_size(size)
    if variant == "h":
        keep = bind(app.args, values)  # noqa: F841 (the bound arrays must outlive the calls)
        pipe = hl.Pipeline(app.output)
        pipe.compile_jit(hl.Target(HALIDE_TARGETS["x86-avx2"]))
        hbuf = hl.Buffer(placed_output(app.output.type(), out_size))
        run = lambda: pipe.realize(hbuf)  # noqa: E731
        result = lambda: np.asarray(hbuf)  # noqa: E731
    else:
        import pitchfork.codegen.alloc as alloc
        from pitchfork.api import compile as pf_compile

        if "64" in variant:
            alloc.ALLOC_ALIGN = 64  # the heap functions' alignment (x86 kernels assume HEAP_ALIGN = 64)
        if "0pad" in variant:
            alloc.PADDING = 0
        on = ["x86_float_gathers"] if variant == "pgather" else []
        off = ["x86_float_gathers"] if variant == "pnogather" else []
        prog = pf_compile(app.output, list(app.args), target="x86-avx2", name=app_name, enable_passes=on,
                          disable_passes=off)
        if prog.fallback_reason:
            print(json.dumps({"error": prog.fallback_reason}), flush=True)
            return
        call = prog.prepare(*values, size=out_size, out=placed_output(app.output.type(), out_size))
        run = call
        result = lambda: np.asarray(call.outputs[0])  # noqa: E731
    for _ in range(3):
        run()
    wall, cpu = [], []
    for _ in range(calls):
        c0, t0 = time.process_time(), time.perf_counter()
        run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    np.save(out_path, np.ascontiguousarray(result()))
    print(json.dumps({"wall_ms": 1e3 * statistics.median(wall), "cpu_ms": 1e3 * statistics.median(cpu)}),
          flush=True)


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def run(app: str, variants: Sequence[str], rounds: int, calls: int, quick: bool,
        no_huge_pages: bool) -> tuple[dict[tuple[int, str], list[dict[str, Any]]], dict[tuple[int, str], float]]:
    """Every (threads, variant) worker once per round, the variants rotated; (samples, largest output
    difference from Halide's) by (threads, variant)."""
    import numpy as np

    samples: dict[tuple[int, str], list[dict[str, Any]]] = defaultdict(list)
    diffs: dict[tuple[int, str], float] = {}
    with tempfile.TemporaryDirectory(prefix="pf-alloc-ab-") as tmp:
        for r in range(rounds):
            for threads in (1, 2):
                order = [variants[(i + r) % len(variants)] for i in range(len(variants))]
                for v in order:
                    out = Path(tmp) / f"{v}_{threads}.npy"
                    cmd = [sys.executable, "-m", "benchmarks.harness.apps_suite_alloc", "--worker", v, "--app", app,
                           "--calls", str(calls), "--out", str(out)]
                    cmd += ["--quick"] if quick else []
                    cmd += ["--no-huge-pages"] if no_huge_pages else []
                    env = dict(os.environ, HL_NUM_THREADS=str(threads))
                    p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
                    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
                    if p.returncode != 0 or not lines:
                        raise RuntimeError(f"worker {v} failed: {p.stderr[-2000:]}")
                    row = json.loads(lines[-1])
                    if "error" in row:
                        raise RuntimeError(f"worker {v}: {row['error']}")
                    samples[(threads, v)].append(row)
                if "h" in variants:
                    want = np.load(Path(tmp) / f"h_{threads}.npy")
                    for v in variants:
                        got = np.load(Path(tmp) / f"{v}_{threads}.npy")
                        d = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
                        diffs[(threads, v)] = max(diffs.get((threads, v), 0.0), d)
    return samples, diffs


def table(samples: dict[tuple[int, str], list[dict[str, Any]]], diffs: dict[tuple[int, str], float],
          variants: Sequence[str]) -> str:
    lines = ["| threads | variant | runs | CPU ms/call | CPU / Halide | wall ms/call | wall / Halide | max diff |",
             "|---|---|---|---|---|---|---|---|"]
    for threads in (1, 2):
        med = {v: (statistics.median(r["cpu_ms"] for r in samples[(threads, v)]),
                   statistics.median(r["wall_ms"] for r in samples[(threads, v)])) for v in variants}
        for v in variants:
            c, w = med[v]
            rc = f"{c / med['h'][0]:.3f}" if "h" in med else ""
            rw = f"{w / med['h'][1]:.3f}" if "h" in med else ""
            lines.append(f"| {threads} | {v} | {len(samples[(threads, v)])} | {c:.2f} | {rc} | {w:.2f} | {rw} | "
                         f"{diffs.get((threads, v), float('nan')):.3g} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite_alloc", description=__doc__.split("\n")[0])
    ap.add_argument("--app", default="interpolate")
    ap.add_argument("--variants", default=",".join(VARIANTS), help=f"comma-separated, of {', '.join(VARIANTS)}")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--calls", type=int, default=15, help="timed calls per worker (after 3 warm-up calls)")
    ap.add_argument("--quick", action="store_true", help="the app's small test size")
    ap.add_argument("--no-huge-pages", action="store_true", help="transparent huge pages off in every worker")
    ap.add_argument("--worker", choices=VARIANTS, help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.app, args.worker, args.calls, args.quick, args.out, args.no_huge_pages)
        return 0
    variants = [v for v in args.variants.split(",") if v]
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        print(f"error: unknown variant(s) {', '.join(bad)}; the variants are {', '.join(VARIANTS)}", file=sys.stderr)
        return 2
    before = _load()
    samples, diffs = run(args.app, variants, args.rounds, args.calls, args.quick, args.no_huge_pages)
    huge = "off" if args.no_huge_pages else "the system's"
    print(f"{args.app}, huge pages {huge}; load before: {before}; after: {_load()}")
    print(table(samples, diffs, variants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
