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


def report(results: Sequence[dict[str, Any]], before: str, after: str) -> str:
    lines = ["# Timing modes and 1 -> 2 thread scaling (benchmarks/harness/apps_suite_modes.py)", "",
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
    results = [measure(args.app, False, args.reps, out)]
    if args.app == "blur" and not args.no_control:
        results.append(measure(args.app, True, args.reps, out))
    after = _uptime()
    (out / "modes.json").write_text(json.dumps({"load_before": before, "load_after": after, "results": results},
                                               indent=1))
    text = report(results, before, after)
    (out / "MODES.md").write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
