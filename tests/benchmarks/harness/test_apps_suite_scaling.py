"""`python -m benchmarks.harness.apps_suite_scaling` (benchmarks/harness/apps_suite_scaling.py): the suite's
measurement at a size of our choosing (outputs checked against Halide's), the C copy control, the report;
a bad size is a one-line error. No timing is asserted."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.harness.apps_suite_scaling import copy_control, main


def test_blur_at_a_small_size_and_the_copy_control(tmp_path: Path) -> None:
    assert main(["blur", "--sizes", "64x40", "--reps", "1", "--processes", "1", "-o", str(tmp_path)]) == 0
    text = (tmp_path / "SCALING.md").read_text()
    row = next(line for line in text.splitlines() if line.startswith("| 64x40 |"))
    assert "error" not in row and row.count("|") == 10
    times = copy_control(64 * 40, tmp_path, calls=5)  # exits 3 if the copy's values are wrong
    assert set(times) == {"1", "2_fixed", "2_swapped"} and all(t >= 0 for t in times.values())


def test_bad_size_is_one_line_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["blur", "--sizes", "64by40", "-o", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: --sizes '64by40': WxH[xC] sizes separated by commas expected"]
