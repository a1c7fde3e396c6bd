"""`pitchfork` command line: one sub-command per module in pitchfork/commands/.

Each command module defines `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`.

Errors: a command reports what it can itself (per-line batch errors, verdicts); an exception that
escapes it becomes exactly one line on stderr, `pitchfork <command>: <message>`, and the exit code of
its class (pitchfork/errors.py, docs/ERRORS.md). Nothing a user types gives a Python traceback: an
exception nobody anticipated is reported as an internal error (exit 70), with the traceback only
when PITCHFORK_TRACEBACK=1 is set.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import pkgutil
import sys
from typing import Optional, Sequence

import pitchfork.commands
from pitchfork.errors import EXIT_FILE, EXIT_INPUT, EXIT_INTERNAL, EXIT_USAGE, PitchforkError


def _commands(argv: Optional[Sequence[str]] = None) -> list:
    """The command modules; only the one named on the command line when there is one, so a command
    does not pay for importing the others (`select` loads LLVM, `bench` numpy and Halide)."""
    names = sorted(info.name for info in pkgutil.iter_modules(pitchfork.commands.__path__))
    word = next((a for a in (sys.argv[1:] if argv is None else argv) if not a.startswith("-")), None)
    if word in names:
        names = [word]
    mods = []
    for name in names:
        mod = importlib.import_module(f"pitchfork.commands.{name}")
        if hasattr(mod, "NAME"):
            mods.append(mod)
    return mods


def exit_code_of(e: BaseException) -> int:
    """The documented exit code for an exception that escaped a command."""
    from fpir.text import FPIRSyntaxError
    from fpir.types import FPIRTypeError
    from pitchfork.trs.rules import RuleFileError

    if isinstance(e, PitchforkError):
        return e.exit_code
    if isinstance(e, (FPIRSyntaxError, FPIRTypeError, RuleFileError)):
        return EXIT_INPUT
    if isinstance(e, OSError):
        return EXIT_FILE
    return EXIT_INTERNAL


def _one_line(e: BaseException) -> str:
    text = " ".join(str(e).split()) or type(e).__name__
    return text if len(text) <= 2000 else text[:2000] + " ..."


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pitchfork", description="Fixed-point instruction selection (PITCHFORK)")
    parser.add_argument("--no-synthesized", action="store_true",
                        help="hand-written rules only (ignore rules/synthesized/)")
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = {}
    extra_takers = {}
    for mod in _commands(argv):
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        handlers[mod.NAME] = mod.run
        extra_takers[mod.NAME] = mod
    try:
        # A command that declares EXTRA_ARGS takes the words argparse does not match (`pitchfork
        # compile gen.py -g blur target=host lanes=32`: Halide's generator command line, whose
        # KEY=VALUE words may follow the options); for the others they are an error, as before.
        args, extra = parser.parse_known_args(argv)
        if extra and not getattr(extra_takers.get(args.command), "EXTRA_ARGS", False):
            parser.error(f"unrecognized arguments: {' '.join(extra)}")
        args.extra = extra
    except SystemExit as e:  # argparse printed usage and one error line (or --help)
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    from pitchfork.selection.synthesized import configure

    configure(enabled=not args.no_synthesized)
    try:
        return int(handlers[args.command](args) or 0)
    except KeyboardInterrupt:
        print(f"pitchfork {args.command}: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `pitchfork ... | head`: the reader went away; not an error of ours
        sys.stderr.close()
        return 0
    except Exception as e:  # noqa: BLE001 - the one place that turns every error into one line
        code = exit_code_of(e)
        if code == EXIT_INTERNAL:
            if os.environ.get("PITCHFORK_TRACEBACK"):
                raise
            print(f"pitchfork {args.command}: internal error: {type(e).__name__}: {_one_line(e)} "
                  "(a bug in PITCHFORK; PITCHFORK_TRACEBACK=1 shows where)", file=sys.stderr)
        else:
            print(f"pitchfork {args.command}: {_one_line(e)}", file=sys.stderr)
        return code


def entry() -> int:
    """The `pitchfork` program (the console script and `python -m pitchfork`): `main()` for a process
    that ends when it returns.

    Before returning, every object left is moved to the cyclic collector's permanent generation
    (`gc.freeze`): the interpreter's shutdown collections would otherwise walk all of them (the loaded
    rules, the interned terms, a batch's memo tables) only to find garbage the process's exit frees
    anyway -- measured, ~70 ms of a cold `pitchfork lift`'s ~0.25 s CPU and ~0.25 s of a 1,000-line
    `lift --batch`. Shutdown is otherwise unchanged: modules are torn down, atexit handlers run, the
    standard streams are flushed; only reference cycles still alive at exit are left to the OS, whose
    finalizers Python does not promise to run at exit in any case (every file a command writes is closed
    by the command). Not for in-process callers (tests call `main(argv)`): frozen objects are never
    collected."""
    code = main()
    gc.freeze()
    return code


if __name__ == "__main__":
    sys.exit(entry())
