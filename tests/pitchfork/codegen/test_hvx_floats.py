"""hvx128 float code lane by lane (pitchfork/codegen/hvx_floats.py): no float vector arithmetic reaches
LLVM (its Hexagon cost model prices it at the saturated maximum, and SimpleLoopUnswitch then cloned
every loop nest holding it once per loop-invariant branch), the loop nest is not unswitched, and the
results match Halide's realize under qemu-hexagon."""

from __future__ import annotations

import re
import warnings

import halide as hl
import numpy as np
import pytest
from llvmlite import ir

import pitchfork
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.backend.run import tools_available
from pitchfork.codegen.hvx_floats import ScalarFloatBuilder

FLOAT_VECTOR_OP = re.compile(r"= (?:fadd|fsub|fmul|fdiv|frem|fneg|fcmp|sitofp|uitofp|fptosi|fptoui|fpext|fptrunc)"
                             r"\b[^\n]*<\d+ x (?:float|double)>")


def test_builder_emits_float_vector_ops_per_lane() -> None:
    """Each float vector op becomes one scalar op per lane with the same flags; an intrinsic over float
    vectors its scalar form; integer vector ops and the lanes' reuse along a chain are kept."""
    m = ir.Module()
    v8f, v8i = ir.VectorType(ir.FloatType(), 8), ir.VectorType(ir.IntType(32), 8)
    fn = ir.Function(m, ir.FunctionType(v8i, [v8f, v8f, v8i]), "f")
    b = ScalarFloatBuilder(fn.append_basic_block("entry"))
    x, y, k = fn.args
    s = b.fmul(b.fadd(x, y, flags=("fast",)), y, flags=("fast",))
    floor = ir.Function(m, ir.FunctionType(v8f, [v8f]), "llvm.floor.v8f32")
    s = b.call(floor, [b.select(b.fcmp_ordered("<", s, x), s, b.sitofp(k, v8f))])
    b.ret(b.add(b.fptosi(s, v8i), k))
    text = str(m)
    assert not FLOAT_VECTOR_OP.search(text)
    assert text.count("fadd fast float") == 8 and text.count("fmul fast float") == 8
    assert text.count('call float @"llvm.floor.f32"') == 8 and "add <8 x i32>" in text
    # the fmul, fcmp and select read the lanes of the vectors the builder made; only the arguments
    # (made elsewhere: extracted where they are used) are split, once per use: x twice, y twice
    assert text.count("extractelement <8 x float>") == 32


def test_wide_float_vectors_are_a_loop_over_their_lanes() -> None:
    """From LOOP_LANES lanes up each float vector op is one loop over the lanes (operands and result in
    128-byte aligned stack arrays, a bool lane as a byte): the code does not grow with the lanes."""
    from pitchfork.codegen.hvx_floats import LOOP_LANES

    m = ir.Module()
    n = LOOP_LANES
    vf, vi = ir.VectorType(ir.FloatType(), n), ir.VectorType(ir.IntType(32), n)
    fn = ir.Function(m, ir.FunctionType(vi, [vf, vf]), "f")
    b = ScalarFloatBuilder(fn.append_basic_block("entry"))
    x, y = fn.args
    s = b.fadd(x, y, flags=("fast",))
    s = b.select(b.fcmp_ordered("<", s, x), s, y)
    b.ret(b.fptosi(s, vi))
    text = str(m)
    assert not FLOAT_VECTOR_OP.search(text)
    assert text.count("fadd fast float") == 1 and text.count("fcmp olt float") == 1
    assert text.count("lanes.done") >= 4  # fadd, fcmp, select, fptosi: one loop each
    assert f"alloca [{n} x i8], align 128" in text  # the compare's bool lanes
    assert "extractelement" not in text


@pytest.mark.skipif(not tools_available("hvx128"), reason="no toolchain for hvx128")
def test_float_loop_nest_is_not_unswitched_and_matches_halide() -> None:
    """A float stage computed per row of a parallel-split output (inner loops with entry guards the
    outer loop does not change: what SimpleLoopUnswitch duplicated exponentially) compiles without
    unswitched loop copies and matches Halide's realize."""
    x, y, yo, yi = hl.vars("x y yo yi")
    inp = hl.ImageParam(hl.Float(32), 2, "input")
    w = hl.Param(hl.Float(32), "w")
    a, c = hl.Func("a"), hl.Func("c")
    a[x, y] = inp[x, y] * w + 1.0
    c[x, y] = a[x, y] / (a[x + 1, y] + 2.0)
    out = hl.Func("rows")
    out[x, y] = c[x, y] - c[x + 2, y] * 0.5
    out.split(y, yo, yi, 4).vectorize(x, 8)
    c.compute_at(out, yi).vectorize(x, 8)
    a.compute_at(out, yo).vectorize(x, 8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        prog = pitchfork.compile(out, [inp, w], target="hvx128", name="rows", fallback=False)
    assert not FLOAT_VECTOR_OP.search(prog.module.source_ir)
    assert not re.search(r"^\S*\.us\S*:", prog.llvm_ir(), re.M), "a loop was unswitched"
    values = [np.random.default_rng(9).standard_normal((12, 40)).astype(np.float32), 0.75]
    ours = prog(*values, size=[32, 12])
    inp.set(hl.Buffer(values[0]))
    w.set(values[1])
    ref = np.asarray(out.realize([32, 12]))
    np.testing.assert_allclose(ours, ref, rtol=1e-5, atol=1e-5)


def test_float_modules_emitted_without_window_scheduler() -> None:
    """hvx128 modules with float arithmetic are emitted with the window scheduler off (and llc
    reproductions say so); integer modules and other targets keep LLVM's default."""
    from pitchfork.aot.generator import llc_command
    from pitchfork.backend.machine import scheduler_options

    assert scheduler_options("hvx128", "%a = fmul fast float %b, %c") == ("-window-sched=off",)
    assert scheduler_options("hvx128", "%a = add <32 x i32> %b, %c") == ()
    assert scheduler_options("x86-avx2", "%a = fmul fast float %b, %c") == ()
    assert llc_command("hvx128", "k.ll", "%a = fadd float %b, %c").endswith(" -window-sched=off k.ll")


def test_float_modules_optimized_without_nontrivial_unswitching() -> None:
    """hvx128 modules with float arithmetic are optimised with non-trivial loop unswitching off (the
    Hexagon cost model prices their float vector inserts at the maximum, so every loop-invariant branch
    looked free to unswitch); integer modules and other targets keep LLVM's defaults."""
    from pitchfork.backend.machine import optimizer_options

    off = ("-enable-unswitch-cost-multiplier=false", "-unswitch-threshold=0")
    assert optimizer_options("hvx128", "%a = fmul fast float %b, %c") == off
    assert optimizer_options("hvx128", "%a = add <32 x i32> %b, %c") == ()
    assert optimizer_options("x86-avx2", "%a = fmul fast float %b, %c") == ()
    assert optimizer_options("arm64", "%a = fadd <4 x float> %b, %c") == ()
