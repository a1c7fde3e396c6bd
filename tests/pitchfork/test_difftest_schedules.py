"""Whole pipelines under random schedules (tests/pitchfork/difftest_schedules.py): a few cases per ISA,
compiled with isel=pitchfork and isel=llvm, RUN, and compared bit for bit with Halide's realize. The
generator found LLVM 22 Hexagon miscompiles of 2-D vector loads (pitchfork/backend/hvx_shuffles.py);
long runs use the CLI:

    python -m tests.pitchfork.difftest_schedules --target hvx128 --count 300 --seed 1
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.pitchfork.difftest_schedules import ISELS, random_case, run, summary

# (target, seed, case indices): 1-D and 2-D vectors (hvx128: all four 2-D, y or x fastest), producer
# stages, lookups, f32 halvings and tails, few enough to compile fast (CI has 2 cores).
CI_CASES = [("x86-avx2", 3301, list(range(12))), ("arm64", 3302, list(range(6))), ("hvx128", 3303, [0, 3, 4, 10])]


@pytest.mark.parametrize("target,seed,indices", [pytest.param(t, s, i, id=t, marks=() if t == "x86-avx2" else
                                                              pytest.mark.qemu) for t, s, i in CI_CASES])
def test_random_schedules_run_bit_exact(target: str, seed: int, indices: list[int]) -> None:
    reports: list[str] = []
    results = run(seed, indices, [target], ISELS, report=reports.append)
    if not results:
        pytest.skip(f"{target}: emulator or toolchain missing")
    for r in results:
        print(summary(r))
    assert not reports, "\n\n".join(reports[:5])
    assert all(r.ran >= len(indices) // 2 for r in results), [summary(r) for r in results]  # not all fallbacks
    assert not any(r.invalid for r in results), [summary(r) for r in results]


def test_cases_are_deterministic_and_realizable() -> None:
    """A case is a function of (seed, index) alone, and Halide accepts what the generator sizes."""
    for k in range(8):
        case = random_case(11, k)
        assert case == random_case(11, k)
        ns = case.build()
        for p, arr in zip(ns["params"], case.inputs()):
            import halide as hl

            p.set(hl.Buffer(arr))
        out = np.asarray(ns["f"].realize(ns["size"]))
        assert out.shape == tuple(reversed(ns["size"]))
