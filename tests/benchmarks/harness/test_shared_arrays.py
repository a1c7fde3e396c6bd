"""The x86 timing runs every contender on the same arrays (benchmarks/harness/worker._share_arrays):
a kernel bound with `direct_kernel(..., share=k)` reads and writes k's arrays, and a Halide runner
rebound with `HalideRunner.rebind` realizes into the given array, both with the same results."""

from __future__ import annotations

import numpy as np

import pitchfork
from benchmarks.harness import halide21
from benchmarks.harness.kernel import direct_kernel
from benchmarks.harness.worker import _share_arrays
from benchmarks.registry import get


def test_contenders_share_the_first_kernels_arrays() -> None:
    bench = get("sobel3x3")
    pset = bench.param_sets[0]
    size = [160, 12]
    values = bench.make_inputs(np.random.default_rng(3), size, pset)
    progs = {isel: pitchfork.compile(*bench.build("x86-avx2", pset), target="x86-avx2", isel=isel,
                                     fallback=False) for isel in ("pitchfork", "llvm")}
    kernels = {isel: direct_kernel(p, values, size) for isel, p in progs.items()}
    h = halide21.halide_runner(bench, pset, values, size)
    h.run()
    ref = h.result()
    kernels["llvm"].run()
    own = kernels["llvm"].outputs[0]
    assert np.array_equal(own, ref)
    own[...] = 7
    runners = {**{i: k.run for i, k in kernels.items()}, "halide21": h.run}
    _share_arrays(progs, kernels, runners, h, values, size)
    base = kernels["pitchfork"]
    assert np.asarray(h.out).ctypes.data == base.outputs[0].ctypes.data  # wrapped, not copied
    for name in ("llvm", "halide21", "pitchfork"):
        base.outputs[0][...] = 0
        runners[name]()
        assert np.array_equal(base.outputs[0], ref), name
    assert (own == 7).all()  # the llvm kernel's own arrays are left alone
