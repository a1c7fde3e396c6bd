"""`pitchfork bench --quick --bench sobel3x3` end to end (in process, to a temp dir), and failure rows.

No timing assertions: only that every row exists, succeeded, and carries finite positive numbers."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.harness.compare import trim
from benchmarks.harness.run import run_worker
from benchmarks.harness.variants import COMPILED, VARIANTS
from pitchfork.cli import main


def _pos(x: object) -> bool:
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def test_quick_sobel_writes_every_row_and_the_report(tmp_path: Path) -> None:
    assert main(["bench", "--quick", "--bench", "sobel3x3", "-o", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "results.json").read_text())
    assert json.loads((tmp_path / "baseline.json").read_text()) == trim(data)  # the copy to keep as a baseline
    assert data["meta"]["command"].startswith("pitchfork bench --quick --bench sobel3x3")
    rows = {(r["isa"], r["variant"]): r for r in data["rows"]}
    assert set(rows) == {(i, v) for i in ("x86-avx2", "arm64", "hvx128") for v in VARIANTS}
    for (isa, v), r in rows.items():
        assert r["status"] == "ok", (isa, v, r.get("errors"))
        if v in ("pitchfork_hand", "pitchfork_sel", "pitchfork_nopass") and (isa, v) != ("hvx128", "pitchfork_nopass"):
            # sobel3x3 fires no synthesized rule and no statement pass changes it: the same code, measured once
            # (on hvx128 pitchfork_nopass also turns off the shared aligned-block loads, which sobel's rows use)
            assert r["same_code_as"] == "pitchfork" and r["static"] == rows[(isa, "pitchfork")]["static"]
            continue
        st = r["static"]
        assert _pos(st["total"]) and st["unit"] == ("packets" if isa == "hvx128" else "cycles")
        assert st["loops"] and all(0 <= lp["share"] <= 1 + 1e-9 for lp in st["loops"])
        assert _pos(r["compile"]["total"])
        if isa == "x86-avx2":
            t = r["time"]
            assert _pos(t["median_ms"]) and t["reps"] == 3 and t["min_ms"] <= t["median_ms"] <= t["max_ms"]
        assert st["alt"]["total"] > 0 if isa != "x86-avx2" else st["alt"] == {}
        if v != "halide21":
            assert r["rules_fired"] if COMPILED[v].isel == "pitchfork" else r["rules_fired"] == {}
            if isa == "x86-avx2":
                assert r["exact"] is True
    md = (tmp_path / "RESULTS.md").read_text()
    assert "| sobel3x3 |" in md and "## Validation of the static method on x86" in md
    for isa in ("x86 AVX2", "ARM Neon (AArch64)", "Hexagon HVX 128B"):
        line = next(ln for ln in md.splitlines() if ln.startswith(f"| {isa} |"))
        assert "| 1 |" in line and "—" not in line.split("|")[4]  # a geomean exists
    assert "## Headline: instruction selection only" in md and "## Ablation: synthesized rules" in md
    for png in ("speedup.png", "compile_time.png", "ablation.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_benchmark_that_cannot_load_becomes_failure_rows() -> None:
    rows = run_worker({"bench": "no_such_benchmark", "isa": "arm64", "quick": True, "reps": 1,
                       "static_size": "quick"}, timeout=300, on_progress=lambda ev: None)
    assert [r["variant"] for r in rows] == list(VARIANTS)
    assert all(r["status"] == "failed" and "unknown benchmark" in r["errors"][0] for r in rows)


def test_bad_options_are_one_line_errors(capsys) -> None:  # type: ignore[no-untyped-def]
    assert main(["bench", "--bench", "nope"]) == 2
    assert main(["bench", "--isa", "mips"]) == 2
