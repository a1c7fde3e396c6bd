"""statement_nesting (pitchfork/frontend/checks.py) is the character loop's depth, computed faster."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pitchfork.frontend.checks import statement_nesting


def reference(text: str) -> int:
    """The definition: one character at a time."""
    depth = deepest = 0
    in_string = False
    prev = ""
    for ch in text:
        if in_string:
            if ch == '"' and prev != "\\":
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
        prev = ch
    return deepest


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet='()"\\ax\né', max_size=60))
def test_nesting_matches_the_character_loop(text: str) -> None:
    assert statement_nesting(text) == reference(text)


def test_nesting_examples() -> None:
    for text in ["", "a", "((a)", ")(", '("(((" + (b))', 'f("\\"((", (x))', "((((x))))\n(y)"]:
        assert statement_nesting(text) == reference(text), text
