"""The generated reports: SYNTH_RESULTS.md (synth/report.py) and the ablation section
(benchmarks/harness/ablation_report.py) render what the run measured, failures included."""

from __future__ import annotations

from pathlib import Path

from benchmarks.harness import ablation_report
from synth import report


def _run_summary() -> dict:
    return {
        "command": "pitchfork-synth --jobs 1", "git": "abc1234", "date": "2026-11-24T03:00:00+00:00",
        "cores": 2, "load_average": [9.5, 9.0, 8.0], "seconds": 1800.0, "written": 30,
        "written_by_stage": {"lift": 26, "lower:arm64": 4}, "rules_per_minute": 1.0, "terms": 10_000_000,
        "terms_per_second": 25_000.0, "tasks": 1400,
        "stages": {"corpus": {"seen": 1400, "cached": 0, "run": 0, "not_run": 0, "outcomes": {}, "decisions": {},
                              "generalized": 0, "written": 0, "seconds": 9.0},
                   "lift": {"seen": 832, "cached": 0, "run": 832, "not_run": 0,
                            "outcomes": {"optimal": 500, "budget": 280, "synthesized": 52},
                            "decisions": {"written": 26, "subsumed": 20, "duplicate": 6}, "generalized": 40,
                            "written": 26, "seconds": 1200.0}},
    }


def test_synth_results_page_states_time_rate_and_outcomes() -> None:
    md = report.markdown(_run_summary())
    assert "**Wall time 30.0 min**" in md and "**1.00 rules per minute**" in md
    assert "| lift | 832 | 832 | 0 | 500 | 280 | 52 | 26 | duplicate 6, subsumed 20 | 1200 |" in md
    assert "25,000 candidate terms/s" in md


def test_ablation_section_geomean_failures_and_plot(tmp_path: Path) -> None:
    data = {
        "meta": {"benchmarks": ["a", "b", "c"], "isas": ["arm64", "x86-avx2"], "quick": True, "reps": 3,
                 "seconds": 10.0, "date": "2026-11-24T03:30:00Z", "load_average": (1.0, 1.0, 1.0)},
        "cells": [
            {"bench": "a", "isa": "arm64", "status": "same-code", "gain": 1.0},
            {"bench": "b", "isa": "arm64", "status": "measured", "gain": 1.21,
             "rows": {"synth": {"pitchfork": {"synth_fired": {"synth_x": 8}}}}},
            {"bench": "c", "isa": "arm64", "status": "failed", "why": "compile: boom"},
            {"bench": "a", "isa": "x86-avx2", "status": "measured", "gain": 0.98, "rows": {}},
            {"bench": "b", "isa": "x86-avx2", "status": "same-code", "gain": 1.0},
            {"bench": "c", "isa": "x86-avx2", "status": "same-code", "gain": 1.0},
        ],
    }
    (tmp_path / "synth_run.json").write_text(__import__("json").dumps(_run_summary()))
    md = ablation_report.markdown(data, tmp_path)
    assert "| b | **1.21x** (8 synthesized rewrites) | 1.00x (same code) |" in md
    assert "failed (compile: boom)" in md and "c/arm64: compile: boom" in md
    assert f"{(1.0 * 1.21) ** 0.5:.3f}x (max 1.21x, 2 benchmarks)" in md  # failures are not counted as 1
    assert "**30.0 min wall**" in md and "**1.00 rules per minute**" in md
    ablation_report.plot(data, tmp_path / "ablation.png")
    assert (tmp_path / "ablation.png").stat().st_size > 1000
