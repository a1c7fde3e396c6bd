"""AArch64 Neon: instruction table, lowering rules and code, proved by Z3 and by running under qemu.

* every instruction of pitchfork/targets/arm.py, at every signature and several lane counts (half a
  register, one, three), runs under qemu-aarch64 and matches its declared meaning bit-exactly, and its
  mnemonic appears in the assembly;
* every rule of rules/lower/arm_neon.rules is VALID (Z3, at every type instance);
* every FPIR op, at every type instance, lowers with isel=pitchfork and isel=llvm and runs bit-exactly;
* a table of expressions fires every rule at least once and shows the intended instructions;
* the paper's Figure 3 rows and the Sobel filter (Figure 2b).

Each test builds one module with all its kernels and makes one `run_calls`: one compile, one link,
one qemu run.
"""

from __future__ import annotations

import itertools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pytest

import pitchfork.targets.arm  # noqa: F401 - registers the arm.* instructions
from fpir.interp import evaluate, facts_hold
from fpir.ops import FPIR_OPS, make
from fpir.opspec import OPS
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.text import parse
from fpir.types import INT_TYPES, FPIRTypeError, ScalarType
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.asm import asm_instructions, inner_loop_instructions
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import Buffer, Call, Scalar, run_calls, tools_available
from pitchfork.selection.lower import select_instructions
from pitchfork.targets import load_target
from pitchfork.targets.base import rule_combines_lanes, sig, target_ops

TARGET = "arm64"

_HAVE_TOOLS = tools_available(TARGET)


def needs_qemu(test):  # type: ignore[no-untyped-def]
    """Runs under qemu-aarch64 (marked `qemu`; skipped when the cross tools are missing)."""
    test = pytest.mark.qemu(test)
    return pytest.mark.skipif(not _HAVE_TOOLS, reason="qemu-aarch64 / aarch64 gcc not installed")(test)


# ---------------------------------------------------------------------------------------------
# Inputs: edge values, small values (shift amounts), values near multiples of 256 (register shifts
# read the low byte of an amount), and uniform random values.


def special_values(t: ScalarType) -> list[int]:
    vals = {t.min, t.max, 0, 1, 2, 3, t.min + 1, t.max - 1, t.max // 2, t.max // 2 + 1, t.min // 2}
    vals |= set(range(-70, 71))
    for k in range(t.bits):
        vals |= {1 << k, (1 << k) - 1, -(1 << k), (1 << k) + 1}
    for base in (256, -256, 512, 65536):
        vals |= {base + d for d in (-129, -128, -5, -1, 0, 1, 5, 127, 128)}
    return sorted(v for v in vals if t.contains(v))


def column(t: ScalarType, n: int, rng: np.random.Generator) -> np.ndarray:
    dt = storage_type(t).np_dtype
    if t.bits == 1:
        return rng.integers(0, 2, size=n, dtype=np.uint8)
    rand = rng.integers(t.min, t.max, size=n, endpoint=True, dtype=dt)
    sp = np.array(special_values(t), dtype=object).astype(dt)
    k = min(len(sp), n // 2)
    rand[:k] = rng.permutation(sp)[:k]
    return rng.permutation(rand)


def inputs(variables: Sequence[Term], n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One column per variable; the first block holds every pair of edge values of the first two."""
    cols = {v.name: column(v.type, n, rng) for v in variables}
    if len(variables) >= 2:
        a, b = variables[0], variables[1]
        ea = [e for e in special_values(a.type) if abs(e) > 70 or e in (0, 1, -1, 2)]
        eb = [e for e in special_values(b.type) if abs(e) > 70 or e in (0, 1, -1, 2)]
        pairs = list(itertools.product(ea, eb))[: n // 2]
        cols[a.name][: len(pairs)] = np.array([p[0] for p in pairs], dtype=object).astype(cols[a.name].dtype)
        cols[b.name][: len(pairs)] = np.array([p[1] for p in pairs], dtype=object).astype(cols[b.name].dtype)
    return cols


def free_vars(term: Term) -> list[Term]:
    return sorted({t for t in term.walk() if t.op == "var"}, key=lambda v: v.name)


# ---------------------------------------------------------------------------------------------
# One batch: many kernels in one module, one qemu run


@dataclass
class Kernel:
    name: str
    label: str
    emitted: Term  # what the kernel computes (lowered)
    reference: Term  # what it must equal (fpir.interp)
    lanes: int
    args: dict[str, np.ndarray]


@dataclass
class Batch:
    rng: np.random.Generator = field(default_factory=lambda: np.random.default_rng(2024))
    kernels: list[Kernel] = field(default_factory=list)
    elements: int = 1024

    def add(self, label: str, emitted: Term, reference: Term, lanes: int) -> Kernel:
        variables = free_vars(reference)
        n = lanes * -(-self.elements // lanes)
        k = Kernel(f"k{len(self.kernels)}", label, emitted, reference, lanes, inputs(variables, n, self.rng))
        self.kernels.append(k)
        return k

    def compile(self):  # type: ignore[no-untyped-def]
        module = new_module()
        for k in self.kernels:
            add_expression_kernel(module, k.name, k.emitted, k.lanes, free_vars(k.reference))
        return compile_module(str(module), TARGET, isolate=True)

    def run(self) -> tuple[object, list[str]]:
        """Compile and run every kernel; return the compiled module and the mismatch reports."""
        cm = self.compile()
        calls = []
        for k in self.kernels:
            n = len(next(iter(k.args.values()))) if k.args else k.lanes
            out = np.zeros(n, dtype=storage_type(k.reference.type).np_dtype)
            ins = [Buffer.input(k.args[v.name]) for v in free_vars(k.reference)]
            calls.append(Call(k.name, [Buffer.output(out), *ins, Scalar(n, 64)]))
        results = run_calls(cm, TARGET, calls)
        bad = []
        for k, res in zip(self.kernels, results):
            got = res[0]
            want = np.asarray(evaluate(k.reference, k.args)).astype(got.dtype)
            if want.shape != got.shape:
                want = np.broadcast_to(want, got.shape)
            # A flagged node (`widening_shl.inrange.nsw`) promises its fact: lanes where it fails are
            # not the term's inputs, and are not compared (enough must remain for a real check).
            ok = np.broadcast_to(facts_hold(k.reference, k.args), got.shape)
            if ok.mean() < 0.5:
                bad.append(f"{k.label}: the flags' facts hold on only {ok.mean():.0%} of the inputs")
            if not np.array_equal(got[ok], want[ok]):
                i = int(np.flatnonzero((got != want) & ok)[0])
                at = {name: int(col[i]) for name, col in k.args.items()}
                bad.append(
                    f"{k.label} [{k.lanes} lanes] ({to_text(k.emitted)}): at {at} got {got[i]}, "
                    f"want {want[i]}"
                )
        return cm, bad


def natural_lanes(term: Term) -> int:
    bits = [t.type.bits for t in term.walk() if t.type.bits > 1]
    return 128 // min(bits)


# ---------------------------------------------------------------------------------------------
# Instructions: declared meaning == hardware, at several lane counts

# Instructions whose second operand is an immediate: the legal range (lo, hi) given the signature.
IMMEDIATE = {
    "arm.shrn": lambda s: (1, s.result.bits),
    "arm.rshrn": lambda s: (1, s.result.bits),
    "arm.sqshrn": lambda s: (1, s.result.bits),
    "arm.uqshrn": lambda s: (1, s.result.bits),
    "arm.sqshrun": lambda s: (1, s.result.bits),
    "arm.sqrshrn": lambda s: (1, s.result.bits),
    "arm.uqrshrn": lambda s: (1, s.result.bits),
    "arm.sqrshrun": lambda s: (1, s.result.bits),
    "arm.sqshlu": lambda s: (0, s.args[0].bits - 1),
    "arm.ushll": lambda s: (0, s.args[0].bits),
    "arm.sshll": lambda s: (0, s.args[0].bits),
    "arm.ursra": lambda s: (1, s.result.bits),
    "arm.srsra": lambda s: (1, s.result.bits),
}
# The immediate's operand position when it is not the second one.
IMMEDIATE_OPERAND = {"arm.ursra": 2, "arm.srsra": 2}


def mnemonic(op: str, s, imm: int | None) -> str:  # type: ignore[no-untyped-def]
    """Regex of the mnemonic(s) the instruction must show in the assembly."""
    name = op.split(".", 1)[1]
    if op in ("arm.ushll", "arm.sshll") and imm == s.args[0].bits:
        return "shll"  # the shift by the full width has its own mnemonic
    if op == "arm.shrn" and imm == s.result.bits:
        return "shrn|uzp2"  # taking the high halves is one uzp2 for two registers
    if op == "arm.rshrn" and imm == s.result.bits:
        return "rshrn|raddhn"  # the same rounding high half, by a rounding add of zero
    return name


def immediates(lo: int, hi: int) -> list[int]:
    return sorted({lo, lo + 1, (lo + hi) // 2, hi - 1, hi})


def instruction_cases() -> list[tuple[str, Term, int | None, str]]:
    """(label, term, immediate) for every instruction and signature; immediates at their edges."""
    cases = []
    for spec_ in target_ops("arm"):
        if spec_.combines_lanes:
            continue  # udot/sdot: test_horizontal.py
        for text in spec_.meta["signatures"]:
            s = sig(text)
            names = ("a", "b", "c")
            args = [var(names[i], t) for i, t in enumerate(s.args)]
            if spec_.name in IMMEDIATE:
                lo, hi = IMMEDIATE[spec_.name](s)
                at = IMMEDIATE_OPERAND.get(spec_.name, 1)
                for c in immediates(lo, hi):
                    with_imm = [*args[:at], const(c, s.args[at])]
                    cases.append((f"{spec_.name}({text}) #{c}", make(spec_.name, *with_imm), c, text))
            cases.append((f"{spec_.name}({text})", make(spec_.name, *args), None, text))
    return cases


@needs_qemu
def test_instructions_match_their_semantics_on_qemu() -> None:
    batch = Batch(elements=768)
    checks = []
    for label, term, imm, text in instruction_cases():
        n = natural_lanes(term)
        for lanes in sorted({max(1, n // 2), n, 3 * n}):
            k = batch.add(label, term, term, lanes)
            if lanes == n and (imm is not None or term.op not in IMMEDIATE):
                checks.append((k, mnemonic(term.op, sig(text), imm), imm))
    cm, bad = batch.run()
    assert not bad, f"{len(bad)} of {len(batch.kernels)} kernels differ:\n" + "\n".join(bad[:40])
    missing = []
    for k, mn, imm in checks:
        asm = " ".join(asm_instructions(cm.asm, k.name, target=TARGET))  # type: ignore[attr-defined]
        if not re.search(rf"\b({mn})2?\s", asm):
            missing.append(f"{k.label}: no {mn} in {asm}")
    assert not missing, "\n".join(missing)


# ---------------------------------------------------------------------------------------------
# Rules: every rule verifies, fires on an example, and the example shows its instruction

# (expression, mnemonic regex expected in the pitchfork assembly). Together they fire every rule.
EXAMPLES = [
    ("widening_add(a_u8, b_u8)", "uaddl"),
    ("widening_add(a_i16, b_i16)", "saddl"),
    ("widening_sub(a_u8, b_u8)", "usubl"),
    ("widening_sub(a_i32, b_i32)", "ssubl"),
    ("extending_add(a_u16, b_u8)", "uaddw"),
    ("extending_add(a_i32, b_i16)", "saddw"),
    ("extending_sub(a_u32, b_u16)", "usubw"),
    ("extending_sub(a_i16, b_i8)", "ssubw"),
    ("widening_shl(a_u8, 3)", "ushll"),
    ("widening_shl(a_i16, 5)", "sshll"),
    ("widening_mul(a_u8, b_u8)", "umull"),
    ("widening_mul(a_i16, b_i16)", "smull"),
    ("widening_mul(a_u8, max(b_i8, 0))", "umull"),
    ("c_u16 + widening_mul(a_u8, b_u8)", "umlal"),
    ("c_i32 + widening_mul(a_i16, b_i16)", "smlal"),
    ("c_u16 - widening_mul(a_u8, b_u8)", "umlsl"),
    ("c_i16 - widening_mul(a_i8, b_i8)", "smlsl"),
    ("c_u32 + widening_shl(a_u16, 4)", "umlal"),
    ("c_i16 + widening_shl(a_i8, 2)", "smlal"),
    ("c_u32 - widening_shl(a_u16, 3)", "umlsl"),
    ("c_i32 - widening_shl(a_i16, 4)", "smlsl"),
    # accumulation chains: adds moved into the accumulator; two widen-right adds over the root
    ("d_u16 + (c_u16 + widening_mul(a_u8, b_u8))", "umlal"),
    ("d_i32 + (c_i32 + widening_mul(a_i16, b_i16))", "smlal"),
    ("extending_add(c_u16 + widening_mul(a_u8, b_u8), d_u8)", "umlal"),
    ("extending_add(c_i32 + widening_mul(a_i16, b_i16), d_i16)", "smlal"),
    ("extending_add(extending_add(reinterpret<i16>(widening_shl(a_u8, 2)), b_u8), c_u8)", "umlal"),
    ("extending_add(extending_add(reinterpret<u16>(widening_shl(a_i8, 2)), b_i8), c_i8)", "smlal"),
    # mixed-sign products widened again: smlal on both operands widened to signed
    ("extending_add(c_i32, widening_mul(a_u8, b_i8))", "smlal"),
    ("extending_add(c_i64, widening_mul(a_u16, b_i16))", "smlal"),
    ("widening_add(widening_mul(a_u8, b_i8), widening_mul(c_u8, d_i8))", "smlal"),
    ("extending_add(extending_add(reinterpret<i16>(widening_mul(a_u8, b_u8)), c_u8), d_u8)", "umlal"),
    ("extending_add(extending_add(reinterpret<u32>(widening_mul(a_i16, b_i16)), c_i16), d_i16)", "smlal"),
    # a shift of an accumulation chain moved to its root
    ("(d_u16 + widening_mul(a_u8, 3)) << 2", "umlal"),
    ("(d_i16 + widening_mul(a_i8, 3)) << 2", "smlal"),
    ("extending_add(extending_add(reinterpret<i16>(widening_shl(b_u8, 1)), c_u8), d_u8) << 1", "umlal"),
    ("extending_add(d_u16 * 3, a_u8) << 2", "umlal"),
    ("extending_add(d_i16 * 3, a_i8) << 2", "smlal"),
    ("widening_add(a_u8, b_u8) << 2", "umlal"),
    ("widening_add(a_i8, b_i8) << 2", "smlal"),
    # sums of shifted terms: two shifts by one constant merged, a shift moved up the sum
    ("(a_i16 << 2) + (b_i16 << 2)", "shl"),
    ("(c_u16 + (a_u16 << 3)) + (b_u16 << 3)", "shl"),
    ("(c_i32 + (a_i32 << 2)) + d_i32", "shl"),
    ("abs(a_i8)", "abs"),
    ("absd(a_u16, b_u16)", "uabd"),
    ("absd(a_i8, b_i8)", "sabd"),
    ("c_u8 + absd(a_u8, b_u8)", "uaba"),
    ("c_u16 + absd(a_i16, b_i16)", "saba"),
    ("u16(absd(a_u8, b_u8))", "uabdl"),
    ("i32(absd(a_i16, b_i16))", "sabdl"),
    ("saturating_add(a_u64, b_u64)", "uqadd"),
    ("saturating_add(a_i8, b_i8)", "sqadd"),
    ("saturating_sub(a_u16, b_u16)", "uqsub"),
    ("saturating_sub(a_i32, b_i32)", "sqsub"),
    ("halving_add(a_u8, b_u8)", "uhadd"),
    ("halving_add(a_i32, b_i32)", "shadd"),
    ("rounding_halving_add(a_u16, b_u16)", "urhadd"),
    ("rounding_halving_add(a_i8, b_i8)", "srhadd"),
    ("halving_sub(a_u32, b_u32)", "uhsub"),
    ("halving_sub(a_i16, b_i16)", "shsub"),
    ("saturating_cast<i8>(a_i16)", "sqxtn"),
    ("saturating_cast<i8>(a_i32)", "sqxtn"),
    ("saturating_cast<i8>(a_i64)", "sqxtn"),
    ("saturating_cast<u16>(a_u32)", "uqxtn"),
    ("saturating_cast<u8>(a_u32)", "uqxtn"),
    ("saturating_cast<u8>(a_u64)", "uqxtn"),
    ("saturating_cast<u16>(a_i32)", "sqxtun"),
    ("saturating_cast<u8>(a_i32)", "sqxtun"),
    ("saturating_cast<u8>(a_i64)", "sqxtun"),
    ("saturating_cast<i16>(a_u32)", "uqxtn"),
    ("saturating_cast<i8>(a_u32)", "uqxtn"),
    ("saturating_cast<i16>(a_u64)", "uqxtn"),
    ("saturating_cast<i8>(a_u64)", "uqxtn"),
    ("u8(a_u16 >> 3)", "shrn"),
    ("i16(a_i32 >> 7)", "shrn"),
    ("saturating_cast<i8>(a_i16 >> 3)", "sqshrn"),
    ("saturating_cast<u16>(a_u32 >> 5)", "uqshrn"),
    ("saturating_cast<u8>(a_i16 >> 2)", "sqshrun"),
    ("u8(rounding_shr(a_u16, 4))", "rshrn"),
    ("i16(rounding_shr(a_i32, 6))", "rshrn"),
    ("saturating_cast<u8>(rounding_shr(a_u16, 3))", "uqrshrn"),
    ("saturating_cast<i16>(rounding_shr(a_i32, 9))", "sqrshrn"),
    ("saturating_cast<u8>(a_i32 >> 4)", "sqshrn.*sqxtun"),
    ("a_u8 << b_i8", "ushl"),
    ("a_u16 << (b_u16 & 15)", "ushl"),
    ("a_i16 << i16(b_i8)", "sshl"),
    ("a_i32 << (b_u32 & 31)", "sshl"),
    ("a_u32 << b_i32", "ushl"),
    ("a_i16 << b_i16", "sshl"),
    ("a_u16 >> i16(b_i8 >> 1)", "ushl"),
    ("a_i32 >> i32(b_i8 >> 1)", "sshl"),
    ("saturating_cast<i16>(a_i64 >> 9)", "sqshrn.*sqxtn"),
    ("saturating_cast<u8>(a_u32 >> 3)", "uqshrn.*uqxtn"),
    ("saturating_cast<u8>(rounding_shr(a_i32, 4))", "sqrshrn.*sqxtun"),
    ("saturating_cast<i8>(rounding_shr(a_i32, 16))", "sqrshrn.*sqxtn"),
    ("saturating_cast<u16>(rounding_shr(a_u64, 32))", "uqrshrn.*uqxtn"),
    ("saturating_cast<u8>(rounding_shr(a_i16, 7))", "sqrshrun"),
    ("rounding_shl(a_u8, b_i8)", "urshl"),
    ("rounding_shl(a_u16, b_u16 & 15)", "urshl"),
    ("rounding_shl(a_i32, i32(b_i8))", "srshl"),
    ("rounding_shl(a_i16, b_u16 & 15)", "srshl"),
    ("rounding_shr(a_u16, i16(3))", "urshr"),
    ("rounding_shr(a_u8, b_i8)", "urshl"),
    ("rounding_shr(a_i16, 5)", "srshr"),
    ("rounding_shr(a_i32, u32(7))", "srshr"),
    ("saturating_shl(a_i8, b_i8)", "sqshl"),
    ("saturating_shl(a_i16, u16(3))", "sqshl"),
    ("saturating_shl(a_u8, b_i8)", "uqshl"),
    ("saturating_shl(a_u32, b_u32 & 31)", "uqshl"),
    ("saturating_cast<u8>(widening_shl(a_i8, 3))", "sqshlu"),
    ("mul_shr(a_i16, b_i16, 15)", "sqdmulh"),
    ("mul_shr(a_i8, b_i8, 0)", "sqxtn"),
    ("mul_shr(a_u16, b_u16, 0)", "uqxtn"),
    ("mul_shr(a_i16, b_i16, 7)", "sqshrn"),
    ("mul_shr(a_u8, b_u8, 3)", "uqshrn"),
    ("mul_shr(a_i8, b_i8, 9)", "smull"),
    ("mul_shr(a_u32, b_u32, 40)", "umull"),
    ("rounding_mul_shr(a_i32, b_i32, 31)", "sqrdmulh"),
    ("rounding_mul_shr(a_i16, b_i16, 0)", "sqxtn"),
    ("rounding_mul_shr(a_u8, b_u8, 0)", "uqxtn"),
    ("rounding_mul_shr(a_i8, b_i8, 5)", "sqrshrn"),
    ("rounding_mul_shr(a_u16, b_u16, 9)", "uqrshrn"),
    ("rounding_mul_shr(a_i16, b_i16, 20)", "srshr"),
    ("rounding_mul_shr(a_u8, b_u8, 12)", "urshr"),
    # widen-right forms from every spelling: either accumulator sign, a cast the lifter leaves alone
    ("extending_add(a_i16, b_u8)", "uaddw"),
    ("extending_add(a_u32, b_i16)", "saddw"),
    ("extending_sub(a_i64, b_u32)", "usubw"),
    ("extending_sub(a_u16, b_i8)", "ssubw"),
    ("c_i16 + i16(a_u8)", "uaddw"),
    ("u32(a_i16) + c_u32", "saddw"),
    ("c_i32 - i32(a_u16)", "usubw"),
    ("c_u64 - u64(a_i32)", "ssubw"),
    # negation
    ("0 - a_i16", "neg"),
    ("0 - a_u32", "neg"),
    ("saturating_sub(0, a_i8)", "sqneg"),
    ("i8(max(min(0 - i16(a_i8), 127), -128))", "sqneg"),
    # widening absolute difference and accumulate
    ("c_u16 + u16(absd(a_u8, b_u8))", "uabal"),
    ("c_u32 + u32(absd(a_i16, b_i16))", "sabal"),
    ("c_i32 + i32(absd(a_u16, b_u16))", "uabal"),
    ("c_i16 + i16(absd(a_i8, b_i8))", "sabal"),
    # register shifts by any amount (clamped to where the result stops changing)
    ("rounding_shr(a_u16, b_u16)", "urshl"),
    ("rounding_shr(a_u32, b_i32)", "urshl"),
    ("rounding_shr(a_i16, b_u16)", "srshl"),
    ("rounding_shr(a_i64, b_i64)", "srshl"),
    ("rounding_shl(a_u16, b_i16)", "urshl"),
    ("rounding_shl(a_i32, b_i32)", "srshl"),
    ("saturating_shl(a_u16, b_u16)", "uqshl"),
    ("saturating_shl(a_u32, b_i32)", "uqshl"),
    ("saturating_shl(a_i8, b_u8)", "sqshl"),
    ("saturating_shl(a_i64, b_i64)", "sqshl"),
    # rounding shift right and accumulate
    ("c_u16 + rounding_shr(a_u16, 3)", "ursra"),
    ("rounding_shr(a_u8, 8) + c_u8", "ursra"),
    ("c_i32 + rounding_shr(a_i32, 32)", "srsra"),
    ("c_i64 + rounding_shr(a_i64, 5)", "srsra"),
    # high half of a sum / difference, narrowed
    ("u8((a_u16 + b_u16) >> 8)", "addhn"),
    ("i16((a_i32 - b_i32) >> 16)", "subhn"),
    ("u8((a_u16 + b_u16 + 128) >> 8)", "raddhn"),
    ("i32((a_i64 - b_i64 + 2147483648) >> 32)", "rsubhn"),
    ("u8(widening_add(a_u16, b_u16) >> 8)", "addhn"),
    ("i16(widening_sub(a_i32, b_i32) >> 16)", "subhn"),
    ("u8((u32(a_u16) + u32(b_u16) + 128) >> 8)", "raddhn"),
    ("i16(rounding_shr(widening_add(a_i32, b_i32), 16))", "raddhn"),
    ("u8(rounding_shr(widening_sub(a_u16, b_u16), 8))", "rsubhn"),
    # the lifted rounding shift of a wrapping sum / difference (raddhn_rounding / rsubhn_rounding)
    ("u8(rounding_shr(a_u16 + b_u16, 8))", "raddhn"),
    ("i16(rounding_shr(a_i32 - b_i32, 16))", "rsubhn"),
    # Halide's facts on a shift it built (sqshl_in_range): amounts in range, no overflow of the i32 shift
    ("saturating_cast<i16>(widening_shl.inrange.nsw(a_i16, max(min(b_i16, 20), -20)))", "sqshl"),
    ("saturating_cast<i8>(widening_shl.inrange.nsw(a_i8, max(min(b_i8, 12), -12)))", "sqshl"),
    # Halide's shift rule (`inrange`): the register shift, no clamp or mask. b - (b >> k << k) is in
    # [0, 2^k) for every b (so the fact holds on every input) but bounds cannot place it (the u16/u32
    # subtraction may wrap as far as they know), so only the fact selects these forms
    ("shl.inrange(a_u16, b_i16 - (b_i16 >> 3 << 3))", "ushl"),
    ("shl.inrange(a_u32, b_u32 - (b_u32 >> 5 << 5))", "ushl"),
    ("shl.inrange(a_i32, b_i32 - (b_i32 >> 4 << 4))", "sshl"),
    ("shl.inrange(a_i16, b_u16 - (b_u16 >> 4 << 4))", "sshl"),
    ("shr.inrange(a_u16, b_i16 - (b_i16 >> 3 << 3))", "ushl"),
    ("shr.inrange(a_i64, b_i64 - (b_i64 >> 5 << 5))", "sshl"),
]


def arm_rules():  # type: ignore[no-untyped-def]
    return load_target(TARGET).rules


# One case per rule (hand-written and synthesized), so that pytest-xdist spreads the proofs over its
# workers instead of one test running them all.
@pytest.mark.slow
@pytest.mark.parametrize("rule", list(arm_rules().rules), ids=lambda r: r.name)
def test_every_rule_verifies(rule) -> None:  # type: ignore[no-untyped-def]
    from synth.verify import verify_rule

    result = verify_rule(rule, rlimit=1_500_000_000)
    assert result.status == "VALID", f"{rule.name}: {result.summary()}"


def select(expression: str | Term, isel: str = "pitchfork"):  # type: ignore[no-untyped-def]
    term = parse(expression) if isinstance(expression, str) else expression
    return select_instructions(term, TARGET, isel)


def test_examples_fire_every_rule() -> None:
    fired: Counter = Counter()
    for expression, _ in EXAMPLES:
        fired.update(select(expression).lower_stats.fired)
    # hand-written rules only: synthesized ones (rules/synthesized/) have their examples in the corpus
    hand = load_target(TARGET, include_synthesized=False).rules.rules
    # rules for a uniform operand (`is_uniform`: FPIR text cannot state it) fire in test_arm_mixed_sign.py
    unused = [r.name for r in hand
              if r.name not in fired and not rule_combines_lanes(r) and "is_uniform" not in (r.predicate or "")]
    assert not unused, f"rules no example fires: {unused}"


@needs_qemu
def test_examples_run_and_show_their_instructions() -> None:
    batch = Batch()
    checks = []
    for expression, mn in EXAMPLES:
        term = parse(expression)
        lanes = natural_lanes(term)
        for isel in ("pitchfork", "llvm"):
            k = batch.add(f"{isel}: {expression}", select(term, isel).final, term, lanes)
            if isel == "pitchfork":
                checks.append((k, mn))
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    missing = []
    for k, mn in checks:
        asm = " ".join(asm_instructions(cm.asm, k.name, target=TARGET))  # type: ignore[attr-defined]
        if not re.search(rf"\b({mn})2?\s", asm):
            missing.append(f"{k.label} ({to_text(k.emitted)}): no {mn} in {asm}")
    assert not missing, "\n".join(missing)


# ---------------------------------------------------------------------------------------------
# Every FPIR op, at every type instance, lowers on arm64 (natively or through the generic
# expansion) and runs bit-exactly, with isel=pitchfork and isel=llvm

SHIFT_LIKE = {
    "widening_shl": 1,
    "widening_shr": 1,
    "rounding_shl": 1,
    "rounding_shr": 1,
    "saturating_shl": 1,
    "mul_shr": 2,
    "rounding_mul_shr": 2,
}


def op_instances(op: str) -> list[Term]:
    """`op` applied to variables at every type instance its type rule accepts (saturating_cast: every
    pair of distinct integer types)."""
    s = OPS[op]
    out = []
    explicit: Sequence[ScalarType | None] = INT_TYPES if s.explicit_type else [None]
    for rt in explicit:
        for ts in itertools.product(INT_TYPES, repeat=s.arity):
            try:
                t = make(op, *[var("abc"[i], ty) for i, ty in enumerate(ts)], type=rt)
            except FPIRTypeError:
                continue
            if t.op == op:  # saturating_cast to the operand's own type is the operand itself
                out.append(t)
    return out


def constant_amounts(t: Term) -> list[Term]:
    """Variants of a shift-like instance whose amount is a constant (where instructions need one)."""
    i = SHIFT_LIKE.get(t.op)
    if i is None:
        return []
    at, bits = t.args[i].type, t.args[0].type.bits
    amounts = (
        {1, bits // 2, bits - 1, bits, bits + 1, 2 * bits - 1, 0}
        if t.op.endswith("mul_shr")
        else {1, 3, bits - 1, bits, -1, -3}
    )
    out = []
    for c in sorted(a for a in amounts if at.contains(a)):
        args = list(t.args)
        args[i] = const(c, at)
        out.append(make(t.op, *args))
    return out


def storable(t: Term) -> list[Term]:
    """Results wider than 64 bits (widening ops on 64-bit lanes) are checked through both halves."""
    if t.type.bits <= 64:
        return [t]
    half = ScalarType(t.type.signed, 64)
    return [make("cast", t, type=half), make("cast", make("shr", t, const(64, t.type)), type=half)]


def all_op_terms() -> list[Term]:
    terms = []
    for op in FPIR_OPS:
        for t in op_instances(op):
            for u in [t, *constant_amounts(t)]:
                terms.extend(storable(u))
    return terms


@needs_qemu
@pytest.mark.slow
def test_every_fpir_op_lowers_and_runs() -> None:
    batch = Batch(elements=512)
    ops_seen = set()
    for term in all_op_terms():
        ops_seen |= {u.op for u in term.walk() if u.op in FPIR_OPS}
        lanes = natural_lanes(term)
        for isel in ("pitchfork", "llvm"):
            final = select(term, isel).final
            assert not any(u.op in FPIR_OPS for u in final.walk()), to_text(final)
            batch.add(f"{isel}: {to_text(term)}", final, term, lanes)
    assert ops_seen == set(FPIR_OPS)
    _, bad = batch.run()
    assert not bad, f"{len(bad)} of {len(batch.kernels)} kernels differ:\n" + "\n".join(bad[:40])


# ---------------------------------------------------------------------------------------------
# The paper's Figure 3 rows and the Sobel filter (Figure 2b)

SOBEL = (
    "u8(min(absd(u16(a_u8) + u16(b_u8) * 2 + u16(c_u8), u16(d_u8) + u16(e_u8) * 2 + u16(f_u8)) + "
    "absd(u16(g_u8) + u16(h_u8) * 2 + u16(i_u8), u16(j_u8) + u16(k_u8) * 2 + u16(l_u8)), 255))"
)
FIGURE_3 = [
    ("u16(a_u8) + u16(b_u8) * 2 + u16(c_u8)", ["uaddl", "uaddl2", "umlal", "umlal2"]),  # (a)
    ("absd(x_u16, y_u16)", ["uabd"]),  # (b)
    ("u8(min(z_u16, 255))", ["uqxtn", "uqxtn2"]),  # (c)
]


def mnemonics(asm: str, function: str) -> list[str]:
    return [line.split()[0] for line in inner_loop_instructions(asm, function, target=TARGET)]


@needs_qemu
def test_figure_3_and_sobel() -> None:
    batch = Batch(elements=4096)
    kernels = {}
    for expression in [*(e for e, _ in FIGURE_3), SOBEL]:
        term = parse(expression)
        for isel in ("pitchfork", "llvm"):
            kernels[expression, isel] = batch.add(f"{isel}: {expression}", select(term, isel).final, term, 16)
    cm, bad = batch.run()
    assert not bad, "\n".join(bad)
    asm = cm.asm  # type: ignore[attr-defined]
    for expression, want in FIGURE_3:
        got = mnemonics(asm, kernels[expression, "pitchfork"].name)
        assert all(m in got for m in want), f"{expression}: {got}"
        assert not any(m.startswith("llvm.") for m in got)
    # (a): LLVM alone turns the multiplication into a shift and misses umlal (paper section 2.2).
    assert "umlal" not in mnemonics(asm, kernels[FIGURE_3[0][0], "llvm"].name)
    pf = mnemonics(asm, kernels[SOBEL, "pitchfork"].name)
    llvm = mnemonics(asm, kernels[SOBEL, "llvm"].name)
    assert {"uaddl", "umlal", "uabd", "uqxtn"} <= set(pf), pf
    assert len(pf) < len(llvm), (pf, llvm)
    print(f"\nSobel inner loop: pitchfork {len(pf)} instructions, llvm {len(llvm)}")
