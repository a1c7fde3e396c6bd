"""`pitchfork lift`: lift integer expressions to FPIR with the lifting TRS.

    pitchfork lift "u8((u16(a_u8) + u16(b_u8) + 1) / 2)"          # -> rounding_halving_add(a_u8, b_u8)
    pitchfork lift --trace "..."                                   # rules fired: name, before, after
    pitchfork lift --batch exprs.txt > lifted.jsonl                # one JSON object per input line
    pitchfork lift --stats "..."                                   # rewrites, time, rewrites/s

In batch mode every non-blank line that is not a `#` comment is one expression; each gives one line
`{"input", "lifted", "rules", "error"}`. A line that fails (syntax or type error) reports its error
and the batch goes on.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import time
from pathlib import Path
from typing import Any, TextIO

NAME = "lift"
HELP = "Lift an integer expression to FPIR (prints the lifted expression)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("expr", nargs="?", help="expression in FPIR text syntax, e.g. 'u8((u16(a_u8) + u16(b_u8)) / 2)'")
    p.add_argument("--batch", metavar="FILE", help="read one expression per line ('-' for stdin); write JSON lines")
    p.add_argument("--output", "-o", metavar="FILE", help="write results here instead of stdout")
    p.add_argument("--trace", action="store_true", help="list the rules fired (name, before, after)")
    p.add_argument("--stats", action="store_true", help="print rewrites, time and rewrites/second")
    p.add_argument("--rules", metavar="FILE", nargs="+", help="rule files to use instead of rules/lift/*.rules")


def _rules(args: argparse.Namespace) -> Any:
    from pitchfork.lift import lift_rules
    from pitchfork.trs.rules import RuleSet

    return RuleSet.from_files(args.rules) if args.rules else lift_rules()


def lift_line(text: str, rules: Any, trace: bool = False) -> dict[str, Any]:
    """Lift one expression; never raises: errors are reported in the result."""
    from fpir import parse
    from pitchfork.lift import lift_with_stats

    out: dict[str, Any] = {"input": text, "lifted": None, "rules": [], "error": None}
    try:
        lifted, stats = lift_with_stats(parse(text), rules, trace=trace)
    except Exception as e:  # noqa: BLE001 - a bad line must not abort a batch
        out["error"] = f"{type(e).__name__}: {e}"
        return out
    out["lifted"] = str(lifted)
    out["rules"] = [name for name, _, _ in stats.trace] if trace else sorted(stats.fired)
    out["_stats"] = stats
    return out


def _batch(args: argparse.Namespace, rules: Any, sink: TextIO) -> int:
    n = errors = rewrites = 0
    t0 = time.perf_counter()
    with contextlib.ExitStack() as stack:
        src = sys.stdin if args.batch == "-" else stack.enter_context(open(args.batch))
        for line in src:
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            r = lift_line(text, rules, trace=True)
            stats = r.pop("_stats", None)
            if stats is not None:
                rewrites += stats.rewrites
            n += 1
            errors += r["error"] is not None
            sink.write(json.dumps(r) + "\n")
    if args.stats:
        _print_stats(n, rewrites, time.perf_counter() - t0, errors)
    return 0


def _print_stats(n: int, rewrites: int, seconds: float, errors: int = 0) -> None:
    rate = rewrites / seconds if seconds > 0 else 0.0
    print(f"{n} expression(s), {errors} error(s), {rewrites} rewrite(s) in {seconds * 1e3:.3f} ms "
          f"({rate:,.0f} rewrites/s)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    if (args.expr is None) == (args.batch is None):
        print("error: give one expression or --batch FILE", file=sys.stderr)
        return 2
    try:
        rules = _rules(args)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.batch is not None and args.batch != "-" and not Path(args.batch).exists():
        print(f"error: no such file {args.batch}", file=sys.stderr)
        return 2
    with contextlib.ExitStack() as stack:
        sink: TextIO = stack.enter_context(open(args.output, "w")) if args.output else sys.stdout
        if args.batch is not None:
            return _batch(args, rules, sink)
        return _single(args, rules, sink)


def _single(args: argparse.Namespace, rules: Any, sink: TextIO) -> int:
    t0 = time.perf_counter()
    r = lift_line(args.expr, rules, trace=args.trace)
    seconds = time.perf_counter() - t0
    if r["error"] is not None:
        print(f"error: {r['error']}", file=sys.stderr)
        return 1
    stats: Any | None = r.get("_stats")
    sink.write(r["lifted"] + "\n")
    if args.trace and stats is not None:
        from rich.console import Console
        from rich.table import Table

        table = Table("#", "rule", "before", "after", title="rules fired", show_lines=False)
        for i, (name, before, after) in enumerate(stats.trace, 1):
            table.add_row(str(i), name, before, after)
        Console(stderr=True, width=200).print(table)
        if stats.not_decreasing:
            print("matched but not cost-decreasing (not applied): "
                  + ", ".join(f"{k} x{v}" for k, v in sorted(stats.not_decreasing.items())), file=sys.stderr)
    if args.stats and stats is not None:
        _print_stats(1, stats.rewrites, stats.seconds)
        print(f"end to end (parse + lift + print): {seconds * 1e3:.3f} ms", file=sys.stderr)
    return 0
