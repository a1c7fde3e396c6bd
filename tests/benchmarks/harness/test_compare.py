"""The before/after section (benchmarks/harness/compare.py) on the recorded session-2 run."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from benchmarks.harness import compare, report, tables

BASE = Path(__file__).resolve().parents[3] / "benchmarks" / "baselines" / "session2-32f27a6.json"


def test_unchanged_run_has_no_bold_rows() -> None:
    data = compare.load(BASE)
    text = "\n".join(compare.section(data, data))
    assert "**" not in text
    assert "| sobel3x3 | arm64 | 1.72x → 1.72x |" in text


def test_a_faster_kernel_shows_in_its_row_and_the_geomean() -> None:
    before = compare.load(BASE)
    after = copy.deepcopy(before)
    for r in after["rows"]:
        if r["bench"] == "sobel3x3" and r["isa"] == "arm64" and r["variant"] == "pitchfork":
            r["static"]["total"] /= 2
    lines = compare.section(before, after)
    row = next(x for x in lines if x.startswith("| sobel3x3 | arm64 |"))
    sp = tables.table(before)["sobel3x3"]["arm64"]["speedup"]
    assert f"**{sp:.2f}x → {2 * sp:.2f}x**" in row
    geo = next(x for x in lines if x.startswith("| ARM Neon"))
    g0 = tables.summary(before)["arm64"]["geomean"]
    g1 = tables.summary(after)["arm64"]["geomean"]
    assert g1 > g0 and f"{g0:.2f}x → {g1:.2f}x" in geo


def test_the_report_names_a_missing_baseline(tmp_path: Path) -> None:
    data = compare.load(BASE)
    data["meta"]["baseline"] = str(tmp_path / "gone.json")
    assert any("not found" in x for x in compare.baseline_section(data))
    data["meta"]["baseline"] = str(BASE)
    assert compare.baseline_section(data)[0].startswith("## Before and after")


def test_cli_refuses_a_bad_file(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    assert compare.main([str(tmp_path / "x.json"), str(BASE)]) == 2
    assert capsys.readouterr().out.startswith("error:")


def _untrimmed(data: dict) -> dict:
    """`data` with the fields a full results.json carries beside the compared ones."""
    full = copy.deepcopy(data)
    for i, r in enumerate(full["rows"]):
        r.update(errors=[], compile={"total": 1.0}, rules_fired={"r": 1})
        if r.get("time"):
            r["time"].update(q1_ms=1.0, samples_ms=[1.0 + i, 2.0 + i, 3.0])
        if r.get("static"):
            r["static"].update(loops=[{"share": 1.0}], histogram={"add": 3}, unit="cycles")
        if r.get("hot_loop"):
            r["hot_loop"].update(header=".LBB0_1", vector_ops=["vpaddw"])
    return full


def test_trim_keeps_exactly_what_the_section_reads() -> None:
    base = compare.load(BASE)
    full = _untrimmed(base)
    t = compare.trim(full)
    assert compare.section(full, base) == compare.section(t, base)
    assert compare.section(base, full) == compare.section(base, t)  # x86: the paired ratios of the samples
    assert compare.trim(t) == t and t["meta"] == base["meta"]
    row = next(r for r in t["rows"] if r.get("time"))
    assert set(row["time"]) == {"median_ms", "samples_ms"} and "errors" not in row
    assert compare.trim(base) == base  # session 2's kept baseline was trimmed to the same fields


def test_cli_trims_a_run(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    full = tmp_path / "results.json"
    full.write_text(json.dumps(_untrimmed(compare.load(BASE))))
    out = tmp_path / "kept.json"
    assert compare.main(["--trim", str(full), "-o", str(out)]) == 0
    assert compare.load(out) == compare.trim(compare.load(full))
    assert compare.main(["--trim", str(tmp_path / "gone.json"), "-o", str(out)]) == 2
    assert capsys.readouterr().out.startswith("error:")
