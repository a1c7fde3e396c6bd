"""Rule provenance and the leave-one-out switch for synthesized rules.

A machine-made rule may carry the benchmarks whose expressions it was learned from, in a comment
`# from: add,mul` on one of its lines (or on a comment line directly above it). When a benchmark is
compiled for evaluation, the rules learned from it must not be used (the paper's leave-one-out
protocol, section 5): `excluding_rules_from("add")` is a context in which every rule set loaded by
lifting and lowering drops the rules whose provenance names "add". Rules without provenance are
never dropped, so hand-written rules are unaffected.

Invariant: outside such a context (the default) nothing is filtered.
"""

from __future__ import annotations

import contextvars
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Optional, Sequence

from pitchfork.trs.cache import parse_rules_cached
from pitchfork.trs.rules import parse_rules

_EXCLUDED: contextvars.ContextVar[Optional[str]] = contextvars.ContextVar("pitchfork_excluded", default=None)
_FROM = re.compile(r"#\s*from:\s*([\w\-, ]+)")


def excluded_benchmark() -> Optional[str]:
    """The benchmark whose synthesized rules are currently excluded (None: none)."""
    return _EXCLUDED.get()


@contextmanager
def excluding_rules_from(benchmark: Optional[str]) -> Iterator[None]:
    token = _EXCLUDED.set(benchmark or None)
    try:
        yield
    finally:
        _EXCLUDED.reset(token)


def provenance_by_line(text: str) -> dict[int, frozenset[str]]:
    """Line number (1-based) of each rule's first line -> the benchmarks named by its `from:` comments.

    A `from:` comment counts for the rule whose text it is on (first or continuation line), or for the
    next rule when it stands on a comment-only line directly above that rule."""
    out: dict[int, set[str]] = {}
    current: Optional[int] = None
    pending: set[str] = set()
    for i, line in enumerate(text.splitlines(), 1):
        m = _FROM.search(line)
        names = {n.strip() for n in m.group(1).split(",") if n.strip()} if m else set()
        body = line.split("#", 1)[0]
        if not body.strip():
            if line.strip().startswith("#"):
                pending |= names
            else:
                pending = set()
            continue
        if line[0].isspace() and current is not None:
            out[current] |= names
            continue
        current = i
        out[current] = names | pending
        pending = set()
    return {k: frozenset(v) for k, v in out.items() if v}


def filter_rules(rules: Sequence, text_by_source: dict[str, str], exclude: Optional[str]) -> list:
    """`rules` without those whose provenance names `exclude` (rules carry `.source` and `.line`)."""
    if not exclude:
        return list(rules)
    prov = {src: provenance_by_line(t) for src, t in text_by_source.items()}
    return [r for r in rules if exclude not in prov.get(r.source, {}).get(r.line, frozenset())]


def load_filtered(paths: Sequence[str | Path], exclude: Optional[str]) -> list:
    """Every rule of `paths` (in order) minus those learned from `exclude`."""
    rules = []
    for p in paths:
        text = Path(p).read_text()
        rules += filter_rules(parse_rules_cached(text, str(p), parse_rules), {str(p): text}, exclude)
    return rules
