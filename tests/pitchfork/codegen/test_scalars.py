"""Scalar expressions of a loop nest (pitchfork/codegen/scalars.py), compiled and run against Halide's
realize: bitwise and/or/xor on scalars (llvmlite names them and_, or_ and xor; `xor_` did not exist, so
every scalar xor, e.g. Halide's random_uint hash, ended in an AttributeError)."""

from __future__ import annotations

import halide as hl
import numpy as np

import pitchfork


def test_scalar_bitwise_ops_and_random_uint_match_halide() -> None:
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    f = hl.Func("scalar_bits")
    f[x, y] = hl.u8(((x ^ y) | (x & 3)) ^ hl.i32(hl.random_uint(5) % 11)) + inp[x, y]  # not vectorized: scalar
    prog = pitchfork.compile(f, [inp], target="x86-avx2", name="scalar_bits")
    assert not prog.is_fallback, prog.fallback_reason
    img = np.random.default_rng(4).integers(0, 256, (9, 13), dtype=np.uint8)
    inp.set(hl.Buffer(img))
    want = np.asarray(f.realize([13, 9]))
    assert np.array_equal(prog(img), want)


def test_emitters_sharing_expansions_expand_each_node_once_and_emit_the_same_code() -> None:
    """ScalarEmitter's `expansions`: emitters sharing one dictionary keep each FPIR node's expansion
    there, and the IR they emit is the text emitters without it emit."""
    from llvmlite import ir

    from fpir.text import parse
    from pitchfork.codegen.scalars import ScalarEmitter
    from pitchfork.selection.lower import expand_fpir

    terms = [parse("rounding_shr(x_i32, 3) + y_i32"), parse("halving_add(x_i32, y_i32)"),
             parse("rounding_shr(x_i32, 3) * 2")]

    def emit(shared: dict | None) -> str:
        m = ir.Module("m")
        i32 = ir.IntType(32)
        fn = ir.Function(m, ir.FunctionType(i32, [i32, i32]), "f")
        b = ir.IRBuilder(fn.append_basic_block("entry"))
        env = {"x": fn.args[0], "y": fn.args[1]}
        out = [ScalarEmitter(b, env, "x86-avx2", expansions=shared).emit(t) for t in terms]
        b.ret(b.add(out[0], b.add(out[1], out[2])))
        return str(m)

    shared: dict = {}
    assert emit(shared) == emit(None)
    assert sorted(str(k) for k in shared) == ["halving_add(_s0_i32, _s1_i32)", "rounding_shr(_s0_i32, 3)"]
    assert all(v is expand_fpir(k) for k, v in shared.items())
