"""The contract every benchmark module (`benchmarks/<name>.py`) fulfils, and helpers they share.

A benchmark module defines one module-level `BENCHMARK = Benchmark(...)`. The registry
(`benchmarks.registry`) imports them by name; the correctness tests, the harness (`pitchfork bench`)
and the synthesis corpus all go through this one interface, so nothing else knows a benchmark's
internals.

Calling convention (the same as `pitchfork.compile(...)(*values, size=...)`):
  * `build(isa, pset)` returns `(output_func, args)`: a fresh Halide pipeline scheduled for `isa`
    ("x86-avx2", "arm64" or "hvx128", SPEC section 1.5 widths), `args` its ImageParams and Params in
    call order. Scalar `Param`s are arguments, not baked in: `pset` only chooses schedule-affecting
    choices, if a benchmark has any (most ignore it).
  * `make_inputs(rng, size, pset)` returns one value per arg, in order: numpy arrays for ImageParams
    (numpy axis order, i.e. reversed Halide dims), Python ints for Params (floats for f32 Params).
    An input whose buffer min is not 0 (gaussian3x3: min (-1, -1)) is an `hl.Buffer` that owns its
    memory, with the min set; `np.asarray(buf)` gives its data.
  * `output_size(size, pset)` gives the Halide extents `[x, y, ...]` of the output for an input size.
  * `reference(values, pset)` is the numpy int64 reference (SPEC 1.7) returning the output array.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

#: Halide target strings for running Halide 21 itself (realize / JIT) per ISA alias.
HALIDE_TARGETS: dict[str, str] = {
    "x86-avx2": "x86-64-linux-avx-avx2-fma-sse41",
    "arm64": "arm-64-linux-arm_dot_prod",
    "hvx128": "hexagon-32-noos-no_bounds_query-no_asserts-hvx_128-hvx_v66",
}
ISAS: tuple[str, ...] = ("x86-avx2", "arm64", "hvx128")
#: Natural vector widths (SPEC 1.5): lanes of u8, u16/i16, i32.
V8: dict[str, int] = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}
V16: dict[str, int] = {k: v // 2 for k, v in V8.items()}
V32: dict[str, int] = {k: v // 4 for k, v in V8.items()}

ParamSet = dict[str, Any]


@dataclass(frozen=True)
class Benchmark:
    """One SPEC benchmark: how to build it, feed it and check it."""

    name: str
    section: int  # SPEC section number
    build: Callable[[str, ParamSet], tuple[Any, list[Any]]]
    make_inputs: Callable[[np.random.Generator, Sequence[int], ParamSet], list[Any]]
    output_size: Callable[[Sequence[int], ParamSet], list[int]]
    reference: Callable[[Sequence[Any], ParamSet], np.ndarray]
    #: the two parameter sets of the SPEC (scalar param values and any schedule choices)
    param_sets: tuple[ParamSet, ...]
    #: input size (numpy-independent: Halide order [x, y, ...]) for CI correctness tests, and an odd
    #: one where the schedule allows (None where RoundUp tiles forbid it)
    test_size: tuple[int, ...]
    odd_size: tuple[int, ...] | None
    #: the SPEC's timing size, and a small one for `--quick`
    timing_size: tuple[int, ...]
    quick_size: tuple[int, ...]
    #: the FPIR idioms the SPEC expects (documentation for the report)
    idioms: tuple[str, ...] = field(default=())
    #: the ISAs whose schedule allows `odd_size` (conv3x3*: the CPU schedules, not HVX's RoundUp tiles)
    odd_size_isas: tuple[str, ...] = ISAS
    #: for a benchmark whose algorithm differs per ISA (camera_pipe's HVX tone curve): the reference
    #: `(values, pset, isa) -> array`; `expected()` uses it instead of `reference` when set
    isa_reference: Callable[[Sequence[Any], ParamSet, str], np.ndarray] | None = None


def expected(b: Benchmark, values: Sequence[Any], pset: ParamSet, isa: str) -> np.ndarray:
    """The numpy reference output of benchmark `b` as built for `isa`."""
    if b.isa_reference is not None:
        return b.isa_reference(values, pset, isa)
    return b.reference(values, pset)


# ---- numpy reference helpers (SPEC 1.7): int64 everywhere, explicit wrap / saturation ----------

_RANGES = {
    "u8": (0, 255), "i8": (-128, 127), "u16": (0, 65535), "i16": (-32768, 32767),
    "u32": (0, 2**32 - 1), "i32": (-(2**31), 2**31 - 1), "i64": (-(2**63), 2**63 - 1),
}
_NP = {"u8": np.uint8, "i8": np.int8, "u16": np.uint16, "i16": np.int16, "u32": np.uint32,
       "i32": np.int32, "i64": np.int64}


def wrap(v: Any, t: str) -> np.ndarray:
    """Keep the low bits of int64 `v` as type `t` (an integer cast), result int64."""
    v = np.asarray(v, dtype=np.int64)
    lo, hi = _RANGES[t]
    bits = {255: 8, 127: 8, 65535: 16, 32767: 16, 2**32 - 1: 32, 2**31 - 1: 32, 2**63 - 1: 64}[hi]
    if bits == 64:
        return v
    m = v & ((1 << bits) - 1)
    if lo < 0:
        m = np.where(m >= (1 << (bits - 1)), m - (1 << bits), m)
    return m.astype(np.int64)


def sat(v: Any, t: str) -> np.ndarray:
    lo, hi = _RANGES[t]
    return np.clip(np.asarray(v, dtype=np.int64), lo, hi)


def rsr(v: Any, n: Any, t: str) -> np.ndarray:
    """rounding_shr for n >= 0, saturated to t."""
    v = np.asarray(v, dtype=np.int64)
    n = np.asarray(n, dtype=np.int64)
    return sat((v + ((np.int64(1) << n) >> 1)) >> n, t)


def rmsr(a: Any, b: Any, q: int, t: str) -> np.ndarray:
    """rounding_mul_shr: rsr(a*b, q) saturated to t (a*b must fit int64)."""
    return rsr(np.asarray(a, dtype=np.int64) * np.asarray(b, dtype=np.int64), q, t)


def as_type(v: Any, t: str) -> np.ndarray:
    """Final conversion of an in-range int64 array to the numpy dtype of `t`."""
    return np.asarray(v).astype(_NP[t])


# ---- running Halide 21 itself -------------------------------------------------------------------

def halide_realize(func: Any, args: Sequence[Any], values: Sequence[Any], size: Sequence[int],
                   isa: str = "x86-avx2") -> np.ndarray:
    """Run the pipeline with Halide's own JIT (the host; integer results do not depend on the target)."""
    import halide as hl

    keep = []
    for a, v in zip(args, values):
        if isinstance(a, hl.ImageParam):
            if isinstance(v, hl.Buffer):  # keeps its min
                a.set(v)
                continue
            arr = np.ascontiguousarray(v)
            buf = hl.Buffer(arr)
            keep.append((arr, buf))  # param.set does not keep the array alive (SPEC 1.7)
            a.set(buf)
        else:
            a.set(v)
    target = hl.Target(HALIDE_TARGETS["x86-avx2"])
    out = func.realize(list(size), target)
    return np.asarray(out).copy()


# ---- pieces many benchmarks share ------------------------------------------------------------------

def same_size(size: Sequence[int], pset: ParamSet) -> list[int]:
    """`output_size` of a benchmark whose output has its input's extents."""
    return list(size)


def one_u8_image(rng: np.random.Generator, size: Sequence[int], pset: ParamSet) -> list[Any]:
    """`make_inputs` of a benchmark with a single u8 [x, y] input and no scalar parameters."""
    w, h = size
    return [rng.integers(0, 256, (h, w), dtype=np.uint8)]
