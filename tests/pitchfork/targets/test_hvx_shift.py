"""hvx.vasl_acc (pitchfork/targets/hvx.py, emitted by hvx_emit.shift_acc): a stencil tap by a power of
two added to a running sum selects one shift-accumulate. Its semantics are run under qemu-hexagon with the other
instructions (test_hvx.py::test_every_instruction_matches_its_semantics_under_qemu, amounts in and
out of [0, bits)), and its rule is proved there (test_rule_verifies[vasl_acc])."""

from __future__ import annotations

import re

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.backend.run import tools_available
from pitchfork.selection.lower import select_instructions

from .hvx_difftest import TARGET, Case, loop_of, run_cases

needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")


@pytest.mark.parametrize("t", ["i16", "u16", "i32", "u32"])
def test_tap_by_a_power_of_two_is_one_shift_accumulate(t: str) -> None:
    term = parse("x + y * 4 + z", env={"x": parse_type(t), "y": parse_type(t), "z": parse_type(t)})
    out = str(select_instructions(term, "hvx128", "pitchfork").final)
    assert "hvx.vasl_acc(" in out and "<<" not in out, out


def test_amount_outside_the_lane_is_not_a_shift_accumulate() -> None:
    # 8-bit lanes have no vasl.acc; neither does a shift by the full width (Rt is read modulo bits)
    for expr, ty in (("x + (y << 2)", "u8"), ("x + (y << 16)", "i16")):
        term = parse(expr, env={"x": parse_type(ty), "y": parse_type(ty)})
        assert "vasl_acc" not in str(select_instructions(term, "hvx128", "pitchfork").final)


# Byte rounding shifts by a runtime amount (rules rounding_shr_b_var / _narrowed, proved by
# test_hvx.py::test_rule_verifies): Halide's clamped spellings, lifted, against the same text unlifted
# (isel=llvm). The lifted form must never lose: no more loop packets nor instructions.
BYTE_ROUNDING_SHIFTS = [
    "i8((i16(a_i8) + ((1 << max(min(i16(n_i8), 8), 0)) >> 1)) >> max(min(i16(n_i8), 8), 0))",
    "(i16(a_i8) + ((1 << max(min(n_i16, 8), 0)) >> 1)) >> max(min(n_i16, 8), 0)",
    "rounding_shr(a_u8, min(n_u8, 8))",
    "rounding_shr(a_i8, n_u8)",
]


@needs_qemu
@pytest.mark.qemu
def test_byte_rounding_shift_by_a_runtime_amount_never_loses_to_unlifted() -> None:
    cases, originals = [], []
    for text in BYTE_ROUNDING_SHIFTS:
        term = parse(text)
        for lanes in (64, 128):
            for isel in ("pitchfork", "llvm"):
                cases.append(Case(f"{isel} [{lanes}]: {text}", select_instructions(term, TARGET, isel).final, lanes))
                originals.append(term)
    failures = run_cases(cases, np.random.default_rng(8))
    assert not failures, "\n".join(failures)
    for c, term in zip(cases, originals):  # the reference: the text's own meaning
        vs = {v.name: v.type for v in term.walk() if v.is_var}
        want = np.asarray(evaluate(term, {k: a.astype(vs[k].np_dtype) for k, a in c.inputs.items()}))
        assert np.array_equal(np.asarray(c.expected).astype(np.int64), want.astype(np.int64)), c.name
    for ours, theirs in zip(cases[::2], cases[1::2]):
        a, b = loop_of(ours), loop_of(theirs)
        assert len(a.packets) <= len(b.packets) and len(a.instructions) <= len(b.instructions), \
            (ours.name, a.packets, b.packets)
    for i in (0, 1, 2):  # the clamped spellings take the rules (text 3's amount may be >= 16: generic)
        assert "hvx.vavg_rnd" in str(cases[4 * i].term), cases[4 * i].term


# ---------------------------------------------------------------------------------------------
# Shifts by a signed per-lane amount: hvx.vasl_v (vaslhv) and the byte rounding_shl built on it. Both
# declarations also run against their own semantics (random and edge operands, vasl_v's amount anywhere
# in i16) in test_hvx.py::test_every_instruction_matches_its_semantics_under_qemu; their rules are
# proved by test_hvx.py::test_rule_verifies.

def _run_exhaustive(text: str, inputs: dict[str, np.ndarray], lanes: int):  # type: ignore[no-untyped-def]
    """Compile `text` (pitchfork isel) as one kernel, run it under qemu on `inputs`; return
    (got, want from the text's own meaning, the selected term, the loop)."""
    from pitchfork.backend.harness import Buffer, Call, Scalar
    from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
    from pitchfork.backend.asm import main_vector_loop
    from pitchfork.backend.machine import compile_module
    from pitchfork.backend.run import run_calls

    from .hvx_difftest import free_vars

    term = parse(text)
    final = select_instructions(term, TARGET, "pitchfork").final
    m = new_module("shifts")
    vs = free_vars(final)
    add_expression_kernel(m, "k", final, lanes, vs, TARGET, frozenset())
    cm = compile_module(str(m), TARGET)
    n = len(next(iter(inputs.values())))
    out_t = storage_type(term.type).np_dtype
    call = Call("k", (Buffer.output(np.zeros(n, dtype=out_t)), *[Buffer.input(inputs[v.name]) for v in vs],
                      Scalar(n, 64)))
    got = run_calls([cm], TARGET, [call])[0][0]
    want = np.asarray(evaluate(term, inputs)).astype(out_t)
    return got, want, final, main_vector_loop(cm.asm, "k", target=TARGET)


@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("t", ["i8", "u8"])
@pytest.mark.parametrize("amount, inst", [("y_i8", "rounding_shl_b"),
                                          ("max(min(y_i8, 8), -9)", "rounding_shl_b_in_range")])
def test_byte_rounding_shl_by_a_signed_amount_is_exhaustively_bit_exact(t: str, amount: str, inst: str) -> None:
    """rounding_shl(x_T, y_i8) (rules rounding_shl_b_var / _in_range): every (x, y) pair of bytes, 128
    lanes, under qemu-hexagon against FPIR's rounding_shl; 11 loop packets where the generic expansion
    took 18 (an amount known to be in [-9, 8] skips the clamp)."""
    xs, ys = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    x = (xs.ravel() - (128 if t == "i8" else 0)).astype(parse_type(t).np_dtype)
    y = (ys.ravel() - 128).astype(np.int8)
    got, want, final, loop = _run_exhaustive(f"rounding_shl(x_{t}, {amount})", {"x": x, "y": y}, 128)
    assert f"hvx.{inst}(" in str(final), final
    bad = np.nonzero(got != want)[0]
    assert not len(bad), [(int(x[j]), int(y[j]), int(got[j]), int(want[j])) for j in bad[:8]]
    assert sum("vasl(v" in i and ".h,v" in i for i in loop.instructions) == 2, loop.instructions  # vaslhv x 2
    assert len(loop.packets) <= 12, loop.packets


@needs_qemu
@pytest.mark.qemu
def test_bounded_signed_16_bit_shift_is_one_vaslhv() -> None:
    """x_i16 << y with y clamped to [-16, 15] (rule vasl_v): one vaslhv per register, both directions;
    every clamped amount meets edge and random values of x under qemu."""
    rng = np.random.default_rng(16)
    edges = np.array([0, 1, -1, 2, 3, -3, 0x4001, -0x4001, 32767, -32768, 100, -100, 0x1234], dtype=np.int16)
    amounts = np.arange(-40, 41, dtype=np.int16)
    x = np.concatenate([np.repeat(edges, len(amounts)), rng.integers(-32768, 32768, 1536).astype(np.int16)])
    y = np.concatenate([np.tile(amounts, len(edges)), rng.integers(-32768, 32768, 1536).astype(np.int16)])
    pad = (-len(x)) % 64
    x, y = np.concatenate([x, np.zeros(pad, np.int16)]), np.concatenate([y, np.zeros(pad, np.int16)])
    got, want, final, loop = _run_exhaustive("x_i16 << max(min(y_i16, 15), -16)", {"x": x, "y": y}, 64)
    assert "hvx.vasl_v(" in str(final), final
    assert np.array_equal(got, want), np.nonzero(got != want)[0][:8]
    assert any(re.search(r"\.h = vasl\(v\d+\.h,v\d+\.h\)", i) for i in loop.instructions), loop.instructions
    assert not any("vmux" in i for i in loop.instructions), loop.instructions  # no two-way select


def test_a_tighter_byte_clamp_is_invalid() -> None:
    """The clamp of rounding_shl_b's amount at -9 matters: at -8 a u8 rounded right by 9 or more would
    give 1 for x >= 128 (2x >> 8 = 1, then rounded up), which the verifier must find."""
    from pitchfork.trs.rules import parse_rule
    from synth.verify import verify_rule

    ok = parse_rule("ok: rounding_shl(x_T, y_i8) -> cast<T>(hvx.vavg_rnd(hvx.vasl_v(cast<i16>(x_T) << 1, "
                    "cast<i16>(max(min(y_i8, 8), -9))), 0)) if bits(T) == 8")
    bad = parse_rule("bad: rounding_shl(x_u8, y_i8) -> cast<u8>(hvx.vavg_rnd(hvx.vasl_v(cast<i16>(x_u8) << 1, "
                     "cast<i16>(max(min(y_i8, 8), -8))), 0))")
    assert verify_rule(ok).status == "VALID"
    result = verify_rule(bad)
    assert result.status == "INVALID", result.summary()
