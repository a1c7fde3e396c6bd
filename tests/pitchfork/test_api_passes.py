"""`pitchfork.compile(passes=..., disable_passes=...)`: the statement-level loop passes are switchable,
so the benchmark harness can give LLVM alone the same passes (issue 25). Outputs stay bit-exact."""

from __future__ import annotations

import warnings

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.passes.pipeline import STATEMENT_PASSES, statement_passes
from pitchfork.errors import UsageError


def test_defaults_per_isel_and_target() -> None:
    assert statement_passes("x86-avx2", "pitchfork") == ["dot_products"]
    assert statement_passes("hvx128", "pitchfork") == list(STATEMENT_PASSES)
    assert statement_passes("hvx128", "llvm") == []
    assert statement_passes("hvx128", "llvm", passes=["strided_stores", "dot_products"]) == ["dot_products",
                                                                                              "strided_stores"]
    assert statement_passes("arm64", "pitchfork", passes=["hvx_windows"]) == []  # not for this target
    assert statement_passes("hvx128", "pitchfork", disable_passes=["hvx_windows"]) == [
        "dot_products", "stream_taps", "strided_stores"]
    with pytest.raises(UsageError, match="unknown pass"):
        statement_passes("arm64", "pitchfork", passes=["nope"])


def _dot() -> tuple[hl.Func, list[hl.ImageParam]]:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    b = hl.ImageParam(hl.UInt(8), 1, "b")
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = sum(hl.u32(hl.u16(a[4 * x + i]) * hl.u16(b[4 * x + i])) for i in range(4))
    f.vectorize(x, 8)
    return f, [a, b]


@pytest.mark.parametrize("isel", ["pitchfork", "llvm"])
def test_dot_products_pass_for_either_isel_is_bit_exact(isel: str) -> None:
    f, args = _dot()
    rng = np.random.default_rng(3)
    a, b = (rng.integers(0, 256, 256, dtype=np.uint8) for _ in range(2))
    want = (a.astype(np.int64) * b).reshape(64, 4).sum(1)
    codes = set()
    for passes in (["dot_products"], []):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prog = pitchfork.compile(f, args, target="x86-avx2", isel=isel, name=f"dot_{isel}_{len(passes)}",
                                     fallback=False, passes=passes)
        assert np.array_equal(prog(a, b, size=[64], check=True), want)
        codes.add(prog.assembly().replace(prog.name, "F"))
    assert len(codes) == 2  # the pass changes the code
