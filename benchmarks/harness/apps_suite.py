"""`pitchfork bench --suite apps`: the public apps suite (benchmarks/apps/) timed on x86, PITCHFORK
against Halide 21, same algorithm, same upstream schedule, same thread count.

One run times every app at 1 and at 2 threads. Each (contender, thread count) runs in its own worker
process (`python -m benchmarks.harness.apps_suite --worker p|h --out FILE.npy APP`) with
HL_NUM_THREADS=N: Halide's runtime reads its thread count once per process, and two thread pools in
one process interfere (the pool that just finished spins and competes with the other's threads;
benchmarks/parallel_scaling.py measured it). A worker compiles its one contender (PITCHFORK's kernel
called through `CompiledPipeline.prepare`, bound arrays; Halide 21 realizing into one preallocated
buffer), runs it once and writes its output to a .npy file; the parent checks PITCHFORK's output
against Halide's at each thread count within the app's tolerance. Both contenders then go through the
identical procedure, in two timing modes, both reported side by side:

* single call ("first call after idle"; the suite's original figures, kept unchanged): a sample is
  one call. In every repetition each worker times one call, in a rotated order (`WILLIAMS_ORDERS`:
  every worker follows every other equally often), so load from other
  processes hits all four alike. Between two calls of one worker the three others run, so every timed
  call finds Halide's runtime thread pool asleep: a parallel call pays the wake-up of the pool's
  worker, which weighs much more on short tasks (our blur's 80 tasks of ~12 us) than on long ones
  (`apps_suite_wake` measures that part alone). This is the latency of an occasional call.
* back-to-back: a sample is k = `B2B_CALLS` = 10 consecutive calls, reported as time per call. k is
  Halide's own convention, not a figure chosen from our timings: its legacy timer
  (tools/halide_benchmark.h, `benchmark(samples, iterations, op)`: each sample times `iterations`
  consecutive calls of `op`; the result is the best sample / `iterations`) is called by its apps as
  `benchmark(timing_iterations, 10, ...)` with timing_iterations = 10 (apps/bilateral_grid/filter.cpp,
  whose usage line runs `./filter input.png output.png 0.1 10`), and its Python apps time
  `Timer(...).timeit(number=10) / 10` (python_bindings/apps/blur_app.py, local_laplacian_app.py:
  `timing_iterations = 10`), i.e. 10 consecutive calls per sample. The same k for every app, both
  contenders and both thread counts. (Halide 21's adaptive `benchmark(op)` grows the sample until three
  samples last `min_time` = 0.1 s; we keep the fixed 10, the convention its apps state.) Session 14 chose
  k from the warm-up so a sample lasted ~5 ms (k = 3 for blur, 1 for the rest); that was our own number,
  too short for a 2-thread pool to reach its steady state (the blur probe at 400 calls reached 1.76-1.80x
  where k = 3 gave 0.99x), and it is replaced by Halide's 10. The samples are interleaved like the single
  calls: each repetition is one pass of single calls, then one pass of back-to-back
  samples, so each sample starts after the three other workers ran (Halide's own samples follow one
  another; ours cannot, to keep the contenders side by side). We report the median sample / k (not
  Halide's best sample), like the single-call mode; each row keeps k and every sample.

Output placement (OUTPUT_PLACEMENT): both contenders write into an output array the worker allocates
the same way, starting `OUTPUT_PAGE_OFFSET` = 256 bytes into a 4 KiB page (`placed_output`; Halide
realizes into it through `hl.Buffer(array)`), and every row records both workers' input and output
page offsets. Why: where the output starts relative to the input changes a streaming kernel's time
by up to ~10% on this machine (4K aliasing: a load whose address matches an earlier, still pending
store in its low 12 bits waits for it). Before session 16, Halide realized into its own allocation
(256 bytes into a page for interpolate's 47 MB output) and we into `np.empty` (16 bytes in, the same
as the numpy input's), so on interpolate (which reads input[x, y, c] and writes out[x, y, c]) we
paid the aliasing and Halide did not. Session 16, in one process, 2 threads, 10 calls a sample,
alternating: our interpolate took 11.35 / 10.63 ms per call writing at offset 16 and 10.57 / 9.83 ms
at offset 256 (two runs), Halide's 10.76 / 10.63 ms at its own 256. 256 is the offset Halide's own
allocation had, so Halide's side is measured as before.

Huge pages (HUGE_PAGES; `--no-huge-pages`, off by default so the figures keep their procedure): with
the system's transparent huge pages in `madvise` mode, only memory someone advised gets 2 MiB pages:
numpy advises its arrays of 4 MiB or more, so the inputs and outputs of both contenders are in huge
pages, and so is whatever a later `malloc` places in the heap range a numpy temporary advised and freed
(`make_inputs`' 31 MB float64 temporaries). Which intermediate buffer lands there is the luck of the
worker's heap history, not of its code: in session 22, interpolate's largest intermediate (downsampled_1,
15.9 MB) was 8-13% in huge pages in PITCHFORK's worker (its compile fills that range first) and 90-93% in
Halide's (3 workers each, read from /proc/self/pagemap and /proc/kpageflags), and the same object code
ran 3-7% faster with that buffer in huge pages (both contenders' objects in one binary, one allocator,
paired thread CPU time). `--no-huge-pages` turns transparent huge pages off in every worker
(`prctl(PR_SET_THP_DISABLE)`, before its first allocation), so no buffer of either contender gets them:
4 KiB pages everywhere, as Halide's own C++ apps have for every `halide_malloc` buffer. The run records
which it was. Since session 26 PITCHFORK's own default `halide_malloc` advises its blocks of 4 MiB or more
for huge pages (pitchfork/codegen/alloc.py: interpolate's downsampled_1 went from 0% to 92% in huge pages in
our worker; Halide 21's was 87% by the luck above): by design in its code, not by the worker's history;
`--no-huge-pages` still compares the code alone (a THP-disabled process gets no huge pages either way).

Processes per worker (PROCESSES; `--processes P`, 1 by default): the same contender's code times
differently from one worker process to the next (interpolate, session 22, load 1.4-6: four processes of
each contender in one run spread over +-3%, wall, paired against one of them), because each process's heap
history places its intermediate buffers (page offsets, huge pages: HUGE_PAGES); with one process per
worker that one draw decides a cell. With P > 1 each worker is P processes started alike, and repetition
r samples process r mod P of every worker (the four workers still in the Williams order), so a cell's
median spans P placements per contender.

Why both: the must-show asks for 1 -> 2 thread scaling; the single-call mode measures it with the pool
asleep at every call, which is not how Halide measures its own apps; the back-to-back mode is. A change of
measurement never hides the old figure, so both stay. Reported per app and thread count, for each mode:
the median times, the paired ratio Halide / PITCHFORK (median over repetitions of the ratio of the two
samples taken in the same repetition) and each contender's 1 -> 2 thread speedup (paired the same way),
with `uptime`'s load before and after. Results: a table on stdout and `apps.json` / `APPS.md` in the
output folder (-o DIR, default ./pitchfork-apps-out); only `--write-results` refreshes the committed
benchmarks/RESULTS_APPS.md and benchmarks/apps_results.json (never by default).
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
from pathlib import Path
from typing import Any, Optional, Sequence

THREADS = (1, 2)
CONTENDERS = ("p", "h")
#: back-to-back mode: consecutive calls per sample, Halide's convention (`benchmark(10, 10, op)` in its
#: apps, `timeit(number=10)` in its Python apps; see the module docstring), for every app and worker
B2B_CALLS = 10


#: prctl option that turns transparent huge pages off for the calling process (and its children)
PR_SET_THP_DISABLE = 41


def huge_pages_enabled() -> Optional[bool]:
    """Whether transparent huge pages may back this process's memory (`THP_enabled` in
    /proc/self/status); None where the kernel does not say."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("THP_enabled:"):
                return line.split()[1] == "1"
    except OSError:
        pass
    return None


def disable_huge_pages() -> None:
    """Turn transparent huge pages off in this process (HUGE_PAGES in the module docstring); raises
    OSError if the kernel refuses."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl(PR_SET_THP_DISABLE): {os.strerror(err)}")


#: where both contenders' output starts within its 4 KiB page (OUTPUT_PLACEMENT in the module docstring)
OUTPUT_PAGE_OFFSET = 256


def placed_output(t: Any, size: Sequence[int]) -> Any:
    """A fresh numpy array (numpy axis order, C-contiguous) of Halide type `t` and Halide extents
    `size`, starting OUTPUT_PAGE_OFFSET bytes into a page: the output buffer of either contender."""
    import numpy as np

    from pitchfork.frontend.htypes import HType

    dtype = HType.from_halide(t).np_dtype
    shape = tuple(reversed([int(e) for e in size]))
    n = int(np.prod(shape)) * dtype.itemsize
    raw = np.empty(n + 2 * 4096, np.uint8)
    start = (-raw.ctypes.data) % 4096 + OUTPUT_PAGE_OFFSET
    return raw[start:start + n].view(dtype).reshape(shape)


def worker(name: str, contender: str, quick: bool, out_path: str,
           size: Optional[Sequence[int]] = None) -> None:
    """Compile `name` with one contender ('p' PITCHFORK, 'h' Halide 21), run it once at `size` (default:
    the app's timing size, or its test size if `quick`), save its output to `out_path`; then serve
    't' (time one call), 'b K' (time K back-to-back calls: seconds per call and K) and 'q' on stdin,
    one line of JSON each."""
    import halide as hl
    import numpy as np

    from benchmarks.apps import APPS
    from benchmarks.apps.common import HALIDE_TARGETS
    from benchmarks.harness.halide21 import bind
    from pitchfork.api import compile as pf_compile

    app = APPS[name].build("x86-avx2")
    size = list(size) if size else (app.test_size if quick else app.timing_size)
    values = app.make_inputs(np.random.default_rng(1), size)
    out_size = app.output_size(size)
    t0 = time.perf_counter()
    if contender == "p":
        prog = pf_compile(app.output, list(app.args), target="x86-avx2", name=name)
        if prog.fallback_reason:
            print(json.dumps({"error": f"fell back to Halide: {prog.fallback_reason}"}), flush=True)
            return
        call = prog.prepare(*values, size=out_size, out=placed_output(app.output.type(), out_size))
        compile_s = time.perf_counter() - t0
        run = call
        result = lambda: call.outputs[0]  # noqa: E731
    else:
        keep = bind(app.args, values)  # noqa: F841 (the bound arrays must outlive the pipeline's calls)
        pipe = hl.Pipeline(app.output)
        target = hl.Target(HALIDE_TARGETS["x86-avx2"])
        pipe.compile_jit(target)
        compile_s = time.perf_counter() - t0
        hbuf = hl.Buffer(placed_output(app.output.type(), out_size))
        run = lambda: pipe.realize(hbuf)  # noqa: E731
        result = lambda: hbuf  # noqa: E731
    run()
    np.save(out_path, np.ascontiguousarray(np.asarray(result())))
    page_offsets = {"inputs": [int(v.ctypes.data) % 4096 for v in values if isinstance(v, np.ndarray)],
                    "output": int(np.asarray(result()).ctypes.data) % 4096}
    print(json.dumps({"ready": True, "compile_s": compile_s, "size": list(out_size), "page_offsets": page_offsets,
                      "huge_pages": huge_pages_enabled()}), flush=True)
    for line in sys.stdin:
        cmd = line.split()
        if not cmd or cmd[0] == "q":
            break
        k = int(cmd[1]) if cmd[0] == "b" else 1
        t0 = time.perf_counter()
        for _ in range(k):
            run()
        print(json.dumps({"s": (time.perf_counter() - t0) / k, "calls": k}), flush=True)


#: the order of the four workers (slots (1, p), (1, h), (2, p), (2, h)) in each repetition: a balanced
#: Latin square (Williams design), in which every worker comes right after every other worker exactly once
#: per four repetitions. Session 14's cyclic rotation (slots[r:] + slots[:r]) kept each worker's
#: predecessor fixed (2-thread Halide always ran right after 2-thread PITCHFORK, which always ran after
#: 1-thread Halide), so whatever a sample leaves behind (a thread pool still spinning, caches, the
#: scheduler's state) always fell on the same successor; this design spreads it over all four alike.
WILLIAMS_ORDERS: tuple[tuple[int, ...], ...] = ((0, 1, 3, 2), (1, 2, 0, 3), (2, 3, 1, 0), (3, 0, 2, 1))


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def scheduling() -> str:
    """How this run's processes were scheduled, for the record: the process's nice value and, on Linux
    with autogroups (CPU time is split between sessions first, then between the processes of one), its
    session's autogroup nice, and a real-time policy if it has one (`chrt -f 10 pitchfork bench ...`:
    SCHED_FIFO threads run before every normal one, so other jobs on a shared machine wait while a
    worker runs). A run started under a negative autogroup nice takes most of the CPU from the machine's
    other sessions; both contenders' workers (and Halide's pool threads) inherit either alike."""
    parts = [f"nice {os.nice(0)}"]
    policy = os.sched_getscheduler(0) if hasattr(os, "sched_getscheduler") else None
    realtime = {getattr(os, "SCHED_FIFO", None): "SCHED_FIFO", getattr(os, "SCHED_RR", None): "SCHED_RR"}
    if policy is not None and policy in realtime:
        parts.append(f"{realtime[policy]} priority {os.sched_getparam(0).sched_priority}")
    try:
        group = Path("/proc/self/autogroup").read_text().split()
        if len(group) == 3 and group[1] == "nice":
            parts.append(f"autogroup nice {group[2]}")
    except OSError:
        pass
    return ", ".join(parts) + f"; {os.cpu_count()} CPUs"


def _paired(a: Sequence[float], b: Sequence[float]) -> float:
    """median over repetitions of a[r] / b[r]"""
    return statistics.median(x / y for x, y in zip(a, b))


def time_app(name: str, reps: int, quick: bool, timeout: float | None = None,
             huge_pages: bool = True, processes: int = 1,
             size: Optional[Sequence[int]] = None) -> list[dict[str, Any]]:
    """One app: four workers (contender x thread count), outputs checked, `reps` interleaved repetitions;
    `huge_pages=False`: every worker runs with transparent huge pages off (HUGE_PAGES); `processes` > 1:
    each worker is that many processes, repetition r sampling process r mod `processes` (PROCESSES);
    `size`: the app's size instead of its timing size (apps_suite_scaling)."""
    import numpy as np

    from benchmarks.apps import APPS
    from benchmarks.harness.measure import summarize

    tolerance = APPS[name].build("x86-avx2").tolerance
    slots = [(n, c) for n in THREADS for c in CONTENDERS]
    with tempfile.TemporaryDirectory(prefix="pitchfork-apps-") as tmp:
        procs: dict[tuple[int, str], list[subprocess.Popen[str]]] = {}
        for n, c in slots:
            env = dict(os.environ, HL_NUM_THREADS=str(n))
            procs[(n, c)] = []
            for i in range(processes):
                cmd = [sys.executable, "-m", "benchmarks.harness.apps_suite", "--worker", c, "--out",
                       str(Path(tmp) / f"{c}{n}_{i}.npy"), *(["--quick"] if quick else []),
                       *([] if huge_pages else ["--no-huge-pages"]),
                       *(["--size", "x".join(map(str, size))] if size else []), name]
                procs[(n, c)].append(subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                                      text=True))
        try:
            ready = {}
            for slot, group in procs.items():
                lines = [p.stdout.readline() for p in group]  # type: ignore[union-attr]
                replies = [json.loads(line) if line else {"error": f"worker {slot} exited ({p.wait()})"}
                           for p, line in zip(group, lines)]
                # the first process's reply, unless another one failed
                ready[slot] = next((r for r in replies if "error" in r), replies[0])
            rows: list[dict[str, Any]] = []
            for n in THREADS:
                row: dict[str, Any] = {"app": name, "threads": n, "size": ready[(n, "h")].get("size", [])}
                err = ready[(n, "p")].get("error") or ready[(n, "h")].get("error")
                if err:
                    row["error"] = err
                else:
                    row["pitchfork_compile_s"] = ready[(n, "p")]["compile_s"]
                    row["halide_compile_s"] = ready[(n, "h")]["compile_s"]
                    row["page_offsets"] = {"pitchfork": ready[(n, "p")].get("page_offsets"),
                                           "halide21": ready[(n, "h")].get("page_offsets")}
                    row["huge_pages"] = {"pitchfork": ready[(n, "p")].get("huge_pages"),
                                         "halide21": ready[(n, "h")].get("huge_pages")}
                    theirs = np.load(Path(tmp) / f"h{n}_0.npy").astype(np.float64)
                    diff = 0.0
                    for i in range(processes):  # every PITCHFORK process against Halide's first
                        ours = np.load(Path(tmp) / f"p{n}_{i}.npy").astype(np.float64)
                        diff = max(diff, float(np.abs(ours - theirs).max()) if ours.shape == theirs.shape
                                   else float("inf"))
                    row["max_abs_diff"], row["tolerance"] = diff, tolerance
                    if diff > tolerance:
                        row["error"] = f"output differs from Halide's by {diff} (tolerance {tolerance})"
                rows.append(row)
            if any("error" in r for r in rows):
                return rows

            calls_seen: dict[str, set[int]] = {f"{c}{n}": set() for n, c in slots}

            def ask(slot: tuple[int, str], calls: int = 0, r: int = 0) -> float:
                """one sample of `slot` from its process r mod `processes`: one call ('t'), or `calls`
                back-to-back calls ('b'), per call"""
                p = procs[slot][r % processes]
                p.stdin.write(f"b {calls}\n" if calls else "t\n")  # type: ignore[union-attr]
                p.stdin.flush()  # type: ignore[union-attr]
                reply = json.loads(p.stdout.readline())  # type: ignore[union-attr]
                if calls:
                    calls_seen[f"{slot[1]}{slot[0]}"].add(int(reply["calls"]))
                return float(reply["s"])

            for slot in slots:  # warm-up: thread pools started, caches filled
                for i in range(processes):
                    ask(slot, r=i)
            k = B2B_CALLS
            samples: dict[tuple[int, str], list[float]] = {s: [] for s in slots}
            b2b: dict[tuple[int, str], list[float]] = {s: [] for s in slots}
            for r in range(reps):
                order = [slots[i] for i in WILLIAMS_ORDERS[r % len(WILLIAMS_ORDERS)]]
                for slot in order:
                    samples[slot].append(ask(slot, r=r))
                for slot in order:
                    b2b[slot].append(ask(slot, k, r))
        finally:
            for p in (p for group in procs.values() for p in group):
                try:
                    p.stdin.write("q\n")  # type: ignore[union-attr]
                    p.stdin.close()  # type: ignore[union-attr]
                except OSError:  # a worker that already exited (an error line, a fallback)
                    pass
                p.wait(timeout=60)
    for row in rows:
        n = row["threads"]
        tp, th = summarize(samples[(n, "p")]), summarize(samples[(n, "h")])
        row["pitchfork_ms"], row["halide21_ms"] = tp.median_ms, th.median_ms
        row["speedup"] = _paired(samples[(n, "h")], samples[(n, "p")])
        row["timings"] = {"pitchfork": tp.to_json(), "halide21": th.to_json()}
        if n != THREADS[0]:
            row["pitchfork_scaling"] = _paired(samples[(THREADS[0], "p")], samples[(n, "p")])
            row["halide21_scaling"] = _paired(samples[(THREADS[0], "h")], samples[(n, "h")])
        # back-to-back mode (k calls per sample, time per call), same fields with a _b2b suffix
        bp, bh = summarize(b2b[(n, "p")]), summarize(b2b[(n, "h")])
        row["b2b_calls"] = k
        row["b2b_calls_by_worker"] = {w: sorted(v) for w, v in calls_seen.items()}
        row["pitchfork_b2b_ms"], row["halide21_b2b_ms"] = bp.median_ms, bh.median_ms
        row["speedup_b2b"] = _paired(b2b[(n, "h")], b2b[(n, "p")])
        row["timings_b2b"] = {"pitchfork": bp.to_json(), "halide21": bh.to_json()}
        if n != THREADS[0]:
            row["pitchfork_scaling_b2b"] = _paired(b2b[(THREADS[0], "p")], b2b[(n, "p")])
            row["halide21_scaling_b2b"] = _paired(b2b[(THREADS[0], "h")], b2b[(n, "h")])
    return rows


#: default output folder (in the current directory) when no -o is named
DEFAULT_OUT_NAME = "pitchfork-apps-out"
#: the committed record, written only with --write-results (never by default)
RESULTS_NAME = "RESULTS_APPS.md"
RESULTS_JSON_NAME = "apps_results.json"


def output_paths(args: argparse.Namespace) -> tuple[Path, Path]:
    """(APPS markdown, json) of a run: benchmarks/RESULTS_APPS.md and benchmarks/apps_results.json with
    --write-results, else DIR/APPS.md and DIR/apps.json for -o DIR (default ./pitchfork-apps-out)."""
    if getattr(args, "write_results", False):
        bench_dir = Path(__file__).resolve().parent.parent
        return bench_dir / RESULTS_NAME, bench_dir / RESULTS_JSON_NAME
    out_dir = Path(args.output_dir if args.output_dir is not None else DEFAULT_OUT_NAME).resolve()
    return out_dir / "APPS.md", out_dir / "apps.json"


def command_line(args: argparse.Namespace) -> str:
    """The `pitchfork bench --suite apps ...` command that reproduces `args` (the output folder aside)."""
    parts = ["pitchfork bench --suite apps"]
    if args.quick:
        parts.append("--quick")
    parts += [f"--bench {b}" for b in (args.bench or [])]
    if args.reps:
        parts.append(f"--reps {args.reps}")
    if getattr(args, "no_huge_pages", False):
        parts.append("--no-huge-pages")
    if getattr(args, "processes", 1) != 1:
        parts.append(f"--processes {args.processes}")
    if getattr(args, "write_results", False):
        parts.append("--write-results")
    return " ".join(parts)


#: the heading from which a results file's hand-written notes run to its end: a rewrite of the file
#: (--write-results) keeps them after the new table, so measurements with their commands stay beside it
NOTES_HEADING = "## Notes (kept when the table above is rewritten)"


def kept_notes(old_text: str) -> str:
    """The notes section of a previous results file (from NOTES_HEADING to its end), after one blank
    line; "" if it has none."""
    at = old_text.find(NOTES_HEADING)
    return "" if at < 0 else "\n" + old_text[at:].rstrip("\n") + "\n"


def run_apps(args: argparse.Namespace) -> int:
    """Run the suite (four worker processes per app), print and write the figures."""
    from benchmarks.apps import APPS

    names = [b for b in (args.bench or APPS) if b in APPS]
    unknown = [b for b in (args.bench or []) if b not in APPS]
    if unknown:
        print(f"error: unknown app(s) {', '.join(unknown)}; the apps are {', '.join(APPS)}", file=sys.stderr)
        return 2
    if getattr(args, "write_results", False) and args.output_dir is not None:
        print("error: --write-results writes into benchmarks/; it does not take -o", file=sys.stderr)
        return 2
    processes = getattr(args, "processes", 1)
    if processes < 1:
        print("error: --processes must be at least 1", file=sys.stderr)
        return 2
    # a multiple of 4, so that each worker follows each other equally often (WILLIAMS_ORDERS)
    reps = args.reps or (4 if args.quick else 16)
    md_path, json_path = output_paths(args)
    md_path.parent.mkdir(parents=True, exist_ok=True)
    load_before, sched = _load(), scheduling()
    rows: list[dict[str, Any]] = []
    for name in names:
        rows += time_app(name, reps, args.quick, args.timeout,
                         huge_pages=not getattr(args, "no_huge_pages", False), processes=processes)
    load_after = _load()
    command = command_line(args)
    huge = "off in every worker" if getattr(args, "no_huge_pages", False) else "the system's"
    json_path.write_text(json.dumps({"command": command, "load_before": load_before, "load_after": load_after,
                                     "reps": reps, "scheduling": sched, "huge_pages": huge,
                                     "processes_per_worker": processes, "rows": rows}, indent=1))
    text = report(rows, load_before, load_after, sched, command, huge, processes)
    old = md_path.read_text() if md_path.exists() else ""
    md_path.write_text(text + kept_notes(old))
    print(text)
    return 0 if not any("error" in r for r in rows) else 1


def report(rows: Sequence[dict[str, Any]], load_before: str = "", load_after: str = "", sched: str = "",
           command: str = "", huge_pages: str = "", processes: int = 1) -> str:
    lines = ["# Apps suite: PITCHFORK vs Halide 21 on x86-avx2 (same schedule, same threads)", "",
             "Each contender and thread count in its own process; samples interleaved across the four.",
             "Two timing modes, same procedure for both contenders (benchmarks/harness/apps_suite.py):",
             "*single call*: a sample is one call, the thread pool asleep before it (first call after idle);",
             f"*back-to-back*: a sample is k = {B2B_CALLS} consecutive calls, reported per call: Halide's own "
             "convention (its apps call",
             "tools/halide_benchmark.h's `benchmark(10, 10, op)`, its Python apps `timeit(number=10)`), the "
             "same k for every app;",
             "it replaced our own earlier choice (k so a sample lasted ~5 ms: k = 3 for blur, 1 for the others), "
             "too short for a",
             "2-thread pool to reach its steady state. Medians; ratios are paired medians.",
             f"Both contenders write into an output placed alike ({OUTPUT_PAGE_OFFSET} bytes into a 4 KiB page; "
             "since session 16: before, ours was",
             "`np.empty`'s, at the numpy input's page offset, and Halide's its own allocation's; see "
             "OUTPUT_PLACEMENT in apps_suite.py).",
             f"Load before: `{load_before}`; after: `{load_after}`."
             + (f" Scheduling of this run: {sched}." if sched else "")
             + (f" Transparent huge pages: {huge_pages} (HUGE_PAGES in apps_suite.py)." if huge_pages else "")
             + (f" {processes} processes per worker, sampled in turn (PROCESSES in apps_suite.py)."
                if processes != 1 else "")
             + (f" Command: `{command}`." if command else ""), "",
             "| app | size | threads | single: PITCHFORK ms | single: Halide 21 ms "
             "| single: Halide / PITCHFORK "
             "| single: 1->2 threads PITCHFORK / Halide | b2b: k calls | b2b: PITCHFORK ms/call "
             "| b2b: Halide 21 ms/call | b2b: Halide / PITCHFORK | b2b: 1->2 threads PITCHFORK / Halide "
             "| max diff / tol |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        size = "x".join(map(str, r["size"]))
        if "pitchfork_ms" not in r:
            lines.append(f"| {r['app']} | {size} | {r['threads']} |" + " - |" * 9
                         + f" {r.get('error', '')} |")
            continue
        scaling = (f"{r['pitchfork_scaling']:.2f}x / {r['halide21_scaling']:.2f}x" if "pitchfork_scaling" in r
                   else "")
        scaling_b2b = (f"{r['pitchfork_scaling_b2b']:.2f}x / {r['halide21_scaling_b2b']:.2f}x"
                       if "pitchfork_scaling_b2b" in r else "")
        lines.append(f"| {r['app']} | {size} | {r['threads']} | {r['pitchfork_ms']:.3f} | {r['halide21_ms']:.3f} | "
                     f"{r['speedup']:.2f}x | {scaling} | {r['b2b_calls']} | {r['pitchfork_b2b_ms']:.3f} | "
                     f"{r['halide21_b2b_ms']:.3f} | {r['speedup_b2b']:.2f}x | {scaling_b2b} | "
                     f"{r['max_abs_diff']:.3g} / {r['tolerance']:g}{' ERROR' if 'error' in r else ''} |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite")
    ap.add_argument("--worker", choices=CONTENDERS, required=True, help="p: PITCHFORK, h: Halide 21 "
                    "(HL_NUM_THREADS is already set)")
    ap.add_argument("--out", required=True, help="where the worker saves its output (.npy)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-huge-pages", action="store_true", help="transparent huge pages off in this worker")
    ap.add_argument("--size", help="the app's size WxH[xC] instead of its timing size")
    ap.add_argument("app")
    a = ap.parse_args(argv)
    if a.no_huge_pages:  # before the first allocation of the app's buffers
        disable_huge_pages()
    import warnings

    warnings.simplefilter("ignore")
    worker(a.app, a.worker, a.quick, a.out, [int(e) for e in a.size.split("x")] if a.size else None)
    return 0


if __name__ == "__main__":
    sys.exit(main())
