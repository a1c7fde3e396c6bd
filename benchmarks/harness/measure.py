"""Wall-clock timing of several kernels interleaved in one process.

`time_interleaved` calls every runner once per repetition, in an order rotated each repetition, so
that slow phases of a shared machine (other processes, frequency changes) hit every contender alike;
the result per runner is the median over repetitions with its spread (quartiles, min, max) and the
samples themselves, in repetition order. A ratio of two runners is `paired_ratio`: the median over
repetitions of the ratio of the two samples taken in the same repetition (adjacent in time). The ratio
of the two medians is not robust on this shared machine: with another process taking memory bandwidth
in bursts, times are bimodal (sobel3x3 at 8192x8192 in the session-3 full run: ours 14.65..27.1 ms,
Halide 21 14.75..23.2 ms, quartiles 14.9 / 22.8) and the medians of 15 samples fall on either mode
(18.6 vs 15.0 ms, "1.24x"), while the minima agree (0.99x). Absolute times depend on the machine's load.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Mapping


@dataclass(frozen=True)
class Timing:
    median_ms: float
    q1_ms: float
    q3_ms: float
    min_ms: float
    max_ms: float
    reps: int
    #: every sample in repetition order (what `paired_ratio` pairs); empty when not recorded
    samples_ms: tuple[float, ...] = ()

    @property
    def spread(self) -> float:
        """Interquartile range relative to the median."""
        return (self.q3_ms - self.q1_ms) / self.median_ms if self.median_ms else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "samples_ms": list(self.samples_ms), "spread": self.spread}


def summarize(samples_s: list[float]) -> Timing:
    in_order = tuple(s * 1e3 for s in samples_s)
    ms = sorted(in_order)
    if len(ms) >= 4:
        q1, _, q3 = statistics.quantiles(ms, n=4, method="inclusive")
    else:
        q1, q3 = ms[0], ms[-1]
    return Timing(statistics.median(ms), q1, q3, ms[0], ms[-1], len(ms), in_order)


def paired_ratio(a: Mapping[str, Any] | None, b: Mapping[str, Any] | None) -> float | None:
    """a / b for two timings (`Timing.to_json()` dicts) of one `time_interleaved` run: the median of
    the per-repetition ratios when both carry their samples, else the ratio of the medians (rows of
    older runs). None when either is missing."""
    if not a or not b or not a.get("median_ms") or not b.get("median_ms"):
        return None
    sa, sb = a.get("samples_ms") or (), b.get("samples_ms") or ()
    if len(sa) == len(sb) and len(sa) > 0 and all(x > 0 for x in sb):
        return statistics.median(x / y for x, y in zip(sa, sb))
    return a["median_ms"] / b["median_ms"]


def time_interleaved(runners: Mapping[str, Callable[[], None]], reps: int, warmup: int = 1,
                     on_rep: Callable[[int], None] | None = None) -> dict[str, Timing]:
    names = list(runners)
    for _ in range(warmup):
        for n in names:
            runners[n]()
    samples: dict[str, list[float]] = {n: [] for n in names}
    clock = time.perf_counter
    for r in range(reps):
        k = r % len(names)
        for n in names[k:] + names[:k]:
            fn = runners[n]
            t0 = clock()
            fn()
            samples[n].append(clock() - t0)
        if on_rep is not None:
            on_rep(r + 1)
    return {n: summarize(s) for n, s in samples.items()}


def call_overheads(reps: int = 300) -> dict[str, float]:
    """Median per-call cost (µs) of the two calling paths with (almost) no work behind them: a ctypes
    call with 24 arguments (our kernels) and Halide's Python `realize` into a preallocated 8-element
    buffer (Halide 21). It matters only for kernels of a few hundred µs or less (the quick sizes)."""
    import ctypes

    import halide as hl

    libc = ctypes.CDLL(None)
    addr = ctypes.cast(libc.getpid, ctypes.c_void_p).value
    fn = ctypes.CFUNCTYPE(None, *([ctypes.c_void_p] * 8 + [ctypes.c_int32] * 16))(addr)
    vals = [0] * 24

    def ours() -> None:
        fn(*vals)

    x = hl.Var("x")
    f = hl.Func("overhead")
    f[x] = hl.cast(hl.UInt(8), x)
    pipe = hl.Pipeline(f)
    target = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
    pipe.compile_jit(target)
    buf = pipe.realize([8], target)

    def halide() -> None:
        pipe.realize(buf)

    t = time_interleaved({"ctypes_call_us": ours, "halide_realize_us": halide}, reps, warmup=5)
    return {k: v.median_ms * 1e3 for k, v in t.items()}
