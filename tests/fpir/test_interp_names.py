"""fpir.interp: an environment maps names to values, so a term using one name at two types is refused."""

from __future__ import annotations

import numpy as np
import pytest

from fpir.interp import evaluate, facts_hold
from fpir.text import parse
from fpir.types import FPIRTypeError


def test_one_name_at_two_types_is_refused() -> None:
    term = parse("i32(c_u8) + c_i32")
    with pytest.raises(FPIRTypeError, match="'c' is used at two types"):
        evaluate(term, {"c": np.arange(4, dtype=np.uint8)})
    with pytest.raises(FPIRTypeError, match="two types"):
        facts_hold(parse("add.nsw(i32(c_u8), c_i32)"), {"c": np.arange(4, dtype=np.uint8)})


def test_one_name_at_one_type_still_evaluates() -> None:
    got = evaluate(parse("i32(c_u8) + i32(c_u8)"), {"c": np.array([1, 255], dtype=np.uint8)})
    assert got.tolist() == [2, 510]
