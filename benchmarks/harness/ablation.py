"""The synthesized-rules ablation (the paper's Figure 7): hand-written rules only vs hand-written +
synthesized, with leave-one-out, per benchmark and ISA.

    python -m benchmarks.harness.ablation [--bench B ...] [--isa I ...] [--quick] [--reps N]
                                          [-o DIR | --write-results]

For every benchmark x ISA, PITCHFORK compiles the benchmark twice in one child process:

* `hand`: `rules_config(enabled=False)`: the hand-written lifting and lowering rules only;
* `synth`: the synthesized rules on, except those learned from this benchmark
  (`excluding_rules_from(bench)`: leave-one-out, so no benchmark is measured with rules it taught).

If the two assemblies are identical (no synthesized rule changed the code), the gain is exactly
1.00x and nothing is run. Otherwise both configurations go through the harness worker
(`worker.py`, the same compile / check / measure path as `python -m benchmarks`): on x86 each is
timed interleaved with LLVM alone and the gain is the ratio of the two speedups over LLVM (so
machine-load drift between the two runs cancels); on ARM and HVX the gain is the ratio of the
weighted static estimates (llvm-mca cycles, HVX packets), which are deterministic.

Writes `ablation.json`, `RESULTS_ABLATION.md` (appended to RESULTS.md by report.write_all, which
this re-runs on the output directory's results.json if it has one; else RESULTS.md's ablation section
is replaced in place, as in benchmarks/, which keeps no full results.json) and `ablation.png` into the output
directory: `-o DIR`, by default `./pitchfork-ablation-out` in the current directory;
`--write-results` writes into benchmarks/ (the committed files). Nothing goes into the source tree
unless asked. The plot's axis is logarithmic, each bar drawn from the 1.0x line.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Optional, Sequence

from benchmarks.common import ISAS
from benchmarks.harness.ablation_report import markdown, plot
from benchmarks.harness.static import SECOND_ON_REQUEST
from benchmarks.harness.tables import metric, ratio

#: Where `--write-results` writes: the committed files in benchmarks/.
RESULTS_DIR = Path(__file__).resolve().parent.parent
#: The default output directory, relative to the current directory (never the source tree).
DEFAULT_OUT_NAME = "pitchfork-ablation-out"
CONFIGS = ("hand", "synth")


def _compile_both(bench_name: str, isas: Sequence[str]) -> dict[str, Any]:
    """In the child: assembly hash and synthesized rules fired, per ISA and configuration."""
    import warnings

    import pitchfork
    from benchmarks import registry
    from pitchfork.selection.synthesized import rules_config
    from pitchfork.trs.provenance import excluding_rules_from

    bench = registry.get(bench_name)
    pset = bench.param_sets[0]
    out: dict[str, Any] = {}
    for isa in isas:
        cell: dict[str, Any] = {}
        for cfg in CONFIGS:
            try:
                with excluding_rules_from(bench_name), rules_config(enabled=cfg == "synth"):
                    o, args = bench.build(isa, pset)
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        prog = pitchfork.compile(o, args, target=isa, isel="pitchfork",
                                                 name=f"{bench_name}_pitchfork", fallback=False)
                cell[cfg] = {
                    "sha1": hashlib.sha1(prog.assembly().encode()).hexdigest(),
                    "synth_fired": {k: v for k, v in prog.stats.rules_fired.items() if k.startswith("synth_")},
                }
            except Exception as e:  # noqa: BLE001 - a failed cell, reported
                cell[cfg] = {"error": f"{type(e).__name__}: {str(e).strip().splitlines()[0] if str(e).strip() else ''}"[:300]}
        out[isa] = cell
    return out


def _child(bench_name: str, isas: Sequence[str], timeout: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pf-ablation-") as d:
        rp = os.path.join(d, "out.json")
        cmd = [sys.executable, "-m", "benchmarks.harness.ablation", "--child", bench_name, rp, *isas]
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               cwd=str(Path(__file__).resolve().parent.parent.parent),
                               env=dict(os.environ, HL_NUM_THREADS="1"))
        except subprocess.TimeoutExpired:
            return {isa: {c: {"error": f"compile exceeded {timeout:.0f} s"} for c in CONFIGS} for isa in isas}
        if p.returncode == 0 and os.path.exists(rp):
            with open(rp) as f:
                return json.load(f)
        tail = " | ".join(p.stderr.strip().splitlines()[-2:])[:300]
        return {isa: {c: {"error": f"compile process died ({p.returncode}): {tail}"} for c in CONFIGS} for isa in isas}


def run(benches: Sequence[str], isas: Sequence[str], quick: bool, reps: int, timeout: float,
        progress: bool = True) -> dict[str, Any]:
    from benchmarks.harness.run import run_worker

    t0 = time.time()
    cells: list[dict[str, Any]] = []
    for b in benches:
        compiled = _child(b, isas, timeout)
        if len(isas) > 1 and all("died" in c.get("hand", {}).get("error", "") for c in compiled.values()):
            # an LLVM abort on one ISA kills the process: each ISA again in a process of its own
            compiled = {isa: _child(b, [isa], timeout)[isa] for isa in isas}
        for isa in isas:
            c = compiled.get(isa, {})
            cell: dict[str, Any] = {"bench": b, "isa": isa, "compile": c}
            errs = [c.get(k, {}).get("error") for k in CONFIGS if c.get(k, {}).get("error")]
            if errs:
                cell.update(status="failed", why=errs[0])
            elif c["hand"]["sha1"] == c["synth"]["sha1"]:
                cell.update(status="same-code", gain=1.0)
            else:
                rows = {}
                for cfg in CONFIGS:
                    job = {"bench": b, "isa": isa, "quick": quick, "reps": reps, "seed": 1,
                           "static_size": "quick", "exclude_rules_from": b, "synthesized": cfg == "synth",
                           "variants": ["pitchfork", "llvm"] if isa == "x86-avx2" else ["pitchfork"]}
                    if isa in SECOND_ON_REQUEST:  # synth/loo.py withdraws only when a second model agrees
                        job["second_mcpu"] = SECOND_ON_REQUEST[isa]
                    got = run_worker(job, timeout, lambda ev: None)
                    rows[cfg] = {r["variant"]: r for r in got}
                cell["rows"] = {cfg: {v: _slim(r) for v, r in rs.items()} for cfg, rs in rows.items()}
                cell["static_alt"] = {cfg: ((rows[cfg].get("pitchfork") or {}).get("static") or {}).get("alt", {}).get("total")
                                      for cfg in CONFIGS}
                if isa == "x86-avx2":
                    sp = {cfg: ratio(metric(rows[cfg].get("llvm"), isa), metric(rows[cfg].get("pitchfork"), isa))
                          for cfg in CONFIGS}
                    cell["speedup_over_llvm"] = sp
                    g = ratio(sp["synth"], sp["hand"])
                    st = {cfg: metric(rows[cfg].get("pitchfork"), isa, static=True) for cfg in CONFIGS}
                    cell["static_gain"] = ratio(st["hand"], st["synth"])
                else:
                    cost = {cfg: metric(rows[cfg].get("pitchfork"), isa, static=True) for cfg in CONFIGS}
                    cell["static_total"] = cost
                    g = ratio(cost["hand"], cost["synth"])
                if g is None:
                    cell.update(status="failed", why="; ".join(
                        e for rs in rows.values() for r in rs.values() for e in r.get("errors", []))[:300] or "no result")
                else:
                    cell.update(status="measured", gain=g)
            cells.append(cell)
            if progress:
                print(f"  {b:16s} {isa:9s} {cell['status']:10s} {cell.get('gain', 0):.3f}x", file=sys.stderr, flush=True)
    return {"meta": {"benchmarks": list(benches), "isas": list(isas), "quick": quick, "reps": reps,
                     "seconds": round(time.time() - t0, 1),
                     "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "load_average": os.getloadavg()},
            "cells": cells}


def _slim(r: dict[str, Any]) -> dict[str, Any]:
    keep = ("status", "errors", "time", "exact")
    out = {k: r[k] for k in keep if k in r}
    if "static" in r:
        out["static"] = {"total": r["static"].get("total"), "unit": r["static"].get("unit"),
                         "alt": r["static"].get("alt") or {}}
    if "rules_fired" in r:
        out["synth_fired"] = {k: v for k, v in r["rules_fired"].items() if k.startswith("synth_")}
    return out


def write(data: dict[str, Any], out_dir: Path) -> None:
    from benchmarks.harness import report

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "ablation.json").write_text(json.dumps(data, indent=1))
    (out_dir / "RESULTS_ABLATION.md").write_text(markdown(data, out_dir))
    plot(data, out_dir / "ablation.png")
    results = out_dir / "results.json"
    if results.exists():  # re-render RESULTS.md (it appends RESULTS_ABLATION.md)
        report.write_all(json.loads(results.read_text()), out_dir)
    elif (out_dir / "RESULTS.md").exists():
        # No full run data here (benchmarks/ keeps only RESULTS.md and the trimmed baseline.json): the
        # ablation section RESULTS.md ends with is replaced in place, as write_all would append it.
        splice_section(out_dir / "RESULTS.md", (out_dir / "RESULTS_ABLATION.md").read_text())


def splice_section(results_md: Path, section: str) -> None:
    """`results_md` with everything from `section`'s first line (its heading) on replaced by `section`,
    or `section` appended when the heading is not there (report.write_all's layout)."""
    text = results_md.read_text()
    head = section.splitlines()[0]
    at = text.find("\n" + head)
    kept = text if at < 0 else text[:at]
    results_md.write_text(kept.rstrip("\n") + "\n\n" + section)


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--child"]:
        bench, out, *isas = argv[1:]
        with open(out, "w") as f:
            json.dump(_compile_both(bench, isas), f)
        return 0
    from benchmarks import registry

    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.ablation", description=__doc__.split("\n")[0])
    ap.add_argument("--bench", action="append", default=[])
    ap.add_argument("--isa", action="append", default=[])
    ap.add_argument("--quick", action="store_true", help="quick sizes, 3 repetitions")
    ap.add_argument("--reps", type=int, default=None)
    ap.add_argument("--timeout", type=float, default=1800.0)
    ap.add_argument("--output-dir", "-o", default=None,
                    help=f"output directory (default ./{DEFAULT_OUT_NAME} in the current directory)")
    ap.add_argument("--write-results", action="store_true",
                    help="write into benchmarks/ (refresh the committed ablation.json, RESULTS_ABLATION.md, "
                         "ablation.png and RESULTS.md)")
    args = ap.parse_args(argv)
    if args.write_results and args.output_dir is not None:
        print("ablation: --write-results writes into benchmarks/; it does not take -o", file=sys.stderr)
        return 2
    out_dir = output_dir(args.output_dir, args.write_results)
    benches = [x for b in args.bench for x in b.split(",") if x] or registry.available()
    isas = [x for i in args.isa for x in i.split(",") if x] or list(ISAS)
    bad = [b for b in benches if b not in registry.NAMES] + [i for i in isas if i not in ISAS]
    if bad:
        print(f"ablation: unknown benchmark or ISA {bad[0]!r}", file=sys.stderr)
        return 2
    data = run(benches, isas, args.quick, args.reps or (3 if args.quick else 9), args.timeout)
    write(data, out_dir)
    print(markdown(data, out_dir))
    print(f"wrote {out_dir / 'ablation.json'}, {out_dir / 'RESULTS_ABLATION.md'}, {out_dir / 'ablation.png'}",
          file=sys.stderr)
    return 0


def output_dir(option: Optional[str], write_results: bool) -> Path:
    """benchmarks/ with --write-results, else -o DIR, else ./pitchfork-ablation-out (created)."""
    d = RESULTS_DIR if write_results else Path(option if option is not None else DEFAULT_OUT_NAME).resolve()
    d.mkdir(parents=True, exist_ok=True)
    return d


if __name__ == "__main__":
    sys.exit(main())
