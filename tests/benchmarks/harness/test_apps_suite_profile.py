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
