"""The parallel structure of an app as it runs, PITCHFORK's beside Halide 21's: every call of
`halide_do_par_for`, per parallel loop (its task function): calls, tasks per call, task count per call
(min..max), mean and longest task, wall time per call of the loop, which thread ran the tasks (the
caller or the runtime's worker), in how many calls a worker joined and after how long (its first
task's start after the loop's start: the pool's wake-up, which short tasks feel most), and the tail:
from the end of the loop's last task to `halide_do_par_for`'s return (the caller, asleep when a
worker ran the last task, being woken).

How: a small C file (`PARLOG_C`) linked into apps_suite_profile's C drivers installs, when the
environment has `PITCHFORK_PARLOG=1`, a `halide_set_custom_do_par_for` handler. Both contenders' code
calls the runtime's `halide_do_par_for`, which dispatches to the handler; the handler wraps the task
(timing it, noting its thread) and hands the loop to `halide_default_do_par_for`, Halide's own pool,
so the tasks run where they would. Without the variable the handler is not installed and the drivers
run as before. At exit it prints one `PARLOG` line per loop; `run()` maps the task addresses to
their names with `nm` (our task functions are internal symbols, Halide's too) and `compare()` says
whether the two contenders run the same loops with the same number of tasks.

What it found (session 15, local_laplacian 768x512x3, 2 threads): the same 13 parallel loops in the
same order with the same task counts per call (32, 64, 16, 32, 8, 16, 4, 8, 2, 8, 8, 8, 8), equal
per-loop wall times within the run-to-run spread, and the same caller / worker split (gPyramid_1, 69%
of the time: 51% / 49% for both; the output loop, 8 tasks of ~650 us: 57-60% / 40-43% for both).
Timings are wall clock and move with the machine's load; the structure does not.

Session 16, blur 1536x2560, 2 threads, under `chrt -f 10` (so the shared machine's other jobs did not
run on our CPUs): the same 80 tasks per call for both, 50% / 50% split for both, the worker joining
39 us (ours) and 32 us (Halide) into the loop and the caller back 45 / 29 us after the last task.
That is ~80 us of thread-pool wake-ups per call for both: ~13% of our 0.6 ms loop and ~2% of
Halide's 2.9 ms one. Session 17 found the larger part of blur's low back-to-back scaling elsewhere
(benchmarks/harness/apps_suite_modes.py): this machine's two vCPUs share no cache that holds blur's
working set, so back-to-back calls are warm at 1 thread only (quiet suite run: 1.275 ms against 1.971 ms
cold), while at 2 threads each strip goes to whichever thread asks and the call costs about half the cold
1-thread time plus these wake-ups (1.110 ms).
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

#: the handler, linked into each driver; inert unless PITCHFORK_PARLOG is set
PARLOG_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "HalideRuntime.h"
#define MAXL 256
typedef struct { halide_task_t f; uint8_t *closure; int loop; double start; int worker_seen; double last_end; } pl_wrap_t;
static halide_task_t pl_fns[MAXL];
static int pl_n;
static long long pl_calls[MAXL], pl_tasks[MAXL], pl_min[MAXL], pl_max[MAXL];
static double pl_task_ns[MAXL], pl_wall_ns[MAXL], pl_long_ns[MAXL], pl_main_ns[MAXL], pl_join_ns[MAXL], pl_tail_ns[MAXL];
static long long pl_joined[MAXL];
static pthread_t pl_main;
static pthread_mutex_t pl_mu = PTHREAD_MUTEX_INITIALIZER;
static double pl_now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec * 1e9 + t.tv_nsec; }
static int pl_task(void *uc, int idx, uint8_t *cl) {
  pl_wrap_t *w = (pl_wrap_t *)cl;
  double t0 = pl_now();
  int r = w->f(uc, idx, w->closure);
  double t1 = pl_now(), dt = t1 - t0;
  pthread_mutex_lock(&pl_mu);
  if (t1 > w->last_end) w->last_end = t1;
  if (!pthread_equal(pthread_self(), pl_main) && !w->worker_seen) {
    w->worker_seen = 1; pl_joined[w->loop]++; pl_join_ns[w->loop] += t0 - w->start;
  }
  pl_task_ns[w->loop] += dt;
  if (dt > pl_long_ns[w->loop]) pl_long_ns[w->loop] = dt;
  if (pthread_equal(pthread_self(), pl_main)) pl_main_ns[w->loop] += dt;
  pl_tasks[w->loop]++;
  pthread_mutex_unlock(&pl_mu);
  return r;
}
static int pl_par_for(void *uc, halide_task_t f, int min, int size, uint8_t *closure) {
  int l;
  pthread_mutex_lock(&pl_mu);
  for (l = 0; l < pl_n && pl_fns[l] != f; l++) {}
  if (l == pl_n) {
    if (pl_n == MAXL) { pthread_mutex_unlock(&pl_mu); return halide_default_do_par_for(uc, f, min, size, closure); }
    pl_fns[pl_n++] = f; pl_min[l] = size; pl_max[l] = size;
  }
  pl_calls[l]++;
  if (size < pl_min[l]) pl_min[l] = size;
  if (size > pl_max[l]) pl_max[l] = size;
  pthread_mutex_unlock(&pl_mu);
  double t0 = pl_now();
  pl_wrap_t w = {f, closure, l, t0, 0, t0};
  int r = halide_default_do_par_for(uc, pl_task, min, size, (uint8_t *)&w);
  double t1 = pl_now(), dt = t1 - t0;
  pthread_mutex_lock(&pl_mu);
  pl_wall_ns[l] += dt;
  pl_tail_ns[l] += t1 - w.last_end;
  pthread_mutex_unlock(&pl_mu);
  return r;
}
static void pl_report(void) {
  for (int l = 0; l < pl_n; l++) {
    double tasks = pl_tasks[l] ? (double)pl_tasks[l] : 1.0;
    printf("PARLOG %p %lld %lld %lld %lld %.3f %.3f %.3f %.4f %lld %.3f %.3f\n", (void *)pl_fns[l], pl_calls[l], pl_tasks[l],
           pl_min[l], pl_max[l], pl_task_ns[l] / tasks / 1e3, pl_long_ns[l] / 1e3,
           pl_wall_ns[l] / (pl_calls[l] ? pl_calls[l] : 1) / 1e3, pl_task_ns[l] > 0 ? pl_main_ns[l] / pl_task_ns[l] : 0.0,
           pl_joined[l], pl_joined[l] ? pl_join_ns[l] / pl_joined[l] / 1e3 : 0.0,
           pl_tail_ns[l] / (pl_calls[l] ? pl_calls[l] : 1) / 1e3);
  }
  fflush(stdout);
}
__attribute__((constructor)) static void pl_init(void) {
  if (!getenv("PITCHFORK_PARLOG")) return;
  pl_main = pthread_self();
  halide_set_custom_do_par_for(pl_par_for);
  atexit(pl_report);
}
"""


@dataclass(frozen=True)
class ParLoop:
    """One parallel loop of a run: its task function and what the handler saw."""

    name: str
    calls: int
    tasks: int
    min_size: int
    max_size: int
    mean_task_us: float
    longest_task_us: float
    wall_us_per_call: float
    caller_share: float  # share of the task time run by the calling thread (the rest: the pool's workers)
    worker_joined: int  # calls of the loop in which a worker thread ran at least one task
    join_us: float  # mean delay from the loop's start to a worker's first task, over those calls
    tail_us: float  # mean delay from the loop's last task's end to halide_do_par_for's return (the caller's wake-up)

    @property
    def tasks_per_call(self) -> float:
        return self.tasks / self.calls if self.calls else 0.0


def write_source(out_dir: Path) -> Path:
    """PARLOG_C as a file in `out_dir` (to compile beside a driver)."""
    path = out_dir / "parlog.c"
    path.write_text(PARLOG_C)
    return path


def _symbols(exe: Path) -> dict[int, str]:
    """address -> name of `exe`'s function symbols (local ones too)."""
    out = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
    got: dict[int, str] = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 3 and f[1] in "tTwW":
            got.setdefault(int(f[0], 16), f[2])
    return got


def parse(stdout: str, symbols: dict[int, str]) -> list[ParLoop]:
    """The PARLOG lines of a driver's output, in first-call order, task addresses named."""
    loops = []
    for line in stdout.splitlines():
        f = line.split()
        if len(f) != 13 or f[0] != "PARLOG":
            continue
        addr = int(f[1], 16)
        loops.append(ParLoop(symbols.get(addr, f[1]), int(f[2]), int(f[3]), int(f[4]), int(f[5]), float(f[6]),
                             float(f[7]), float(f[8]), float(f[9]), int(f[10]), float(f[11]), float(f[12])))
    return loops


def run(exe: Path, calls: int, threads: int) -> tuple[str, list[ParLoop]]:
    """Run a driver built with PARLOG_C (non-PIE, so `nm`'s addresses are the run's) with the handler
    on: (its timing line, its parallel loops)."""
    env = dict(os.environ, HL_NUM_THREADS=str(threads), PITCHFORK_PARLOG="1")
    p = subprocess.run([str(exe), str(calls)], capture_output=True, text=True, env=env, check=True)
    timing = "\n".join(ln for ln in p.stdout.splitlines() if not ln.startswith("PARLOG "))
    return timing.strip(), parse(p.stdout, _symbols(exe))


def short_name(name: str) -> str:
    """A task function's name after `par_for` (`x_pf.par_for.gPyramid_1.s0.y.y` -> `gPyramid_1.s0.y.y`,
    `x_hl_par_for_gPyramid_1_1_s0_y_y__3` -> `gPyramid_1_1_s0_y_y__3`). The two contenders spell their
    stages differently (Halide adds uniquifiers), so loops are matched by order of first call."""
    return re.split(r"par_for[._]", name, maxsplit=1)[-1]


def compare(ours: Sequence[ParLoop], theirs: Sequence[ParLoop]) -> list[str]:
    """Where the two runs' parallel structures differ (loop count, or a loop's tasks per call); []
    when they run the same loops with the same task counts."""
    diffs = []
    if len(ours) != len(theirs):
        diffs.append(f"{len(ours)} parallel loops against {len(theirs)}")
    for a, b in zip(ours, theirs):
        if (a.min_size, a.max_size, a.tasks_per_call) != (b.min_size, b.max_size, b.tasks_per_call):
            diffs.append(f"{short_name(a.name)}: {a.tasks_per_call:g} tasks per call ({a.min_size}..{a.max_size}) "
                         f"against {short_name(b.name)}: {b.tasks_per_call:g} ({b.min_size}..{b.max_size})")
    return diffs


def table(who: str, loops: Sequence[ParLoop]) -> list[str]:
    lines = [f"  {who}: loop | calls | tasks/call | tasks per call min..max | mean task us | longest us | "
             "wall us/call | caller / worker | worker joined (calls) after us | tail us"]
    for p in loops:
        lines.append(f"    {short_name(p.name)} | {p.calls} | {p.tasks_per_call:g} | {p.min_size}..{p.max_size} | "
                     f"{p.mean_task_us:.1f} | {p.longest_task_us:.1f} | {p.wall_us_per_call:.1f} | "
                     f"{100 * p.caller_share:.0f}% / {100 * (1 - p.caller_share):.0f}% | {p.worker_joined} after "
                     f"{p.join_us:.1f} | {p.tail_us:.1f}")
    return lines
