"""Compiled right-hand-side builders (pitchfork/trs/rhs.py) build exactly what the elaborator builds."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

import pitchfork.selection.lower as lower_mod
import pitchfork.trs.rewriter as rewriter_mod
from fpir import parse
from pitchfork.trs.rules import NoRewrite, build_rhs, build_rhs_interpreted

ISAS = ("x86-avx2", "arm64", "hvx128")


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> Counter:
    """Every right side the selector builds is built both ways and compared (the compiled one is used)."""
    seen: Counter = Counter()

    def both(rule: Any, b: Any, bounds: Any, expected: Any = None) -> Any:
        try:
            want: Any = build_rhs_interpreted(rule, b, bounds, expected)
        except NoRewrite:
            want = NoRewrite
        try:
            got: Any = build_rhs(rule, b, bounds, expected)
        except NoRewrite:
            got = NoRewrite
        assert got is want, f"{rule.name}: compiled {got} vs elaborated {want}"
        seen["no_rewrite" if got is NoRewrite else "built"] += 1
        if got is NoRewrite:
            raise NoRewrite(rule.name)
        return got

    monkeypatch.setattr(rewriter_mod, "build_rhs", both)
    monkeypatch.setattr(lower_mod, "build_rhs", both)
    return seen


@pytest.mark.parametrize("isa", ISAS)
def test_corpus_selection_builds_the_same_right_sides(isa: str, compared: Counter) -> None:
    from benchmarks.micro_lift import CORPUS, SOBEL
    from benchmarks.compile_time import sum_expr

    for text in [SOBEL, *CORPUS, sum_expr(40, "mac")]:
        lower_mod.select_instructions(parse(text), isa, "pitchfork")
    assert compared["built"] > 100


@pytest.mark.parametrize("bench", ["gaussian5x5", "fully_connected", "camera_pipe"])
def test_benchmark_compiles_build_the_same_right_sides(bench: str, compared: Counter) -> None:
    import pitchfork
    from benchmarks.registry import get

    b = get(bench)
    for isa in ISAS:
        out, args = b.build(isa, b.param_sets[0])
        pitchfork.compile(out, args, target=isa, name=bench, fallback=False)
    assert compared["built"] > 50
