"""`pitchfork` command line: one sub-command per module in pitchfork/commands/.

Each command module defines `NAME`, `HELP`, `add_arguments(parser)` and `run(args) -> int`.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from typing import Optional, Sequence

import pitchfork.commands


def _commands() -> list:
    mods = []
    for info in sorted(pkgutil.iter_modules(pitchfork.commands.__path__), key=lambda m: m.name):
        mod = importlib.import_module(f"pitchfork.commands.{info.name}")
        if hasattr(mod, "NAME"):
            mods.append(mod)
    return mods


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="pitchfork", description="Fixed-point instruction selection (PITCHFORK)")
    parser.add_argument("--no-synthesized", action="store_true",
                        help="hand-written rules only (ignore rules/synthesized/)")
    parser.add_argument("--exclude-rules-from", action="append", default=[], metavar="BENCHMARK",
                        help="drop synthesized rules learned from this benchmark (repeatable)")
    sub = parser.add_subparsers(dest="command", required=True)
    handlers = {}
    for mod in _commands():
        p = sub.add_parser(mod.NAME, help=mod.HELP, description=mod.HELP)
        mod.add_arguments(p)
        handlers[mod.NAME] = mod.run
    args = parser.parse_args(argv)
    from pitchfork.synthesized import configure

    configure(enabled=not args.no_synthesized, exclude_from=args.exclude_rules_from)
    return int(handlers[args.command](args) or 0)


if __name__ == "__main__":
    sys.exit(main())
