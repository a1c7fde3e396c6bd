"""`python -m benchmarks.harness.apps_suite_modes [APP] -o DIR`: why an app's 1 -> 2 thread scaling
differs between timing modes: the same per-call wall time, both contenders, 1 and 2 threads, in four
ways of calling, with what the pool's threads did per call.

`pitchfork bench --suite apps` reads blur's back-to-back 1 -> 2 thread scaling far below its
single-call one (session 16, quiet, normal priority: 1.11-1.16x against 1.50-1.67x; Halide 1.9x in
both), while the same kernel called from a C loop scaled 1.75-1.81x. What differs between those is
(a) whether the data is still in the caches when a call starts, (b) whether Halide's pool worker is
awake (it spins 40 `sched_yield`s after its last task, thread_pool_common.h, then sleeps on a condition
variable until the next `halide_do_par_for` wakes it) and where the OS puts it when it wakes, and
(c) the Python-side gap between calls. The modes separate them:

* `b` back-to-back from Python (the suite's back-to-back mode): caches warm, ~20 us between calls;
* `w` each call after an untimed 1 ms sleep: caches warm, the pool asleep at every call;
* `f` each call after an untimed read-modify-write of 64 MB: caches cold, the pool asleep;
* `c` (PITCHFORK only) back-to-back from a C loop (a tiny shim calls the same JIT'd kernel k times with
  the same arguments): caches warm, no gap, so the worker never falls asleep between calls.

For each worker (contender x threads, its own process with HL_NUM_THREADS, as in the suite) and mode
it reports the median time per call, the paired 1 -> 2 thread scaling, and, per call at 2 threads, the
pool threads' voluntary context switches (sleeps), involuntary ones (preemptions) and migrations
between CPUs (from /proc/self/task/*/sched). Besides the app it times a *control* that both contenders
share: `copy`, the app's output computed as a plain copy of its input with the same split/parallel/
vectorize schedule (only for blur: a u16 1536x2560 copy in 32-row strips, 80 tasks a call as blur's),
a Halide pipeline as short as our blur's kernel: if Halide's own copy scales like our blur in a mode,
the limit in that mode is the pool/OS and the call's length, not our code.

First it runs a cache probe that involves no pipeline (`cache_probe`): is a 12 MB working set one
CPU just wrote warm for the other CPU?

What it found (session 17; the machine shared, load 13-19, so only under `chrt -f 10`, which keeps
other jobs off both CPUs while ours run: a diagnostic, not the suite's figure):
* The cache probe read 12 MB in 747 / 803 us just written on the same CPU, 1749 / 1596 us written on the
  other CPU, 1403 / 1357 us cold (two runs, each the first read after the write): data the other vCPU
  wrote last reads as slowly as cold data, or slower. Halide's pool gives each strip to whichever
  thread asks first, so at 2 threads about half of a call's strips were touched last by the other vCPU.
* That fits the suite's quiet run at normal priority (session 16): our blur at 1 thread took 1.275 ms
  back-to-back against 1.971 ms single-call (cold), a 35% gain from warm caches, and at 2 threads
  1.110 / 1.153 ms, a 4% gain: about half the cold 1-thread time plus the pool's ~80 us of wake-ups.
  Halide's blur (5 ms a call, compute-bound) gains 3% from warm caches at 1 thread, so its scaling
  hardly depends on the mode. Not yet measured on a quiet machine: whether our 2-thread calls from the
  C loop (no gap, the worker never sleeps) stay at ~1.1 ms (the caches) or drop towards 0.7 ms (then
  the worker's wake-ups and placement would be the larger part); this tool's `c` and `f` rows say which.
* Under `chrt -f 10` every mode scaled: ours 2.06x back-to-back, 1.80x after a sleep, 1.68x cold,
  1.95x from the C loop; Halide 1.94-2.01x; the copy control 2.24x / 2.12x back-to-back. Those ratios
  say little about a quiet machine: that day everything ran ~1.9x slower than in session 16's quiet
  run (our blur at 1 thread 2.34 ms against 1.275 ms, Halide's 9.6 ms against 5.0 ms), and still did
  with a memory-free FIFO spinner of ours holding the other vCPU (ours 2.36-2.38 ms, Halide's 7.2-9.8
  ms), so the slowdown came from outside the VM (steal time ~0; the vCPUs are not SMT siblings: an ALU
  loop took 32.1-32.5 ms with or without a spinner on the other vCPU). With 1-thread calls that slow,
  the warm-cache advantage of the 1-thread baseline was gone, and with it the low ratio.
* Both contenders' Python-side call costs the same (a 16x8 pipeline: 1.38 us CPU per call ours through
  ctypes, 1.28 us Halide's realize); both run the same pool code (our JIT loads a copy of Halide 21's
  runtime, `halide.compile_standalone_runtime`; Halide's JIT its own), one pool per worker process; no
  other Python thread exists in a worker, so the GIL our ctypes call releases is wanted by nobody.

Samples are interleaved (rotating worker order, each sample one mode of k calls); outputs are not
checked here (the suite does that). Results go to DIR/modes.json and DIR/MODES.md (never the source
tree), with `uptime` before and after. It is a diagnostic, not a figure of the suite: run it on a quiet
machine at normal priority (real-time priority changes where the OS puts the woken worker, which is
one of the things it measures).
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

MODES = ("b", "w", "f", "c")
MODE_NAMES = {"b": "back-to-back from Python", "w": "after a 1 ms sleep", "f": "after a 64 MB sweep",
              "c": "back-to-back from a C loop"}
#: calls per sample (the suite's back-to-back k)
CALLS = 10
#: the C loop: k calls of a kernel whose arguments are all integer-class (pointers, i32, i64); on
#: SysV x86-64 each goes in its own 64-bit slot (registers, then the stack), so one prototype of 24
#: `long`s calls any such kernel with at most 24 arguments (a callee reads an i32 from the low half)
CLOOP_C = r"""
typedef void (*k24)(long, long, long, long, long, long, long, long, long, long, long, long,
                    long, long, long, long, long, long, long, long, long, long, long, long);
void pitchfork_cloop(void *fn, const long *a, int k) {
  k24 f = (k24)fn;
  for (int i = 0; i < k; i++)
    f(a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9], a[10], a[11], a[12], a[13], a[14], a[15],
      a[16], a[17], a[18], a[19], a[20], a[21], a[22], a[23]);
}
"""
CLOOP_ARGS = 24
#: the cache probe (`cache_probe`): is a working set one CPU just wrote warm for the other CPU? Thread A
#: (pinned to CPU 0) writes 12 MB (blur's input and output are 7.9 MB each) and reads it (warm on the
#: same CPU); writes it again and has thread B (pinned to CPU 1) read it (what a pool task finds
#: when the other thread touched its strip last); writes it, sweeps 128 MB and reads it (cold). The idle
#: thread spins, so nothing else runs on either CPU during a read on a quiet machine; the main thread
#: only waits; alarm(10) ends a hang. Prints the three median read times in microseconds.
CACHE_PROBE_C = r"""
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#define N (12u << 20)
#define BIG (128u << 20)
enum { R = 9 };
static uint8_t *buf, *big;
static atomic_int req = 0, done = 0;
static double result_b;
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static void pin(int cpu) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(cpu, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }
static void touch(uint8_t *p, size_t n) { for (size_t i = 0; i < n; i += 64) p[i]++; }
static double readall(void) {
  double t = now(); uint64_t s = 0; for (size_t i = 0; i < N; i += 64) s += buf[i];
  volatile uint64_t sink = s; (void)sink; return now() - t;
}
static void *b_main(void *arg) { pin(1); while (!atomic_load(&done)) if (atomic_load(&req)) { result_b = readall(); atomic_store(&req, 0); } return 0; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void *a_main(void *arg) {
  double same[R], other[R], cold[R];
  pin(0);
  for (int r = 0; r < R; r++) {
    touch(buf, N); same[r] = readall();
    touch(buf, N); atomic_store(&req, 1); while (atomic_load(&req)) ; other[r] = result_b;
    touch(buf, N); touch(big, BIG); cold[r] = readall();
  }
  atomic_store(&done, 1);
  qsort(same, R, sizeof(double), cmp); qsort(other, R, sizeof(double), cmp); qsort(cold, R, sizeof(double), cmp);
  printf("%.1f %.1f %.1f\n", same[R / 2] * 1e6, other[R / 2] * 1e6, cold[R / 2] * 1e6);
  return 0;
}
int main(void) {
  pthread_t a, b;
  alarm(10);
  buf = aligned_alloc(4096, N); big = aligned_alloc(4096, BIG);
  memset(buf, 1, N); memset(big, 1, BIG);
  pthread_create(&b, 0, b_main, 0); pthread_create(&a, 0, a_main, 0);
  pthread_join(a, 0); pthread_join(b, 0);
  return 0;
}
"""


def c_loop(call: Any, build_dir: Path) -> Callable[[int], None]:
    """`k -> None`: k calls of a prepared x86 call's kernel (`CompiledPipeline.prepare`) from C, with
    the arguments it binds."""
    raw, values, _ = call._direct
    if len(values) > CLOOP_ARGS:
        raise ValueError(f"the C loop passes at most {CLOOP_ARGS} arguments, the kernel takes {len(values)}")
    so = build_dir / "cloop.so"
    if not so.exists():
        (build_dir / "cloop.c").write_text(CLOOP_C)
        subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", str(so), str(build_dir / "cloop.c")], check=True,
                       capture_output=True)
    lib = ctypes.CDLL(str(so))
    args = (ctypes.c_long * CLOOP_ARGS)(*[int(v.value or 0) for v in values])
    fn = ctypes.cast(raw, ctypes.c_void_p)
    return lambda k: lib.pitchfork_cloop(fn, args, k)


def cache_probe(build_dir: Path) -> dict[str, float]:
    """Median microseconds to read 12 MB (CACHE_PROBE_C): just written on the same CPU, written on
    CPU 0 and read on CPU 1, and after a 128 MB sweep; {} on a machine with fewer than 2 CPUs."""
    if (os.cpu_count() or 1) < 2:
        return {}
    exe = build_dir / "cache_probe"
    (build_dir / "cache_probe.c").write_text(CACHE_PROBE_C)
    subprocess.run(["cc", "-O2", "-pthread", "-o", str(exe), str(build_dir / "cache_probe.c")], check=True,
                   capture_output=True)
    same, other, cold = map(float, subprocess.run([str(exe)], check=True, capture_output=True, text=True).stdout.split())
    return {"warm_same_cpu_us": same, "written_on_other_cpu_us": other, "cold_us": cold}


def subject(app: str, control: bool) -> tuple[Any, list[Any], list[Any], list[int]]:
    """(output Func, arguments, their values, output size) of the app, or of its copy control."""
    import halide as hl
    import numpy as np

    from benchmarks.apps import APPS
    from benchmarks.apps.common import natural_vector_size

    a = APPS[app].build("x86-avx2")
    values = a.make_inputs(np.random.default_rng(1), a.timing_size)
    size = a.output_size(a.timing_size)
    if not control:
        return a.output, list(a.args), values, size
    if app != "blur":
        raise ValueError("the copy control is defined for blur only")
    inp = hl.ImageParam(hl.UInt(16), 2, "input")
    x, y, yi = hl.vars("x y yi")
    out = hl.Func("copy")
    out[x, y] = inp[x, y]
    out.split(y, y, yi, 32).parallel(y).vectorize(x, natural_vector_size("x86-avx2", hl.UInt(16)))
    return out, [inp], values, size


def _pool_counters() -> list[int]:
    """[migrations, voluntary switches, involuntary switches] summed over this process's threads other
    than the main one (Halide's pool workers; an idle helper thread adds nothing)."""
    total = [0, 0, 0]
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == os.getpid():
            continue
        try:
            text = Path(f"/proc/self/task/{tid}/sched").read_text()
        except OSError:
            continue
        fields = {}
        for line in text.splitlines():
            if ":" in line:
                key, _, val = line.partition(":")
                fields[key.strip()] = val.strip()
        for i, key in enumerate(("se.nr_migrations", "nr_voluntary_switches", "nr_involuntary_switches")):
            total[i] += int(float(fields.get(key, "0")))
    return total


def worker(app: str, control: bool, contender: str, build_dir: str) -> None:
    """Serve `MODE K` lines on stdin: K calls in MODE, answered with one JSON line [ms per call,
    pool counters per call] ([null, null] for a mode this contender has no way to run)."""
    import halide as hl
    import numpy as np

    from benchmarks.apps.common import HALIDE_TARGETS
    from benchmarks.harness.apps_suite import placed_output
    from benchmarks.harness.halide21 import bind
    from pitchfork.api import compile as pf_compile

    out, args, values, size = subject(app, control)
    loop: Callable[[int], None] | None = None
    if contender == "p":
        prog = pf_compile(out, args, target="x86-avx2", name=out.name())
        if prog.fallback_reason:
            print(json.dumps({"error": prog.fallback_reason}), flush=True)
            return
        run: Callable[[], Any] = prog.prepare(*values, size=size, out=placed_output(out.type(), size))
        loop = c_loop(run, Path(build_dir))
    else:
        keep = bind(args, values)  # noqa: F841 (the bound arrays outlive the calls)
        pipe = hl.Pipeline(out)
        pipe.compile_jit(hl.Target(HALIDE_TARGETS["x86-avx2"]))
        hbuf = hl.Buffer(placed_output(out.type(), size))
        run = lambda: pipe.realize(hbuf)  # noqa: E731
    sweep = np.ones(64 << 20, np.uint8)
    run()
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        mode, k_text = line.split()
        k = int(k_text)
        before = _pool_counters()
        if mode == "c":
            if loop is None:
                print(json.dumps([None, None]), flush=True)
                continue
            t0 = time.perf_counter()
            loop(k)
            spent = time.perf_counter() - t0
        else:
            spent = 0.0
            for _ in range(k):
                if mode == "w":
                    time.sleep(0.001)
                elif mode == "f":
                    sweep += 1  # reads and writes 64 MB: the app's data leaves the caches
                t0 = time.perf_counter()
                run()
                spent += time.perf_counter() - t0
        after = _pool_counters()
        print(json.dumps([spent / k * 1e3, [(b - a) / k for a, b in zip(before, after)]]), flush=True)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def measure(app: str, control: bool, reps: int, build_dir: Path) -> dict[str, Any]:
    """All four workers of one subject, `reps` interleaved repetitions of every mode."""
    procs: dict[tuple[str, int], subprocess.Popen[str]] = {}
    for c in ("p", "h"):
        for n in (1, 2):
            env = dict(os.environ, HL_NUM_THREADS=str(n))
            cmd = [sys.executable, "-m", "benchmarks.harness.apps_suite_modes", "--worker", c, "--build-dir",
                   str(build_dir), *(["--control"] if control else []), app]
            procs[(c, n)] = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    times: dict[str, list[float]] = {}
    counts: dict[str, list[list[float]]] = {}
    try:
        for key, p in procs.items():
            reply = json.loads(p.stdout.readline() or '{"error": "worker exited"}')  # type: ignore[union-attr]
            if "error" in reply:
                raise RuntimeError(f"{app} worker {key}: {reply['error']}")
        slots = list(procs)
        for r in range(reps):
            for mode in MODES:
                for key in slots[r % len(slots):] + slots[:r % len(slots)]:
                    p = procs[key]
                    p.stdin.write(f"{mode} {CALLS}\n")  # type: ignore[union-attr]
                    p.stdin.flush()  # type: ignore[union-attr]
                    ms, per_call = json.loads(p.stdout.readline())  # type: ignore[union-attr]
                    if ms is not None:
                        name = f"{key[0]}{key[1]}{mode}"
                        times.setdefault(name, []).append(ms)
                        counts.setdefault(name, []).append(per_call)
    finally:
        for p in procs.values():
            try:
                p.stdin.close()  # type: ignore[union-attr]
            except OSError:
                pass
            p.wait(timeout=60)
    rows = []
    for mode in MODES:
        for c in ("p", "h"):
            one, two = times.get(f"{c}1{mode}"), times.get(f"{c}2{mode}")
            if not one or not two:
                continue
            pool = [statistics.mean(x[i] for x in counts[f"{c}2{mode}"]) for i in range(3)]
            rows.append({"mode": mode, "contender": "pitchfork" if c == "p" else "halide21",
                         "ms_1": statistics.median(one), "ms_2": statistics.median(two),
                         "scaling": statistics.median(a / b for a, b in zip(one, two)),
                         "pool_per_call_2": {"migrations": pool[0], "sleeps": pool[1], "preemptions": pool[2]},
                         "samples_1": one, "samples_2": two})
    return {"subject": f"{app} copy control" if control else app, "reps": reps, "calls": CALLS, "rows": rows}


def report(results: Sequence[dict[str, Any]], before: str, after: str, probe: dict[str, float]) -> str:
    lines = ["# Timing modes and 1 -> 2 thread scaling (benchmarks/harness/apps_suite_modes.py)", ""]
    if probe:
        lines += [f"Cache probe (12 MB read, median us): just written on the same CPU "
                  f"{probe['warm_same_cpu_us']:.0f}; written on CPU 0, read on CPU 1 "
                  f"{probe['written_on_other_cpu_us']:.0f}; after a 128 MB sweep {probe['cold_us']:.0f}.", ""]
    lines += [
             f"Load before: `{before}`; after: `{after}`. Median ms per call ({CALLS} calls a sample); "
             "scaling = paired median of 1-thread / 2-thread; pool columns: per call at 2 threads, summed "
             "over the pool's threads.", "",
             "| subject | mode | contender | 1 thread ms | 2 threads ms | 1->2 | pool sleeps | preemptions | "
             "migrations |", "|---|---|---|---|---|---|---|---|---|"]
    for res in results:
        for r in res["rows"]:
            pool = r["pool_per_call_2"]
            lines.append(f"| {res['subject']} | {MODE_NAMES[r['mode']]} | {r['contender']} | {r['ms_1']:.3f} | "
                         f"{r['ms_2']:.3f} | {r['scaling']:.2f}x | {pool['sleeps']:.2f} | {pool['preemptions']:.2f} | "
                         f"{pool['migrations']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--worker", choices=("p", "h"), help=argparse.SUPPRESS)
    ap.add_argument("--build-dir", help=argparse.SUPPRESS)
    ap.add_argument("--control", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=8, help="interleaved repetitions of every mode (default 8)")
    ap.add_argument("--no-control", action="store_true", help="leave out the copy control")
    ap.add_argument("-o", "--out", default="pitchfork-apps-modes-out", help="output folder")
    ap.add_argument("app", nargs="?", default="blur")
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.app, args.control, args.worker, args.build_dir)
        return 0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    before = _uptime()
    probe = cache_probe(out)
    results = [measure(args.app, False, args.reps, out)]
    if args.app == "blur" and not args.no_control:
        results.append(measure(args.app, True, args.reps, out))
    after = _uptime()
    (out / "modes.json").write_text(json.dumps({"load_before": before, "load_after": after, "cache_probe": probe,
                                                "results": results}, indent=1))
    text = report(results, before, after, probe)
    (out / "MODES.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
