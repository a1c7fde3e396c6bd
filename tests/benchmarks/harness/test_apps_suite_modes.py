"""The timing-mode diagnostic (benchmarks/harness/apps_suite_modes.py): its C loop calls the same JIT'd
kernel with the same arguments as the prepared call (bit-exact against Halide's realize, also when the
kernel runs its parallel loop on Halide's pool), the copy control computes a copy, and the pool
counters read. No timing is asserted."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from benchmarks.apps import APPS
from benchmarks.apps.common import halide_realize
from benchmarks.harness.apps_suite_modes import _pool_counters, c_loop, cache_probe, subject
from pitchfork.api import compile as pf_compile
from pitchfork.backend.halide_runtime import set_num_threads


def test_c_loop_runs_the_kernel_with_the_prepared_arguments(tmp_path: Path) -> None:
    app = APPS["blur"].build("x86-avx2")
    values = app.make_inputs(np.random.default_rng(4), app.test_size)
    size = app.output_size(app.test_size)
    want = halide_realize(app, values, size)
    prog = pf_compile(app.output, list(app.args), target="x86-avx2", name="blur")
    call = prog.prepare(*values, size=size)
    set_num_threads(2)  # the pool with a worker: the tasks run on both threads
    try:
        call.outputs[0].fill(0)
        c_loop(call, tmp_path)(3)
        assert np.array_equal(call.outputs[0], want)
    finally:
        set_num_threads(0)  # back to the default (HL_NUM_THREADS, or the number of cores)


def test_copy_control_is_a_copy_with_blurs_schedule() -> None:
    out, args, values, size = subject("blur", control=True)
    assert out.name() == "copy" and size == [1536, 2560]
    prog = pf_compile(out, args, target="x86-avx2", name="copy")
    assert not prog.fallback_reason
    assert np.array_equal(prog(*values, size=size), values[0])
    assert len(_pool_counters()) == 3 and min(_pool_counters()) >= 0


@pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the probe pins a thread to each of two CPUs")
def test_cache_probe_reports_three_read_times(tmp_path: Path) -> None:
    """The probe builds, runs its two pinned threads to the end and reports three read times (their
    values depend on the machine and its load, and are not asserted)."""
    got = cache_probe(tmp_path)
    assert set(got) == {"warm_same_cpu_us", "written_on_other_cpu_us", "cold_us"}
    assert all(v > 0 for v in got.values())
