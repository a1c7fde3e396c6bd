"""HType's parsing and lane changes, which hand out one object per distinct type (pitchfork/frontend/htypes.py)."""

from __future__ import annotations

import pytest

from pitchfork.frontend.htypes import HType


def test_parse_gives_the_type_each_time() -> None:
    for text, want in [("uint8x32", HType("uint", 8, 32)), ("int32", HType("int", 32)),
                       ("(struct halide_buffer_t *)", HType("handle", 64, 1, "struct halide_buffer_t *"))]:
        assert HType.parse(text) == want
        assert HType.parse(text) == want  # the second answer (remembered) is the same type


def test_bad_spelling_raises_every_time() -> None:
    for _ in range(2):  # an error is not remembered as an answer
        with pytest.raises(ValueError, match="not a Halide type: 'uint8x'"):
            HType.parse("uint8x")


def test_lanes_and_element() -> None:
    v = HType("uint", 16, 8)
    assert v.elem == HType("uint", 16) and v.elem.lanes == 1
    assert v.with_lanes(4) == HType("uint", 16, 4)
    assert v.with_lanes(4) is v.with_lanes(4)
    h = HType("handle", 64, 1, "void *")
    assert h.with_lanes(2) == HType("handle", 64, 2, "void *")
    assert h.elem is h
