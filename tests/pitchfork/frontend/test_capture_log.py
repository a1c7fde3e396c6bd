"""Splitting Halide's lowering log (capture.split_lowering_log) matches reading it line by line."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitchfork.frontend.capture import Lowering, Stage, split_lowering_log

_HEADER = re.compile(r"^Lowering after (.+?):?( \(unchanged\))?$")


def reference(log: str) -> list[Lowering]:
    """The definition: a line loop (what split_lowering_log did before it searched with one regex)."""
    lines = log.split("\n")
    out: list[Lowering] = []
    stages: list[Stage] = []
    at: int | None = None
    last = ""
    i = 0
    while i < len(lines):
        line = lines[i]
        if line == "Creating initial loop nests..." and (stages or at is not None):
            out.append(Lowering(tuple(stages), at))
            stages, at, last = [], None, ""
        if line == "Finding intrinsics..." and at is None:
            at = len(stages)
        m = _HEADER.match(line)
        if not m:
            i += 1
            continue
        if m.group(2):
            stages.append(Stage(m.group(1), last, changed=False))
            i += 1
            continue
        j = i + 1
        while j < len(lines) and lines[j] != "":
            j += 1
        last = "\n".join(lines[i + 1:j]) + "\n"
        stages.append(Stage(m.group(1), last, changed=True))
        i = j
    if stages or at is not None:
        out.append(Lowering(tuple(stages), at))
    return out


LINES = ["Creating initial loop nests...", "Finding intrinsics...", "Lowering after vectorizing:",
         "Lowering after simplifying: (unchanged)", "Lowering after x:", "  f[x] = 1", "for (x, 0, 4) {", "}",
         "", "", "Lowering after inner: (unchanged)", "  Finding intrinsics...", "other text"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(LINES), max_size=30), st.booleans())
def test_split_matches_the_line_by_line_reading(lines: list[str], trailing_newline: bool) -> None:
    log = "\n".join(lines) + ("\n" if trailing_newline else "")
    assert split_lowering_log(log) == reference(log)


@pytest.mark.parametrize("log", [
    "", "\n", "Lowering after a:", "Lowering after a:\n", "Lowering after a:\nx", "Lowering after a:\n\n",
    "Creating initial loop nests...\nLowering after a:\n f\nLowering after b:\n\nFinding intrinsics...\n"
    "Creating initial loop nests...\nLowering after c: (unchanged)\nFinding intrinsics...\n",
])
def test_split_edge_cases(log: str) -> None:
    assert split_lowering_log(log) == reference(log)
