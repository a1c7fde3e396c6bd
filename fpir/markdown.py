"""Markdown output shared by the generated documents: docs/FPIR.md (`fpir.docs`) and docs/COVERAGE.md
(`pitchfork.selection.coverage`). Two pieces: a pipe table, and the command line that writes, prints or checks a
generated document.

Invariant: the bytes the documents have always had (their staleness tests compare bytes), so the
table format is fixed: `| a | b |`, a `|---|---|` rule, one line per row, each cell written as given
(`escape` it if it may hold a `|`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence


def escape(cell: str) -> str:
    """A cell's text with `|` escaped, so that it stays one cell."""
    return cell.replace("|", "\\|")


def row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def table(header: Sequence[str], rows: Iterable[Sequence[str]] = ()) -> list[str]:
    """The lines of a pipe table: header, rule, then one line per row."""
    return [row(header), "|" + "---|" * len(header), *(row(r) for r in rows)]


def generated_doc_main(argv: Optional[Sequence[str]], *, prog: str, description: str, default_path: Path,
                       render: Callable[[], tuple[str, bool]]) -> int:
    """`prog [--check] [--stdout] [-o PATH]`: write the document `render` makes (default), print it, or
    exit 1 if the file differs from it. `render` returns (text, failed): a failed document (one that
    breaks a rule its generator checks, which says why on stderr) still gets written, and exits 1."""
    ap = argparse.ArgumentParser(prog=prog, description=description)
    ap.add_argument("--check", action="store_true", help="exit 1 if the file is not up to date")
    ap.add_argument("--stdout", action="store_true", help="print the document instead of writing it")
    ap.add_argument("-o", "--output", type=Path, default=default_path)
    args = ap.parse_args(argv)
    text, failed = render()
    status = 1 if failed else 0
    if args.stdout:
        sys.stdout.write(text)
        return status
    if args.check:
        current = args.output.read_text() if args.output.exists() else ""
        if current != text:
            print(f"{args.output} is stale: run `{prog}`", file=sys.stderr)
            return 1
        return status
    args.output.parent.mkdir(parents=True, exist_ok=True)
    args.output.write_text(text)
    print(f"wrote {args.output}")
    return status
