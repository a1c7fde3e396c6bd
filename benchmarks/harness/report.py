"""Turn `results.json` data into RESULTS.md, speedup.png (like the paper's Figure 5) and
compile_time.png (like Figure 6).

Result per benchmark and ISA: speedup of PITCHFORK over LLVM alone (llvm / pitchfork) and its ratio to
Halide 21 (halide21 / pitchfork; above 1 PITCHFORK is faster). On x86 the numbers are medians of
measured times; on AArch64 and HVX they are the weighted static estimates (cycles, packets). The x86
static estimate is set beside the measured x86 ratios to show how far the static method can be
trusted. Nothing here measures anything: it only reads the rows.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Optional

from benchmarks.harness.compare import baseline_section
from benchmarks.harness.honest import sections as headline  # the three columns (issue 25)
from benchmarks.harness.tables import (ISA_TITLE, PAPER, cases, fmt as _f, geomean, index_rows, labels, metric,
                                       ratio, summary, table)

#: Other figures the paper states as numbers (its text; the plots are not quoted): the Sobel filter's
#: speedup over LLVM alone (section 2, Figure 3), the comparison with Rake (section 5.1; the paper has
#: no comparison with Halide's own selector, of which PITCHFORK later became a part, and Rake has no
#: x86 backend) and the synthesized-rules ablation (section 5.3, Figure 7).
PAPER_SOBEL = {"x86-avx2": 1.58, "arm64": 1.74, "hvx128": 1.77}
PAPER_VS_RAKE = {"arm64": (0.02, 0.09, None), "hvx128": (0.13, 0.50, "matmul")}  # slower on average, at most
PAPER_ABLATION = {"arm64": 1.09, "hvx128": 1.14}  # geomean gain of synthesized rules; max 4.99x average_pool HVX
GOALS = {"x86-avx2": 1.3, "arm64": 1.8, "hvx128": 2.4}
UNIT = {"x86-avx2": "measured time", "arm64": "llvm-mca cycles (cortex-a76), weighted", "hvx128": "VLIW packets, weighted"}


def _time_at_static_size(row: Optional[dict[str, Any]]) -> Optional[float]:
    if row is None or row.get("status") != "ok":
        return None
    t = row.get("time_static_size") or row.get("time")
    return t["median_ms"] if t else None


def validation(data: dict[str, Any]) -> dict[str, Any]:
    """How well the x86 static ratios agree with the measured ones (both at the static size)."""
    t = table(data)
    idx = index_rows(data)
    pairs = []
    for b in t:
        x = t[b].get("x86-avx2")
        if not x:
            continue
        pf, ll, hl = (_time_at_static_size(idx.get((b, "x86-avx2", v))) for v in ("pitchfork", "llvm", "halide21"))
        for kind, meas, est in (("vs LLVM", ratio(ll, pf), x["static_speedup"]),
                                ("vs Halide 21", ratio(hl, pf), x["static_vs_halide"])):
            if meas and est:
                pairs.append((b, kind, meas, est))
    if not pairs:
        return {"pairs": [], "n": 0}
    errs = [abs(math.log2(e / m)) for _, _, m, e in pairs]
    same_side = sum(1 for _, _, m, e in pairs if (m >= 1.0) == (e >= 1.0) or abs(m - 1) < 0.03 or abs(e - 1) < 0.03)
    return {"pairs": pairs, "n": len(pairs), "median_abs_log2_error": sorted(errs)[len(errs) // 2],
            "within_10pct": sum(1 for x in errs if x <= math.log2(1.1)) / len(errs),
            "within_25pct": sum(1 for x in errs if x <= math.log2(1.25)) / len(errs),
            "same_winner": same_side / len(pairs)}


def compile_times(data: dict[str, Any]) -> dict[str, dict[str, dict[str, Any]]]:
    idx = index_rows(data)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for b in labels(data):
        for isa in data["meta"]["isas"]:
            pf, ll = idx.get((b, isa, "pitchfork")), idx.get((b, isa, "llvm"))
            c_pf = (pf or {}).get("compile") or {}
            c_ll = (ll or {}).get("compile") or {}
            out.setdefault(b, {})[isa] = {"pitchfork": c_pf, "llvm": c_ll,
                                          "speedup": ratio(c_ll.get("total"), c_pf.get("total"))}
    return out


# ---- Markdown -----------------------------------------------------------------------------------

def lean_section(data: dict[str, Any], out_dir: Optional[Path]) -> list[str]:
    """Issue 10's section (benchmarks/harness/lean.py): hot loops beside Halide 21's, prog(...) time."""
    from benchmarks.harness.lean import markdown_section

    return markdown_section(data, out_dir)


def bench_value(data: dict[str, Any], t: dict[str, dict[str, dict[str, Optional[float]]]], bench: str,
                isa: str, key: str) -> Optional[float]:
    """One benchmark's value (geomean over the parameter sets the run covers)."""
    return geomean([t[lab][isa][key] or 0.0 for lab, b, _ in cases(data) if b == bench])


def paper_beside_ours(data: dict[str, Any], t: dict[str, dict[str, dict[str, Optional[float]]]],
                      summ: dict[str, dict[str, Any]]) -> list[str]:
    """RESULTS.md section: every figure the paper's text states as a number, next to ours."""
    isas = data["meta"]["isas"]
    L = ["## The paper's figures beside ours", "",
         "Numbers from the paper's text (section 2 for the Sobel filter, section 5 for the rest); its "
         "per-benchmark bars (Figures 5-7) are plots, not numbers, so per benchmark only sobel3x3 can be "
         "compared. The paper measured x86 and ARM run time on real machines and HVX with Qualcomm's "
         "cycle-accurate simulator; ours are x86 run time and static estimates for ARM and HVX.", "",
         "| figure | " + " | ".join(f"{ISA_TITLE[i]}: paper | ours" for i in isas) + " |",
         "|---|" + "---|---|" * len(isas)]

    def row(name: str, paper: dict[str, str], ours: dict[str, str]) -> None:
        L.append(f"| {name} | " + " | ".join(f"{paper.get(i, '—')} | {ours.get(i, '—')}" for i in isas) + " |")

    row("geomean speedup over LLVM alone", {i: f"{PAPER[i][0]:.2f}x" for i in isas},
        {i: f"{_f(summ[i]['geomean'])} ({summ[i]['n']} benchmarks)" for i in isas})
    row("max speedup over LLVM alone", {i: f"{PAPER[i][1]:.2f}x (benchmark not named)" for i in isas},
        {i: f"{_f(summ[i]['max'])} ({summ[i]['argmax'] or '—'})" for i in isas})
    row("sobel3x3 speedup over LLVM alone", {i: f"{PAPER_SOBEL[i]:.2f}x" for i in isas},
        {i: _f(bench_value(data, t, "sobel3x3", i, "speedup")) if "sobel3x3" in data["meta"]["benchmarks"] else "not run"
         for i in isas})
    row("vs Halide 21 (geomean; above 1 = PITCHFORK faster)", {i: "not reported" for i in isas},
        {i: _f(summ[i]["vs_halide_geomean"]) for i in isas})
    row("vs Rake (paper: PITCHFORK slower by, average / worst)",
        {i: (f"{100 * PAPER_VS_RAKE[i][0]:.0f}% / {100 * PAPER_VS_RAKE[i][1]:.0f}%"
             + (f" ({PAPER_VS_RAKE[i][2]})" if PAPER_VS_RAKE[i][2] else "")) if i in PAPER_VS_RAKE else "no Rake x86"
         for i in isas}, {i: "not measured (no Rake here)" for i in isas})
    row("synthesized-rules gain (geomean)", {i: f"{PAPER_ABLATION[i]:.2f}x" if i in PAPER_ABLATION else "not reported"
                                             for i in isas}, {i: "see the ablation section, if present" for i in isas})
    L += ["", "The paper compares with LLVM alone and with Rake, not with Halide's production selector; the "
          "Halide 21 column is ours only (the paper notes that Halide later adopted FPIR for its CPU backends, "
          "so Halide 21's selector descends from the paper's system). The paper's largest synthesized-rules gain is 4.99x (average_pool, HVX). "
          "Geomeans here take each benchmark once: a benchmark run with several parameter sets counts as the "
          "geomean of its sets.", ""]
    return L


def psets_line(data: dict[str, Any]) -> str:
    """How the run covered parameter sets, and the sets behind the `name p<k>` labels."""
    meta = data["meta"]
    multi = sorted({b for lab, b, _ in cases(data) if lab != b})
    head = (f"* Parameter sets: {meta.get('psets', 'first')} (a row per benchmark x parameter set, labelled "
            f"`name p<k>` where a benchmark has several; geomeans count each benchmark once, as the geomean "
            f"over its sets; max and losses are per row)")
    if not multi:
        return head
    sets = meta.get("param_sets") or {}
    parts = []
    for b in multi:
        ps = sets.get(b) or {}
        keys = sorted({k for v in ps.values() for k in v if len({str(w.get(k)) for w in ps.values()}) > 1})
        parts.append(f"{b}: " + "; ".join(f"p{i} " + ", ".join(f"{k}={v[k]}" for k in keys) for i, v in ps.items()))
    return head + (" — " + " | ".join(parts) if parts else "")


def _overhead_line(meta: dict[str, Any]) -> str:
    o = meta["machine"].get("call_overhead_us") or {}
    if not o:
        return "* Per-call overhead: not measured"
    return (f"* Per-call overhead of the timing paths (no work): our kernels via ctypes "
            f"{o.get('ctypes_call_us', float('nan')):.1f} µs, Halide 21 via Python `realize` "
            f"{o.get('halide_realize_us', float('nan')):.1f} µs — negligible at the full sizes, not at the quick ones")


def markdown(data: dict[str, Any], out_dir: Optional[Path] = None) -> str:
    meta = data["meta"]
    t, summ, val, ct = table(data), summary(data), validation(data), compile_times(data)
    idx = index_rows(data)
    isas = meta["isas"]
    L: list[str] = ["# Benchmark results: PITCHFORK vs LLVM alone vs Halide 21", "",
                    "Generated by the benchmark harness (`benchmarks/harness/`); do not edit by hand.", "",
                    f"* Command: `{meta['command']}`",
                    f"* Date: {meta['date']} ({meta['seconds']} s); machine: {meta['machine']['cpu']} "
                    f"(LLVM host CPU `{meta['machine']['llvm_host_cpu']}`), {meta['machine']['cores']} cores, "
                    f"shared (load average at the end {', '.join(f'{x:.1f}' for x in meta['machine']['load_average'])})",
                    f"* Sizes: {'quick' if meta['quick'] else 'full (SPEC timing sizes)'}; x86 timing "
                    f"{meta['reps']} interleaved repetitions; static estimates at the "
                    f"{meta['static_size']} size (per benchmark below)",
                    psets_line(data),
                    f"* Leave-one-out: {meta.get('exclude_rules_from') or 'off'} (the synthesized-rules ablation with leave-one-out is its own section below)",
                    _overhead_line(meta),
                    "* Versions: " + ", ".join(f"{k} {v}" for k, v in meta["versions"].items()), ""]
    L += headline(data)
    L += ["## Summary (PITCHFORK as shipped: selection and loop passes together)", "",
          "Speedup = LLVM alone / PITCHFORK; vs Halide 21 = Halide 21 / PITCHFORK (above 1: PITCHFORK is faster). "
          "x86 numbers are measured run times; ARM and HVX numbers are static estimates (see Methods).", "",
          "| ISA | metric | benchmarks | geomean speedup over LLVM | max | paper geomean (max) | goal | "
          "geomean vs Halide 21 | worst vs Halide 21 | slower than LLVM alone | slower than Halide 21 |",
          "|---|---|---|---|---|---|---|---|---|---|---|"]
    for isa in isas:
        s = summ[isa]
        pg, pm = PAPER[isa]
        L.append(f"| {ISA_TITLE[isa]} | {UNIT[isa]} | {s['n']} | {_f(s['geomean'])} | {_f(s['max'])} "
                 f"({s['argmax'] or '—'}) | {pg:.2f}x ({pm:.2f}x) | ≥{GOALS[isa]:.1f}x | {_f(s['vs_halide_geomean'])} | "
                 f"{_f(s['vs_halide_min'])} ({s['argmin_vs_halide'] or '—'}) | "
                 f"{', '.join(s['losses_vs_llvm']) or 'none'} | {', '.join(s['losses_vs_halide']) or 'none'} |")
    L += ["", "The paper's Figure 5 gives per-benchmark bars only as a plot; its text gives the geomean and "
          "maximum per ISA, quoted above. Its HVX numbers come from a cycle-accurate simulator and its ARM "
          "numbers from an Apple M1; ours are static estimates, so compare ratios, not magnitudes.", ""]
    L += paper_beside_ours(data, t, summ)
    L += ["## Per benchmark", "", "| benchmark | " + " | ".join(
        f"{ISA_TITLE[i]} speedup | {ISA_TITLE[i]} vs H21" for i in isas) + " |",
          "|---|" + "---|---|" * len(isas)]
    for b in labels(data):
        cells = []
        for isa in isas:
            x = t[b][isa]
            fails = [v for v in ("pitchfork", "llvm", "halide21")
                     if (idx.get((b, isa, v)) or {}).get("status") != "ok"]
            note = f" (failed: {', '.join(fails)})" if fails else ""
            cells += [_f(x["speedup"]) + note, _f(x["vs_halide"])]
        L.append(f"| {b} | " + " | ".join(cells) + " |")
    if "x86-avx2" in isas:
        L += ["", "### x86 measured times (median ms, interquartile spread)", "",
              "| benchmark | size | PITCHFORK | LLVM alone | Halide 21 | bit-exact vs Halide 21 |", "|---|---|---|---|---|---|"]
        for b in labels(data):
            cells = []
            for v in ("pitchfork", "llvm", "halide21"):
                r = idx.get((b, "x86-avx2", v)) or {}
                tm = r.get("time")
                cells.append(f"{tm['median_ms']:.3f} ±{100 * tm['spread']:.0f}%" if tm else "—")
            ex = [str((idx.get((b, "x86-avx2", v)) or {}).get("exact", "—")) for v in ("pitchfork", "llvm")]
            size = (idx.get((b, "x86-avx2", "pitchfork")) or {}).get("size", [])
            L.append(f"| {b} | {'x'.join(map(str, size))} | " + " | ".join(cells) + f" | {' / '.join(ex)} |")
    if val["n"]:
        L += ["", "## Validation of the static method on x86", "",
              f"The same weighted llvm-mca estimate, run on the x86 code with the host's CPU model, against the "
              f"x86 ratios measured at the same (static) size ({val['n']} ratios): median |log2(estimate / measured)| = "
              f"{val['median_abs_log2_error']:.3f}; within 10%: {100 * val['within_10pct']:.0f}%; within 25%: "
              f"{100 * val['within_25pct']:.0f}%; same winner (or both within 3% of a tie): "
              f"{100 * val['same_winner']:.0f}%.", "",
              "| benchmark | ratio | measured | static estimate |", "|---|---|---|---|"]
        for b, kind, m, e in val["pairs"]:
            L.append(f"| {b} | {kind} | {m:.2f}x | {e:.2f}x |")
    L += ["", "## Compile time (seconds; speedup = LLVM alone / PITCHFORK, like Figure 6)", "",
          "| benchmark | ISA | PITCHFORK total (capture / selection / codegen / LLVM) | LLVM alone total (same) | speedup |",
          "|---|---|---|---|---|"]
    for b in labels(data):
        for isa in isas:
            c = ct[b][isa]

            def fmt(d: dict[str, Any]) -> str:
                if not d.get("total"):
                    return "—"
                return (f"{d['total']:.2f} ({d.get('capture', 0):.2f} / {d.get('selection', 0):.2f} / "
                        f"{d.get('codegen', 0):.2f} / {d.get('llvm', 0):.2f})")
            L.append(f"| {b} | {isa} | {fmt(c['pitchfork'])} | {fmt(c['llvm'])} | {_f(c['speedup'])} |")
    L += ["", "## What each benchmark used", "",
          "Rules fired (PITCHFORK isel) and the hottest loops of each contender (share of the weighted estimate, "
          "header executions) with the most executed instructions.", ""]
    for b in labels(data):
        L.append(f"### {b}")
        for isa in isas:
            pf = idx.get((b, isa, "pitchfork")) or {}
            fired = pf.get("rules_fired") or {}
            top = ", ".join(f"{k} ×{v}" for k, v in sorted(fired.items(), key=lambda kv: -kv[1])[:12])
            L.append(f"* **{isa}** rules fired: {top or '—'}")
            for v in ("pitchfork", "llvm", "halide21"):
                r = idx.get((b, isa, v)) or {}
                st = r.get("static")
                if not st:
                    err = r.get("static_error") or "; ".join(r.get("errors", []))
                    L.append(f"  * {v}: no static estimate{': ' + err if err else ''}")
                    continue
                loops = sorted((lp for lp in st["loops"] if lp["innermost"]), key=lambda lp: -lp["weighted"])[:3]
                lp_txt = "; ".join(f"{lp['header']} {100 * lp['share']:.0f}% ({lp['header_count']}x, "
                                   f"{lp['instructions']} insts)" for lp in loops)
                hist = ", ".join(f"{k} {v_}" for k, v_ in list(st["histogram"].items())[:10])
                L.append(f"  * {v}: {st['total']:.0f} {st['unit']}; hot loops: {lp_txt or '—'}; top instructions: {hist}")
        L.append("")
    L += lean_section(data, out_dir) + [""]
    L += baseline_section(data)
    fails = [r for r in data["rows"] if r.get("status") != "ok"]
    L += ["## Failures", ""]
    if not fails:
        L.append("None.")
    for r in fails:
        L.append(f"* {r['bench']} / {r['isa']} / {r['variant']}: {'; '.join(r.get('errors', []))}")
    L += ["", "## Methods", "", METHODS, ""]
    return "\n".join(L)


METHODS = """\
* **Contenders.** Each benchmark module builds the same Halide algorithm and per-ISA schedule for all three.
  *PITCHFORK* and *LLVM alone* are our compiler (`pitchfork.compile`, no fallback to Halide allowed) with
  `isel=pitchfork` (lift + per-ISA lowering rules) and `isel=llvm` (generic vector IR, LLVM selects);
  *Halide 21* is Halide's own compiler for the SPEC target strings.
* **x86 AVX2 (measured).** All three run in one process on preallocated buffers: our kernels are JIT-compiled
  (llvmlite MCJIT, `haswell`) and called through one ctypes call each, with no copies; Halide 21 is
  `compile_jit` for `x86-64-linux-avx-avx2-fma-sse41` realizing into a preallocated output buffer, one thread.
  After one warm-up call each, the three are called in turn (order rotated every repetition); the result is
  the ratio of medians, with the interquartile spread shown. Outputs are compared with Halide 21's at the
  timing size. The machine is a shared 2-core VM: absolute times are noisy, interleaving keeps ratios fair.
* **Static estimate (ARM, HVX, and x86 for validation).** The function's assembly is split into basic blocks,
  a counter is added at the start of each block, and the instrumented program is run once on the benchmark's
  inputs at the static size (natively on x86, qemu-aarch64, qemu-hexagon) — exact execution counts of every
  block. Every block that ran contributes count × cost, where cost is llvm-mca's (Debian llvm-22) steady-state
  cycles per iteration (`-mcpu=cortex-a76` on AArch64, the core every contender is compiled for, with
  `apple-m1`'s model beside it; the host CPU on x86) or the number of VLIW packets on Hexagon, with a
  dependency-aware cycle estimate beside it (benchmarks/harness/hvx_cycles.py; llvm-mca has no Hexagon model). A single-path innermost loop is analysed as one region so llvm-mca sees the
  whole body. No loop is chosen by heuristic; the report lists each loop's share of the total. Halide 21's code
  is compiled with `no_runtime` (the harness provides `halide_malloc`/`halide_free`); for Hexagon, Halide 21's
  bundled LLVM aborts while emitting assembly, so Halide's LLVM IR for the same target (its HVX intrinsics
  already selected) is compiled by Debian's `llc` 22 for `hexagonv66` with 128-byte HVX.
* **Limits of the estimate.** llvm-mca assumes warm caches and perfect branch prediction; packets ignore
  stalls. The estimate is validated against the measured x86 ratios above. Sizes differ between the static
  runs (small, because qemu is slow) and the x86 timing run unless `--static-size timing` is given.
* **Compile time.** `CompiledPipeline.stats`: Halide capture (a subprocess), selection (lift + lower),
  codegen, LLVM optimisation and code generation, per isel; Halide 21's own compile time is in results.json.
"""


# ---- plots --------------------------------------------------------------------------------------

def _bars(ax: Any, names: list[str], series: list[tuple[str, list[Optional[float]]]], title: str) -> None:
    import numpy as np

    x = np.arange(len(names))
    w = 0.8 / max(len(series), 1)
    for k, (label, vals) in enumerate(series):
        ys = [v if v else 1.0 for v in vals]
        pos = x + (k - (len(series) - 1) / 2) * w
        # each bar starts at the 1.0x line of the log axis: a gain rises, a loss hangs below it
        ax.bar(pos, [y - 1.0 for y in ys], w, bottom=1.0, label=label)
        for p_, v in zip(pos, vals):
            if not v:  # no result (a failure row): say so rather than draw nothing
                ax.text(p_, 1.0, "n/a", ha="center", va="bottom", fontsize=6, rotation=90)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(x)
    ax.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
    ax.set_title(title, fontsize=10)
    ax.set_yscale("log", base=2)
    ax.yaxis.set_major_formatter(__import__("matplotlib").ticker.FuncFormatter(lambda v, _: f"{v:g}x"))
    ax.set_xlabel("benchmark (parameter set)", fontsize=7)


def plots(data: dict[str, Any], out_dir: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t, ct, summ = table(data), compile_times(data), summary(data)
    isas = data["meta"]["isas"]
    names = labels(data)
    fig, axes = plt.subplots(len(isas), 1, figsize=(max(8, 0.6 * len(names) + 3), 3.2 * len(isas)), squeeze=False)
    for ax, isa in zip(axes[:, 0], isas):
        g = summ[isa]["geomean"]
        _bars(ax, names, [("PITCHFORK", [t[b][isa]["speedup"] for b in names]),
                          ("Halide 21", [t[b][isa]["halide_vs_llvm"] for b in names])],
              f"{ISA_TITLE[isa]}: speedup over LLVM alone (PITCHFORK geomean {_f(g)}; paper {PAPER[isa][0]:.2f}x)")
        ax.set_ylabel(f"speedup, x (log scale)\nratio of {UNIT[isa]}", fontsize=7)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out_dir / "speedup.png", dpi=110)
    plt.close(fig)
    fig, axes = plt.subplots(len(isas), 1, figsize=(max(8, 0.6 * len(names) + 3), 3.0 * len(isas)), squeeze=False)
    for ax, isa in zip(axes[:, 0], isas):
        vals = [ct[b][isa]["speedup"] for b in names]
        _bars(ax, names, [("PITCHFORK", vals)],
              f"{ISA_TITLE[isa]}: compile-time speedup over LLVM alone (geomean {_f(geomean([v for v in vals if v]))})")
        ax.set_ylabel("compile-time ratio, x (log scale)\nLLVM alone seconds / PITCHFORK seconds", fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / "compile_time.png", dpi=110)
    plt.close(fig)


def write_all(data: dict[str, Any], out_dir: Path) -> None:
    out_dir = Path(out_dir)
    text = markdown(data, out_dir)
    aot = out_dir / "RESULTS_AOT.md"  # benchmarks/aot_timing.py --write: AOT libraries timed from C
    if aot.exists():
        text = text.rstrip("\n") + "\n\n" + aot.read_text()
    ablation = out_dir / "RESULTS_ABLATION.md"  # benchmarks/harness/ablation.py: synthesized rules on/off
    if ablation.exists():
        text = text.rstrip("\n") + "\n\n" + ablation.read_text()
    (out_dir / "RESULTS.md").write_text(text)
    plots(data, out_dir)


def console_summary(data: dict[str, Any]) -> str:
    lines = []
    for isa, s in summary(data).items():
        lines.append(f"{isa}: {s['n']} benchmarks, geomean speedup over LLVM {_f(s['geomean'])} (max {_f(s['max'])}), "
                     f"geomean vs Halide 21 {_f(s['vs_halide_geomean'])}")
    fails = sum(1 for r in data["rows"] if r.get("status") != "ok")
    lines.append(f"{fails} failure row(s)")
    return "\n".join(lines)
