"""pitchfork/emit/machine.py `_set_packetizer`: hvx128 modules with 64-bit-lane vectors are emitted
without VLIW packets.

The repro is the difftest case (seed 12, hvx128, isel=pitchfork) `min(b, saturating_shl(b % d,
u64(12)) << u64(41))` at i64 x 16: with packets, 9 of 512 lanes came out 0 instead of -2^41 under
qemu-hexagon (one packet of the scalarised code is at fault; see `_set_packetizer`). The term, its
pieces and a smaller variant (`b & d`, wrong at codegen -O1 with packets) must run bit-exactly
against the numpy interpreter; the option must not leak into modules without i64 vectors.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpir.text import parse
from fpir.types import parse_type
from pitchfork.emit.kernel import add_expression_kernel, new_module
from pitchfork.emit.machine import compile_module, inner_loop
from pitchfork.emit.run import tools_available
from pitchfork.lower import select_instructions
from tests.pitchfork.targets.hvx_difftest import Case, free_vars, run_cases

TARGET = "hvx128"
needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")

ENV = {"b": parse_type("i64"), "d": parse_type("i64")}
TERM = "min(b, saturating_shl(b % d, u64(12)) << u64(41))"
PIECES = [
    "b % d",
    "saturating_shl(b, u64(12))",
    "b << u64(41)",
    "saturating_shl(b % d, u64(12))",
    "saturating_shl(b % d, u64(12)) << u64(41)",
    "min(b, saturating_shl(b & d, u64(12)) << u64(41))",
]


def _module_asm(text: str, lanes: int, elem: str = "i64") -> str:
    t = select_instructions(parse(text, env={v: parse_type(elem) for v in ENV}), TARGET).final
    m = new_module("t")
    add_expression_kernel(m, "k", t, lanes, free_vars(t), TARGET, frozenset())
    return compile_module(str(m), TARGET).assembly()


@needs_qemu
def test_i64_term_and_pieces_are_bit_exact() -> None:
    cases = [Case(f"{isel}: {TERM}", select_instructions(parse(TERM, env=ENV), TARGET, isel).final, lanes)
             for isel in ("pitchfork", "llvm") for lanes in (16,)]
    cases += [Case(p, select_instructions(parse(p, env=ENV), TARGET).final, 16) for p in PIECES]
    assert run_cases(cases, np.random.default_rng(3)) == []


def test_packetizer_is_off_only_for_i64_vector_modules() -> None:
    i64_loop = inner_loop(_module_asm(TERM, 16), "k", target=TARGET)
    assert i64_loop.packets and all(len(p) == 1 for p in i64_loop.packets)
    # compiled after the i64 module: the process-wide option must be back on
    i32 = inner_loop(_module_asm("min(b, d) + d", 32, "i32"), "k", target=TARGET)
    assert max(len(p) for p in i32.packets) > 1
