"""Which HVX AlignVectors setting (LLVM's `-hvc-va`) is better, for each contender: the measurement
behind `pitchfork.backend.machine.HVX_ALIGN_VECTORS`.

    python -m benchmarks.harness.align_vectors [--bench B ...] [-o DIR | --write-results]

For every benchmark (first parameter set, quick size) the harness worker runs on hvx128 twice, with
the option on and off for every contender at once (it is one option for all), and records the
weighted packet counts of PITCHFORK, LLVM alone and Halide 21 (whose IR goes through llc with the
same option). One benchmark and setting per child process. Writes `align_vectors.json` into the
output directory (default ./pitchfork-align-vectors-out; `--write-results`: benchmarks/, which
RESULTS.md's 'Compiler options' section quotes). The setting is chosen from this table for all
contenders alike (the geomean over contenders and benchmarks), never per contender.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any, Optional, Sequence

CONTENDERS = ("pitchfork", "llvm", "halide21")
RESULTS_DIR = Path(__file__).resolve().parent.parent
DEFAULT_OUT_NAME = "pitchfork-align-vectors-out"

_CHILD = """
import json, sys
import pitchfork.backend.machine as m
bench, on, out = sys.argv[1], sys.argv[2] == "on", sys.argv[3]
m.HVX_ALIGN_VECTORS = on
from benchmarks.harness.worker import run_job
rows = run_job({"bench": bench, "isa": "hvx128", "quick": True, "reps": 1, "seed": 1, "static_size": "quick",
                "param_set": 0, "exclude_rules_from": bench, "variants": ["pitchfork", "llvm", "halide21"]})
json.dump({r["variant"]: (r.get("static") or {}).get("total") if r["status"] == "ok" else None for r in rows},
          open(out, "w"))
"""


def measure(bench: str, on: bool, timeout: float = 1800.0) -> dict[str, Optional[float]]:
    root = str(RESULTS_DIR.parent)
    with tempfile.TemporaryDirectory(prefix="pf-align-") as d:
        out = os.path.join(d, "r.json")
        try:
            subprocess.run([sys.executable, "-c", _CHILD, bench, "on" if on else "off", out], cwd=root,
                           env=dict(os.environ, PYTHONPATH=root, HL_NUM_THREADS="1"), capture_output=True,
                           timeout=timeout)
        except subprocess.TimeoutExpired:
            return {c: None for c in CONTENDERS}
        if not os.path.exists(out):
            return {c: None for c in CONTENDERS}
        return json.load(open(out))


def markdown(data: dict[str, Any]) -> list[str]:
    """The table: packets off / on per contender (above 1: AlignVectors on is better)."""
    from benchmarks.harness.tables import geomean

    L = ["| benchmark | PITCHFORK off/on | LLVM alone off/on | Halide 21 off/on |", "|---|---|---|---|"]
    per: dict[str, list[float]] = {c: [] for c in CONTENDERS}
    for b, cell in data["benchmarks"].items():
        cells = []
        for c in CONTENDERS:
            on, off = cell["on"].get(c), cell["off"].get(c)
            if on and off:
                per[c].append(off / on)
                cells.append(f"{off / on:.3f}")
            else:
                cells.append("—")
        L.append(f"| {b} | " + " | ".join(cells) + " |")
    geo = {c: geomean(per[c]) for c in CONTENDERS}
    L.append("| **geomean** | " + " | ".join(f"**{geo[c]:.3f}**" if geo[c] else "—" for c in CONTENDERS) + " |")
    return L


def main(argv: Optional[Sequence[str]] = None) -> int:
    from benchmarks import registry

    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.align_vectors", description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="append", default=[])
    ap.add_argument("--output-dir", "-o", default=None)
    ap.add_argument("--write-results", action="store_true")
    args = ap.parse_args(argv)
    if args.write_results and args.output_dir is not None:
        print("align_vectors: --write-results writes into benchmarks/; it does not take -o", file=sys.stderr)
        return 2
    out_dir = RESULTS_DIR if args.write_results else Path(args.output_dir or DEFAULT_OUT_NAME).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    benches = [x for b in args.bench for x in b.split(",") if x] or registry.available()
    data: dict[str, Any] = {"command": "python -m benchmarks.harness.align_vectors " + " ".join(argv or sys.argv[1:]),
                            "benchmarks": {}}
    for b in benches:
        data["benchmarks"][b] = {"on": measure(b, True), "off": measure(b, False)}
        print(b, data["benchmarks"][b], file=sys.stderr, flush=True)
    (out_dir / "align_vectors.json").write_text(json.dumps(data, indent=1))
    print("\n".join(markdown(data)))
    print(f"wrote {out_dir / 'align_vectors.json'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
