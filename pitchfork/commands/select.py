"""`pitchfork select`: instruction selection for one expression, or a batch of them.

    pitchfork select "saturating_cast<u8>(x_u16 >> 2)" --target x86-avx2 --emit asm
    pitchfork select --batch exprs.txt --target arm64 --emit asm > out.jsonl

Prints the input, the lifted FPIR, the expression after the target's lowering rules and after the
generic expansion; with --emit llvm / asm also the LLVM IR / assembly of an element-wise kernel
`void kernel(ptr out, ptr in..., i64 n)` (inputs in variable-name order) computing it over vectors.
"""

from __future__ import annotations

import argparse
import sys

from pitchfork.errors import EXIT_INPUT, EXIT_OK, InputFileError, UsageError, open_input, open_output
from pitchfork.limits import check_lanes
from pitchfork.selection.select_batch import EMITS, ISELS, run_batch, select_expression

NAME = "select"
HELP = "select instructions for an expression (lift, lower per target, emit LLVM IR / assembly)"

TARGETS = ("x86-avx2", "arm64", "hvx128")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("expression", nargs="?", help="FPIR / integer expression, e.g. 'absd(a_u8, b_u8)'")
    p.add_argument("--target", "-t", default="x86-avx2",
                   help="x86-avx2 (default), arm64, hvx128 or a Halide target string (arm-64-linux, ...)")
    p.add_argument("--lanes", "-n", type=int, default=None,
                   help="vector lanes of the emitted kernel (default: one native register of the "
                        "expression's result element type; for a u1 result, of its widest input type). "
                        "On hvx128, where that many lanes of some type of the expression would not fill "
                        "whole vector registers, the kernel computes blocks that do (the narrowest type "
                        "filling whole registers) and the last, shorter block on stack copies")
    p.add_argument("--isel", choices=ISELS, default="pitchfork",
                   help="pitchfork: lift + target rules + generic expansion; llvm: the LLVM-alone "
                        "baseline (no lifting, FPIR ops expanded generically)")
    p.add_argument("--emit", choices=EMITS, default=None,
                   help="fpir: expressions only (default for one expression); llvm: also the LLVM IR; "
                        "asm: also the assembly (default for --batch)")
    p.add_argument("--batch", metavar="FILE",
                   help="one expression per line, optionally '<lanes> <expression>' ('-' = stdin); "
                        "writes one JSON object per line {input, lanes, fpir, lowered, final, llvm, asm, "
                        "error, seconds}; errors are reported per line")
    p.add_argument("--output", "-o", metavar="FILE", help="batch output file (default stdout)")
    p.add_argument("--jobs", "-j", type=int, default=None,
                   help="batch: kernel groups compiled in parallel (default: the CPU count)")
    p.add_argument("--allow-errors", action="store_true",
                   help="batch: exit 0 even when some lines failed (each line's error is in its record)")
    p.add_argument("--assume-no-overflow", action="store_true",
                   help="Halide's overflow rule: mark every signed 32/64-bit add/sub/mul `nsw` (as the Halide "
                        "frontend does); without it only `add.nsw(...)` text has the fact")
    p.add_argument("--assume-shifts-in-range", action="store_true",
                   help="Halide's shift rule: mark every shl/shr `inrange` (the amount is below the lane width, as "
                        "the Halide frontend does); without it only `shl.inrange(...)` text has the fact")
    p.add_argument("--no-isolate", dest="isolate", action="store_false",
                   help="compile in this process (LLVM aborts the whole process on code it cannot select; "
                        "by default compilation runs in a forked child, so that is a per-line error)")
    p.add_argument("--engine", choices=("greedy", "egraph"), default="greedy",
                   help="lifting engine: the greedy TRS (default) or equality saturation on egglog")


def run(args: argparse.Namespace) -> int:
    from pitchfork.selection.lift import lift_engine

    with lift_engine(getattr(args, "engine", "greedy")):
        return _run(args)


def _run(args: argparse.Namespace) -> int:
    from pitchfork.targets.target_strings import parse_target

    parse_target(args.target)  # UsageError naming a bad token or feature: exit 2
    if args.lanes is not None:
        check_lanes(args.lanes, "--lanes")  # UsageError: exit 2
    if args.jobs is not None and args.jobs < 1:
        raise UsageError(f"--jobs must be positive, got {args.jobs}")
    if args.batch:
        if args.expression:
            raise UsageError("give an expression or --batch, not both")
        emit = args.emit or "asm"
        src = sys.stdin if args.batch == "-" else open_input(args.batch, "batch file")
        try:
            out = open_output(args.output) if args.output else sys.stdout
        except InputFileError:
            if src is not sys.stdin:
                src.close()
            raise
        try:
            stats = run_batch(src, out, args.target, args.lanes, args.isel, emit, args.isolate, jobs=args.jobs,
                              no_overflow=args.assume_no_overflow,
                              shifts_in_range=args.assume_shifts_in_range)
        finally:
            if src is not sys.stdin:
                src.close()
            if out is not sys.stdout:
                out.close()
        print(f"pitchfork select: {stats.lines} expressions, {stats.errors} errors, {stats.seconds:.2f} s "
              f"({stats.per_second:.0f} lines/s)", file=sys.stderr)
        return EXIT_INPUT if stats.errors and not args.allow_errors else EXIT_OK
    if not args.expression:
        raise UsageError("an expression (or --batch FILE) is required")
    rec = select_expression(args.expression, args.target, args.lanes, args.isel, args.emit or "fpir",
                            args.isolate, no_overflow=args.assume_no_overflow,
                            shifts_in_range=args.assume_shifts_in_range)
    print(f"input:    {rec.input}")
    if rec.fpir is not None:
        print(f"lifted:   {rec.fpir}")
        print(f"lowered:  {rec.lowered}")
        print(f"final:    {rec.final}")
        print(f"target:   {args.target}, isel={args.isel}, lanes={rec.lanes}"
              + (f", engine={args.engine}" if getattr(args, "engine", "greedy") != "greedy" else ""))
    if rec.error:
        print(f"error:    {rec.error}", file=sys.stderr)
        return EXIT_INPUT
    if rec.llvm is not None:
        print()
        print(rec.llvm, end="" if rec.llvm.endswith("\n") else "\n")
    if rec.asm is not None:
        print()
        print(rec.asm, end="" if rec.asm.endswith("\n") else "\n")
    return 0
