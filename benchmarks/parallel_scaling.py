"""Parallel scaling on Halide's runtime: one pipeline with a `.parallel()` schedule, on 1 and 2 threads,
compiled by PITCHFORK (x86 JIT, parallel loop on Halide's thread pool) and by Halide 21 (its JIT).

    python -m benchmarks.parallel_scaling [--size 4096] [--reps 15] [--calls 3] [--threads 1,2]

Four worker processes, one per contender and thread count (HL_NUM_THREADS is read once, when a
runtime's thread pool starts, by our runtime and Halide's JIT alike). Each holds ONE compiled
pipeline: with both in one process there are two thread pools, and the workers of the pool that just
finished spin for a while before sleeping, competing with the other contender's threads (idle 2-core
machine, blur5 4096: with both pools in one process, PITCHFORK 1->2 threads 1.42-1.45x and Halide
1.55-1.75x; each contender alone in a process, 41 back-to-back calls, PITCHFORK 1.82-2.00x and Halide
1.94-1.95x). Interleaving four processes still costs each sample some cache warmth (the previous
sample's process evicted its arrays), more at 1 thread than the back-to-back figures show. The parent interleaves them: in every repetition
each worker times one call, in a rotated order, so load from other processes hits all four alike. Reported: per
contender the median time at each thread count and the paired ratio t(1 thread) / t(2 threads)
(median over repetitions of the ratio of samples taken in the same repetition), and `uptime`'s
load before and after; then, per contender and thread count, how 40 calls' CPU time divides among
the process's threads (/proc/self/task: a measure of the split that does not depend on other load;
the wall-clock ratio does). Outputs are checked equal to Halide's (by digest) before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any


def blur5(split: int = 32) -> tuple[Any, Any]:
    """(output Func, input ImageParam): a 5x5 box filter of u8 pixels through 16-bit sums, rows in
    strips of `split` run in parallel, the horizontal pass computed per strip (an allocation inside
    the task: on the heap past 16 KiB). tests/pitchfork/codegen/test_parallel.py compiles it too."""
    import halide as hl

    x, y, yo, yi = hl.vars("x y yo yi")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    bx = hl.Func("blur_x")
    bx[x, y] = sum(hl.u16(inp[x + i, y]) for i in range(5))
    out = hl.Func("blur5")
    out[x, y] = hl.u8((sum(bx[x, y + j] for j in range(5)) + 12) / 25)
    out.split(y, yo, yi, split).parallel(yo).vectorize(x, 32)
    bx.compute_at(out, yo).vectorize(x, 32)
    return out, inp


def build(size: int) -> tuple[Any, Any, Any]:
    """(output Func, input ImageParam, input array): `blur5` in strips of 32 rows."""
    import numpy as np

    out, inp = blur5(32)
    rng = np.random.default_rng(1)
    return out, inp, rng.integers(0, 256, (size + 4, size + 4), dtype=np.uint8)


def worker(size: int, calls: int, contender: str) -> None:
    """Compile one contender ('p' PITCHFORK, 'h' Halide 21); then serve 't' (time `calls` calls),
    'split' (CPU time per thread over 40 calls) and 'q' on stdin, one line of JSON each."""
    import hashlib

    import halide as hl
    import numpy as np

    import pitchfork

    out, inp, arr = build(size)
    if contender == "p":
        prog = pitchfork.compile(out, [inp], target="x86-avx2", name="blur5", fallback=False)
        call = prog.prepare(arr, size=[size, size])
        run = call
        result = lambda: call()[0]  # noqa: E731
    else:
        inp.set(hl.Buffer(arr))
        hbuf = hl.Buffer(hl.UInt(8), [size, size])
        out.compile_jit(hl.Target("x86-64-linux-avx-avx2-fma-sse41"))
        run = lambda: out.realize(hbuf)  # noqa: E731
        result = lambda: hbuf  # noqa: E731
    run()
    digest = hashlib.sha1(np.ascontiguousarray(np.asarray(result())).tobytes()).hexdigest()
    print(json.dumps({"ready": True, "digest": digest}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "q":
            break
        if cmd == "split":
            before = _thread_cpu()
            for _ in range(40):
                run()
            after = _thread_cpu()
            used = sorted((after[t] - before.get(t, 0) for t in after), reverse=True)
            print(json.dumps({"split": [u for u in used if u > 0]}), flush=True)
            continue
        t0 = time.perf_counter()
        for _ in range(calls):
            run()
        print(json.dumps({"s": (time.perf_counter() - t0) / calls}), flush=True)


def _thread_cpu() -> dict[str, int]:
    """user + system clock ticks of each thread of this process (/proc/self/task/*/stat)."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            fields = open(f"/proc/self/task/{tid}/stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[tid] = int(fields[11]) + int(fields[12])
    return out


def _load() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=4096, help="output width and height (default 4096)")
    ap.add_argument("--reps", type=int, default=15, help="interleaved repetitions (default 15)")
    ap.add_argument("--calls", type=int, default=3, help="calls per sample (default 3)")
    ap.add_argument("--threads", default="1,2", help="thread counts (default 1,2)")
    ap.add_argument("--worker", choices=("p", "h"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        worker(args.size, args.calls, args.worker)
        return 0
    counts = [int(t) for t in args.threads.split(",")]
    print(f"load before: {_load()}")
    slots = [(n, c) for n in counts for c in "ph"]
    procs = {}
    for n, c in slots:
        env = dict(os.environ, HL_NUM_THREADS=str(n))
        procs[(n, c)] = subprocess.Popen([sys.executable, "-m", "benchmarks.parallel_scaling", "--worker", c,
                                          "--size", str(args.size), "--calls", str(args.calls)], env=env,
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    digests = {slot: json.loads(p.stdout.readline())["digest"] for slot, p in procs.items()}  # type: ignore[union-attr]
    for n in counts:
        if digests[(n, "p")] != digests[(n, "h")]:
            print(f"HL_NUM_THREADS={n}: PITCHFORK and Halide outputs differ", file=sys.stderr)
            return 1

    def ask(slot: tuple[int, str], cmd: str) -> Any:
        p = procs[slot]
        p.stdin.write(cmd + "\n")  # type: ignore[union-attr]
        p.stdin.flush()  # type: ignore[union-attr]
        return json.loads(p.stdout.readline())  # type: ignore[union-attr]

    for slot in slots:  # warm-up: thread pools started, caches filled
        ask(slot, "t")
    samples: dict[tuple[int, str], list[float]] = {s: [] for s in slots}
    for r in range(args.reps):
        order = slots[r % len(slots):] + slots[:r % len(slots)]
        for slot in order:
            samples[slot].append(float(ask(slot, "t")["s"]))
    splits = {}
    for slot in slots:  # how the work divides among threads (independent of the machine's load)
        splits[slot] = ask(slot, "split")["split"]
    for p in procs.values():
        p.stdin.write("q\n")  # type: ignore[union-attr]
        p.stdin.close()  # type: ignore[union-attr]
        p.wait()
    print(f"load after:  {_load()}")
    print(f"blur5 {args.size}x{args.size}, {args.reps} interleaved repetitions (median ms)")
    for c, who in (("p", "PITCHFORK"), ("h", "Halide 21")):
        times = "  ".join(f"{n} thread{'s' if n > 1 else ''}: {statistics.median(samples[(n, c)]) * 1e3:7.2f}"
                          for n in counts)
        line = f"  {who:10s} {times}"
        if len(counts) == 2:
            a, b = samples[(counts[0], c)], samples[(counts[1], c)]
            line += f"   speedup {counts[0]}->{counts[1]}: {statistics.median(x / y for x, y in zip(a, b)):.2f}x"
        print(line)
    print("  CPU time per thread over 40 calls (share of the process's, busiest first):")
    for (n, c), used in splits.items():
        total = sum(used) or 1
        shares = ", ".join(f"{100 * u / total:.0f}%" for u in used)
        print(f"    {'PITCHFORK' if c == 'p' else 'Halide 21':10s} HL_NUM_THREADS={n}: {shares}")
    if len(counts) == 2:
        for n in counts:
            ratio = statistics.median(h / p for h, p in zip(samples[(n, "h")], samples[(n, "p")]))
            print(f"  Halide 21 / PITCHFORK at {n} thread{'s' if n > 1 else ''}: {ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
