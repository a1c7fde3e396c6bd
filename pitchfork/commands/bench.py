"""`pitchfork bench`: PITCHFORK vs LLVM alone vs Halide 21 on the SPEC benchmarks (the harness in
benchmarks/harness/; the same as `python -m benchmarks`).

    pitchfork bench --quick --bench sobel3x3            # small sizes, a few minutes -> ./pitchfork-bench-out
    pitchfork bench --isa x86-avx2 --reps 25 -o out/    # full sizes, x86 only
    pitchfork bench --write-results                     # refresh the committed benchmarks/RESULTS.md
    pitchfork bench --suite apps                        # Halide's Python apps vs Halide 21, 1 and 2 threads
"""

from __future__ import annotations

import argparse

NAME = "bench"
HELP = "run the benchmark harness (speedups over LLVM alone and Halide 21 per ISA; RESULTS.md, PNGs, json)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    from benchmarks.harness.run import add_arguments as add

    add(p)
    p.add_argument("--suite", choices=("spec", "apps"), default="spec",
                   help="spec: the SPEC benchmarks (default); apps: Halide's Python apps (benchmarks/apps/), x86, "
                        "PITCHFORK vs Halide 21 at 1 and 2 threads (benchmarks/harness/apps_suite.py)")
    p.add_argument("--no-huge-pages", action="store_true",
                   help="--suite apps: transparent huge pages off in every worker of both contenders (which "
                        "intermediate buffer lands in huge pages is otherwise the luck of each worker's heap; "
                        "HUGE_PAGES in benchmarks/harness/apps_suite.py)")
    p.add_argument("--processes", type=int, default=1, metavar="P",
                   help="--suite apps: P worker processes per contender and thread count, sampled in turn (each "
                        "process's heap places the buffers differently; PROCESSES in "
                        "benchmarks/harness/apps_suite.py)")


def run(args: argparse.Namespace) -> int:
    if getattr(args, "suite", "spec") == "apps":
        from benchmarks.harness.apps_suite import run_apps

        return run_apps(args)
    from benchmarks.harness.run import run as run_bench

    return run_bench(args)
