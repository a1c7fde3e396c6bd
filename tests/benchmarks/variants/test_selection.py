"""benchmarks/variants/selection.py: the cache modes give each child process the stated on-disk caches.
With `warm` the e-graph engine finds every shape's outcome in its store (no saturation) and with `cold`
it saturates them, and both engines produce the same assembly either way (blur3x3: one shape the
e-graph saturates)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.variants import selection


def test_cache_modes_warm_and_cold(tmp_path: Path) -> None:
    assert selection.main(["--isa", "x86-avx2", "--bench", "blur3x3", "--cache", "warm", "--cache", "cold",
                           "-o", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "selection.json").read_text())
    rows = {r["cache"]: r for r in data["rows"]}
    assert set(rows) == {"warm", "cold"}
    warm, cold = rows["warm"]["egraph"], rows["cold"]["egraph"]
    assert cold.get("saturated", 0) >= 1 and cold.get("stored", 0) == 0
    assert warm.get("stored", 0) == cold["saturated"] and warm.get("saturated", 0) == 0
    assert rows["warm"]["same_code"] and rows["cold"]["same_code"]
    assert data["summary"]["x86-avx2/warm"]["benchmarks"] == 1
    # CPU time beside wall time, per engine
    for r in rows.values():
        for e in ("greedy", "egraph"):
            assert 0 < r[f"{e}_selection_cpu_s"]
    assert data["summary"]["x86-avx2/cold"]["cpu_ratio"] > 0
    # the warm directory holds the store's entries; cold directories are removed after use
    assert any((tmp_path / "cache" / "x86-avx2-warm" / "egraph").glob("*.pickle"))
    assert not list((tmp_path / "cache").glob("cold-*"))


def test_results_section_carries_the_label() -> None:
    summary = {"load_average_1min_at_start": 0.5, "load_average_1min_at_end": 0.7, "repeat": 2, "label": "session 16, after",
               "hvx128/rules": {"greedy_selection_s": 1.0, "egraph_selection_s": 1.5, "ratio": 1.5,
                                "greedy_selection_cpu_s": 1.0, "egraph_selection_cpu_s": 1.4, "cpu_ratio": 1.4,
                                "same_code": 16, "benchmarks": 16}}
    md = selection._markdown(summary, [], ["--isa", "hvx128", "--label", "session 16, after"])
    assert md.startswith(f"## {selection.TITLE}\n\nRun: session 16, after\n")
    assert "--label 'session 16, after'" in md and "| hvx128 | rules | 1.00 | 1.50 | 1.50x |" in md
