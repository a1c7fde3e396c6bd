"""pitchfork.codegen.kernel: variables that share a name at different types are distinct kernel inputs."""

from __future__ import annotations

import numpy as np

from fpir.text import parse
from pitchfork.codegen.kernel import add_expression_kernel, new_module
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import Buffer, Call, Scalar, run_calls
from pitchfork.selection.lower import select_instructions
from pitchfork.selection.select_batch import kernel_variables


def test_same_name_different_types_are_two_inputs() -> None:
    # Issue 11 (4a): this crashed emission with "value for v1 has type <8 x i32>, expected <8 x i16>".
    term = parse("i32(v1_i16) * 3 + v1_i32")
    final = select_instructions(term, "x86-avx2", "pitchfork").final
    inputs = kernel_variables(final)
    assert [(v.name, v.type.name) for v in inputs] == [("v1", "i16"), ("v1", "i32")]
    m = new_module("clash")
    add_expression_kernel(m, "k", final, 8, inputs)
    rng = np.random.default_rng(4)
    a = rng.integers(-(1 << 15), 1 << 15, 64).astype(np.int16)
    b = rng.integers(-(1 << 31), 1 << 31, 64).astype(np.int32)
    out = np.zeros(64, dtype=np.int32)
    ((got, *_),) = run_calls(compile_module(str(m), "x86-avx2"), "x86-avx2",
                             [Call("k", [Buffer.output(out), Buffer.input(a), Buffer.input(b), Scalar(64, 64)])])
    want = (a.astype(np.int64) * 3 + b).astype(np.int64)
    want = ((want + (1 << 31)) % (1 << 32) - (1 << 31)).astype(np.int32)
    assert np.array_equal(got, want)


def test_division_and_modulo_by_powers_of_two() -> None:
    """ExprEmitter emits Euclidean `x / 2^k` as a shift and `x % 2^k` as a mask (as Halide's code
    generator does): exact against numpy's floor division for every sign, at every integer width."""
    from fpir.interp import evaluate

    rng = np.random.default_rng(9)
    for tname, bits in (("i8", 8), ("u8", 8), ("i16", 16), ("u16", 16), ("i32", 32), ("u32", 32), ("i64", 64)):
        signed = tname[0] == "i"
        lo, hi = (-(1 << (bits - 1)), 1 << (bits - 1)) if signed else (0, 1 << bits)
        dt = np.dtype(f"{'int' if signed else 'uint'}{bits}")
        for k in (0, 1, 3, bits - 2):
            term = parse(f"x_{tname} / {1 << k} + x_{tname} % {1 << k}")
            inputs = kernel_variables(term)
            m = new_module("pow2")
            add_expression_kernel(m, "k", term, 8, inputs)
            text = str(m)
            assert " sdiv " not in text and " srem " not in text and " udiv " not in text, (tname, k)
            a = np.concatenate([rng.integers(lo, hi, 60, dtype=np.int64 if signed else np.uint64),
                                np.array([lo, hi - 1, -1 if signed else 1, 0])]).astype(dt)
            out = np.zeros(64, dtype=dt)
            ((got, *_),) = run_calls(compile_module(text, "x86-avx2"), "x86-avx2",
                                     [Call("k", [Buffer.output(out), Buffer.input(a), Scalar(64, 64)])])
            want = np.asarray(evaluate(term, {"x": a}), dtype=dt)
            assert np.array_equal(got, want), (tname, k)


def test_distinct_variables_names_are_fresh() -> None:
    """The typed name given to a clashing variable is not one the term already uses (`c_u8` of type u8
    beside two variables named `c`)."""
    from pitchfork.codegen.kernel import distinct_variables

    term = parse("i32(c_u8) + c_i32 + i32(c_u8_u8)")
    renamed, _ = distinct_variables(term, [])
    names = {(v.name, v.type.name) for v in renamed.variables()}
    assert len({n for n, _ in names}) == 3 and ("c_u8", "u8") in names
