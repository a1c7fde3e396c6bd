"""The harness's rows as tables: cases (benchmark x parameter set), the metric of a row, per-case
ratios and per-ISA geomeans. Pure functions of `results.json` data, shared by the report, the
before/after comparison and the lean-codegen section (kept below all three so none imports another
for them). Nothing here measures or writes anything.
"""

from __future__ import annotations

import math
from typing import Any, Optional

ISA_TITLE = {"x86-avx2": "x86 AVX2", "arm64": "ARM Neon (AArch64)", "hvx128": "Hexagon HVX 128B"}
#: The paper's section 5.1 / Figure 5: geomean (max) speedup over LLVM alone per ISA. The per-benchmark
#: bars of Figure 5 are not given as numbers in the text.
PAPER = {"x86-avx2": (1.31, 3.40), "arm64": (1.82, 8.33), "hvx128": (2.44, 5.76)}


def fmt(x: Optional[float], nd: int = 2, suffix: str = "x") -> str:
    """A ratio as the tables print it (`1.23x`), `—` for none."""
    return "—" if x is None else f"{x:.{nd}f}{suffix}"


def cases(data: dict[str, Any]) -> list[tuple[str, str, int]]:
    """(label, benchmark, parameter set index) of every case the run covers, in benchmark order. The
    label is the benchmark's name when the run has only its first parameter set, else `name p<k>`.
    Rows written before parameter sets were recorded count as set 0."""
    seen: dict[str, set[int]] = {}
    for r in data["rows"]:
        seen.setdefault(r["bench"], set()).add(int(r.get("pset", 0)))
    out = []
    for b in data["meta"]["benchmarks"]:
        ps = sorted(seen.get(b, {0}))
        out += [(b if ps == [0] else f"{b} p{k}", b, k) for k in ps]
    return out


def labels(data: dict[str, Any]) -> list[str]:
    return [c[0] for c in cases(data)]


def index_rows(data: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    """(case label, ISA, variant) -> row."""
    label = {(b, k): lab for lab, b, k in cases(data)}
    return {(label[(r["bench"], int(r.get("pset", 0)))], r["isa"], r["variant"]): r for r in data["rows"]
            if (r["bench"], int(r.get("pset", 0))) in label}


def metric(row: Optional[dict[str, Any]], isa: str, static: bool = False) -> Optional[float]:
    """The cost of a row: x86 median ms (or its static estimate), else the static estimate."""
    if row is None or row.get("status") != "ok":
        return None
    if isa == "x86-avx2" and not static:
        t = row.get("time")
        return t["median_ms"] if t else None
    s = row.get("static")
    return s["total"] if s and s.get("total") else None


def ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a and b else None


def measured_ratio(ra: Optional[dict[str, Any]], rb: Optional[dict[str, Any]], a: Optional[float],
                   b: Optional[float], key: str = "time") -> Optional[float]:
    """a / b, the metrics of rows `ra` and `rb`: on x86 the paired ratio of their interleaved timings
    (`measure.paired_ratio`, robust to the shared machine's bursts), else the plain ratio."""
    if not a or not b:
        return None
    if ra and rb and (ra.get(key) or {}).get("samples_ms") and (rb.get(key) or {}).get("samples_ms"):
        from benchmarks.harness.measure import paired_ratio

        return paired_ratio(ra[key], rb[key])
    return a / b


def geomean(xs: list[float]) -> Optional[float]:
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def table(data: dict[str, Any]) -> dict[str, dict[str, dict[str, Optional[float]]]]:
    """case label -> isa -> {speedup, vs_halide, static_speedup, static_vs_halide, halide_vs_llvm}."""
    idx = index_rows(data)
    out: dict[str, dict[str, dict[str, Optional[float]]]] = {}
    for b in labels(data):
        for isa in data["meta"]["isas"]:
            pf, ll, hl = (idx.get((b, isa, v)) for v in ("pitchfork", "llvm", "halide21"))
            m = {v: metric(r, isa) for v, r in (("pf", pf), ("ll", ll), ("hl", hl))}
            s = {v: metric(r, isa, static=True) for v, r in (("pf", pf), ("ll", ll), ("hl", hl))}
            out.setdefault(b, {})[isa] = {
                "speedup": measured_ratio(ll, pf, m["ll"], m["pf"]), "vs_halide": measured_ratio(hl, pf, m["hl"], m["pf"]),
                "halide_vs_llvm": measured_ratio(ll, hl, m["ll"], m["hl"]),
                "static_speedup": ratio(s["ll"], s["pf"]), "static_vs_halide": ratio(s["hl"], s["pf"]),
            }
    return out


def per_benchmark(data: dict[str, Any], values: dict[str, float]) -> list[float]:
    """Case values (label -> value) folded to one value per benchmark: the geomean over the benchmark's
    parameter sets, so a benchmark weighs the same in a geomean however many sets it has."""
    by: dict[str, list[float]] = {}
    for lab, b, _ in cases(data):
        if values.get(lab):
            by.setdefault(b, []).append(values[lab])
    return [g for g in (geomean(v) for v in by.values()) if g]


def summary(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per ISA: geomeans over benchmarks (each benchmark = the geomean over its parameter sets), max /
    min over individual cases (benchmark x parameter set), and the cases that lose."""
    t = table(data)
    out = {}
    for isa in data["meta"]["isas"]:
        sp = {b: t[b][isa]["speedup"] for b in t if t[b][isa]["speedup"]}
        vh = {b: t[b][isa]["vs_halide"] for b in t if t[b][isa]["vs_halide"]}
        bench_sp = per_benchmark(data, sp)
        out[isa] = {"n": len(bench_sp), "cases": len(sp), "geomean": geomean(bench_sp),
                    "max": max(sp.values()) if sp else None, "argmax": max(sp, key=sp.get) if sp else None,
                    "vs_halide_geomean": geomean(per_benchmark(data, vh)),
                    "vs_halide_min": min(vh.values()) if vh else None,
                    "argmin_vs_halide": min(vh, key=vh.get) if vh else None,
                    "losses_vs_llvm": sorted(b for b, v in sp.items() if v < 0.98),
                    "losses_vs_halide": sorted(b for b, v in vh.items() if v < 0.98)}
    return out
