"""`pitchfork bench --suite apps` (benchmarks/harness/apps_suite.py): one small app through the whole run
(both thread counts, each contender and thread count in its own worker process, outputs checked against
Halide 21, figures written to the named folder) in both timing modes (single call, and back-to-back with
one k for the four workers), the choice of k, and a clear error for an unknown app. No timing is asserted:
only that the figures exist and are positive."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from benchmarks.harness.apps_suite import B2B_CALLS, NOTES_HEADING, kept_notes, output_paths, report, scheduling


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
    # back-to-back mode beside the single-call one: one k for the app, run by each of the four workers
    k = rows[0]["b2b_calls"]
    assert k == B2B_CALLS == 10 and rows[1]["b2b_calls"] == k
    for r in rows:
        assert r["b2b_calls_by_worker"] == {"p1": [k], "h1": [k], "p2": [k], "h2": [k]}
        assert r["pitchfork_b2b_ms"] > 0 and r["halide21_b2b_ms"] > 0 and r["speedup_b2b"] > 0
        timings = r["timings_b2b"]
        assert len(timings["pitchfork"]["samples_ms"]) == len(timings["halide21"]["samples_ms"]) == 2
    assert rows[1]["pitchfork_scaling_b2b"] > 0 and rows[1]["halide21_scaling_b2b"] > 0
    assert "load average" in run["load_before"] and run["scheduling"].startswith("nice ")
    assert run["command"] == "pitchfork bench --suite apps --quick --bench erode --reps 2"
    md = (tmp_path / "APPS.md").read_text()
    assert "| erode |" in md and "single: PITCHFORK ms" in md and "b2b: PITCHFORK ms/call" in md


def test_results_are_written_in_benchmarks_only_with_write_results(tmp_path: Path) -> None:
    import argparse

    md, js = output_paths(argparse.Namespace(output_dir=str(tmp_path), write_results=False))
    assert (md, js) == (tmp_path / "APPS.md", tmp_path / "apps.json")
    md, js = output_paths(argparse.Namespace(output_dir=None, write_results=False))
    assert md.parent == Path.cwd() / "pitchfork-apps-out"
    md, js = output_paths(argparse.Namespace(output_dir=None, write_results=True))
    assert (md.name, js.name, md.parent.name) == ("RESULTS_APPS.md", "apps_results.json", "benchmarks")


def test_a_rewrite_keeps_the_notes_section() -> None:
    """The hand-written notes (commands and figures of one-off measurements) survive --write-results."""
    old = f"# Apps suite\n\n| table |\n\n{NOTES_HEADING}\n\n### Session 32\nfigures\n\n"
    assert kept_notes(old) == f"\n{NOTES_HEADING}\n\n### Session 32\nfigures\n"
    assert kept_notes("# Apps suite\n| table |\n") == ""


def test_write_results_refuses_an_output_folder(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--write-results",
                        "--bench", "erode", "-o", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["error: --write-results writes into benchmarks/; it does not take -o"]


def test_report_shows_both_modes_side_by_side() -> None:
    row = {"app": "blur", "size": [8, 4], "threads": 2, "pitchfork_ms": 1.0, "halide21_ms": 2.0,
           "speedup": 2.0, "pitchfork_scaling": 1.1, "halide21_scaling": 1.3, "b2b_calls": 7,
           "pitchfork_b2b_ms": 0.5, "halide21_b2b_ms": 1.5, "speedup_b2b": 3.0, "pitchfork_scaling_b2b": 1.9,
           "halide21_scaling_b2b": 1.8, "max_abs_diff": 0.0, "tolerance": 0.0}
    line = [ln for ln in report([row]).splitlines() if ln.startswith("| blur |")][0]
    assert line == ("| blur | 8x4 | 2 | 1.000 | 2.000 | 2.00x | 1.10x / 1.30x | 7 | 0.500 | 1.500 | 3.00x "
                    "| 1.90x / 1.80x | 0 / 0 |")


def test_unknown_app_is_one_line_error(tmp_path: Path) -> None:
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--bench", "nope",
                        "-o", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 2
    assert p.stderr.strip().splitlines() == ["error: unknown app(s) nope; the apps are blur, erode, local_laplacian, "
                                             "bilateral_grid, interpolate"]


def test_scheduling_names_this_process_nice_value() -> None:
    import os

    got = scheduling()
    assert got.startswith(f"nice {os.nice(0)}") and got.endswith(f"; {os.cpu_count()} CPUs")


def test_worker_orders_are_a_balanced_latin_square() -> None:
    """Each of the four workers comes first, second, third and last once, and right after each other
    worker exactly once, over the four orders (no worker always inherits the same predecessor)."""
    from benchmarks.harness.apps_suite import WILLIAMS_ORDERS

    assert all(sorted(o) == [0, 1, 2, 3] for o in WILLIAMS_ORDERS)
    assert all(sorted(o[i] for o in WILLIAMS_ORDERS) == [0, 1, 2, 3] for i in range(4))
    pairs = [(o[i], o[i + 1]) for o in WILLIAMS_ORDERS for i in range(3)]
    assert sorted(pairs) == sorted((a, b) for a in range(4) for b in range(4) if a != b)


def test_placed_output_is_the_same_placement_for_both_contenders() -> None:
    """Both workers write into `placed_output`'s array (ours directly, Halide through `hl.Buffer`): it
    starts OUTPUT_PAGE_OFFSET bytes into a page whatever the type, in numpy axis order, and Halide's
    buffer over it is the same memory with the Halide extents."""
    import halide as hl
    import numpy as np

    from benchmarks.harness.apps_suite import OUTPUT_PAGE_OFFSET, placed_output

    for t, size, dtype in ((hl.UInt(16), [37, 5], np.uint16), (hl.Float(32), [64, 48, 3], np.float32),
                           (hl.UInt(8), [1, 1, 1], np.uint8)):
        a = placed_output(t, size)
        assert a.dtype == dtype and a.shape == tuple(reversed(size)) and a.flags.c_contiguous
        assert a.ctypes.data % 4096 == OUTPUT_PAGE_OFFSET
        b = hl.Buffer(a)
        assert [b.dim(d).extent() for d in range(b.dimensions())] == size
        assert np.asarray(b).ctypes.data == a.ctypes.data


def test_disable_huge_pages_turns_them_off_for_the_process() -> None:
    """`disable_huge_pages` (the workers' `--no-huge-pages`) clears THP_enabled in /proc/self/status; run in
    a child so this test process keeps its own setting."""
    import pytest

    from benchmarks.harness.apps_suite import huge_pages_enabled

    if huge_pages_enabled() is None:
        pytest.skip("this kernel does not report THP_enabled")
    code = ("from benchmarks.harness.apps_suite import disable_huge_pages, huge_pages_enabled as e\n"
            "before = e(); disable_huge_pages(); print(before, e())")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == [str(huge_pages_enabled()), "False"]


def test_no_huge_pages_reaches_every_worker_and_the_record(tmp_path: Path) -> None:
    """`--no-huge-pages`: both contenders' workers at both thread counts run with huge pages off, and the
    command, the json and the report header say so."""
    import pytest

    from benchmarks.harness.apps_suite import huge_pages_enabled

    if huge_pages_enabled() is None:
        pytest.skip("this kernel does not report THP_enabled")
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--quick", "--reps", "1",
                        "--bench", "erode", "--no-huge-pages", "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    run = json.loads((tmp_path / "apps.json").read_text())
    assert run["command"] == "pitchfork bench --suite apps --quick --bench erode --reps 1 --no-huge-pages"
    assert run["huge_pages"] == "off in every worker"
    assert [r["huge_pages"] for r in run["rows"]] == [{"pitchfork": False, "halide21": False}] * 2
    assert "Transparent huge pages: off in every worker" in (tmp_path / "APPS.md").read_text()


def test_processes_per_worker_run_and_are_recorded(tmp_path: Path) -> None:
    """`--processes 2`: each of the four workers is two processes (both outputs checked, the samples taken
    in turn), and the command, the json and the report header say so; 0 is refused in one line."""
    p = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--quick", "--reps", "2",
                        "--bench", "erode", "--processes", "2", "-o", str(tmp_path)],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-2000:]
    run = json.loads((tmp_path / "apps.json").read_text())
    assert run["command"] == "pitchfork bench --suite apps --quick --bench erode --reps 2 --processes 2"
    assert run["processes_per_worker"] == 2
    for r in run["rows"]:
        assert "error" not in r and r["max_abs_diff"] == 0
        assert len(r["timings"]["pitchfork"]["samples_ms"]) == len(r["timings_b2b"]["halide21"]["samples_ms"]) == 2
    assert "2 processes per worker, sampled in turn" in (tmp_path / "APPS.md").read_text()
    bad = subprocess.run([sys.executable, "-m", "pitchfork", "bench", "--suite", "apps", "--bench", "erode",
                          "--processes", "0", "-o", str(tmp_path)], capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines() == ["error: --processes must be at least 1"]
