"""x86-64 AVX2: the instruction table, the lowering rules and whole-expression selection, checked by running.

* Every instruction's declared semantics matches the hardware: JIT-run at lane counts native/2,
  native, 2*native and 3*native on random and edge inputs, bit-exact against `fpir.interp`, and its
  mnemonic appears in the assembly.
* Every rule in rules/lower/x86_avx2.rules is Z3-valid, and fires on an example that then runs
  bit-exactly (so no rule is dead and no fired rule miscompiles).
* Every FPIR op lowers with isel=pitchfork and isel=llvm at every type instance it accepts, and the
  result runs bit-exactly.
* The paper's Figure 3(b) and 3(c) rows and the Sobel filter (Figure 2b).

Kernels are batched: one module, one JIT engine and one `run_calls` per test.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import llvmlite.binding as llvm
import numpy as np
import pytest

import pitchfork.targets.x86  # noqa: F401  (registers the x86.* ops)
from fpir.interp import evaluate
from fpir.ops import FPIR_OPS, make
from fpir.opspec import OPS
from fpir.term import Term, var
from fpir.text import parse
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.asm import inner_loop_instructions
from pitchfork.backend.machine import CompiledModule, compile_module, target_machine
from pitchfork.backend.run import run_calls
from pitchfork.selection.lower import Selection, select_instructions
from pitchfork.targets import load_target
from pitchfork.targets.base import rule_combines_lanes, PARAMS, sig, target_ops
from synth.verify import verify_rule

TARGET = "x86-avx2"
INT_TYPES = [t for t in USER_TYPES if t.bits > 1]



def _host_has_avx2() -> bool:
    target_machine(TARGET)  # initialises llvmlite
    return bool(llvm.get_host_cpu_features().get("avx2", False))


pytestmark = pytest.mark.skipif(not _host_has_avx2(), reason="x86 kernels run in process and need an AVX2 host")


# ---------------------------------------------------------------------------------------------
# Inputs and batched kernels


def edge_values(t: ScalarType) -> list[int]:
    """Extremes, values next to them and to zero, halves, and shift amounts around every width."""
    b = t.bits
    vals = {0, 1, 2, 3, -1, -2, -3, t.min, t.min + 1, t.max, t.max - 1, t.max // 2, t.max // 2 + 1, t.min // 2,
            b - 1, b, b + 1, -(b - 1), -b, -(b + 1), 7, 8, 9, 15, 16, 17, 127, 128, 255, 256, 32767, 32768}
    return sorted(v for v in vals if t.contains(v))


def make_inputs(vs: Sequence[Term], n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """n rows: all variables on the same edge index, then every pair of the first four variables
    over all pairs of edge values (others random), then random rows."""
    edges = [np.array(edge_values(v.type), dtype=object) for v in vs]
    cols: list[list[np.ndarray]] = [[] for _ in vs]

    def rand(t: ScalarType, k: int) -> np.ndarray:
        return rng.integers(t.min, t.max, endpoint=True, size=k, dtype=storage_type(t).np_dtype).astype(object)

    m = max(len(e) for e in edges)
    for i, e in enumerate(edges):
        cols[i].append(e[np.arange(m) % len(e)])
    for i, j in itertools.combinations(range(min(4, len(vs))), 2):
        k = len(edges[i]) * len(edges[j])
        idx = np.arange(k)
        for h, v in enumerate(vs):
            if h == i:
                cols[h].append(edges[i][idx % len(edges[i])])
            elif h == j:
                cols[h].append(edges[j][idx // len(edges[i])])
            else:
                cols[h].append(rand(v.type, k))
    rows = sum(len(c) for c in cols[0]) if vs else 0
    out = {}
    for v, c in zip(vs, cols):
        col = np.concatenate(c + [rand(v.type, max(0, n - rows))])[:n] if c else rand(v.type, n)
        out[v.name] = col.astype(storage_type(v.type).np_dtype)
    return out


def free_vars(term: Term) -> list[Term]:
    return sorted({t for t in term.walk() if t.op == "var"}, key=lambda v: v.name)


@dataclass
class Kernel:
    name: str
    label: str
    lanes: int
    n: int
    vars: list[Term]
    inputs: dict[str, np.ndarray]
    expected: np.ndarray


ROW_QUANTUM = 960  # every lane count used here divides it, so each kernel covers all rows


def edge_rows(vs: Sequence[Term]) -> int:
    sizes = [len(edge_values(v.type)) for v in vs]
    return max(sizes, default=0) + sum(a * b for a, b in itertools.combinations(sizes[:4], 2))


@dataclass
class Batch:
    """Kernels for many terms in one module; `run` compiles once, runs all, and compares."""

    min_rows: int = 512
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(20240817))
    kernels: list[Kernel] = field(default_factory=list)
    module: object = field(default_factory=new_module)
    _refs: dict[Term, tuple[dict[str, np.ndarray], np.ndarray]] = field(default_factory=dict)

    def add(self, label: str, lowered: Term, reference: Term, lanes: int) -> Kernel:
        """A kernel computing `lowered`, expected to equal `reference` (over the same variables)."""
        vs = free_vars(reference)
        assert {v.name for v in free_vars(lowered)} <= {v.name for v in vs}, label
        if reference not in self._refs:
            rows = -(-max(self.min_rows, edge_rows(vs)) // ROW_QUANTUM) * ROW_QUANTUM
            inputs = make_inputs(vs, rows, self.rng)
            expected = np.asarray(evaluate(reference, inputs)).astype(storage_type(reference.type).np_dtype)
            self._refs[reference] = (inputs, np.broadcast_to(expected, (rows,)))
        inputs, expected = self._refs[reference]
        n = len(expected) // lanes * lanes
        k = Kernel(f"k{len(self.kernels)}", label, lanes, n, vs, {v: a[:n] for v, a in inputs.items()},
                   expected[:n])
        add_expression_kernel(self.module, k.name, lowered, lanes, vs)  # type: ignore[arg-type]
        self.kernels.append(k)
        return k

    def run(self) -> tuple[CompiledModule, list[str]]:
        cm = compile_module(str(self.module), TARGET)
        calls = [Call(k.name, (Buffer.output(np.zeros(k.n, k.expected.dtype)),
                               *[Buffer.input(k.inputs[v.name]) for v in k.vars], Scalar(k.n, 64)))
                 for k in self.kernels]
        outs = run_calls(cm, TARGET, calls)
        bad = []
        for k, out in zip(self.kernels, outs):
            got = out[0]
            if not np.array_equal(got, k.expected):
                i = int(np.flatnonzero(got != k.expected)[0])
                args = ", ".join(f"{v.name}={k.inputs[v.name][i]}" for v in k.vars)
                bad.append(f"{k.label} [lanes {k.lanes}]: lane {i} ({args}) gives {got[i]}, expected {k.expected[i]}")
        return cm, bad


def mnemonics(cm: CompiledModule, kernel: Kernel) -> list[str]:
    return [line.split()[0] for line in inner_loop_instructions(cm.asm, kernel.name, target=TARGET)]


def select(term: Term, isel: str = "pitchfork") -> Selection:
    sel = select_instructions(term, TARGET, isel)
    leftover = [t.op for t in sel.final.walk() if t.args and OPS[t.op].kind == "fpir"]
    assert not leftover, f"FPIR ops left after selection: {leftover}"
    return sel


# ---------------------------------------------------------------------------------------------
# Instructions: semantics by running, mnemonic in the assembly

MNEMONIC = {
    "x86.padds": r"vpadds[bw]", "x86.paddus": r"vpaddus[bw]", "x86.psubs": r"vpsubs[bw]",
    "x86.psubus": r"vpsubus[bw]", "x86.pavg": r"vpavg[bw]", "x86.packsswb": r"vpacksswb",
    "x86.packuswb": r"vpackuswb", "x86.packssdw": r"vpackssdw", "x86.packusdw": r"vpackusdw",
    "x86.pmulhw": r"vpmulhw", "x86.pmulhuw": r"vpmulhuw", "x86.pmulhrsw": r"vpmulhrsw",
    "x86.wmul_pmaddwd": r"vpmaddwd", "x86.pmaddwd": r"vpmaddwd", "x86.pmaddubsw": r"vpmaddubsw",
    "x86.psllv": r"vpsllv[dq]", "x86.psrlv": r"vpsrlv[dq]", "x86.psrav": r"vpsravd",
    "x86.psllv_widened": r"vpsllvd", "x86.psrlv_widened": r"vpsrlvd", "x86.psrav_widened": r"vpsravd",
    "x86.rounding_shl_widened": r"vpsllvd", "x86.rounding_shr_widened": r"vpsr[al]vd", "x86.psrav_q": r"vpsrlvq",
    "x86.pmuldq_q31": r"vpmuldq", "x86.pmuldq_q31_round": r"vpmuldq",
}


def instruction_forms() -> list[tuple[str, str]]:
    # Lane-combining instructions (pmaddwd_pairs, ...) run in test_horizontal.py; those reading an
    # operand at lane 0 only (the *_uniform shifts) in test_x86_uniform_shift.py.
    return [(s.name, text) for s in target_ops("x86") if not s.combines_lanes and not s.reads_lane0
            for text in s.meta["signatures"]]


def test_every_instruction_has_a_mnemonic() -> None:
    assert {name for name, _ in instruction_forms()} == set(MNEMONIC)


def test_instruction_semantics_match_hardware() -> None:
    batch = Batch(min_rows=2048)
    checks = []
    for name, text in instruction_forms():
        sg = sig(text)
        vs = [var(PARAMS[i], t) for i, t in enumerate(sg.args)]
        term = make(name, *vs)
        native = 256 // max(t.bits for t in (*sg.args, sg.result))
        for lanes in (native // 2, native, 2 * native, 3 * native):
            checks.append((name, batch.add(f"{name}({text})", term, term, lanes)))
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    for name, k in checks:
        got = mnemonics(cm, k)
        assert any(re.fullmatch(MNEMONIC[name], m) for m in got), f"{k.label} lanes {k.lanes}: {got}"


def test_abs_uses_pabs() -> None:
    """abs is a primitive op; its emission (llvm.abs) must select vpabsb/w/d."""
    batch = Batch()
    ks = {bits: batch.add(f"abs i{bits}", t, t, 256 // bits)
          for bits, t in ((b, parse(f"abs(x_i{b})")) for b in (8, 16, 32))}
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    for bits, k in ks.items():
        assert f"vpabs{'bwd'[bits // 16]}" in mnemonics(cm, k)


# ---------------------------------------------------------------------------------------------
# Rules: Z3 validity, and each fires on an example that runs bit-exactly


def rules() -> list:
    return list(load_target(TARGET).rules.rules)


@pytest.mark.parametrize("rule", rules(), ids=lambda r: r.name)
def test_rule_verifies(rule) -> None:  # type: ignore[no-untyped-def]
    result = verify_rule(rule, rlimit=300_000_000)
    assert result.status == "VALID", f"{rule.text()}\n{result.summary()}"


# rule name -> an expression (FPIR text) on which select_instructions fires it. Bounded operands
# come from narrower casts (i16(a_i8) lies in [-128, 127]) or widening ops.
RULE_EXAMPLES: dict[str, list[str]] = {
    "padds": ["saturating_add(a_i8, b_i8)", "saturating_add(a_i16, b_i16)"],
    "paddus": ["saturating_add(a_u8, b_u8)", "saturating_add(a_u16, b_u16)"],
    "paddus_u32": ["saturating_add(a_u32, b_u32)"],
    "psubs": ["saturating_sub(a_i8, b_i8)", "saturating_sub(a_i16, b_i16)"],
    "psubus": ["saturating_sub(a_u8, b_u8)", "saturating_sub(a_u16, b_u16)"],
    "psubus_u32": ["saturating_sub(a_u32, b_u32)"],
    "absd_psubus_por": ["absd(a_u8, b_u8)", "absd(a_u16, b_u16)"],
    "absd_umax_umin": ["absd(a_u32, b_u32)"],
    "absd_smax_smin": ["absd(a_i8, b_i8)", "absd(a_i16, b_i16)", "absd(a_i32, b_i32)"],
    "pavg": ["rounding_halving_add(a_u8, b_u8)", "rounding_halving_add(a_u16, b_u16)"],
    "pavg_signed": ["rounding_halving_add(a_i8, b_i8)", "rounding_halving_add(a_i16, b_i16)"],
    "pavg_floor": ["halving_add(a_u8, b_u8)", "halving_add(a_u16, b_u16)"],
    "pavg_halving_sub": ["halving_sub(a_u8, b_u8)", "halving_sub(a_u16, b_u16)"],
    "pavg_halving_sub_signed": ["halving_sub(a_i8, b_i8)", "halving_sub(a_i16, b_i16)"],
    "pavg_rounding_shr": [*(f"rounding_shr(a_u8, {c})" for c in range(1, 9)),
                          *(f"rounding_shr(a_u16, {c})" for c in (1, 2, 5, 15, 16)),
                          "rounding_shr(a_u8, i8(3))"],
    "pavg_rounding_shr_i16": [f"rounding_shr(a_i16, {c})" for c in (1, 2, 7, 15, 16)],
    "pavg_rounding_shr_i8": [f"rounding_shr(a_i8, {c})" for c in (1, 2, 3, 7, 8)],
    "rounding_shr_add_bounded": ["rounding_shr(i16(a_u8) + i16(b_u8), 4)", "rounding_shr(i16(a_i8) * 100, 7)",
                                 "rounding_shr(i8(a_u8 >> 2), 3)"],
    "packsswb": ["saturating_cast<i8>(a_i16)"],
    "packuswb": ["saturating_cast<u8>(a_i16)"],
    "packssdw": ["saturating_cast<i16>(a_i32)"],
    "packusdw": ["saturating_cast<u16>(a_i32)"],
    "packuswb_from_u16": ["saturating_cast<u8>(u16(a_u8) * 100)", "saturating_cast<u8>(a_u16 >> 1)"],
    "packsswb_from_u16": ["saturating_cast<i8>(a_u16 >> 1)"],
    "packssdw_from_u32": ["saturating_cast<i16>(a_u32 >> 1)"],
    "packusdw_from_u32": ["saturating_cast<u16>(u32(a_u16) * 1000)", "saturating_cast<u16>(a_u32 >> 1)"],
    "packuswb_umin": ["saturating_cast<u8>(a_u16)"],
    "packsswb_umin": ["saturating_cast<i8>(a_u16)"],
    "packssdw_umin": ["saturating_cast<i16>(a_u32)"],
    "packusdw_umin": ["saturating_cast<u16>(a_u32)"],
    "packssdw_packuswb": ["saturating_cast<u8>(a_i32)"],
    "packssdw_packsswb": ["saturating_cast<i8>(a_i32)"],
    "packssdw_packuswb_from_u32": ["saturating_cast<u8>(a_u32 >> 2)"],
    "packssdw_packsswb_from_u32": ["saturating_cast<i8>(a_u32 >> 2)"],
    "packusdw_packuswb_umin": ["saturating_cast<u8>(a_u32)"],
    "packusdw_packsswb_umin": ["saturating_cast<i8>(a_u32)"],
    "pmulhw": ["mul_shr(a_i16, b_i16, 16)"],
    "pmulhuw": ["mul_shr(a_u16, b_u16, 16)"],
    "pmulhw_shr": ["mul_shr(a_i16, b_i16, 17)", "mul_shr(a_i16, b_i16, 24)", "mul_shr(a_i16, b_i16, 31)"],
    "pmulhw_sign": ["mul_shr(a_i16, b_i16, 32)", "mul_shr(a_i16, b_i16, 40000)"],
    "pmulhuw_shr": ["mul_shr(a_u16, b_u16, 17)", "mul_shr(a_u16, b_u16, 31)", "mul_shr(a_u16, b_u16, 33)"],
    "pmulhuw_q15": ["mul_shr(a_u16, 1000, 15)", "mul_shr(a_u16, 32767, 15)"],
    "pmulhuw_q15_const_first": ["mul_shr(1000, a_u16, 15)"],
    "pmuldq_q31": ["mul_shr(a_i32, b_i32, 31)", "i32((i64(a_i32) * i64(b_i32 >> 1)) >> 31)"],
    "pmuldq_q31_round": ["rounding_mul_shr(a_i32, b_i32, 31)"],
    "pmulhrsw_fixup": ["rounding_mul_shr(a_i16, b_i16, 15)"],
    "pmulhrsw": ["rounding_mul_shr(i16(a_i8), b_i16, 15)", "rounding_mul_shr(a_i16, i16(b_u8), 15)"],
    "wmul_pmaddwd": ["widening_mul(a_i16, b_i16)"],
    "pmaddwd": ["widening_mul(a_i16, b_i16) + widening_mul(c_i16, d_i16)"],
    "pmaddubsw": ["saturating_add(widening_mul(a_u8, b_i8), widening_mul(c_u8, d_i8))"],
    "psllv": ["a_u32 << b_u32", "a_i64 << b_u64"],
    "psllv_nonnegative": ["a_i32 << max(b_i32, 0)", "a_u64 << max(b_i64, 1)"],
    "psrlv": ["a_u32 >> b_u32", "a_u64 >> b_u64"],
    "psrlv_nonnegative": ["a_u32 >> max(b_i32, 3)"],
    "psrav": ["a_i32 >> b_u32"],
    "psrav_nonnegative": ["a_i32 >> max(b_i32, 0)"],
    "psrav_q": ["a_i64 >> b_u64"],
    "psrav_q_nonnegative": ["a_i64 >> max(b_i64, 0)", "a_i64 >> i64(b_u32)"],
    "widening_shl_one_psllv": ["widening_shl(i16(1), b_i16)"],
    "psllv_widened": ["a_u16 << b_u16", "a_i16 << b_u16"],
    "psrlv_widened": ["a_u16 >> b_u16"],
    "psrav_widened": ["a_i16 >> b_u16"],
    "rounding_shr_psrlv": ["rounding_shr(a_u32, b_u32)", "rounding_shr(a_u64, b_u64)"],
    "rounding_shr_psrav": ["rounding_shr(a_i32, b_u32)"],
    "rounding_shr_halved": ["rounding_shr(a_i32, u32(8))", "rounding_shr(a_u32, u32(2))", "rounding_shr(a_i32, u32(32))"],
    "rounding_shr_16bit_wide_amount": ["rounding_shr(a_i16, i16(max(min(n_i32, 16), 0)))",
                                       "rounding_shr(a_i16, i16(saturating_cast<u32>(min(n_i32, 16))))",
                                       "rounding_shr(a_u16, u16(saturating_cast<u32>(min(n_i32, 16))))",
                                       "rounding_shr(a_u16, u16(min(n_u32, 16)))"],
    "rounding_shr_16bit_narrow_amount": ["rounding_shr(a_u16, u16(n_i8))", "rounding_shr(a_i16, i16(b_u8))",
                                         "rounding_shr(a_u16, u16(n_i16))", "rounding_shr(a_i16, i16(max(min(n_i8, 16), 0)))",
                                         "u16((u32(a_u16) + (u32(1) << u32(i32(n_i8) + -1))) >> u32(i32(n_i8)))"],
    "rounding_shr_16bit_u16_amount": ["rounding_shr(a_u16, b_u16)", "rounding_shr(a_i16, b_u16)"],
    "rounding_shr_16bit_nonneg_amount": ["rounding_shr(a_u16, max(n_i16, 0))", "rounding_shr(a_i16, max(n_i16, 0))",
                                         "rounding_shr(a_u16, i16(max(min(n_i8, 16), 0)))"],
    "rounding_shr_16bit_wide_sat_amount": [
        "rounding_shr(a_u16, saturating_cast<u16>(min(n_i32, 16)))",
        "u16((i32(a_u16) + ((1 << max(min(n_i32, 16), 0)) >> 1)) >> max(min(n_i32, 16), 0))"],
    "rounding_shr_16bit_wide_amount_widened_back": [
        "i32(rounding_shr(a_i16, i16(max(min(n_i32, 16), 0))))",
        "(i32(a_i16) + (1 << (max(min(n_i32, 16), 0) + -1))) >> u32(max(min(n_i32, 16), 0))",
        "u32(rounding_shr(a_u16, u16(min(n_u32, 16))))",
        "(u32(a_u16) + ((1 << min(n_u32, 16)) >> 1)) >> min(n_u32, 16)"],
    "rounding_shr_widened_negated": ["rounding_shr(a_i8, b_i8)", "rounding_shr(a_u8, b_i8)", "rounding_shr(a_i16, b_i16)",
                                     "rounding_shr(a_u16, b_i16)", "rounding_shr(a_i16, max(n_i16, -3))"],
    "rounding_shr_u8_widened": ["rounding_shr(a_u8, b_u8)", "rounding_shr(a_u8, u8(max(n_i8, 0)))",
                                "u8((u16(a_u8) + ((1 << min(n_u16, 8)) >> 1)) >> min(n_u16, 8))"],
    "rounding_shr_i8_widened": ["rounding_shr(a_i8, b_u8)", "rounding_shr(a_i8, max(n_i8, 0))",
                                "(i16(a_i8) + ((1 << max(min(n_i16, 8), 0)) >> 1)) >> max(min(n_i16, 8), 0)"],
    "rounding_shr_u8_widened_back": ["(i16(a_u8) + ((1 << max(min(b_i16, 8), 0)) >> 1)) >> u16(max(min(b_i16, 8), 0))",
                                     "u16(rounding_shr(a_u8, b_u8))"],
    "rounding_shr_i8_widened_back": ["(i16(a_i8) + ((1 << max(min(n_i16, 8), 0)) >> 1)) >> max(min(n_i16, 8), 0)",
                                     "i16(rounding_shr(a_i8, b_u8))"],
    "packuswb_widened_back": ["rounding_shr(a_u8, saturating_cast<u8>(min(b_i16, 8)))",
                              "u16(saturating_cast<u8>(a_i16 >> 8))"],
    "rounding_shl_widened": ["rounding_shl(a_i8, b_i8)", "rounding_shl(a_u8, b_i8)", "rounding_shl(a_i16, b_i16)",
                             "rounding_shl(a_u16, b_i16)", "rounding_shl(a_i16, rounding_shl(b_i16, c_i16))"],
    "rounding_shl_psllv_psrav": ["rounding_shl(a_i32, b_i32)", "rounding_shl(a_i32, i32(b_i8))"],
    "rounding_shl_psllv_psrlv": ["rounding_shl(a_u32, b_i32)", "rounding_shl(a_u64, b_i64)"],
    "rounding_shr_psllv_psrav": ["rounding_shr(a_i32, b_i32)", "rounding_shr(a_i32, i32(b_i8))"],
    "rounding_shr_psllv_psrlv": ["rounding_shr(a_u32, b_i32)", "rounding_shr(a_u64, b_i64)"],
    "rounding_shl_psllv_psrav_q": ["rounding_shl(a_i64, b_i64)"],
    "rounding_shr_psrav_q": ["rounding_shr(a_i64, b_u64)"],
    "rounding_shr_psllv_psrav_q": ["rounding_shr(a_i64, b_i64)"],
    "rounding_shl_widened_wide_amount": [
        "rounding_shl(a_i16, i16(max(min(n_i32, 40), -40)))", "rounding_shl(a_u8, i8(n_i16 >> 9))",
        "i8((i16(a_i8) + ((1 >> max(min(n_i16, 7), -8)) >> 1)) << max(min(n_i16, 7), -8))",
        "u16((u32(a_u16) + ((u32(1) >> max(min(n_i32, 15), -16)) >> 1)) << max(min(n_i32, 15), -16))"],
    "saturating_shl_psllv": ["saturating_shl(a_u32, b_u32)", "saturating_shl(a_u64, b_u64)"],
    "saturating_shl_psllv_signed": ["saturating_shl(a_i32, b_u32)"],
    "saturating_shl_psllv_psrav_q": ["saturating_shl(a_i64, b_u64)"],
    "saturating_shl_psllv_widened": ["saturating_shl(a_u16, b_u16)"],
    "saturating_shl_psllv_widened_signed": ["saturating_shl(a_i16, b_u16)"],
    "pmulhrsw_cast": ["i16((i32(a_i16) * i32(b_i16) + 16384) >> 15)", "u8(rounding_shr(widening_mul(a_i16, b_i16), 15))"],
    "pmulhrsw_packsswb": ["saturating_cast<i8>(rounding_shr(widening_mul(a_i16, b_i16), 15))",
                          "i8(max(min((i32(a_i16) * i32(b_i16) + 16384) >> 15, 127), -128))"],
    "pmulhrsw_packuswb": ["saturating_cast<u8>(rounding_shr(widening_mul(a_i16, b_i16), 15))"],
    "pmulhrsw_packusdw": ["saturating_cast<u16>(rounding_shr(widening_mul(a_i16, b_i16), 15))",
                          "saturating_cast<u16>((i32(a_i16) * i32(b_i16) + 16384) >> 15)"],
    "pmulhrsw_cast_halved": ["i16(rounding_shr(i32(a_i16) * i32(b_i16), u32(15)))",
                             "u8(rounding_shr(widening_mul(a_i16, b_i16), u32(15)))"],
    "pmulhrsw_packsswb_halved": ["saturating_cast<i8>(rounding_shr(i32(a_i16) * i32(b_i16), u32(15)))"],
    "pmulhrsw_packuswb_halved": ["saturating_cast<u8>(rounding_shr(i32(a_i16) * i32(b_i16), u32(15)))"],
    "pmulhrsw_packssdw_halved": ["saturating_cast<i16>(rounding_shr(i32(a_i16) * i32(b_i16), u32(15)))"],
    "pmulhrsw_packusdw_halved": ["saturating_cast<u16>(rounding_shr(i32(a_i16) * i32(b_i16), u32(15)))"],
    "pmulhw_q15": ["mul_shr(a_i16, b_i16, 15)"],
    "pmulhuw_q15_any": ["mul_shr(a_u16, b_u16, 15)"],
    "pmulhw_round16": ["rounding_mul_shr(a_i16, b_i16, 16)"],
    "pmulhuw_round16": ["rounding_mul_shr(a_u16, b_u16, 16)"],
    "pmulhuw_round15": ["rounding_mul_shr(a_u16, b_u16, 15)"],
    "padds_of_saturating_shl1": ["saturating_shl(a_i16, 1)", "saturating_cast<i8>(i16(a_i8) << 1)"],
    "pmulhuw_preshift": ["mul_shr(a_u16, u16(b_u8), 13)", "mul_shr(a_u16, u16(b_u8), 9)"],
    "pmaddubsw_taps": ["widening_mul(a_u8, 3) + widening_mul(b_u8, 5)",
                       "widening_mul(a_u8, 100) + widening_mul(b_u8, 28)"],
}


def test_every_rule_has_an_example() -> None:
    # Lane-combining rules have their examples in test_horizontal.py; synthesized rules
    # (rules/synthesized/) carry theirs in the rule file and are re-verified by tests/synth.
    # Rules for a uniform amount (`is_uniform`: FPIR text cannot state it) run in
    # test_x86_uniform_shift.py.
    hand = load_target(TARGET, include_synthesized=False).rules.rules
    assert {r.name for r in hand if not rule_combines_lanes(r) and "is_uniform" not in (r.predicate or "")} \
        == set(RULE_EXAMPLES)


def test_rules_fire_and_run() -> None:
    batch = Batch(min_rows=1024)
    missing = []
    for name, examples in RULE_EXAMPLES.items():
        for text in examples:
            term = parse(text)
            sel = select(term)
            if sel.lower_stats is None or not sel.lower_stats.fired[name]:
                missing.append(f"{name}: {text} -> {sel.lowered}")
            native = 256 // max(t.type.bits for t in term.walk())
            for lanes in (native // 2, 3 * native):
                batch.add(f"{name}: {text}", sel.final, term, lanes)
    assert not missing, "rules that did not fire:\n" + "\n".join(missing)
    _, bad = batch.run()
    assert not bad, "\n".join(bad)


# ---------------------------------------------------------------------------------------------
# Every FPIR op at every type instance


def op_instances() -> list[Term]:
    """One term over variables per FPIR op and operand types its type rule accepts (user types only)."""
    out = []
    for op in FPIR_OPS:
        s = OPS[op]
        for explicit in (INT_TYPES if s.explicit_type else [None]):
            for ts in itertools.product(INT_TYPES, repeat=s.arity):
                try:
                    term = make(op, *(var(n, t) for n, t in zip("abc", ts)), type=explicit)
                except FPIRTypeError:
                    continue
                if term.op == op and term.type.bits <= 64:  # saturating_cast<T>(x_T) is x itself
                    out.append(term)
    return out


def test_every_fpir_op_lowers_at_every_type() -> None:
    terms = op_instances()
    assert {t.op for t in terms} == set(FPIR_OPS)
    batch = Batch(min_rows=256)
    for term in terms:
        for isel in ("pitchfork", "llvm"):
            final = select(term, isel).final
            for lanes in (16, 40):
                batch.add(f"{isel}: {term}", final, term, lanes)
    _, bad = batch.run()
    assert not bad, f"{len(bad)} of {len(batch.kernels)} kernels differ:\n" + "\n".join(bad[:40])


# ---------------------------------------------------------------------------------------------
# The paper's Figure 3(b)/(c) and the Sobel filter (Figure 2b)

SOBEL = ("u8(min(absd(u16(a_u8) + u16(b_u8) * 2 + u16(c_u8), u16(d_u8) + u16(e_u8) * 2 + u16(f_u8)) + "
         "absd(u16(g_u8) + u16(h_u8) * 2 + u16(i_u8), u16(j_u8) + u16(k_u8) * 2 + u16(l_u8)), 255))")
FIG3B = "absd(x_u16, y_u16)"
# z_u16 = 3a + b <= 1020. (With z = widening_add(a, b) the lifter finds saturating_add: vpaddusb.)
FIG3C = "u8(min(u16(a_u8) * 3 + u16(b_u8), 255))"


def test_figure_3_and_sobel() -> None:
    batch = Batch(min_rows=4096)
    ks: dict[tuple[str, str], Kernel] = {}
    for text, lanes in ((FIG3B, 16), (FIG3C, 32), (SOBEL, 32)):  # one ymm of u16; the paper's u8 width
        term = parse(text)
        for isel in ("pitchfork", "llvm"):
            ks[text, isel] = batch.add(f"{isel}: {text}", select(term, isel).final, term, lanes)
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)

    # (b): the compound rule, two saturating subtractions and an or (no min/max/blend).
    b = mnemonics(cm, ks[FIG3B, "pitchfork"])
    assert b.count("vpsubusw") == 2 and "vpor" in b, b
    assert not {"vpminuw", "vpmaxuw", "vpblendvb"} & set(b), b
    # (c): the predicated pack, no clamp; LLVM alone clamps first.
    c = mnemonics(cm, ks[FIG3C, "pitchfork"])
    assert "vpackuswb" in c and "vpminuw" not in c, c
    assert "vpminuw" in mnemonics(cm, ks[FIG3C, "llvm"])

    pf, base = mnemonics(cm, ks[SOBEL, "pitchfork"]), mnemonics(cm, ks[SOBEL, "llvm"])
    assert "vpackuswb" in pf and "vpminuw" not in pf, pf
    assert len(pf) < len(base), (pf, base)
    print(f"\nSobel inner loop (32 lanes): pitchfork {len(pf)} instructions, llvm {len(base)}")


# ---------------------------------------------------------------------------------------------
# Variable shifts, the fused vpmulhrsw forms and the 16-bit high-multiply compounds: the intended
# instructions are in the loop, and the emitter's compare-and-blend for large amounts is gone.

SHOWN = [
    ("a_u32 << b_u32", ["vpsllvd"]),
    ("a_i32 >> b_u32", ["vpsravd"]),
    ("a_u64 >> b_u64", ["vpsrlvq"]),
    ("a_u16 >> b_u16", ["vpsrlvd"]),
    ("a_i16 >> b_u16", ["vpsravd"]),
    ("rounding_shr(a_u32, b_u32)", ["vpsrlvd"]),
    ("saturating_shl(a_i32, b_u32)", ["vpsllvd", "vpsravd"]),
    ("i16((i32(a_i16) * i32(b_i16) + 16384) >> 15)", ["vpmulhrsw"]),
    ("saturating_cast<i8>(rounding_shr(widening_mul(a_i16, b_i16), 15))", ["vpmulhrsw", "vpacksswb"]),
    ("saturating_cast<u16>(rounding_shr(widening_mul(a_i16, b_i16), 15))", ["vpmulhrsw", "vpmaxsw"]),
    ("saturating_cast<u8>(rounding_shr(widening_mul(a_i16, b_i16), u32(15)))", ["vpmulhrsw", "vpackuswb"]),
    ("mul_shr(a_i16, b_i16, 15)", ["vpmulhw", "vpaddsw", "vpmullw"]),
    ("mul_shr(a_u16, b_u16, 15)", ["vpmulhuw", "vpaddusw", "vpmullw"]),
    ("rounding_mul_shr(a_u16, b_u16, 16)", ["vpmulhuw", "vpmullw"]),
    ("rounding_shl(a_i16, b_i16)", ["vpsllvd", "vpsravd", "vpor"]),
    ("rounding_shl(a_u8, b_i8)", ["vpsllvd", "vpsrlvd", "vpor"]),
    ("rounding_shl(a_i32, b_i32)", ["vpsllvd", "vpsravd", "vpor"]),
    ("rounding_shr(a_u32, b_i32)", ["vpsllvd", "vpsrlvd", "vpor"]),
    ("rounding_shl(a_i64, b_i64)", ["vpsllvq", "vpsrlvq", "vpcmpgtq", "vpor"]),
    ("a_i64 >> b_u64", ["vpsrlvq", "vpcmpgtq"]),
]


def test_new_lowerings_show_their_instructions() -> None:
    batch = Batch(min_rows=512)
    ks = []
    for text, want in SHOWN:
        term = parse(text)
        native = 256 // max(t.type.bits for t in term.walk())
        ks.append((batch.add(text, select(term).final, term, native), want))
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    for k, want in ks:
        got = mnemonics(cm, k)
        assert all(w in got for w in want), f"{k.label}: {got}"
        if ("<<" in k.label or ">>" in k.label) and "16384" not in k.label:
            # (a compare the lowering itself wants, psrav_q's sign mask, is not the clamp of large amounts)
            assert "vpblendvb" not in got and not any(m.startswith("vpcmp") and m not in want for m in got), \
                f"{k.label}: {got}"
