"""The synthesized-rules ablation (Figure 7) from a harness run's own rows, so every run regenerates it.

A run compiles `pitchfork_hand` (synthesized rules off) beside `pitchfork` (on, leave-one-out when the
run says so); the worker measures `pitchfork_hand` only when its code differs (`same_code_as`
otherwise). Gain = cost with hand-written rules only / cost with synthesized rules too, per benchmark
the geomean over the run's parameter sets: x86 the paired ratio of measured times, ARM and HVX the
weighted static estimates. The cells have the shape benchmarks/harness/ablation.py writes, so
ablation_report.py's markdown and plot render them; `write` puts ablation.json, RESULTS_ABLATION.md and ablation.png in
the run's output directory (report.write_all then appends RESULTS_ABLATION.md to RESULTS.md).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Optional

from benchmarks.harness.ablation_report import markdown, plot
from benchmarks.harness.tables import index_rows as _index, cases, geomean, measured_ratio, metric


def cells(data: dict[str, Any]) -> list[dict[str, Any]]:
    idx = _index(data)
    out = []
    for b in data["meta"]["benchmarks"]:
        labs = [lab for lab, bb, _ in cases(data) if bb == b]
        for isa in data["meta"]["isas"]:
            gains: list[float] = []
            same = True
            why: Optional[str] = None
            fired: dict[str, int] = {}
            for lab in labs:
                pf, hand = idx.get((lab, isa, "pitchfork")), idx.get((lab, isa, "pitchfork_hand"))
                if not pf or not hand:
                    why = why or "no pitchfork_hand row (not part of this run)"
                    continue
                fired.update({k: v for k, v in (pf.get("rules_fired") or {}).items() if k.startswith("synth_")})
                if hand.get("same_code_as") == "pitchfork":
                    gains.append(1.0)
                    continue
                same = False
                g = measured_ratio(hand, pf, metric(hand, isa), metric(pf, isa))
                if g is None:
                    why = why or "; ".join(hand.get("errors", []) + pf.get("errors", []))[:300] or "no result"
                else:
                    gains.append(g)
            cell: dict[str, Any] = {"bench": b, "isa": isa}
            if not gains:
                cell.update(status="failed", why=why or "no result")
            elif same:
                cell.update(status="same-code", gain=1.0)
            else:
                cell.update(status="measured", gain=geomean(gains),
                            rows={"synth": {"pitchfork": {"synth_fired": fired}}})
            out.append(cell)
    return out


def data_from_run(data: dict[str, Any]) -> dict[str, Any]:
    meta = data["meta"]
    return {"meta": {"benchmarks": meta["benchmarks"], "isas": meta["isas"], "quick": meta["quick"],
                     "reps": meta["reps"], "seconds": meta.get("seconds", 0.0), "date": meta["date"],
                     "load_average": list(meta["machine"]["load_average"]) if "machine" in meta
                     else list(os.getloadavg()),
                     "from_run": meta["command"]},
            "cells": cells(data)}


def write(data: dict[str, Any], out_dir: Path) -> None:
    """ablation.json, RESULTS_ABLATION.md and ablation.png from the run's rows (before RESULTS.md)."""
    ab = data_from_run(data)
    if not any(c["status"] != "failed" for c in ab["cells"]):
        return  # the run had no pitchfork_hand rows: leave any earlier ablation alone
    out_dir = Path(out_dir)
    (out_dir / "ablation.json").write_text(json.dumps(ab, indent=1))
    text = re.sub(r"`python -m benchmarks\.harness\.ablation( --quick)?`",
                  lambda _: f"`{ab['meta']['from_run']}` (the run's `pitchfork_hand` rows)", markdown(ab, out_dir))
    (out_dir / "RESULTS_ABLATION.md").write_text(text)
    plot(ab, out_dir / "ablation.png")
