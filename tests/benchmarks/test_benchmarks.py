"""Every SPEC benchmark that exists (`benchmarks.registry.available()`) compiled by PITCHFORK with no
fallback to Halide, on x86-avx2 (in-process JIT), arm64 and hvx128 (qemu), with isel=pitchfork and
isel=llvm, for each of its parameter sets, at its `test_size` and (where the schedule allows odd
extents) its `odd_size`: the output must be bit-exact against the module's numpy reference and against
Halide 21's own `realize()` of the same pipeline and schedule.

One test item per benchmark x ISA x isel: the parameter sets and sizes of one item run in one batch
(`pitchfork.halide.api.run_many`: one JIT engine, or one harness build and qemu run), because compiling
is what costs. Every mismatching (parameter set, size) is reported, not just the first.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import pitchfork
from benchmarks import registry
from benchmarks.common import Benchmark, expected, halide_realize
from pitchfork.emit.run import tools_available
from pitchfork.halide.api import run_many

#: Halide's realize depends on the benchmark, ISA (schedule), parameter set and input only; both isels of
#: a benchmark x ISA share it when they run in the same worker.
_HALIDE: dict[tuple[str, str, int, tuple[int, ...]], np.ndarray] = {}


#: Known failures, keyed by (benchmark, ISA, isel), with what happens. "xfail": the test runs and must
#: fail (strict: an unexpected pass fails, so the entry cannot go stale). "crash": LLVM aborts the
#: process (an assertion in its backend), which would take the whole test run down, so it is skipped.
#: Empty means every benchmark compiles without fallback and is bit-exact everywhere.
KNOWN_GAPS: dict[tuple[str, str, str], tuple[str, str]] = {}


def _isa_param(isa: str) -> Any:
    if isa == "x86-avx2":
        return pytest.param(isa, id=isa)
    skip = pytest.mark.skipif(not tools_available(isa), reason=f"no qemu toolchain for {isa}")
    return pytest.param(isa, id=isa, marks=[skip, pytest.mark.qemu])


def _inputs(b: Benchmark, pi: int, size: tuple[int, ...]) -> list[Any]:
    # Deterministic per benchmark, parameter set and size (the same data for every ISA and isel).
    seed = [sum(map(ord, b.name)), pi, *size]
    return b.make_inputs(np.random.default_rng(seed), size, b.param_sets[pi])


def _halide(b: Benchmark, isa: str, pi: int, size: tuple[int, ...], values: list[Any]) -> np.ndarray:
    key = (b.name, isa, pi, size)
    if key not in _HALIDE:
        func, args = b.build(isa, b.param_sets[pi])
        _HALIDE[key] = halide_realize(func, args, values, b.output_size(size, b.param_sets[pi]), isa)
    return _HALIDE[key]


@pytest.mark.parametrize("isel", ["pitchfork", "llvm"])
@pytest.mark.parametrize("isa", [_isa_param(i) for i in ("x86-avx2", "arm64", "hvx128")])
@pytest.mark.parametrize("name", registry.available())
def test_benchmark_bit_exact(name: str, isa: str, isel: str, request: pytest.FixtureRequest) -> None:
    kind, why = KNOWN_GAPS.get((name, isa, isel), ("", ""))
    if kind == "crash":
        pytest.skip(f"known LLVM abort: {why}")
    if kind == "xfail":
        request.node.add_marker(pytest.mark.xfail(reason=why, strict=True))
    b = registry.get(name)
    sizes = [b.test_size] + ([b.odd_size] if b.odd_size is not None and isa in b.odd_size_isas else [])
    runs, cases = [], []
    for pi, pset in enumerate(b.param_sets):
        func, args = b.build(isa, pset)
        prog = pitchfork.compile(func, args, target=isa, isel=isel, name=f"{name}_{isel}_p{pi}", fallback=False)
        assert not prog.is_fallback
        for size in sizes:
            values = _inputs(b, pi, size)
            runs.append((prog, values, b.output_size(size, pset)))
            cases.append((pi, size, values))
    outs = run_many(runs)
    failures = []
    for (pi, size, values), got in zip(cases, outs):
        pset = b.param_sets[pi]
        want = expected(b, values, pset, isa)
        hal = _halide(b, isa, pi, size, values)
        where = f"{name} {isa} isel={isel} pset {pi} {pset} size {size}"
        assert got.shape == want.shape and got.dtype == want.dtype, \
            f"{where}: got {got.dtype}{got.shape}, reference {want.dtype}{want.shape}"
        if not np.array_equal(hal, want):
            failures.append(f"{where}: Halide's realize differs from the numpy reference "
                            f"({int(np.sum(hal != want))} elements): the module's reference is wrong")
        bad = np.argwhere(got != want)
        if len(bad):
            i = tuple(bad[0])
            failures.append(f"{where}: {len(bad)} of {got.size} elements differ from the reference, first at "
                            f"{i}: got {got[i]}, want {want[i]}")
        elif not np.array_equal(got, hal):
            failures.append(f"{where}: matches the reference but not Halide's realize")
    assert not failures, "\n".join(failures)
