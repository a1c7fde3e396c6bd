"""Every SPEC benchmark that exists (`benchmarks.registry.available()`) compiled by PITCHFORK with no
fallback to Halide, on x86-avx2 (in-process JIT), arm64 and hvx128 (qemu), with isel=pitchfork and
isel=llvm, for each of its parameter sets, at its `test_size` and (where the schedule allows odd
extents) its `odd_size`: the output must be bit-exact against the module's numpy reference and against
Halide 21's own `realize()` of the same pipeline and schedule.

One test item per benchmark x ISA x isel: the parameter sets and sizes of one item run in one batch
(`pitchfork.api.run_many`: one JIT engine, or one harness build and qemu run), and parameter sets
whose pipelines lower to the same Halide statement share one compiled program, because compiling is
what costs. Every mismatching (parameter set, size) is reported, not just the first.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

import pitchfork
from benchmarks import registry
from benchmarks.common import Benchmark, expected, halide_realize
from pitchfork.backend.run import tools_available
from pitchfork.api import run_many
from pitchfork.frontend.capture import capture_stmt
from pitchfork.targets import canonical

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


def _compile_once(progs: dict[str, Any], func: Any, args: list[Any], isa: str, isel: str, name: str) -> Any:
    """`pitchfork.compile(func, args)`, reusing the program of an earlier parameter set whose pipeline
    Halide lowers to the same statement: the parameter sets of most benchmarks differ only in the
    values of runtime Params (zero points, multipliers), so their statements, and hence the programs
    PITCHFORK compiles from them, are identical. Compiling is what costs (minutes for matmul on HVX);
    every parameter set still runs, with its own values, on the program compiled for its statement."""
    if progs:
        key = _up_to_renaming(capture_stmt(func, args, canonical(isa)).text)
        if key in progs:
            return progs[key]
    prog = pitchfork.compile(func, args, target=isa, isel=isel, name=name, fallback=False)
    assert prog.captured is not None
    progs[_up_to_renaming(prog.captured.text)] = prog
    return prog


def _up_to_renaming(text: str) -> str:
    """`text` with the names Halide generates from global counters renumbered in order of first
    appearance within their class: uniquifying suffixes (a pipeline built twice names its Func `add`,
    then `add$1`: class `add`) and the names of unnamed Vars / RVars / Funcs / temporaries (`v2`, `r106`,
    `f3`, `t332`: classes `v`, `r`, `f`, `t`). Two statements map to the same text exactly when one is
    the other with such names renamed one-to-one within their classes (canonical names contain `#`,
    which no Halide name does); a name alone in its class (`min`, `uint8x128`) keeps its meaning."""
    seen: dict[str, dict[str, int]] = {}

    def rename(m: re.Match[str]) -> str:
        tok = m.group(0)
        gen = re.fullmatch(r"([vrft])\d+|(.+?)\$\d+", tok)  # `v2`, `v7` -> class `v`; `add$1` -> `add`
        base = (gen.group(1) or gen.group(2)) if gen else tok  # `add` -> `add`
        ids = seen.setdefault(base, {})
        return f"{base}#{ids.setdefault(tok, len(ids))}"

    return re.sub(r"[A-Za-z_][\w$]*", rename, text)


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
    progs: dict[str, Any] = {}  # captured Halide statement -> its compiled program
    for pi, pset in enumerate(b.param_sets):
        func, args = b.build(isa, pset)
        prog = _compile_once(progs, func, args, isa, isel, f"{name}_{isel}_p{pi}")
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
