"""The frontend's bound on nesting (pitchfork/frontend/deep.py): deep walks run, deeper ones fall back
with a reason, never a RecursionError."""

from __future__ import annotations

import sys

import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.codegen.base import Unsupported
from pitchfork.frontend import deep


def _depth(n: int) -> int:
    return 0 if n == 0 else 1 + _depth(n - 1)


def test_run_deep_walks_far_past_the_default_limit() -> None:
    n = 20 * sys.getrecursionlimit()
    assert deep.run_deep(lambda: _depth(n)) == n
    assert sys.getrecursionlimit() < n  # restored


def test_run_deep_keeps_the_callers_context_variables() -> None:
    """The lifting engine and leave-one-out are context variables: set by the caller of
    pitchfork.compile, they must hold in the frontend's thread."""
    from pitchfork.selection.lift import current_engine, lift_engine
    from pitchfork.trs.provenance import excluded_benchmark, excluding_rules_from

    with lift_engine("egraph"), excluding_rules_from("add"):
        assert deep.run_deep(lambda: (current_engine(), excluded_benchmark())) == ("egraph", "add")
    assert deep.run_deep(lambda: (current_engine(), excluded_benchmark())) == ("greedy", None)


def test_run_deep_bound_is_a_reason_not_a_traceback(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(deep, "FRAME_LIMIT", 2000)
    with pytest.raises(Unsupported, match=r"nested deeper than .*\(2000 Python frames\)"):
        deep.run_deep(lambda: _depth(10**6))


@pytest.mark.extended  # ~50 s of Halide lowering; the bound itself: the test above
def test_deep_pipeline_falls_back_with_reason_past_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """interpolate (10 pyramid levels: a statement of ~1250 nested lets) needs more than Python's
    default 1000 frames: with the bound set there it falls back naming it (it compiles at the real
    bound: tests/benchmarks/apps)."""
    from benchmarks.apps import interpolate

    monkeypatch.setattr(deep, "FRAME_LIMIT", 1000)
    app = interpolate.build("x86-avx2")
    with pytest.warns(PitchforkFallbackWarning, match="nested deeper than"):
        prog = pitchfork.compile(app.output, list(app.args), target="x86-avx2", name="interpolate")
    assert prog.is_fallback
