"""RESULTS.md's headline: three columns per ISA that keep instruction selection apart from loop passes.

Rows (variants) of a run, per benchmark x ISA x parameter set:

* `pitchfork`: PITCHFORK as shipped (every loop pass on, isel=pitchfork);
* `pitchfork_sel`: PITCHFORK with only the passes LLVM alone gets too (pitchfork.passes.pipeline.shared_passes):
  isel=pitchfork's instruction selection and nothing else of ours;
* `pitchfork_nopass`: PITCHFORK with no loop pass;
* `llvm`: LLVM alone (isel=llvm) with those same shared loop passes;
* `halide21`: Halide 21's own compiler.

Columns, each a ratio of costs (above 1: the second contender is faster):

(a) selection only = llvm / pitchfork_sel: the paper's comparison, the same loop passes on both sides;
(b) loop passes = pitchfork_nopass / pitchfork: what the loop passes add on top of selection;
(c) vs Halide 21 = halide21 / pitchfork.

The total, LLVM alone / PITCHFORK as shipped, is set beside them. The second model's figures (ARM: the
second llvm-mca core; HVX: hvx_cycles' dependency-aware cycles) are set beside the primary ones, and
where the two disagree by more than 10% the report says so. x86: quick-size against full-size
measured ratios (`time_static_size` beside `time`). Nothing here measures: it reads the rows.
"""

from __future__ import annotations

from typing import Any, Optional

from benchmarks.harness.tables import (ISA_TITLE, PAPER, cases, fmt as _f, geomean, index_rows as _index,
                                       measured_ratio, metric, per_benchmark, ratio)

SECOND = {"arm64": "llvm-mca apple-m1", "hvx128": "HVX cycles (hvx_cycles)"}
UNIT = {"x86-avx2": "measured time", "arm64": "llvm-mca cycles, cortex-a76 (the core compiled for)",
        "hvx128": "VLIW packets"}


def _alt(row: Optional[dict[str, Any]]) -> Optional[float]:
    """The second model's total of a row (ARM: second llvm-mca core; HVX: cycles)."""
    if row is None or row.get("status") != "ok":
        return None
    alt = (row.get("static") or {}).get("alt") or {}
    return alt.get("total") or None


def columns(data: dict[str, Any]) -> dict[str, dict[str, dict[str, Optional[float]]]]:
    """case label -> isa -> {sel, passes, total, vs_halide, sel_alt, total_alt, vs_halide_alt}."""
    idx = _index(data)
    out: dict[str, dict[str, dict[str, Optional[float]]]] = {}
    for lab, _, _ in cases(data):
        for isa in data["meta"]["isas"]:
            r = {v: idx.get((lab, isa, v)) for v in ("pitchfork", "pitchfork_sel", "pitchfork_nopass", "llvm",
                                                     "halide21")}
            m = {v: metric(row, isa) for v, row in r.items()}
            a = {v: _alt(row) for v, row in r.items()}
            out.setdefault(lab, {})[isa] = {
                "sel": measured_ratio(r["llvm"], r["pitchfork_sel"], m["llvm"], m["pitchfork_sel"]),
                "passes": measured_ratio(r["pitchfork_nopass"], r["pitchfork"], m["pitchfork_nopass"], m["pitchfork"]),
                "total": measured_ratio(r["llvm"], r["pitchfork"], m["llvm"], m["pitchfork"]),
                "vs_halide": measured_ratio(r["halide21"], r["pitchfork"], m["halide21"], m["pitchfork"]),
                "sel_alt": ratio(a["llvm"], a["pitchfork_sel"]), "total_alt": ratio(a["llvm"], a["pitchfork"]),
                "vs_halide_alt": ratio(a["halide21"], a["pitchfork"]),
            }
    return out


def _geo(data: dict[str, Any], col: dict[str, dict[str, dict[str, Optional[float]]]], isa: str,
         key: str) -> Optional[float]:
    return geomean(per_benchmark(data, {lab: col[lab][isa][key] for lab in col if col[lab][isa][key]}))


def _verdict(g: Optional[float], goal: float) -> str:
    if g is None:
        return "not measured"
    return "met" if g >= goal else f"**short** ({g:.2f}x < {goal:.2f}x)"


def sections(data: dict[str, Any]) -> list[str]:
    col = columns(data)
    isas = data["meta"]["isas"]
    idx = _index(data)
    L = ["## Headline: instruction selection only, loop passes, Halide 21", "",
         "One table per ISA. **(a) selection only** = LLVM alone / PITCHFORK with the same loop passes on both "
         "sides (the paper's comparison: only instruction selection differs); **(b) loop passes** = PITCHFORK "
         "without any loop pass / with its loop passes (what they add on top of selection); **total** = "
         "LLVM alone / PITCHFORK as shipped; **(c) vs Halide 21** = Halide 21 / PITCHFORK. Above 1: PITCHFORK is "
         "faster. Every contender is compiled with the same LLVM options (Methods: 'Compiler options'); "
         "synthesized rules are used leave-one-out when the run says so (header above).", ""]
    L += _shared_passes_line(isas)
    goal_lines = []
    for isa in isas:
        ga, gb, gt, gc = (_geo(data, col, isa, k) for k in ("sel", "passes", "total", "vs_halide"))
        L += [f"### {ISA_TITLE[isa]} ({UNIT[isa]})", "",
              "| benchmark | (a) selection only | (b) loop passes | total over LLVM alone | (c) vs Halide 21 |"
              + (f" (a) by {SECOND[isa]} | total by {SECOND[isa]} | (c) by {SECOND[isa]} |" if isa in SECOND else ""),
              "|---|---|---|---|---|" + ("---|---|---|" if isa in SECOND else "")]
        for lab, _, _ in cases(data):
            c = col[lab][isa]
            fails = [v for v in ("pitchfork", "pitchfork_sel", "pitchfork_nopass", "llvm", "halide21")
                     if (idx.get((lab, isa, v)) or {}).get("status") not in (None, "ok")
                     and "PassSwitchUnavailable" not in " ".join((idx.get((lab, isa, v)) or {}).get("errors", []))]
            note = f" (failed: {', '.join(fails)})" if fails else ""
            cells = [_f(c["sel"]), _f(c["passes"]), _f(c["total"]), _f(c["vs_halide"]) + note]
            if isa in SECOND:
                cells += [_f(c["sel_alt"]), _f(c["total_alt"]), _f(c["vs_halide_alt"])]
            L.append(f"| {lab} | " + " | ".join(cells) + " |")
        geo = [_f(ga), _f(gb), _f(gt), _f(gc)]
        if isa in SECOND:
            geo += [_f(_geo(data, col, isa, k)) for k in ("sel_alt", "total_alt", "vs_halide_alt")]
        L.append("| **geomean** | " + " | ".join(f"**{g}**" for g in geo) + " |")
        losses = sorted(lab for lab in col if col[lab][isa]["vs_halide"] and col[lab][isa]["vs_halide"] < 1.0)
        goal = PAPER[isa][0]
        goal_lines.append(f"* {ISA_TITLE[isa]}: selection only {_f(ga)} against the goal ≥{goal:.2f}x (the paper's "
                          f"geomean): {_verdict(ga, goal)}; vs Halide 21 ≥1.0x on every benchmark: "
                          + ("met" if not losses and gc else f"**short** on {', '.join(losses) or 'unmeasured rows'}"))
        L += [""] + _disagreements(col, isa) + _halide_failures(data, isa) + [""]
    if data["meta"].get("quick"):
        L[2:2] = ["**A --quick run** (each benchmark's quick size, first parameter set, 3 x86 repetitions): x86 "
                  "ratios at quick sizes are larger than at full sizes for memory-bound kernels (the 'Quick size "
                  "against full size' table of a full run); treat these figures as indicative.", ""]
    L = L[:2] + ["Goals (issue 25; never tuned for): selection only x86 ≥1.31x, ARM ≥1.82x, HVX ≥2.44x; ≥1.0x vs "
                 "Halide 21 on every benchmark.", ""] + goal_lines + [""] + L[2:]
    L += quick_vs_full(data)
    L += compiler_options()
    return L


def _shared_passes_line(isas: list[str]) -> list[str]:
    from pitchfork.passes.pipeline import shared_passes

    got = {isa: shared_passes(isa) for isa in isas}
    return ["Passes both sides get in (a) (`pitchfork.passes.pipeline.shared_passes`: every loop pass and the "
            "codegen strategies that only move data; `passes=` and `enable_passes=`): "
            + "; ".join(f"{isa}: {', '.join(p) or 'none'}" for isa, p in got.items()) + ". LLVM alone compiles "
            "their output with its own selection (dot_products hands it the VectorReduce Halide itself would "
            "make; hvx_aligned_loads the aligned blocks + valign Halide's own AlignLoads makes). (b) turns them "
            "all off. The remaining codegen passes of isel=pitchfork choose instructions (accumulation order, "
            "register-pair forms, vshuff interleaves, reductions to one lane, x86 pack lane order, widened "
            "splats: `pitchfork compile --print-passes`) and count as instruction selection in (a).", ""]


def _halide_failures(data: dict[str, Any], isa: str) -> list[str]:
    """Why a Halide 21 cell is empty: Halide's own failure, as the row records it."""
    out = []
    for lab, _, _ in cases(data):
        r = _index(data).get((lab, isa, "halide21"))
        if r and r.get("status") != "ok":
            why = next((e[5:] for e in r.get("errors", []) if e.startswith("why: ")), None)
            out.append(f"{lab}: " + (why.split(";")[0] if why else "; ".join(r.get("errors", []))[:200]))
    if not out:
        return []
    return ["", "Halide 21 rows without a figure (reasons in 'Failures'; `python -m benchmarks.harness.halide21_repro` "
            "reproduces the wrong-code cases):", ""] + [f"* {x}" for x in out]


def _disagreements(col: dict[str, dict[str, dict[str, Optional[float]]]], isa: str) -> list[str]:
    """Where the second model's ratio differs from the primary one by more than 10%."""
    if isa not in SECOND:
        return []
    out = []
    for lab in col:
        c = col[lab][isa]
        for key, alt, what in (("sel", "sel_alt", "(a)"), ("total", "total_alt", "total"),
                               ("vs_halide", "vs_halide_alt", "(c)")):
            p, s = c[key], c[alt]
            if p and s and abs(p / s - 1) > 0.10:
                out.append(f"{lab} {what}: {p:.2f}x vs {s:.2f}x")
    if not out:
        return [f"The figures by {SECOND[isa]} agree with the primary ones within 10% on every ratio."]
    return [f"Where the figures by {SECOND[isa]} differ from the primary ones by more than 10%: " + "; ".join(out) + "."]


def quick_vs_full(data: dict[str, Any]) -> list[str]:
    """x86: ratios measured at the quick (static-estimate) size beside those at the full size."""
    if "x86-avx2" not in data["meta"]["isas"] or data["meta"].get("quick"):
        return []
    idx = _index(data)
    rows = []
    for lab, _, _ in cases(data):
        r = {v: idx.get((lab, "x86-avx2", v)) or {} for v in ("pitchfork", "llvm", "halide21")}

        def t(v: str, key: str) -> Optional[float]:
            x = r[v].get(key) if r[v].get("status") == "ok" else None
            return x["median_ms"] if x else None
        full = ratio(t("llvm", "time"), t("pitchfork", "time"))
        quick = ratio(t("llvm", "time_static_size"), t("pitchfork", "time_static_size"))
        fh = ratio(t("halide21", "time"), t("pitchfork", "time"))
        qh = ratio(t("halide21", "time_static_size"), t("pitchfork", "time_static_size"))
        if full and quick:
            rows.append((lab, quick, full, qh, fh))
    if not rows:
        return []
    L = ["### Quick size against full size (x86, measured)", "",
         "The ARM and HVX estimates run at each benchmark's quick size (qemu is slow). On x86 both sizes are "
         "measured, so the relation shows: PITCHFORK over LLVM alone (as shipped) and vs Halide 21 at each size.", "",
         "| benchmark | over LLVM, quick | over LLVM, full | full / quick | vs Halide 21, quick | vs Halide 21, full |",
         "|---|---|---|---|---|---|"]
    for lab, q, f, qh, fh in rows:
        L.append(f"| {lab} | {q:.2f}x | {f:.2f}x | {f / q:.2f} | {_f(qh)} | {_f(fh)} |")
    g = geomean([f / q for _, q, f, _, _ in rows])
    L += ["", f"Geomean full / quick: {_f(g, 3, '')} ({len(rows)} cases): "
          + ("full-size ratios are smaller than quick-size ones, so the ARM/HVX quick-size estimates likely "
             "overstate full-size gains by about this factor." if g and g < 0.97 else
             "full-size ratios are close to or above quick-size ones." if g else ""), ""]
    return L


def compiler_options() -> list[str]:
    """The 'Compiler options' section: what every contender is compiled with (from the code itself)."""
    from pitchfork.backend.machine import HVX_ALIGN_VECTORS, TARGETS, backend_options

    L = ["### Compiler options (the same for every contender)", "",
         "| ISA | target machine (all contenders) | LLVM backend options beyond LLVM's defaults |", "|---|---|---|"]
    for name, t in TARGETS.items():
        opts = " ".join(f"`{o}`" for o in backend_options(name)) or "none"
        L.append(f"| {name} | `{t.triple}`, `-mcpu={t.cpu}`, `{t.features}`, {t.reloc} | {opts} |")
    L += ["",
          "* Our two isels share one optimisation pipeline (LLVM's O3 without loop unrolling, loop vectorisation "
          "and interleaving, as Halide; SLP vectorisation on AArch64 only) and one backend per ISA "
          "(`pitchfork.backend.machine`, `backend_options`: a test fails if the isels' options differ, "
          "tests/pitchfork/backend/test_equal_options.py). Halide 21's IR (optimised by Halide's own LLVM "
          "pipeline, its choice) is compiled for AArch64 and HVX by Debian's llc 22 with the same target "
          "machine and options (`halide21.llc_command`); on x86 Halide's own JIT is timed (mcpu haswell, as ours).",
          f"* HVX AlignVectors (`-hvc-va`, HexagonVectorCombine's rewriting of groups of unaligned loads into "
          f"aligned loads and byte shuffles) is a compiler option, so it is one setting for all contenders: "
          f"**{'on' if HVX_ALIGN_VECTORS else 'off'}**. Earlier runs turned it off for isel=pitchfork only.",
          *_align_vectors_table(),
          "* Instruction selection, not an option: on HVX, isel=pitchfork computes the 64-bit-lane products O3 "
          "makes of 32 x 32 -> 64-bit multiplies on 32-bit halves (`pitchfork.backend.hvx_i64`); that decides "
          "which instructions compute a product, so LLVM alone keeps LLVM's own (scalarised) code.",
          "* The static estimates count LLVM's default VLIW packets for every contender. (Our compiler emits a "
          "module with 64-bit-lane vectors without packets, a qemu-hexagon workaround; that code is what a user "
          "runs under qemu, not what is counted, for either isel.)", ""]
    return L


def _align_vectors_table() -> list[str]:
    """The measurement behind HVX_ALIGN_VECTORS (benchmarks/align_vectors.json), if committed."""
    import json
    from pathlib import Path

    from benchmarks.harness import align_vectors

    p = Path(align_vectors.RESULTS_DIR) / "align_vectors.json"
    if not p.exists():
        return ["  (No measurement committed: `python -m benchmarks.harness.align_vectors --write-results`.)"]
    data = json.loads(p.read_text())
    return ["  Measured with every contender on HVX, weighted packets with the option off / on (above 1: on is "
            f"better), first parameter set, quick size (`{data['command']}`):", ""] + \
        ["  " + ln for ln in align_vectors.markdown(data)] + [""]
