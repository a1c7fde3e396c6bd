"""Schedules that need a Halide runtime service we do not compile (memoize, print, tracing, require's
formatted message) fall back
to Halide's compiler with a one-line reason naming the directive, at compile time, and give Halide's
answer (pitchfork.frontend.checks.refuse_runtime_services)."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.api import PitchforkFallbackWarning

x = hl.Var("x")


def _memoized() -> tuple[hl.Func, list, tuple]:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    k = hl.Param(hl.Int(32), "k")
    g = hl.Func("g_memo")
    g[x] = hl.u8(x * k // 3 + 1)
    f = hl.Func("f_memo")
    f[x] = g[x] * 2 + g[x + 1] + a[x]
    g.compute_root().memoize()
    v = np.arange(300, dtype=np.uint8)
    a.set(hl.Buffer(v))
    k.set(5)
    return f, [a, k], (v, 5)


def _traced() -> tuple[hl.Func, list, tuple]:
    a = hl.ImageParam(hl.Int(32), 1, "a")
    f = hl.Func("f_traced")
    f[x] = a[x] + 1
    f.trace_stores()
    v = np.arange(256, dtype=np.int32)
    a.set(hl.Buffer(v))
    return f, [a], (v,)


def _required() -> tuple[hl.Func, list, tuple]:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    p = hl.Param(hl.Int(32), "p")
    f = hl.Func("f_required")
    f[x] = hl.require(p > 0, a[x] + hl.u8(p), p)
    v = np.arange(256, dtype=np.uint8)
    a.set(hl.Buffer(v))
    p.set(3)
    return f, [a, p], (v, 3)


@pytest.mark.parametrize(("make", "reason"), [(_memoized, r"memoize\(\)"), (_traced, r"trace_stores\(\)"),
                                              (_required, r"require\(\)")])
def test_runtime_service_falls_back_naming_the_directive(make, reason: str) -> None:  # type: ignore[no-untyped-def]
    f, args, vals = make()
    want = np.asarray(f.realize([256]))
    with pytest.warns(PitchforkFallbackWarning, match=reason + ".* is not compiled by PITCHFORK"):
        prog = pitchfork.compile(f, args, target="x86-avx2")
    assert prog.is_fallback
    assert np.array_equal(prog(*vals, size=[256]), want)
