"""benchmarks/harness/report.py on hand-made result rows (nothing compiled or run): parameter-set
labels, how geomeans fold parameter sets, the paper's figures beside ours, and old rows without a
parameter set."""

from __future__ import annotations

import argparse
import math
from typing import Any

from benchmarks.harness import report, tables
from benchmarks.harness.run import add_arguments, command_line, default_psets


def _row(bench: str, variant: str, total: float, pset: int | None = 0, isa: str = "arm64") -> dict[str, Any]:
    r: dict[str, Any] = {"bench": bench, "isa": isa, "variant": variant, "status": "ok", "errors": [],
                         "static": {"total": total, "unit": "cycles", "loops": [], "histogram": {}}}
    if pset is not None:
        r["pset"] = pset
    return r


def _data(rows: list[dict[str, Any]], benches: list[str], psets: str = "all") -> dict[str, Any]:
    return {"meta": {"benchmarks": benches, "isas": ["arm64"], "psets": psets, "command": "x", "date": "d",
                     "seconds": 1, "quick": False, "reps": 1, "static_size": "quick", "sizes": {},
                     "param_sets": {"conv": {"0": {"k": 3, "z": 1}, "1": {"k": 5, "z": 1}}},
                     "machine": {"cpu": "c", "llvm_host_cpu": "h", "cores": 2, "load_average": [0, 0, 0]},
                     "versions": {}}, "rows": rows}


def _three(bench: str, pset: int | None, speedup: float, vs_halide: float) -> list[dict[str, Any]]:
    # cost: pitchfork 100, llvm 100 * speedup, halide 100 * vs_halide
    return [_row(bench, "pitchfork", 100.0, pset), _row(bench, "llvm", 100.0 * speedup, pset),
            _row(bench, "halide21", 100.0 * vs_halide, pset)]


def test_parameter_sets_are_labelled_and_each_benchmark_counts_once_in_the_geomean() -> None:
    rows = _three("conv", 0, 4.0, 1.0) + _three("conv", 1, 1.0, 0.25) + _three("add", 0, 2.0, 1.0)
    data = _data(rows, ["conv", "add"])
    assert tables.labels(data) == ["conv p0", "conv p1", "add"]
    t = tables.table(data)
    assert math.isclose(t["conv p0"]["arm64"]["speedup"], 4.0) and math.isclose(t["conv p1"]["arm64"]["speedup"], 1.0)
    s = tables.summary(data)["arm64"]
    # conv = geomean(4, 1) = 2; with add = 2 the geomean is 2 (not geomean(4, 1, 2) = 2 ** (1 / 3) * ...)
    assert s["n"] == 2 and s["cases"] == 3 and math.isclose(s["geomean"], 2.0)
    assert s["max"] == 4.0 and s["argmax"] == "conv p0"
    assert math.isclose(s["vs_halide_geomean"], math.sqrt(0.5))  # conv: geomean(1, 0.25) = 0.5; add: 1
    assert s["losses_vs_halide"] == ["conv p1"]
    md = report.markdown(data)
    assert "| conv p0 |" in md and "| conv p1 |" in md and "| add |" in md
    assert "conv: p0 k=3; p1 k=5" in md  # only the values that differ between the sets


def test_rows_without_a_parameter_set_read_as_the_first() -> None:
    data = _data(_three("add", None, 2.0, 0.5), ["add"], psets="first")
    assert tables.labels(data) == ["add"]
    assert math.isclose(tables.summary(data)["arm64"]["geomean"], 2.0)


def test_the_paper_figures_stand_beside_ours() -> None:
    data = _data(_three("sobel3x3", 0, 1.5, 0.8), ["sobel3x3"], psets="first")
    md = report.markdown(data)
    sec = md[md.index("## The paper's figures beside ours"):md.index("## Per benchmark")]
    line = next(ln for ln in sec.splitlines() if ln.startswith("| geomean speedup over LLVM alone |"))
    assert "| 1.82x | 1.50x (1 benchmarks) |" in line
    sob = next(ln for ln in sec.splitlines() if ln.startswith("| sobel3x3 speedup"))
    assert "| 1.74x | 1.50x |" in sob
    assert "| 13% / 50% (matmul) |" not in sec  # hvx128 is not in this run's ISAs
    assert "not reported" in sec  # the paper has no Halide comparison


def test_psets_option_defaults_and_command_line() -> None:
    ap = argparse.ArgumentParser()
    add_arguments(ap)
    full, quick = ap.parse_args([]), ap.parse_args(["--quick"])
    assert default_psets(full) == "all" and default_psets(quick) == "first"
    assert "--psets" not in command_line(full) and "--psets" not in command_line(quick)
    assert command_line(ap.parse_args(["--psets", "first"])).endswith("--psets first")
    assert command_line(ap.parse_args(["--quick", "--psets", "all"])).endswith("--quick --psets all")
