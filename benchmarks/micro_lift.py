"""Micro-benchmark of the lifting TRS: rewrites per second and time per expression node.

    python -m benchmarks.micro_lift [--repeat N] [--json]

Lifts the Sobel expression of Figure 2b and a corpus of fixed-point idioms (every FPIR op) N times each,
with a fresh rewriter per lift (as `pitchfork lift` does), and reports for each: nodes, rewrites,
microseconds per lift, microseconds per input node and rewrites/second. The first (cold) lift of an
expression is reported separately: it also fills the interval-analysis cache and the interned-term
table. Parsing is not timed.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from dataclasses import asdict, dataclass

from fpir import parse
from fpir.term import Term
from pitchfork.selection.lift import lift_rules
from pitchfork.trs.rewriter import Rewriter

SOBEL = ("u8(min(absd(u16(a_u8) + u16(b_u8) * x(2) + u16(c_u8), u16(d_u8) + u16(e_u8) * x(2) + u16(f_u8)) + "
         "absd(u16(g_u8) + u16(h_u8) * x(2) + u16(i_u8), u16(j_u8) + u16(k_u8) * x(2) + u16(l_u8)), x(255)))")

CORPUS = [
    "u8((u16(a_u8) + u16(b_u8) + 1) / 2)",
    "u8((u16(a_u8) + u16(b_u8)) >> 1)",
    "i8((i16(a_i8) - i16(b_i8)) >> 1)",
    "u8((u16(a_u8) + 2 * u16(b_u8) + u16(c_u8) + 2) >> 2)",
    "u8((u16(a_u8) + 8) / 16)",
    "i16((i32(a_i16) + 8) << -4)",
    "u8(min(max(a_i16, 0), 255))",
    "i8(min(max(i16(a_i8) + i16(b_i8), -128), 127))",
    "u8(max(i16(a_u8) - i16(b_u8), 0))",
    "u8(min(u16(a_u8) << 3, 255))",
    "select(a_u8 > b_u8, a_u8 - b_u8, b_u8 - a_u8)",
    "select(a_i16 < 0, -a_i16, a_i16)",
    "i16(min(max((i32(a_i16) * i32(b_i16) + 16384) >> 15, -32768), 32767))",
    "i32(min(max((i64(a_i32) * i64(b_i32) + 1073741824) >> 31, -2147483648), 2147483647))",
    "u16((u32(a_u16) * u32(b_u16)) / 65536)",
    "u8((u16(a_u8) * u16(b_u8) + 128) >> 8)",
    "c_i32 + i32(a_i16) * i32(b_i16) + i32(d_i16) * i32(e_i16)",
    "i16(a_u8) * i16(b_i8) + i16(c_u8) * i16(d_i8)",
    "c_u16 - u16(a_u8) + u16(b_u8) * u16(c_u8)",
    "i16(a_u8) << 6",
]


@dataclass
class Result:
    name: str
    nodes: int
    rewrites: int
    cold_us: float
    us_per_lift: float
    us_per_node: float
    rewrites_per_s: float


def measure(name: str, term: Term, repeat: int) -> Result:
    rules = lift_rules()
    t0 = time.perf_counter()
    rw = Rewriter(rules)
    rw.rewrite(term)
    cold = time.perf_counter() - t0
    rewrites = rw.stats.rewrites
    samples = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        Rewriter(rules).rewrite(term)
        samples.append(time.perf_counter() - t0)
    best = statistics.median(samples)
    nodes = term.size()
    return Result(name, nodes, rewrites, cold * 1e6, best * 1e6, best * 1e6 / nodes,
                  rewrites / best if best else 0.0)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeat", type=int, default=200, help="lifts per expression (median is reported)")
    p.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = p.parse_args(argv)
    lift_rules()  # load and compile the rule files outside the timed region
    results = [measure("sobel (Fig. 2b)", parse(SOBEL), args.repeat)]
    results += [measure(src, parse(src), args.repeat) for src in CORPUS]
    corpus = results[1:]
    total_rw = sum(r.rewrites for r in corpus)
    total_us = sum(r.us_per_lift for r in corpus)
    total_nodes = sum(r.nodes for r in corpus)
    summary = {"rules": len(lift_rules()), "corpus_expressions": len(corpus),
               "corpus_rewrites_per_s": total_rw / (total_us * 1e-6), "corpus_us_per_node": total_us / total_nodes}
    if args.json:
        print(json.dumps({"results": [asdict(r) for r in results], "summary": summary}, indent=1))
        return 0
    print(f"{len(lift_rules())} lifting rules; median of {args.repeat} lifts per expression (fresh rewriter each)")
    print(f"{'expression':60s} {'nodes':>5s} {'rw':>3s} {'cold us':>9s} {'us/lift':>9s} {'us/node':>8s} {'rw/s':>9s}")
    for r in results:
        name = r.name if len(r.name) <= 60 else r.name[:57] + "..."
        print(f"{name:60s} {r.nodes:5d} {r.rewrites:3d} {r.cold_us:9.1f} {r.us_per_lift:9.1f} {r.us_per_node:8.2f} "
              f"{r.rewrites_per_s:9.0f}")
    print(f"corpus: {summary['corpus_rewrites_per_s']:,.0f} rewrites/s, {summary['corpus_us_per_node']:.2f} us/node")
    return 0


if __name__ == "__main__":
    sys.exit(main())
