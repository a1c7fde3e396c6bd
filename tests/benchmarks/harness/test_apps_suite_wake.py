"""benchmarks/harness/apps_suite_wake.py: the probe calls Halide 21's runtime `halide_do_par_for` over
fixed-work tasks and counts which thread ran them (no timing is asserted: the machine is shared)."""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness.apps_suite_wake import build, main, run


def test_one_thread_runs_every_task_itself(tmp_path: Path) -> None:
    exe = build(tmp_path)
    r = run(exe, tasks=8, task_us=20, calls=3, gap_us=0, threads=1)
    assert (r.tasks, r.calls, r.worker_share, r.calls_without_worker) == (8, 3, 0.0, 3)
    assert 0 < r.best_us <= r.median_us


def test_two_threads_share_is_a_fraction_and_the_table_prints(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    r = run(build(tmp_path), tasks=16, task_us=50, calls=4, gap_us=1000, threads=2)
    assert 0.0 <= r.worker_share <= 1.0 and 0 <= r.calls_without_worker <= 4
    assert main(["-o", str(tmp_path), "--tasks", "4", "--task-us", "10", "--gap-ms", "0", "--calls", "2"]) == 0
    out = capsys.readouterr().out
    assert "| 4 x 10 | 0 |" in out and "load before" in out
