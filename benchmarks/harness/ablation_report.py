"""The synthesized-rules ablation's report (the paper's Figure 7): its RESULTS_ABLATION.md section and
its plot, from ablation data (`{"meta": ..., "cells": [...]}`: one cell per benchmark x ISA, status
`measured` / `same-code` / `failed`, the gain hand-only cost / hand+synthesized cost).

Both producers of that data render through here: `benchmarks.harness.ablation` (its own two-
configuration run) and `benchmarks.harness.ablation_rows` (a harness run's `pitchfork_hand` rows).
Nothing here measures; `plot` writes only the path it is given.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from benchmarks.harness.tables import geomean

PAPER = {"arm64": "1.09x", "hvx128": "1.14x", "x86-avx2": "— (the paper had no x86 synthesis)"}
TITLE = {"x86-avx2": "x86 (AVX2)", "arm64": "ARM (AArch64)", "hvx128": "HVX"}


def _synth_run_line(out_dir: Path) -> list[str]:
    p = out_dir / "synth_run.json"
    if not p.exists():
        return []
    s = json.loads(p.read_text())
    return [
        "### The synthesis run",
        "",
        f"`{s['command']}` (git {s.get('git', '?')}, {s.get('date', '')}): **{s['seconds'] / 60:.1f} min wall** "
        f"on {s.get('cores', 2)} shared cores (load average at the end {s.get('load_average', '?')}), "
        f"{s['written']} rules written ({s.get('written_by_stage', {})}), **{s['rules_per_minute']:.2f} rules per "
        f"minute**; search throughput {s.get('terms_per_second', 0):,.0f} enumerated terms/s. Details: "
        "benchmarks/SYNTH_RESULTS.md.",
        "",
    ]


def markdown(data: dict[str, Any], out_dir: Path) -> str:
    meta, cells = data["meta"], data["cells"]
    isas = meta["isas"]
    L = ["## Ablation: synthesized rules (the paper's Figure 7)", "",
         f"`python -m benchmarks.harness.ablation{' --quick' if meta['quick'] else ''}` ({meta['date']}, "
         f"{meta['seconds']:.0f} s, load average {', '.join(f'{x:.1f}' for x in meta['load_average'])}). "
         "Gain = cost with hand-written rules only / cost with hand-written + synthesized rules, the "
         "synthesized rules learned from the benchmark itself left out (leave-one-out). "
         "`same code`: both configurations produce identical assembly (gain exactly 1). "
         "x86: measured (ratio of the two configurations' speedups over LLVM alone, each timed interleaved "
         "with LLVM); ARM and HVX: weighted static estimates (llvm-mca cycles, HVX packets).", ""]
    L.append("| benchmark | " + " | ".join(TITLE[i] for i in isas) + " |")
    L.append("|---" * (len(isas) + 1) + "|")
    by = {(c["bench"], c["isa"]): c for c in cells}
    for b in meta["benchmarks"]:
        row = [b]
        for isa in isas:
            c = by.get((b, isa))
            if c is None:
                row.append("")
            elif c["status"] == "failed":
                row.append(f"failed ({c.get('why', '')[:60]})")
            elif c["status"] == "same-code":
                row.append("1.00x (same code)")
            else:
                fired = {}
                for cfg_rows in c.get("rows", {}).values():
                    fired.update(cfg_rows.get("pitchfork", {}).get("synth_fired", {}))
                row.append(f"**{c['gain']:.2f}x** ({sum(fired.values())} synthesized rewrites)")
        L.append("| " + " | ".join(row) + " |")
    L.append("| **geomean** | " + " | ".join(_geo(cells, i) for i in isas) + " |")
    L.append("| paper (geomean) | " + " | ".join(PAPER[i] for i in isas) + " |")
    L += ["", "![ablation](ablation.png)", ""]
    fails = [c for c in cells if c["status"] == "failed"]
    if fails:
        L += ["Failed cells: " + "; ".join(f"{c['bench']}/{c['isa']}: {c.get('why', '')}" for c in fails), ""]
    L += _synth_run_line(out_dir)
    return "\n".join(L) + "\n"


def _geo(cells: list[dict[str, Any]], isa: str) -> str:
    gs = [c["gain"] for c in cells if c["isa"] == isa and c.get("gain")]
    g = geomean(gs)
    mx = max(gs) if gs else None
    return "—" if g is None else f"{g:.3f}x (max {mx:.2f}x, {len(gs)} benchmarks)"


def plot(data: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    meta, cells = data["meta"], data["cells"]
    names = meta["benchmarks"]
    by = {(c["bench"], c["isa"]): c for c in cells}
    fig, ax = plt.subplots(figsize=(12, 4.5))
    x = np.arange(len(names))
    w = 0.8 / max(1, len(meta["isas"]))
    for k, isa in enumerate(meta["isas"]):
        ys = [by.get((b, isa), {}).get("gain") or 1.0 for b in names]
        # bars start at the 1.0x line on a log axis: a 1.00x cell is no bar, a loss hangs below
        ax.bar(x + (k - (len(meta["isas"]) - 1) / 2) * w, [y - 1.0 for y in ys], w, bottom=1.0, label=TITLE[isa])
    ax.set_yscale("log", base=2)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_xlabel("benchmark (first parameter set)")
    ys_all = [c.get("gain") for c in cells if c.get("gain")]
    lo, hi = (min(ys_all), max(ys_all)) if ys_all else (1.0, 1.0)
    ax.set_ylim(min(0.8, lo / 1.05), max(1.25, hi * 1.05))
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.yaxis.set_minor_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_ylabel("gain from synthesized rules, x (log scale)\n(x86: measured time; ARM: llvm-mca cycles; HVX: packets)",
                  fontsize=8)
    ax.set_title("Hand-written + synthesized rules vs hand-written only (paper Figure 7)", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
