"""pitchfork.codegen.kernel on HVX: vectors narrower than a register are computed in whole registers.

A kernel whose `lanes` elements of some type fill HVX registers only in part computes a whole-register
block per iteration and its last elements once more on stack copies (`_whole_register_loop`). Checked:

* bit-exact under qemu-hexagon against `fpir.interp.evaluate`, both isels, for narrow expressions
  (a widening multiply-accumulate, variable byte shifts LLVM 22 miscompiles at sub-register widths, a
  compare result, 8- and 32-bit lanes in one term, a lane-combining reduction, a uniform operand, an
  offset window of one buffer), each called with n that runs only the tail, the main loop and a tail,
  and only the main loop, on misaligned buffers;
* the hot loop of `c_u16 + widening_mul(a_u8, b_u8)` at 64 lanes has no lane-by-lane code and takes no
  more packets than the same kernel asked for at 128 lanes (one u8 register: the whole-register
  version), which computes as many elements per iteration; the old padded code took ~460 lines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.term import Term
from fpir.text import parse
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.codegen.kernel import add_expression_kernel, input_factors, new_module, register_lanes, storage_type
from pitchfork.backend.machine import compile_module, main_vector_loop
from pitchfork.backend.run import run_calls, tools_available
from pitchfork.selection.lower import select_instructions
from pitchfork.selection.select_batch import kernel_variables, select_expression
from pitchfork.targets import load_target
from tests.pitchfork.difftest import input_values

TARGET = "hvx128"
load_target(TARGET)
needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")


@dataclass(frozen=True)
class Narrow:
    text: str
    lanes: int
    uniform: frozenset[str] = frozenset()
    offsets: dict[str, tuple[str, int]] = field(default_factory=dict)


NARROW = [
    Narrow("c_u16 + widening_mul(a_u8, b_u8)", 64),
    Narrow("x_u8 >> c_u8", 32),  # LLVM 22 / qemu: wrong lanes at 16/32 sub-register lanes
    Narrow("x_i8 << c_i8", 16),
    Narrow("rounding_shr(a_i16, b_i16)", 48),  # 96 bytes: whole registers at 64 lanes
    Narrow("a_u16 < b_u16", 32),  # a u1 result, stored one byte per lane
    Narrow("i32(a_u8) * b_i32 + c_i32", 32),  # u8 and i32 lanes: 1 and 4 registers at 128 lanes
    Narrow("vector_reduce_add_x4(i32(widening_mul(d_u8, c_i8)))", 8),  # 32 bytes of each input
    Narrow("saturating_sub(a_u8 >> s_u8, a_u8)", 32, uniform=frozenset({"s"})),
    Narrow("widening_add(x_u8, y_u8) + u16(z_u8)", 32, offsets={"y": ("x", 1), "z": ("x", 2)}),
]


def _kernel_inputs(final: Term, case: Narrow) -> list[Term]:
    return [v for v in kernel_variables(final) if v.name not in case.offsets]


def _values(case: Narrow, term: Term, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    factors = input_factors(term)
    extra = max([off for _, off in case.offsets.values()] or [0])
    env: dict[str, np.ndarray] = {}
    for v in kernel_variables(term):
        if v.name in case.offsets:
            continue
        a = np.asarray(input_values(rng, v.type, n * factors.get(v.name, 1) + (extra if v.name in
                       {s for s, _ in case.offsets.values()} else 0)))
        if v.name in case.uniform:
            a = np.full_like(a, a[int(rng.integers(len(a)))])
        env[v.name] = a
    return env


def _expected(case: Narrow, term: Term, env: dict[str, np.ndarray], n: int) -> np.ndarray:
    full = {k: a[:n * input_factors(term).get(k, 1)] for k, a in env.items()}
    for v, (src, off) in case.offsets.items():
        full[v] = env[src][off:off + n]
    want = np.asarray(evaluate(term, full))
    return want.astype(np.uint8) if term.type.bits == 1 else want


@needs_qemu
def test_narrow_kernels_run_bit_exact_on_every_path() -> None:
    rng = np.random.default_rng(11)
    m = new_module("narrow")
    kernels = []
    for isel in ("pitchfork", "llvm"):
        for k, case in enumerate(NARROW):
            term = parse(case.text)
            final = select_instructions(term, TARGET, isel).final
            name = f"k_{isel}_{k}"
            add_expression_kernel(m, name, final, case.lanes, _kernel_inputs(final, case), TARGET,
                                  case.uniform, case.offsets)
            kernels.append((name, case, term, final))
    cm = compile_module(str(m), TARGET)
    calls, wants = [], []
    for name, case, term, final in kernels:
        width = register_lanes(final, case.lanes)
        assert width > case.lanes, case.text  # each case is narrow: the whole-register path
        # tail only; main loop then tail; main loop only (n a multiple of lanes throughout)
        for n in (case.lanes, case.lanes * (width // case.lanes + 1), 2 * math.lcm(case.lanes, width)):
            env = _values(case, term, n, rng)
            wants.append((name, n, _expected(case, term, env, n)))
            out = np.zeros(n, dtype=storage_type(term.type).np_dtype)
            ins = [Buffer.input(env[v.name].astype(storage_type(v.type).np_dtype), misalign=int(rng.integers(0, 4)))
                   for v in _kernel_inputs(final, case)]
            calls.append(Call(name, [Buffer.output(out, misalign=int(rng.integers(0, 3))), *ins, Scalar(n, 64)]))
    results = run_calls([cm], TARGET, calls)
    bad = []
    for (name, n, want), (got, *_) in zip(wants, results):
        if not np.array_equal(got, want.astype(got.dtype)):
            j = int(np.nonzero(got != want.astype(got.dtype))[0][0])
            bad.append(f"{name} n={n}: lane {j} got {got[j]} expected {want[j]}")
    assert not bad, "\n".join(bad)


_LANE_BY_LANE = re.compile(r"\b(vinsert|vextract|extractu|insert)\(|\bmem[bhwd]u?\(")  # lane ops, scalar memory


def test_widening_multiply_accumulate_at_64_lanes_is_whole_register_code() -> None:
    """`c_u16 + widening_mul(a_u8, b_u8)` at 64 lanes (half a register of u8): before, LLVM got
    <64 x i8> operands padded to a register and scalarised the padding (~460 assembly lines of
    extractu/insert/vinsert). Now its hot loop is the 128-lane kernel's loop: vmpy.acc on whole
    registers, no scalar lane code, no more packets than the whole-register kernel."""
    text = "c_u16 + widening_mul(a_u8, b_u8)"
    recs = {n: select_expression(text, TARGET, lanes=n, emit="asm", isolate=False) for n in (64, 128)}
    for n, rec in recs.items():
        assert rec.error is None, rec.error
    hot = main_vector_loop(recs[64].asm, target=TARGET)
    whole = main_vector_loop(recs[128].asm, target=TARGET)
    assert any("vmpy" in i for i in hot.instructions), hot.instructions
    assert not [i for i in hot.instructions if _LANE_BY_LANE.search(i)], hot.instructions
    assert len(hot.packets) <= len(whole.packets), (hot.packets, whole.packets)
    # The tail works on stack copies (byte copy loops, one more whole-register block): no lane inserts
    # or extracts anywhere in the kernel.
    assert not re.search(r"\bv(insert|extract)\b|\bextractu\(", recs[64].asm)
