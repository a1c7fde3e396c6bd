"""`pitchfork lift`: lift integer expressions to FPIR with the lifting TRS.

    pitchfork lift "u8((u16(a_u8) + u16(b_u8) + 1) / 2)"          # -> rounding_halving_add(a_u8, b_u8)
    pitchfork lift --trace "..."                                   # rules fired: name, before, after
    pitchfork lift --batch exprs.txt > lifted.jsonl                # one JSON object per input line
    pitchfork lift --stats "..."                                   # rewrites, time, rewrites/s
    pitchfork lift --engine egraph [--explain] "..."               # equality saturation (pitchfork/selection/egraph)

In batch mode every non-blank line that is not a `#` comment is one expression; each gives one line
`{"input", "lifted", "rules", "error"}`. A line that fails (syntax or type error, bytes that are not
UTF-8) reports its error, with its line number, and the batch goes on; the exit status is then 1
unless --allow-errors (docs/ERRORS.md).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import sys
import time
from typing import Any, TextIO

from pitchfork.errors import EXIT_INPUT, EXIT_OK, UsageError, open_input, open_output

NAME = "lift"
HELP = "Lift an integer expression to FPIR (prints the lifted expression)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("expr", nargs="?", help="expression in FPIR text syntax, e.g. 'u8((u16(a_u8) + u16(b_u8)) / 2)'")
    p.add_argument("--batch", metavar="FILE", help="read one expression per line ('-' for stdin); write JSON lines")
    p.add_argument("--output", "-o", metavar="FILE", help="write results here instead of stdout")
    p.add_argument("--trace", action="store_true", help="list the rules fired (name, before, after)")
    p.add_argument("--stats", action="store_true", help="print rewrites, time and rewrites/second")
    p.add_argument("--rules", metavar="FILE", action="append",
                   help="a rule file to use instead of rules/lift/*.rules (repeatable)")
    p.add_argument("--assume-no-overflow", action="store_true",
                   help="Halide's overflow rule: mark every signed 32/64-bit add/sub/mul `nsw` (as the Halide "
                        "frontend does) so rules that need it apply; without it only `add.nsw(...)` text has it")
    p.add_argument("--assume-shifts-in-range", action="store_true",
                   help="Halide's shift rule: mark every shl/shr `inrange` (the amount is below the lane width, "
                        "as the Halide frontend states) so rules that need it apply; without it only "
                        "`shl.inrange(...)` text has it")
    p.add_argument("--engine", choices=("greedy", "egraph"), default="greedy",
                   help="greedy TRS (default) or equality saturation on egglog, never worse than greedy")
    p.add_argument("--explain", action="store_true",
                   help="with --engine egraph: print the rules that acted and an ordered derivation (input -> ... -> result, each step naming its rule)")
    p.add_argument("--allow-errors", action="store_true",
                   help="batch: exit 0 even when some lines failed (their errors are still reported)")


def _rules(args: argparse.Namespace) -> Any:
    from pitchfork.selection.lift import lift_rules
    from pitchfork.trs.rules import RuleSet

    return RuleSet.from_files(args.rules) if args.rules else lift_rules()


def lift_line(text: str, rules: Any, trace: bool | str = False, source: str = "<expr>", line: int = 1,
              indent: int = 0, no_overflow: bool = False, shifts_in_range: bool = False,
              engine: str = "greedy") -> dict[str, Any]:
    """Lift one expression; never raises: errors are reported in the result (located at
    source:line:column for a batch file's line `line`)."""
    from fpir.text import FPIRSyntaxError

    from fpir import parse
    from pitchfork.selection.lift import lift_with_stats

    out: dict[str, Any] = {"input": text, "lifted": None, "rules": [], "error": None}
    if "\ufffd" in text:  # decoded with errors="replace": the line was not UTF-8
        out["error"] = f"{source}:{line}: not UTF-8 text"
        return out
    try:
        term = parse(text, source=source)
        if no_overflow or shifts_in_range:
            from fpir.ops import with_halide_overflow

            term = with_halide_overflow(term, shifts=shifts_in_range, overflow=no_overflow)
        if engine == "egraph":
            from pitchfork.selection.egraph.engine import lift_egraph

            res = lift_egraph(term, rules)
            out["lifted"], out["engine"], out["note"] = str(res.term), res.source, res.note
            out["rules"] = sorted(set(res.fired) | set(res.greedy_fired))
            out["_egraph"], out["_term"] = res, term
            return out
        lifted, stats = lift_with_stats(term, rules, trace=trace)
    except FPIRSyntaxError as e:
        col = e.column + indent if e.line <= 1 else e.column
        out["error"] = str(FPIRSyntaxError(e.message, line + e.line - 1, col, source))
        return out
    except Exception as e:  # noqa: BLE001 - a bad line must not abort a batch
        out["error"] = error_text(e)
        return out
    out["lifted"] = str(lifted)
    out["rules"] = [name for name, _, _ in stats.trace] if trace else sorted(stats.fired)
    out["_stats"] = stats
    return out


def _batch(args: argparse.Namespace, rules: Any, src: TextIO, sink: TextIO) -> int:
    # The cyclic collector is paused over a greedy batch, as Rewriter.rewrite pauses it over one
    # rewrite: a line's work (its syntax tree, terms, result dict) is acyclic and freed by reference
    # counting, while every collection between two lines' rewrites walks the growing table of interned
    # terms (~0.16 s in ~210 collections of a 1,000-line batch's ~2.4 s CPU, session 20). The e-graph
    # engine's objects are not known to be acyclic: it keeps the collector. Re-enabled on the way out
    # only if it was on.
    collecting = gc.isenabled() and args.engine == "greedy"
    if collecting:
        gc.disable()
    try:
        return _batch_lines(args, rules, src, sink)
    finally:
        if collecting:
            gc.enable()


def _batch_lines(args: argparse.Namespace, rules: Any, src: TextIO, sink: TextIO) -> int:
    n = errors = rewrites = 0
    t0 = time.perf_counter()
    name = "<stdin>" if args.batch == "-" else args.batch
    for lineno, line in enumerate(src, 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        r = lift_line(text, rules, trace="names", source=name, line=lineno, indent=len(line) - len(line.lstrip()),
                      no_overflow=args.assume_no_overflow,
                      shifts_in_range=args.assume_shifts_in_range, engine=args.engine)
        r.pop("_egraph", None)
        r.pop("_term", None)
        stats = r.pop("_stats", None)
        if stats is not None:
            rewrites += stats.rewrites
        n += 1
        errors += r["error"] is not None
        sink.write(json.dumps(r) + "\n")
    if args.stats:
        _print_stats(n, rewrites, time.perf_counter() - t0, errors)
    if errors:
        print(f"pitchfork lift: {errors} of {n} line(s) failed", file=sys.stderr)
        return EXIT_OK if args.allow_errors else EXIT_INPUT
    return EXIT_OK


def _print_stats(n: int, rewrites: int, seconds: float, errors: int = 0) -> None:
    rate = rewrites / seconds if seconds > 0 else 0.0
    print(f"{n} expression(s), {errors} error(s), {rewrites} rewrite(s) in {seconds * 1e3:.3f} ms "
          f"({rate:,.0f} rewrites/s)", file=sys.stderr)


def error_text(e: BaseException) -> str:
    """One line for an error in an expression: the located message for syntax/type errors."""
    from fpir.text import FPIRSyntaxError

    if isinstance(e, FPIRSyntaxError):
        return str(e)
    if isinstance(e, RecursionError):  # the passes are iterative; this would be a bug
        return "internal error: expression too deeply nested"
    return f"{type(e).__name__}: {e}"


def run(args: argparse.Namespace) -> int:
    if (args.expr is None) == (args.batch is None):
        raise UsageError("give one expression or --batch FILE")
    rules = _rules(args)  # RuleFileError (exit 1) / InputFileError (exit 4): reported by pitchfork.cli
    with contextlib.ExitStack() as stack:
        src: TextIO | None = None
        if args.batch is not None:  # opened first: a missing input must not leave an empty output behind
            src = sys.stdin if args.batch == "-" else stack.enter_context(open_input(args.batch, "batch file"))
        sink: TextIO = stack.enter_context(open_output(args.output)) if args.output else sys.stdout
        if src is not None:
            return _batch(args, rules, src, sink)
        return _single(args, rules, sink)


def _single(args: argparse.Namespace, rules: Any, sink: TextIO) -> int:
    t0 = time.perf_counter()
    if args.explain and args.engine != "egraph":
        raise UsageError("--explain needs --engine egraph")
    r = lift_line(args.expr, rules, trace=args.trace, no_overflow=args.assume_no_overflow,
                  shifts_in_range=args.assume_shifts_in_range, engine=args.engine)
    seconds = time.perf_counter() - t0
    if r["error"] is not None:
        print(f"pitchfork lift: {r['error']}", file=sys.stderr)
        return EXIT_INPUT
    if args.engine == "egraph":
        from pitchfork.selection.egraph.engine import explain

        sink.write(r["lifted"] + "\n")
        if r.get("note"):
            print(f"pitchfork lift: note: {r['note']}", file=sys.stderr)
        if args.explain:
            from pitchfork.selection.egraph.explain import explain_derivation, format_derivation

            print("\n".join(explain(r["_egraph"])), file=sys.stderr)
            res, d = explain_derivation(r["_term"], rules)
            print("\n".join(format_derivation(d, res.extracted if res.source == "egraph" else None)), file=sys.stderr)
        if args.stats:
            print(f"end to end (parse + lift + print): {seconds * 1e3:.3f} ms", file=sys.stderr)
        return 0
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
