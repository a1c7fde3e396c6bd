"""`make`'s flag checks, whose answers are remembered per (op, type, flags) (fpir/ops.py `check_flags`)."""

from __future__ import annotations

import pytest

from fpir.ops import make
from fpir.term import var
from fpir.types import FPIRTypeError, ScalarType

I32, U32 = ScalarType(True, 32), ScalarType(False, 32)


def test_flags_canonical_each_time() -> None:
    a = var("a", I32)
    for _ in range(2):
        assert make("add", a, a, flags=["nsw", "nsw"]).attrs == ("nsw",)
        assert make("add", a, a, flags=("nsw",)) is make("add", a, a, flags=["nsw"])


def test_bad_flag_raises_every_time() -> None:
    b = var("b", U32)
    for _ in range(2):  # an error is not remembered as an answer
        with pytest.raises(FPIRTypeError, match="applies to signed integers, not u32"):
            make("add", b, b, flags=["nsw"])
        with pytest.raises(FPIRTypeError, match="add takes no flag 'nuw'"):
            make("add", b, b, flags=["nuw"])
