"""benchmarks/harness/apps_suite_profile.py: an app compiled ahead of time by both contenders, each in
a C driver of its own; the drivers run (under perf when it is there) and their outputs are identical
(blur is an integer app)."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from benchmarks.harness.apps_suite_profile import build, outputs_agree, profile, thread_shares


def test_blur_drivers_agree_and_profile_their_stages(tmp_path: Path) -> None:
    exes = build("blur", tmp_path, size=[200, 96])
    rows = {who: profile(exe, 3, 1) for who, exe in exes.items()}
    for who, (line, _) in rows.items():
        assert line.startswith(f"blur_{who}: best ") and "over 3 calls" in line
    ours, theirs = (np.fromfile(tmp_path / f"blur_{w}.out", np.uint16) for w in ("pf", "hl"))
    assert ours.size == 200 * 96 and np.array_equal(ours, theirs)
    profile(exes["pf"], 3, 2)  # two threads: each thread's share of the samples
    shares = thread_shares(exes["pf"])
    if shutil.which("perf") is not None:
        assert 1 <= len(shares) and abs(sum(shares) - 1) < 1e-9 and shares == sorted(shares, reverse=True)


def test_outputs_are_compared_as_their_own_element_type(tmp_path: Path) -> None:
    """local_laplacian's output is u16 with a tolerance of 2: within it, the drivers agree (read as
    float32 bytes, its pixel pairs were NaNs and every profile said DIFFER); 3 apart, they do not."""
    ours = np.arange(1000, dtype=np.uint16) * 60
    ours.tofile(tmp_path / "local_laplacian_pf.out")
    (ours + np.uint16(2)).tofile(tmp_path / "local_laplacian_hl.out")
    assert outputs_agree("local_laplacian", tmp_path)
    (ours + np.uint16(3)).tofile(tmp_path / "local_laplacian_hl.out")
    assert not outputs_agree("local_laplacian", tmp_path)


def test_parallel_loop_log_gives_both_contenders_structure(tmp_path: Path) -> None:
    """erode's two stages are each a parallel loop over 8-row strips inside a loop over the 3 channels:
    with the handler on, both drivers report the same two loops, 3 calls per pipeline call each, and
    the same tasks per call; without it the drivers print no log."""
    from benchmarks.harness.apps_suite_parlog import compare, run

    exes = build("erode", tmp_path, size=[64, 40, 3])
    runs = {who: run(exe, 2, 2)[1] for who, exe in exes.items()}
    for loops in runs.values():
        assert len(loops) == 2
        for p in loops:
            # the driver's first call and its 2 timed calls, one loop per channel each
            assert p.calls == 3 * 3 and p.min_size == p.max_size > 0 and p.tasks == p.calls * p.min_size
            assert 0.0 <= p.caller_share <= 1.0 and 0 <= p.worker_joined <= p.calls and p.join_us >= 0.0
            assert p.tail_us >= 0.0
    assert [p.name.split("par_for")[1][1:8] for p in runs["pf"]] == ["erode_x", "erode_y"]
    assert compare(runs["pf"], runs["hl"]) == []
    import subprocess

    quiet = subprocess.run([str(exes["pf"]), "1"], capture_output=True, text=True, check=True).stdout
    assert "PARLOG" not in quiet and quiet.startswith("erode_pf: best ")


def test_parallel_loop_log_parse_and_compare() -> None:
    from benchmarks.harness.apps_suite_parlog import ParLoop, compare, parse

    out = ("x: best 1 ms\nPARLOG 0x401000 4 32 8 8 10.5 20.0 50.0 0.5 3 12.5 4.25\n"
           "PARLOG 0x402000 2 4 2 2 1.0 1.0 3.0 1.0 0 0.000 0.5\n")
    loops = parse(out, {0x401000: "app_pf.par_for.f.s0.y.y"})
    assert loops == [ParLoop("app_pf.par_for.f.s0.y.y", 4, 32, 8, 8, 10.5, 20.0, 50.0, 0.5, 3, 12.5, 4.25),
                     ParLoop("0x402000", 2, 4, 2, 2, 1.0, 1.0, 3.0, 1.0, 0, 0.0, 0.5)]
    assert loops[0].tasks_per_call == 8
    assert compare(loops, loops) == []
    other = [loops[0], ParLoop("g", 2, 8, 4, 4, 1.0, 1.0, 3.0, 1.0, 0, 0.0, 0.0)]
    assert compare(loops, other) == ["0x402000: 2 tasks per call (2..2) against g: 4 (4..4)"]
    assert compare(loops, loops[:1]) == ["2 parallel loops against 1"]


def test_same_heap_links_one_allocator_into_both_drivers(tmp_path: Path) -> None:
    """--heap-offset: both drivers define the same strong halide_malloc/halide_free (the driver's, not
    a runtime's weak one), and their outputs still agree."""
    import subprocess

    import pytest

    with pytest.raises(ValueError, match="multiple of 128"):
        build("blur", tmp_path / "bad", size=[64, 32], heap_offset=100)
    exes = build("blur", tmp_path, size=[200, 96], heap_offset=1024)
    for exe in exes.values():
        syms = subprocess.run(["nm", str(exe)], capture_output=True, text=True, check=True).stdout
        kinds = {f[2]: f[1] for f in (line.split() for line in syms.splitlines()) if len(f) == 3}
        assert kinds.get("halide_malloc") == "T" and kinds.get("halide_free") == "T"
        subprocess.run([str(exe), "2"], capture_output=True, text=True, check=True)
    assert outputs_agree("blur", tmp_path)
