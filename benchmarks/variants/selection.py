"""`python3 -m benchmarks.variants.selection [--isa ISA] [--bench NAME ...] [-o DIR]`: each SPEC benchmark
(first parameter set) compiled with both lifting engines; per benchmark the selection time
(CompileStats.selection_seconds: lifting + lowering of every vector expression) and whether the two
engines produced the same assembly (then every static estimate is equal too; where it differs, compare
with the harness: `python3 -m benchmarks --quick --bench NAME --isa ISA --engine egraph -o DIR`).
Writes selection.json in DIR (default ./variants-out)."""

from __future__ import annotations

import argparse
import hashlib
import json
import time
import warnings
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    import pitchfork
    from benchmarks import registry

    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.variants.selection")
    ap.add_argument("--isa", default="x86-avx2")
    ap.add_argument("--bench", action="append", default=[])
    ap.add_argument("-o", "--output", default="variants-out")
    args = ap.parse_args(argv)
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.bench or list(registry.NAMES):
        bench = registry.get(name)
        row: dict = {"bench": name, "isa": args.isa}
        for engine in ("greedy", "egraph"):
            f, fargs = bench.build(args.isa, bench.param_sets[0])
            t0 = time.perf_counter()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    prog = pitchfork.compile(f, fargs, target=args.isa, isel="pitchfork", name=name,
                                             fallback=False, engine=engine)
            except Exception as e:  # noqa: BLE001 - a row, never a stopped run
                row[f"{engine}_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                continue
            row[f"{engine}_selection_s"] = prog.stats.selection_seconds
            row[f"{engine}_compile_s"] = time.perf_counter() - t0
            row["vector_expressions"] = prog.stats.vector_expressions
            row[f"{engine}_asm"] = hashlib.sha1(prog.assembly().encode()).hexdigest()
        row["same_code"] = row.get("greedy_asm") is not None and row.get("greedy_asm") == row.get("egraph_asm")
        rows.append(row)
        print(json.dumps({k: v for k, v in row.items() if not k.endswith("_asm")}), flush=True)
    tg = sum(r.get("greedy_selection_s", 0.0) for r in rows)
    te = sum(r.get("egraph_selection_s", 0.0) for r in rows)
    summary = {"greedy_selection_s": tg, "egraph_selection_s": te, "ratio": te / tg if tg else None,
               "same_code": sum(r["same_code"] for r in rows), "benchmarks": len(rows)}
    (out / "selection.json").write_text(json.dumps({"summary": summary, "rows": rows}, indent=1))
    from rich.console import Console
    from rich.table import Table

    tab = Table("benchmark", "exprs", "greedy selection s", "egraph selection s", "ratio", "same code",
                title=f"selection time per engine ({args.isa})")
    for r in rows:
        g, e = r.get("greedy_selection_s"), r.get("egraph_selection_s")
        tab.add_row(r["bench"], str(r.get("vector_expressions", "")), f"{g:.2f}" if g is not None else r.get("greedy_error", ""),
                    f"{e:.2f}" if e is not None else r.get("egraph_error", ""),
                    f"{e / g:.1f}x" if g and e is not None else "", "yes" if r["same_code"] else "NO")
    tab.add_row("total", "", f"{tg:.2f}", f"{te:.2f}", f"{te / tg:.1f}x" if tg else "", f"{summary['same_code']}/{len(rows)}")
    Console(width=140).print(tab)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
