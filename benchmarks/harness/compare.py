"""Before/after: this run's figures beside an earlier run's `results.json` (the baseline).

The issues ask for harness figures before and after a change. A run made with `--baseline PATH`
records the path in its metadata, and the report adds a section that sets, per benchmark x parameter
set x ISA, the earlier run's speedup over LLVM alone, ratio to Halide 21 and hot-loop length beside
this run's, with the per-ISA geomeans on top. Both sides are ratios measured inside their own run (x86:
times interleaved in one process; ARM/HVX: static estimates, which do not depend on load), so they
compare across runs where absolute x86 times would not. Nothing here measures anything.

`python -m benchmarks.harness.compare BEFORE.json AFTER.json` prints the same table.

A kept baseline (benchmarks/baselines/) need only hold what this module reads: `trim(data)` keeps the
run's meta and per row bench, isa, variant, pset, status, time.median_ms and time.samples_ms (x86's
paired ratios, benchmarks/harness/measure.py), static.total and hot_loop.instructions; the section of
a trimmed run is the section of the run it was cut from (a few percent of its size: no loop tables,
histograms or assembly blocks). Every harness run writes its trimmed copy as `baseline.json` beside
`results.json`; `python -m benchmarks.harness.compare --trim RESULTS_JSON -o OUT.json` trims an
earlier one.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any, Optional, Sequence

#: A ratio that moved by more than this between the runs is marked (x86 noise on the shared machine
#: is a few percent; the static estimates are deterministic).
MOVED = 0.05


#: What a trimmed row keeps: these keys whole, and of each dict-valued key the fields listed.
ROW_KEYS = ("bench", "isa", "variant", "pset", "status")
ROW_FIELDS = {"time": ("median_ms", "samples_ms"), "static": ("total",), "hot_loop": ("instructions",)}


def load(path: str | Path) -> dict[str, Any]:
    with open(path) as f:
        return json.load(f)


def trim(data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a results.json) cut to what `section` reads (ROW_KEYS, ROW_FIELDS and the meta). A
    missing or empty field stays missing, which `section` reads as the full run's absent value."""
    rows = []
    for r in data["rows"]:
        out = {k: r[k] for k in ROW_KEYS if k in r}
        for k, fields in ROW_FIELDS.items():
            v = r.get(k)
            if v:
                out[k] = {f: v[f] for f in fields if f in v}
        rows.append(out)
    return {"meta": data["meta"], "rows": rows}


def write_trimmed(data: dict[str, Any], path: str | Path) -> None:
    """`trim(data)` as JSON at `path`, in results.json's layout (indent 1)."""
    with open(path, "w") as f:
        json.dump(trim(data), f, indent=1)
        f.write("\n")


def _hot(data: dict[str, Any]) -> dict[tuple[str, str], Optional[int]]:
    from benchmarks.harness.tables import index_rows

    out: dict[tuple[str, str], Optional[int]] = {}
    for (b, isa, v), r in index_rows(data).items():
        if v == "pitchfork":
            hl = r.get("hot_loop") or {}
            out[(b, isa)] = hl.get("instructions")
    return out


def _fmt(x: Optional[float]) -> str:
    return "—" if x is None else f"{x:.2f}x"


def _pair(a: Optional[float], b: Optional[float]) -> str:
    """`a -> b`, bold when the ratio moved by more than MOVED."""
    s = f"{_fmt(a)} → {_fmt(b)}"
    if a and b and abs(b / a - 1) > MOVED:
        return f"**{s}**"
    return s


def _git(data: dict[str, Any]) -> str:
    return data["meta"].get("versions", {}).get("git", "?")


def section(before: dict[str, Any], after: dict[str, Any], name: str = "") -> list[str]:
    """The RESULTS.md section: per-ISA geomeans, then one row per case present in either run."""
    from benchmarks.harness.tables import ISA_TITLE, labels, summary, table

    tb, ta = table(before), table(after)
    sb, sa = summary(before), summary(after)
    hb, ha = _hot(before), _hot(after)
    isas = [i for i in after["meta"]["isas"] if i in before["meta"]["isas"]]
    L = ["## Before and after (this run beside an earlier run)", "",
         f"Before = `{name or 'baseline'}` (git {_git(before)}, {before['meta']['date']}, command "
         f"`{before['meta']['command']}`); after = this run (git {_git(after)}). Speedup = LLVM alone / "
         f"PITCHFORK and vs H21 = Halide 21 / PITCHFORK, each measured inside its own run; hot loop = "
         f"instructions in our hot vector loop. Bold: moved by more than {100 * MOVED:.0f}%. x86 ratios carry "
         "the shared machine's noise; ARM and HVX are deterministic static estimates, but LLVM alone and "
         "Halide 21 code can change too when the shared code generation changes.", "",
         "| ISA | geomean speedup over LLVM | geomean vs Halide 21 | worst vs Halide 21 |", "|---|---|---|---|"]
    for isa in isas:
        L.append(f"| {ISA_TITLE[isa]} | {_pair(sb[isa]['geomean'], sa[isa]['geomean'])} | "
                 f"{_pair(sb[isa]['vs_halide_geomean'], sa[isa]['vs_halide_geomean'])} | "
                 f"{_pair(sb[isa]['vs_halide_min'], sa[isa]['vs_halide_min'])} |")
    L += ["", "| benchmark | ISA | speedup before → after | vs H21 before → after | hot loop before → after |",
          "|---|---|---|---|---|"]
    cases = labels(after) + [c for c in labels(before) if c not in labels(after)]
    for c in cases:
        for isa in isas:
            xb = tb.get(c, {}).get(isa, {})
            xa = ta.get(c, {}).get(isa, {})
            lb, la = hb.get((c, isa)), ha.get((c, isa))
            loop = f"{lb if lb is not None else '—'} → {la if la is not None else '—'}"
            L.append(f"| {c} | {isa} | {_pair(xb.get('speedup'), xa.get('speedup'))} | "
                     f"{_pair(xb.get('vs_halide'), xa.get('vs_halide'))} | {loop} |")
    return L


def baseline_section(data: dict[str, Any]) -> list[str]:
    """The section for a run whose metadata names a baseline; nothing when it names none. A baseline
    file that has gone is said so, not skipped silently."""
    path = data["meta"].get("baseline")
    if not path:
        return []
    p = Path(path)
    if not p.is_absolute():
        p = Path(__file__).resolve().parent.parent.parent / p
    if not p.exists():
        return ["## Before and after (this run beside an earlier run)", "", f"Baseline `{path}` not found.", ""]
    return section(load(p), data, name=str(path)) + [""]


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.compare",
                                 description="an earlier results.json beside a later one; with --trim, "
                                             "a results.json cut to what the comparison reads")
    ap.add_argument("files", nargs="+", metavar="RESULTS_JSON", help="BEFORE AFTER, or with --trim one file")
    ap.add_argument("--trim", action="store_true", help="write RESULTS_JSON trimmed (a baseline to keep) to -o")
    ap.add_argument("-o", "--output", metavar="OUT_JSON", help="with --trim: where the trimmed copy goes")
    a = ap.parse_args(argv)
    if a.trim != (len(a.files) == 1) or (a.trim and not a.output) or (a.output and not a.trim):
        ap.error("give BEFORE AFTER, or --trim RESULTS_JSON -o OUT_JSON")
    try:
        loaded = [load(f) for f in a.files]
        if a.trim:
            write_trimmed(loaded[0], a.output)
            return 0
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"error: {e}")
        return 2
    print("\n".join(section(loaded[0], loaded[1], name=a.files[0])))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
