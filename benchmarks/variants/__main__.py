"""`python3 -m benchmarks.variants [-o DIR] [--data FILE ...] [--rounds N] [--nodes N] [--write-results]`: lift every
program of the variant suite (variants.txt: each FPIR idiom; bench_keys.txt: each SPEC benchmark's key
expression) and the Halide-style pairs (halide_pairs.txt) with both engines; per set and engine the hit rate (reached the canonical FPIR ops, benchmarks.variants.hit) and the
median / p95 lift time per expression, as a rich table, `variants.json` and `variants.png` in DIR
(default ./variants-out). The e-graph budget is rounds and e-nodes only (no wall-clock limit), so the
hits do not depend on machine load; the times do (the 1-minute load average at the start and the end
is recorded). `--write-results` also replaces the generated section of benchmarks/variants/RESULTS.md
with this run's table (never without the flag)."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path


def _p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(0.95 * (len(xs) - 1))))]


def main(argv: list[str] | None = None) -> int:
    from fpir.text import parse
    from pitchfork.selection.egraph.engine import Budget, lift_egraph
    from pitchfork.selection.lift import lift, lift_rules

    from benchmarks.variants import DATA, hit, load

    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.variants")
    ap.add_argument("-o", "--output", default="variants-out", help="output folder (default ./variants-out)")
    ap.add_argument("--data", action="append", default=[],
                    help="variant file (repeatable; default benchmarks/variants/variants.txt, bench_keys.txt "
                         "and halide_pairs.txt)")
    ap.add_argument("--rounds", type=int, default=Budget().rounds)
    ap.add_argument("--nodes", type=int, default=Budget().nodes)
    ap.add_argument("--write-results", action="store_true",
                    help="replace the generated section of benchmarks/variants/RESULTS.md with this run's table")
    args = ap.parse_args(argv)
    load_start = _load()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rules = lift_rules()
    budget = Budget(rounds=args.rounds, nodes=args.nodes)
    rows = []
    files = args.data or [str(DATA.with_name(n)) for n in ("variants.txt", "bench_keys.txt", "halide_pairs.txt")]
    for data, g in [(d, g) for d in files for g in load(Path(d))]:
        canon = parse(g.canonical)
        for text in g.variants:
            t = parse(text)
            t0 = time.perf_counter()
            gr = lift(t, rules)
            t1 = time.perf_counter()
            er = lift_egraph(t, rules, budget)
            t2 = time.perf_counter()
            rows.append({"set": Path(data).stem, "group": g.name, "input": text, "greedy": str(gr),
                         "egraph": str(er.term), "greedy_hit": hit(gr, canon), "egraph_hit": hit(er.term, canon),
                         "greedy_strict_hit": hit(gr, canon, strict=True),
                         "egraph_strict_hit": hit(er.term, canon, strict=True),
                         "note": er.note, "greedy_s": t1 - t0, "egraph_s": t2 - t1})
    summary = {}
    for st in dict.fromkeys(r["set"] for r in rows):
        for eng in ("greedy", "egraph"):
            rs = [r for r in rows if r["set"] == st]
            ts = [r[f"{eng}_s"] for r in rs]
            summary[f"{st}/{eng}"] = {"hits": sum(r[f"{eng}_hit"] for r in rs), "n": len(rs),
                                      "strict_hits": sum(r[f"{eng}_strict_hit"] for r in rs),
                                      "median_ms": statistics.median(ts) * 1e3, "p95_ms": _p95(ts) * 1e3}
    loads = {"load_average_1min_at_start": load_start, "load_average_1min_at_end": _load()}
    (out / "variants.json").write_text(json.dumps({"summary": summary, **loads, "rows": rows}, indent=1))
    from rich.console import Console
    from rich.table import Table

    per = Table("set", "idiom", "greedy hits", "egraph hits", title="hits per idiom")
    for key in dict.fromkeys((r["set"], r["group"]) for r in rows):
        rs = [r for r in rows if (r["set"], r["group"]) == key]
        per.add_row(*key, f"{sum(r['greedy_hit'] for r in rs)}/{len(rs)}", f"{sum(r['egraph_hit'] for r in rs)}/{len(rs)}")
    tab = Table("set/engine", "hit rate", "strict hit rate", "median ms", "p95 ms", title=f"{len(rows)} programs "
                "(strict: the canonical FPIR ops, not a strictly cheaper narrower spelling)")
    for eng, s in summary.items():
        tab.add_row(eng, f"{s['hits']}/{s['n']} ({100 * s['hits'] / s['n']:.0f}%)",
                    f"{s['strict_hits']}/{s['n']} ({100 * s['strict_hits'] / s['n']:.0f}%)",
                    f"{s['median_ms']:.1f}", f"{s['p95_ms']:.1f}")
    con = Console(width=160)
    con.print(per)
    con.print(tab)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (a1, a2) = plt.subplots(1, 2, figsize=(11, 4))
    keys = list(summary)
    a1.bar(range(len(keys)), [100 * summary[k]["hits"] / summary[k]["n"] for k in keys])
    a1.set_xticks(range(len(keys)), keys, rotation=20, fontsize=8)
    a1.set_ylabel("hit rate (%)")
    a1.set_ylim(0, 100)
    engs = ("greedy", "egraph")
    a2.boxplot([[r[f"{e}_s"] * 1e3 for r in rows] for e in engs])
    a2.set_xticks(range(1, len(engs) + 1), engs)
    a2.set_yscale("log")
    a2.set_ylabel("lift time per expression (ms)")
    fig.tight_layout()
    fig.savefig(out / "variants.png", dpi=100)
    print(f"wrote {out / 'variants.json'} and {out / 'variants.png'}")
    if args.write_results:
        from benchmarks.variants.results import RESULTS, write_section

        write_section(TITLE, _markdown(summary, loads, argv if argv is not None else sys.argv[1:]))
        print(f"replaced the section '{TITLE}' of {RESULTS}")
    return 0


TITLE = "Hit rates and lift time per expression (generated)"


def _load() -> float | None:
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def _markdown(summary: dict, loads: dict, argv: list[str]) -> str:
    """This run's table for RESULTS.md (`--write-results`)."""
    names = {"variants": "variants.txt (each FPIR idiom >= 5 ways)", "bench_keys": "bench_keys.txt (16 key expressions)",
             "halide_pairs": "halide_pairs.txt (Halide-style pairs)"}

    def fmt(x: float | None) -> str:
        return "?" if x is None else f"{x:.1f}"

    lines = [f"## {TITLE}", "",
             f"`python3 -m benchmarks.variants {' '.join(argv)}`; load average (1 min) {fmt(loads['load_average_1min_at_start'])} "
             f"at the start, {fmt(loads['load_average_1min_at_end'])} at the end. Lift time per expression: each engine's "
             "`lift` of one program, the e-graph engine's including its greedy run and, for its first program, building "
             "the egglog prelude.", "",
             "| set | greedy hits | e-graph hits | e-graph strict hits | greedy median / p95 ms | e-graph median / p95 ms |",
             "|---|---|---|---|---|---|"]
    for st in dict.fromkeys(k.split("/")[0] for k in summary):
        g, e = summary[f"{st}/greedy"], summary[f"{st}/egraph"]
        lines.append(f"| {names.get(st, st)} | {g['hits']}/{g['n']} (strict {g['strict_hits']}) | {e['hits']}/{e['n']} | "
                     f"{e['strict_hits']}/{e['n']} | {g['median_ms']:.1f} / {g['p95_ms']:.1f} | "
                     f"{e['median_ms']:.1f} / {e['p95_ms']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    raise SystemExit(main())
