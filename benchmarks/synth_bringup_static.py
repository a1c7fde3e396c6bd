"""Issue 29 part (b): every benchmark compiled with synthesized-only lowering vs hand-written lowering,
under the harness's static estimate.

    python -m benchmarks.synth_bringup_static RULES_DIR [--isa I ...] [--bench B ...] [--reps N]
                                              [-o OUT_DIR]
    python -m benchmarks.synth_bringup_static RULES_DIR --isa I --add-hand NAME[,NAME...] ... [--bench B ...]

RULES_DIR holds the bring-up's rule files (`pitchfork-synth --bring-up ISA -o RULES_DIR` writes
lower_<isa stem>.rules there). For every ISA and benchmark the harness worker (benchmarks/harness/
worker.py, the path `python -m benchmarks` takes: compile, run, check, count) runs twice, one right
after the other:

* `hand`: the default compiler (hand-written lowering rules/lower/<isa>.rules plus the committed
  synthesized rules);
* `synth`: the same compiler with PITCHFORK_LOWERING_ONLY=RULES_DIR
  (pitchfork/selection/synthesized.py): the ISA's lowering TRS is RULES_DIR/lower_<stem>.rules alone;
  lifting and the generic expansion are the same as `hand`'s.

The figure per cell is hand / synth of the weighted static estimate (llvm-mca cycles on x86 and
AArch64, VLIW packets on Hexagon; `benchmarks/harness/static.py`), at the quick size, as the ablation
(benchmarks/harness/ablation.py) counts; >= 1.0 means synthesized-only is at least as fast. Every
counted run checks its output against the numpy reference bit for bit (worker `_check_output`), so a
cell with an estimate is a bit-exact one; a wrong output is a failed cell. On x86 the kernels are also
timed, interleaved with LLVM alone, and the ratio of the two speedups over LLVM is reported beside the
static one (`measured`).

With `--withdraw`, the rules that make synthesized-only code slower are then withdrawn
(`withdraw_regressions`: every synthesized rule that fired in a measured cell, tried out of the rule
set on every cell where it fired; named in RULES_DIR/withdrawn.txt with the figures when no cell gets
slower without it and one gets faster). A rule is judged against the same synthesized set without it,
not against hand lowering: a rule can slow a cell that is still at or above 1.0x of hand lowering
(session 27: hvx128 depthwise_conv 1.013x -> 0.976x through one rule, kept while only cells below 0.9x
were tried). A verified rule the cost model prefers can still be slower code
(x86 matmul: `v0 + reduce(v1) + reduce(v2) -> v0 + reduce(v1 + v2)`). Both models of the estimate
must say so (`regression_verdict`): the primary one (llvm-mca on the host's core for x86, cortex-a76
for AArch64, VLIW packets for Hexagon) and the second one beside it (`SECOND_MCPU`: haswell, the core
x86 code is compiled for; apple-m1 on AArch64; hvx_cycles' dependency-aware cycles on Hexagon). A
verdict of one model alone is kept, not acted on: x86 twins of hand rules were withdrawn on 0.4-3.3%
znver3-only verdicts that four other llvm-mca models contradicted (benchmarks/SYNTH_RESULTS.md,
sessions 19-20). The reason recorded names both models' figures; a rule kept against the primary
model's verdict is listed with its figures too (`meta.kept`).

With `--add-hand` (one ISA) it diagnoses a gap instead (`hand_trials`): per benchmark, the
synthesized-only estimate with the named hand-written lowering rules placed before the synthesized
ones, one trial per option, so which hand rule's absence costs what is a measured figure
(`bringup_trials.json` / `.md`; RULES_DIR is not changed).

Writes `bringup_static.json` and `bringup_static.md` into OUT_DIR (default
./pitchfork-synth-bringup-out in the current directory; never the source tree unless named).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator, Optional, Sequence

from benchmarks.common import ISAS
from benchmarks.harness.static import SECOND_ON_REQUEST
from benchmarks.harness.tables import geomean, metric, ratio

DEFAULT_OUT_NAME = "pitchfork-synth-bringup-out"
CONFIGS = ("hand", "synth")
#: the second model asked of the worker where the estimate has none of its own: x86's primary model is
#: the host's core (llvm-mca -mcpu=<host>), the second the core every contender is compiled for
#: (pitchfork.backend.machine.X86_AVX2: haswell). AArch64 (apple-m1) and Hexagon (hvx_cycles) always
#: carry one (benchmarks/harness/static.py `estimate`).
SECOND_MCPU = SECOND_ON_REQUEST


@contextmanager
def _env(name: str, value: Optional[str]) -> Iterator[None]:
    """os.environ[name] = value (None: unset) for the worker processes started inside the block."""
    prev = os.environ.get(name)
    if value is None:
        os.environ.pop(name, None)
    else:
        os.environ[name] = value
    try:
        yield
    finally:
        if prev is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = prev


def _row_summary(rows: dict[str, dict[str, Any]], isa: str) -> dict[str, Any]:
    p = rows.get("pitchfork") or {}
    out: dict[str, Any] = {"status": p.get("status"), "static": metric(p, isa, static=True),
                           "vector_executed": (p.get("static") or {}).get("vector_executed")}
    out.update(_models(p, isa))
    if p.get("errors") or p.get("static_error"):
        out["errors"] = list(p.get("errors", [])) + ([p["static_error"]] if p.get("static_error") else [])
    out["lowering_fired"] = sorted(k for k in p.get("rules_fired", {}) if not k.startswith("synth_lift_"))
    if isa == "x86-avx2":
        out["speedup_over_llvm"] = ratio(metric(rows.get("llvm"), isa), metric(p, isa))
    return out


def _models(row: Optional[dict[str, Any]], isa: str) -> dict[str, Any]:
    """The models of a row's estimate: the primary one's name (the llvm-mca core, or "packets") and the
    second one's name and total (None when the row has none)."""
    st = (row or {}).get("static") or {}
    alt = st.get("alt") or {}
    ok = (row or {}).get("status") == "ok"
    return {"model": st.get("mcpu") or ("packets" if isa == "hvx128" else None),
            "alt_model": alt.get("model"), "static_alt": (alt.get("total") or None) if ok else None}


def _job(bench: str, isa: str, reps: int, variants: list[str]) -> dict[str, Any]:
    job: dict[str, Any] = {"bench": bench, "isa": isa, "quick": True, "reps": reps, "seed": 1,
                           "static_size": "quick", "variants": variants}
    if isa in SECOND_MCPU:
        job["second_mcpu"] = SECOND_MCPU[isa]
    return job


def cell(bench: str, isa: str, rules_dir: Path, reps: int, timeout: float) -> dict[str, Any]:
    """Both configurations of one benchmark on one ISA, one right after the other."""
    from benchmarks.harness.run import run_worker

    res: dict[str, Any] = {"bench": bench, "isa": isa}
    for cfg in CONFIGS:
        job = _job(bench, isa, reps, ["pitchfork", "llvm"] if isa == "x86-avx2" else ["pitchfork"])
        with _env("PITCHFORK_LOWERING_ONLY", str(rules_dir) if cfg == "synth" else None):
            got = run_worker(job, timeout, lambda ev: None)
        res[cfg] = _row_summary({r["variant"]: r for r in got}, isa)
    h, s = res["hand"].get("static"), res["synth"].get("static")
    res["static_ratio"] = ratio(h, s)  # hand / synth: >= 1 means synthesized-only is as fast
    res["static_ratio_alt"] = ratio(res["hand"].get("static_alt"), res["synth"].get("static_alt"))
    if isa == "x86-avx2":
        res["measured_ratio"] = ratio(res["synth"].get("speedup_over_llvm"), res["hand"].get("speedup_over_llvm"))
    return res


def synth_only_static(bench: str, isa: str, rules_dir: Path, without: Sequence[str],
                      timeout: float) -> tuple[Optional[float], Optional[float]]:
    """The static estimate of one benchmark with RULES_DIR's rules less `without` (and less its
    withdrawn.txt), through a scratch copy of the folder, under the primary and the second model;
    (None, None) if the cell fails (wrong output included)."""
    row = _scratch_row(bench, isa, rules_dir, without, (), timeout)
    primary = metric(row, isa, static=True)
    return primary, _models(row, isa)["static_alt"] if primary else None


def _scratch_row(bench: str, isa: str, rules_dir: Path, without: Sequence[str], first: Sequence[str],
                 timeout: float) -> Optional[dict[str, Any]]:
    """The worker's pitchfork row of one benchmark compiled with RULES_DIR's lowering rules less
    `without` (and less its withdrawn.txt), the rule texts `first` placed before them (the rewriter
    tries rules in file order), through a scratch copy of the folder."""
    import shutil
    import tempfile

    from benchmarks.harness.run import run_worker

    with tempfile.TemporaryDirectory(prefix="pf-bringup-w-") as d:
        for f in rules_dir.glob("lower_*.rules"):
            shutil.copy(f, d)
            if first:
                Path(d, f.name).write_text("".join(f"{t}\n" for t in first) + f.read_text())
        old = (rules_dir / "withdrawn.txt").read_text() if (rules_dir / "withdrawn.txt").exists() else ""
        Path(d, "withdrawn.txt").write_text(old + "".join(f"{n}  # trial\n" for n in without))
        with _env("PITCHFORK_LOWERING_ONLY", d):
            got = run_worker(_job(bench, isa, 1, ["pitchfork"]), timeout, lambda ev: None)
    return {r["variant"]: r for r in got}.get("pitchfork")


def hand_rule_texts(isa: str, names: Sequence[str]) -> list[str]:
    """The one-line texts of the named hand-written lowering rules of the ISA (rules/lower/<stem>.rules),
    in the order named; an unknown name is a ValueError naming it."""
    from pitchfork.targets import load_target

    rules = {r.name: r for r in load_target(isa, include_synthesized=False).rules.rules}
    unknown = [n for n in names if n not in rules]
    if unknown:
        raise ValueError(f"not a hand-written {isa} lowering rule: {', '.join(unknown)}")
    return [rules[n].text() for n in names]


def hand_trials(rules_dir: Path, isa: str, benches: Sequence[str], trials: Sequence[Sequence[str]],
                timeout: float) -> list[dict[str, Any]]:
    """Which hand-written rules the synthesized set lacks, and what their absence costs: per benchmark,
    the synthesized-only estimate (RULES_DIR less its withdrawn.txt) and, per trial, the estimate with
    that trial's hand rules placed before the synthesized ones, with `gain` = without / with (> 1: the
    synthesized set is slower for the lack of them) and the trial's rules that fired. Diagnosis only:
    nothing is written into RULES_DIR."""
    texts = [hand_rule_texts(isa, names) for names in trials]  # (the same for every benchmark)
    out = []
    for b in benches:
        base = _scratch_row(b, isa, rules_dir, (), (), timeout)
        s0 = metric(base, isa, static=True)
        for names, first in zip(trials, texts):
            row = _scratch_row(b, isa, rules_dir, (), first, timeout)
            s1 = metric(row, isa, static=True)
            fired = set((row or {}).get("rules_fired", {}))
            out.append({"bench": b, "isa": isa, "hand_rules": list(names), "synth_static": s0, "static": s1,
                        "gain": ratio(s0, s1), "fired": [n for n in names if n in fired],
                        "status": (row or {}).get("status")})
    return out


#: per cell where a rule fired: (label, (primary, second) with the rule, (primary, second) without it)
Trial = tuple[str, tuple[float, Optional[float]], tuple[float, Optional[float]]]


def regression_verdict(trial: Sequence[Trial], primary: str, second: Optional[str]) -> tuple[bool, str]:
    """Whether a rule is withdrawn, and both models' figures: withdrawn only when under the primary
    model no cell where it fired is slower without it and one is faster, AND the second model says
    the same (a verdict of one model alone is kept; no second figure, no withdrawal)."""
    def agrees(k: int) -> bool:
        pairs = [(w[k], wo[k]) for _, w, wo in trial]
        return bool(pairs) and all(a is not None and b is not None and b <= a for a, b in pairs) and \
            any(b < a for a, b in pairs if a is not None and b is not None)

    def fig(v: Optional[float]) -> str:
        return "-" if v is None else f"{v:,.0f}"

    why = "; ".join(f"{lab}: {primary} {fig(w[0])} -> {fig(wo[0])}, {second or 'no second model'} "
                    f"{fig(w[1])} -> {fig(wo[1])} without it" for lab, w, wo in trial)
    return agrees(0) and agrees(1), why


def suspects(cells: Sequence[dict[str, Any]], below: float = math.inf) -> dict[str, list[dict[str, Any]]]:
    """The synthesized rules the regression check tries, each with the cells it is tried on: every
    rule that fired in a measured cell whose ratio (hand / synth) is below `below` (default: every
    measured cell, since a rule can slow a cell that is still faster than hand lowering), with every
    measured cell where it fired. A failed cell has no estimate to compare and is not tried, nor is a
    cell whose synthesized-only run executed no vector instruction (`vector_executed` 0): the rule's
    code did not run there, so its estimate moves only with how LLVM allocates the scalar code around
    code that never ran (hvx128 average_pool, 64 channels on 128 lanes, scalar at every size: the
    rediscovered hand rule rounding_mul_shr_uh was withdrawn for 64 packets of 27 million in one
    spill of a loop set-up block, session 29). The work
    is one synthesized-only compile and count per (rule, cell) pair; the figure with the rule is the
    cell's, already measured."""
    fired_in: dict[str, list[dict[str, Any]]] = {}
    for c in cells:
        if not c["synth"].get("static") or c["synth"].get("vector_executed") == 0:
            continue
        for r in c["synth"].get("lowering_fired", []):
            if r.startswith("synth_lower_"):
                fired_in.setdefault(r, []).append(c)
    return {r: cs for r, cs in sorted(fired_in.items())
            if any((c.get("static_ratio") or 1.0) < below for c in cs)}


def withdraw_regressions(data: dict[str, Any], rules_dir: Path, timeout: float, below: float = math.inf,
                         progress: bool = True) -> dict[str, str]:
    """Withdraw the synthesized rules that make synthesized-only code slower: every rule `suspects`
    names is tried out of the rule set on every measured cell where it fired;
    it is withdrawn (named in RULES_DIR/withdrawn.txt with both models' figures, which the loader
    honours) when, under the primary model and under the second one alike, no such cell gets slower
    without it and at least one gets faster (`regression_verdict`). Rules are tried one at a time,
    each against the rule set less those withdrawn before it. The cells' synthesized-only estimates
    are updated in place (the x86 timing ratio of a changed cell is dropped: it was not re-timed);
    rules kept against the primary model's verdict are listed in data["meta"]["kept"]."""
    cells = data["cells"]
    fired_in = suspects(cells, below)
    gone: dict[str, str] = {}
    kept: dict[str, str] = data["meta"].setdefault("kept", {})
    trials = 0
    for r in fired_in:
        trial: list[Trial] = []
        runs: list[tuple[dict[str, Any], float, Optional[float]]] = []
        for c in fired_in[r]:
            trials += 1
            s1, a1 = synth_only_static(c["bench"], c["isa"], rules_dir, [*gone, r], timeout)
            if s1 is None or s1 > c["synth"]["static"]:
                trial = []  # slower (or failing) without it under the primary model: kept, no more runs
                break
            trial.append((f"{c['bench']} on {c['isa']}", (c["synth"]["static"], c["synth"].get("static_alt")),
                          (s1, a1)))
            runs.append((c, s1, a1))
        c0 = fired_in[r][0]
        withdraw, why = regression_verdict(trial, c0["synth"].get("model") or "primary",
                                           c0["synth"].get("alt_model")) if trial else (False, "")
        if withdraw:
            gone[r] = f"bring-up regression check (benchmarks/synth_bringup_static.py), both models agree: {why}"
            for c, s1, a1 in runs:
                c["synth"]["static"], c["synth"]["static_alt"] = s1, a1
                c["static_ratio"] = ratio(c["hand"].get("static"), s1)
                c["static_ratio_alt"] = ratio(c["hand"].get("static_alt"), a1)
                c.pop("measured_ratio", None)
            with (rules_dir / "withdrawn.txt").open("a") as f:
                f.write(f"{r}  # {gone[r]}\n")
        elif trial and any(wo[0] < w[0] for _, w, wo in trial):
            kept[r] = f"the primary model alone says it is slower: {why}"
        if progress:
            print(f"  regression check {r}: {'withdrawn: ' + gone[r] if r in gone else 'kept' + (': ' + kept[r] if r in kept else '')}",
                  file=sys.stderr, flush=True)
    data["summary"] = summarize(cells, data["meta"]["isas"])
    data["meta"]["withdrawn"] = gone
    data["meta"]["regression_trials"] = {"rules": len(fired_in), "runs": trials}
    return gone


def summarize(cells: list[dict[str, Any]], isas: Sequence[str]) -> dict[str, Any]:
    summary: dict[str, Any] = {}
    for isa in isas:
        rs = [c["static_ratio"] for c in cells if c["isa"] == isa and c.get("static_ratio")]
        failed = [c["bench"] for c in cells if c["isa"] == isa and not c.get("static_ratio")]
        alts = [c["static_ratio_alt"] for c in cells if c["isa"] == isa and c.get("static_ratio_alt")]
        summary[isa] = {"geomean": geomean(rs), "min": min(rs) if rs else None, "cells": len(rs), "failed": failed,
                        "geomean_alt": geomean(alts)}
        if isa == "x86-avx2":
            ms = [c["measured_ratio"] for c in cells if c["isa"] == isa and c.get("measured_ratio")]
            summary[isa]["measured_geomean"] = geomean(ms)
    return summary


def run(rules_dir: Path, benches: Sequence[str], isas: Sequence[str], reps: int, timeout: float,
        progress: bool = True) -> dict[str, Any]:
    t0 = time.time()
    cells = []
    for isa in isas:
        for b in benches:
            c = cell(b, isa, rules_dir, reps, timeout)
            cells.append(c)
            if progress:
                sr = c.get("static_ratio")
                print(f"  {isa:9s} {b:16s} hand {c['hand'].get('static')} synth {c['synth'].get('static')} "
                      f"{'%.3fx' % sr if sr else 'FAILED ' + '; '.join(c['synth'].get('errors', []) + c['hand'].get('errors', []))[:200]}",
                      file=sys.stderr, flush=True)
    summary = summarize(cells, isas)
    return {"meta": {"rules_dir": str(rules_dir), "benchmarks": list(benches), "isas": list(isas), "reps": reps,
                     "seconds": round(time.time() - t0, 1), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                     "load_average": os.getloadavg()},
            "summary": summary, "cells": cells}


def markdown(data: dict[str, Any]) -> str:
    lines = [f"Synthesized-only lowering ({data['meta']['rules_dir']}) vs hand-written lowering: hand / synth "
             "of the harness's static estimate (quick size; >= 1.0x: synthesized-only at least as fast).", ""]
    for name, why in sorted(data["meta"].get("withdrawn", {}).items()):
        lines += [f"* withdrawn {name}: {why}"]
    for name, why in sorted(data["meta"].get("kept", {}).items()):
        lines += [f"* kept {name}: {why}"]
    if data["meta"].get("withdrawn") or data["meta"].get("kept"):
        lines.append("")
    for isa, s in data["summary"].items():
        unit = "packets" if isa == "hvx128" else "cycles"
        head = (f"**{isa}**: geomean {s['geomean']:.3f}x over {s['cells']} benchmarks, worst {s['min']:.3f}x"
                if s["geomean"] else f"**{isa}**: no cell measured")
        if s.get("geomean_alt"):
            head += f" (second model: {s['geomean_alt']:.3f}x)"
        if s.get("measured_geomean"):
            head += f" (measured, x86 timing over LLVM: {s['measured_geomean']:.3f}x)"
        if s["failed"]:
            head += f"; failed: {', '.join(s['failed'])}"
        lines += [head, "",
                  f"| benchmark | hand ({unit}) | synthesized-only ({unit}) | hand / synth | second model |"
                  + (" measured |" if isa == "x86-avx2" else ""),
                  "|---|---|---|---|---|" + ("---|" if isa == "x86-avx2" else "")]
        for c in data["cells"]:
            if c["isa"] != isa:
                continue
            sr = c.get("static_ratio")
            h, sy = c["hand"].get("static"), c["synth"].get("static")
            ra = c.get("static_ratio_alt")
            row = (f"| {c['bench']} | {'%.0f' % h if h else 'failed'} | {'%.0f' % sy if sy else 'failed'} | "
                   f"{'%.3fx' % sr if sr else '-'} | {'%.3fx' % ra if ra else '-'} |")
            if isa == "x86-avx2":
                mr = c.get("measured_ratio")
                row += f" {'%.3fx' % mr if mr else '-'} |"
            lines.append(row)
        scalar = [c["bench"] for c in data["cells"] if c["isa"] == isa and c["synth"].get("vector_executed") == 0]
        if scalar:
            lines += ["", f"No vector instruction ran (scalar paths only; not tried by the regression check): "
                      f"{', '.join(scalar)}"]
        lines.append("")
    return "\n".join(lines)


def trials_markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = ["Synthesized-only lowering with hand-written rules added (`--add-hand`): static estimate without / "
             "with them (> 1.0x: the synthesized set is slower for their lack).", "",
             "| benchmark | hand rules added | synthesized-only | with them | gain | fired |", "|---|---|---|---|---|---|"]
    for r in rows:
        s0, s1, g = r["synth_static"], r["static"], r["gain"]
        lines.append(f"| {r['bench']} | {', '.join(r['hand_rules'])} | {'%.0f' % s0 if s0 else 'failed'} | "
                     f"{'%.0f' % s1 if s1 else 'failed'} | {'%.3fx' % g if g else '-'} | {', '.join(r['fired']) or '-'} |")
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    from benchmarks import registry

    p = argparse.ArgumentParser(prog="python -m benchmarks.synth_bringup_static", description=__doc__.split("\n")[0])
    p.add_argument("rules_dir", type=Path, help="folder with the bring-up's lower_<isa>.rules")
    p.add_argument("--isa", action="append", default=[], help=f"ISA (default: {', '.join(ISAS)})")
    p.add_argument("--bench", action="append", default=[], help="benchmark (default: all 16)")
    p.add_argument("--reps", type=int, default=5, help="x86 timing repetitions (default 5)")
    p.add_argument("--timeout", type=float, default=1200.0, help="seconds per worker (default 1200)")
    p.add_argument("-o", "--output", type=Path, default=Path.cwd() / DEFAULT_OUT_NAME)
    p.add_argument("--measured", type=Path, default=None, metavar="JSON",
                   help="take the measurements from this bringup_static.json (same RULES_DIR) instead of running them")
    p.add_argument("--add-hand", action="append", default=[], metavar="NAME[,NAME...]",
                   help="diagnosis instead of the comparison: per benchmark, the synthesized-only estimate with "
                   "these hand-written lowering rules added (one trial per option; one --isa), into "
                   "bringup_trials.json / .md")
    p.add_argument("--withdraw", action="store_true",
                   help="then withdraw the rules that make synthesized-only code slower (RULES_DIR/withdrawn.txt)")
    args = p.parse_args(argv)
    unknown = [b for b in args.bench if b not in registry.NAMES]
    if unknown:
        p.error(f"unknown benchmark(s): {', '.join(unknown)}; choose from {', '.join(registry.NAMES)}")
    isas = args.isa or list(ISAS)
    bad = [i for i in isas if i not in ISAS]
    if bad:
        p.error(f"unknown ISA(s): {', '.join(bad)}; choose from {', '.join(ISAS)}")
    from pitchfork.targets import ISAS as STEMS

    missing = [i for i in isas if not (args.rules_dir / f"lower_{STEMS[i][1]}.rules").is_file()]
    if missing:
        p.error(f"{args.rules_dir}: no synthesized lowering rules for {', '.join(missing)} "
                f"(expected lower_<stem>.rules from `pitchfork-synth --bring-up ISA -o {args.rules_dir}`)")
    if args.add_hand:
        if len(isas) != 1:
            p.error("--add-hand needs exactly one --isa")
        trials = [[n for n in t.split(",") if n] for t in args.add_hand]
        try:
            hand_rule_texts(isas[0], [n for t in trials for n in t])
        except ValueError as e:
            p.error(str(e))
        rows = hand_trials(args.rules_dir.resolve(), isas[0], args.bench or list(registry.NAMES), trials, args.timeout)
        args.output.mkdir(parents=True, exist_ok=True)
        (args.output / "bringup_trials.json").write_text(json.dumps(rows, indent=1))
        (args.output / "bringup_trials.md").write_text(trials_markdown(rows))
        print(trials_markdown(rows))
        return 0
    if args.measured is not None:
        data = json.loads(args.measured.read_text())
        if Path(data["meta"]["rules_dir"]) != args.rules_dir.resolve():
            p.error(f"{args.measured} measured {data['meta']['rules_dir']}, not {args.rules_dir.resolve()}")
    else:
        data = run(args.rules_dir.resolve(), args.bench or list(registry.NAMES), isas, args.reps, args.timeout)
    if args.withdraw:
        withdraw_regressions(data, args.rules_dir.resolve(), args.timeout)
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "bringup_static.json").write_text(json.dumps(data, indent=1))
    (args.output / "bringup_static.md").write_text(markdown(data))
    print(markdown(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
