"""`python -m benchmarks.harness.apps_suite_wake -o DIR`: how much of a parallel loop Halide 21's thread
pool gives its second thread, for tasks as long as an app's, with no generated code involved.

Why: the apps suite asks 1 -> 2 threads >= 1.7x. Our blur's tasks are short (80 tasks of about 12 us at
1536x2560 on x86: 219K instructions a task by callgrind, against 688K for Halide 21's own blur code,
the same 80 tasks and one 12-13 KB malloc each for both), so the pool's wake-up of its worker
weighs more on our call than on Halide's. This probe measures that part alone: a C driver calls the
runtime's `halide_do_par_for` (Halide's own runtime object, `halide.compile_standalone_runtime`, as our
kernels' AOT and JIT code does) over N tasks of fixed CPU work (a loop calibrated to T microseconds on
one thread: CPU work, not wall time, so a preempted task does not end early), after an idle gap before
each call or none. The apps suite's harness times one call per worker in turn, so its calls find the
pool asleep (gap > 0). Reported per setting: the best and median call, the serial time N * T, the
worker's share of the tasks, and the calls in which it ran none; with the load average (the machine
is shared: the figures mean something only on an idle one).

Everything is written to DIR; nothing under the source tree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

DRIVER = r"""
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "HalideRuntime.h"
static double now_us(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e6 + t.tv_nsec / 1e3; }
static long iters;
static pthread_t main_thread;
static int worker_tasks;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long spin(long n) { volatile long x = 0; for (long i = 0; i < n; ++i) x += i; return x; }
static int task(void *uc, int idx, uint8_t *closure) {
  if (!pthread_equal(pthread_self(), main_thread)) { pthread_mutex_lock(&mu); worker_tasks++; pthread_mutex_unlock(&mu); }
  spin(iters);
  return 0;
}
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
int main(int argc, char **argv) {
  int tasks = atoi(argv[1]), calls = atoi(argv[3]), gap_us = atoi(argv[4]);
  double task_us = atof(argv[2]), best1 = 1e30;
  main_thread = pthread_self();
  for (int k = 0; k < 20; ++k) { double t0 = now_us(); spin(1000000); double d = now_us() - t0; if (d < best1) best1 = d; }
  iters = (long)(1000000 * task_us / best1);
  double *t = malloc(sizeof(double) * calls), share = 0; int none = 0;
  for (int c = -1; c < calls; ++c) {
    if (gap_us) usleep(gap_us);
    worker_tasks = 0;
    double t0 = now_us();
    if (halide_do_par_for(0, task, 0, tasks, 0)) return 1;
    double dt = now_us() - t0;
    if (c < 0) continue;
    t[c] = dt; share += (double)worker_tasks / tasks; none += worker_tasks == 0;
  }
  qsort(t, calls, sizeof(double), cmp);
  printf("%d %g %d %d %.1f %.1f %.4f %d\n", tasks, task_us, calls, gap_us, t[0], t[calls / 2], share / calls, none);
  return 0;
}
"""


@dataclass(frozen=True)
class WakeRow:
    """One setting: `tasks` tasks of `task_us` CPU microseconds, `gap_us` idle before each of `calls` calls."""

    tasks: int
    task_us: float
    calls: int
    gap_us: int
    best_us: float
    median_us: float
    worker_share: float  # mean fraction of a call's tasks the pool's worker ran
    calls_without_worker: int

    @property
    def speedup(self) -> float:
        """serial time / median call"""
        return self.tasks * self.task_us / self.median_us


def build(out_dir: Path) -> Path:
    """The driver, linked with Halide 21's x86 runtime object, in `out_dir`."""
    from pitchfork.aot.abi_driver import HALIDE_INCLUDE
    from pitchfork.backend.halide_runtime import runtime_object

    out_dir.mkdir(parents=True, exist_ok=True)
    src = out_dir / "wake.c"
    src.write_text(DRIVER)
    exe = out_dir / "wake"
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        raise SystemExit("error: no C compiler (cc) to build the probe")
    subprocess.run([cc, "-O2", f"-I{HALIDE_INCLUDE}", str(src), str(runtime_object("x86-avx2")), "-lpthread",
                    "-ldl", "-lm", "-o", str(exe)], check=True, capture_output=True)
    return exe


def run(exe: Path, tasks: int, task_us: float, calls: int, gap_us: int, threads: int) -> WakeRow:
    env = dict(os.environ, HL_NUM_THREADS=str(threads))
    out = subprocess.run([str(exe), str(tasks), str(task_us), str(calls), str(gap_us)], env=env, check=True,
                         capture_output=True, text=True).stdout.split()
    return WakeRow(int(out[0]), float(out[1]), int(out[2]), int(out[3]), float(out[4]), float(out[5]),
                   float(out[6]), int(out[7]))


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite_wake",
                                 description="Halide runtime thread pool: the second thread's share of short tasks")
    ap.add_argument("-o", "--output-dir", required=True, help="where the driver is built")
    ap.add_argument("--tasks", type=int, default=80, help="tasks per call (blur at 1536x2560: 80)")
    ap.add_argument("--task-us", default="12.5,72",
                    help="comma-separated CPU microseconds per task (default: our blur's and Halide 21's)")
    ap.add_argument("--gap-ms", default="0,20", help="comma-separated idle gaps before each call")
    ap.add_argument("--calls", type=int, default=50)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    exe = build(Path(a.output_dir))
    print(f"load before: {os.getloadavg()}; HL_NUM_THREADS={a.threads}")
    print("| tasks x us | gap ms | best ms | median ms | serial ms | serial / median | worker's share | "
          "calls without worker |")
    print("|---|---|---|---|---|---|---|---|")
    for us in (float(x) for x in a.task_us.split(",")):
        for gap in (float(x) for x in a.gap_ms.split(",")):
            r = run(exe, a.tasks, us, a.calls, int(gap * 1000), a.threads)
            print(f"| {r.tasks} x {r.task_us:g} | {gap:g} | {r.best_us / 1e3:.3f} | {r.median_us / 1e3:.3f} | "
                  f"{r.tasks * r.task_us / 1e3:.3f} | {r.speedup:.2f}x | {100 * r.worker_share:.0f}% | "
                  f"{r.calls_without_worker} of {r.calls} |")
    print(f"load after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
