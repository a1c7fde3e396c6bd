"""hvx.vtmpy (the 3-tap filter vtmpybus / vtmpyb / vtmpyhb) run under qemu-hexagon against its declared
semantics: on one stream read at offsets 0, 1, 2 (the instruction's path) and, through the generic
instruction test, on independent operands (the fallback)."""

from __future__ import annotations

import re

import numpy as np
import pytest
from llvmlite import ir

from fpir.interp import evaluate
from fpir.ops import make
from fpir.term import const, var
from fpir.types import parse_type
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.asm import asm_instructions
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import run_calls, tools_available
from pitchfork.targets import load_target
from pitchfork.trs.rules import parse_rules
from synth.verify import verify_rule

from .hvx_difftest import make_input

TARGET = "hvx128"
load_target(TARGET)
needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")

#: form -> (data type, the operand text in its assembly)
FORMS = {"vtmpybus": ("u8", r"\.ub,r\d+\.b\)"), "vtmpyb": ("i8", r"\.b,r\d+\.b\)"), "vtmpyhb": ("i16", r"\.h,r\d+\.b\)")}
I8 = parse_type("i8")
TAPS = ((3, -5), (-128, 127), (-1, -1), (0, 1), (127, -128))


def stream_kernel(m: ir.Module, name: str, data: str, taps: tuple[int, int], lanes: int,
                  at: tuple[int, int] = (1, 2)) -> None:
    """out[i] = vtmpy(d[i], d[i+at[0]], d[i+at[1]]; taps): the three operands read from one buffer
    (the kernel builder's `offsets`; (1, 2) is the instruction's window), `lanes` results per iteration."""
    term = vtmpy_term(parse_type(data), taps)
    x = var("x", parse_type(data))
    add_expression_kernel(m, name, term, lanes, [x], TARGET, offsets={"y": ("x", at[0]), "z": ("x", at[1])})


def vtmpy_term(dt: object, taps: tuple[int, int]) -> object:
    return make("hvx.vtmpy", var("x", dt), var("y", dt), var("z", dt), const(taps[0], I8), const(taps[1], I8))


@needs_qemu
@pytest.mark.qemu
def test_vtmpy_on_a_stream_uses_the_instruction_and_matches_its_semantics() -> None:
    rng = np.random.default_rng(20261124)
    m = new_module("vtmpy")
    cases = []
    for form, (data, _) in FORMS.items():
        reg = 1024 // parse_type(data).bits
        for j, taps in enumerate(TAPS):
            for lanes in ((reg, 2 * reg) if j == 0 else (reg,)):
                name = f"{form}_{j}_{lanes}"
                stream_kernel(m, name, data, taps, lanes)
                cases.append((name, form, data, taps, lanes))
    cm = compile_module(str(m), TARGET)
    asm = " ".join(asm_instructions(cm.asm))
    for form, (_, operands) in FORMS.items():  # every form is emitted (not the fallback)
        assert re.search(r"vtmpy\(v\d+:\d+" + operands, asm), f"{form} not emitted"
    calls, expected = [], []
    for name, form, data, taps, lanes in cases:
        dt = parse_type(data)
        n = 4 * lanes
        d = make_input(dt, n + 2, rng, salt=len(calls) + 1)
        term = vtmpy_term(dt, taps)
        expected.append(np.asarray(evaluate(term, {"x": d[:n], "y": d[1:n + 1], "z": d[2:n + 2]})))
        out = np.zeros(n, dtype=storage_type(term.type).np_dtype)
        calls.append(Call(name, [Buffer.output(out), Buffer.input(d), Scalar(n, 64)]))
    results = run_calls(cm, TARGET, calls)
    bad = [f"{c[0]}: {int(np.sum(r[0] != e.astype(r[0].dtype)))} lanes differ"
           for c, r, e in zip(cases, results, expected) if not np.array_equal(r[0], e.astype(r[0].dtype))]
    assert not bad, bad


@needs_qemu
@pytest.mark.qemu
def test_vtmpy_off_its_window_falls_back_to_its_semantics() -> None:
    """With the stream read at offsets 0, 2, 1 the instruction would compute another sum: the emitter
    sees the facts do not fit and emits the declared semantics instead."""
    m = new_module("vtmpy_off")
    stream_kernel(m, "swapped", "u8", (1, 2), 128, at=(2, 1))
    cm = compile_module(str(m), TARGET)
    assert "vtmpy" not in " ".join(asm_instructions(cm.asm))
    d = make_input(parse_type("u8"), 4 * 128 + 2, np.random.default_rng(3), salt=1)
    n = 4 * 128
    want = np.asarray(evaluate(vtmpy_term(parse_type("u8"), (1, 2)), {"x": d[:n], "y": d[2:n + 2], "z": d[1:n + 1]}))
    out = np.zeros(n, dtype=np.uint16)
    (got,) = run_calls(cm, TARGET, [Call("swapped", [Buffer.output(out), Buffer.input(d), Scalar(n, 64)])])
    assert np.array_equal(got[0], want.astype(np.uint16))


# The declared semantics is Z3-encodable and is the 3-tap sums a stencil writes (every form; the [1 2 1]
# row of a u16 gaussian as a reinterpreted i16 wrap-around sum; rules/lower/hvx.rules' vtmpy_121 is that
# rule guarded by `stream(...)`).
Z3_RULES = """
vtmpy_bus: widening_mul(x_u8, c0_i8) + widening_mul(y_u8, c1_i8) + cast<i16>(z_u8) -> hvx.vtmpy(x_u8, y_u8, z_u8, c0_i8, c1_i8)
vtmpy_b: widening_mul(x_i8, c0_i8) + widening_mul(y_i8, c1_i8) + cast<i16>(z_i8) -> hvx.vtmpy(x_i8, y_i8, z_i8, c0_i8, c1_i8)
vtmpy_hb: widening_mul(x_i16, cast<i16>(c0_i8)) + widening_mul(y_i16, cast<i16>(c1_i8)) + cast<i32>(z_i16) -> hvx.vtmpy(x_i16, y_i16, z_i16, c0_i8, c1_i8)
vtmpy_121: widening_add(x_u8, z_u8) + widening_mul(y_u8, 2) -> reinterpret<u16>(hvx.vtmpy(x_u8, y_u8, z_u8, 1, 2))
"""


@pytest.mark.parametrize("rule", parse_rules(Z3_RULES, "vtmpy.rules"), ids=lambda r: r.name)
def test_vtmpy_semantics_verifies(rule) -> None:  # type: ignore[no-untyped-def]
    result = verify_rule(rule, rlimit=150_000_000)
    assert result.status == "VALID", f"{rule.text()}: {result.summary()}"


def test_vtmpy_wrong_tap_order_is_invalid() -> None:
    (rule,) = parse_rules("swap: widening_add(x_u8, z_u8) + widening_mul(y_u8, 2) -> "
                          "reinterpret<u16>(hvx.vtmpy(x_u8, y_u8, z_u8, 2, 1))", "neg.rules")
    assert verify_rule(rule, rlimit=150_000_000).status == "INVALID"
