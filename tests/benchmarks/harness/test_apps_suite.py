"""`pitchfork bench --suite apps` (benchmarks/harness/apps_suite.py): one small app through the whole run
(both thread counts, each contender and thread count in its own worker process, outputs checked against
Halide 21, figures written to the named folder), and a clear error for an unknown app."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


def test_suite_runs_one_app_at_both_thread_counts(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--quick", "--reps", "2",
                        "--bench", "erode", "-o", str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    run = json.loads((tmp_path / "apps.json").read_text())
    rows = run["rows"]
    assert [(r["app"], r["threads"]) for r in rows] == [("erode", 1), ("erode", 2)]
    for r in rows:
        assert "error" not in r and r["max_abs_diff"] == 0 and r["pitchfork_ms"] > 0 and r["halide21_ms"] > 0
        assert len(r["timings"]["pitchfork"]["samples_ms"]) == len(r["timings"]["halide21"]["samples_ms"]) == 2
    assert rows[1]["pitchfork_scaling"] > 0 and rows[1]["halide21_scaling"] > 0
    assert "load average" in run["load_before"]
    assert "| erode |" in (tmp_path / "APPS.md").read_text()


def test_unknown_app_is_one_line_error(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--bench", "nope",
                        "-o", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["error: unknown app(s) nope; the apps are blur, erode, local_laplacian, "
                                             "bilateral_grid, interpolate"]
