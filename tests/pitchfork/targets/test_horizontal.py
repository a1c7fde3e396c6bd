"""Lane-combining instructions and reductions, run on every ISA (x86 JIT, qemu-aarch64, qemu-hexagon).

* each lane-combining instruction (arm.udot/sdot, x86.pmaddwd_pairs/pmaddubsw_pairs, hvx.vrmpy), at every
  signature and at several lane counts, runs bit-exactly against its declared semantics (fpir.interp) and
  shows its mnemonic;
* every lowering rule that names a lane-combining op is VALID (Z3, per lane group, every type instance),
  fires on an example, and the example runs bit-exactly with isel=pitchfork (showing the instruction) and
  isel=llvm;
* the generic lowering of vector_reduce_{add,min,max,saturating_add} by several factors runs bit-exactly
  on every ISA.

Kernels read each operand at its own lane count (pitchfork.codegen.kernel.input_factors): a factor-4 operand
holds four elements per output element. One compile and one run per ISA.
"""

from __future__ import annotations

import re
from collections import Counter

import numpy as np
import pytest

import pitchfork.targets.arm  # noqa: F401 - registers the instructions
import pitchfork.targets.hvx  # noqa: F401
import pitchfork.targets.x86  # noqa: F401
from fpir.interp import evaluate
from fpir.ops import make
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.text import parse
from fpir.types import ScalarType
from pitchfork.codegen.kernel import add_expression_kernel, input_factors, new_module, storage_type
from pitchfork.backend.asm import asm_instructions
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import Buffer, Call, Scalar, run_calls, tools_available
from pitchfork.selection.lower import select_instructions
from pitchfork.targets import load_target
from pitchfork.targets.base import encodable, rule_combines_lanes, sig, target_ops

REG_BITS = {"x86-avx2": 256, "arm64": 128, "hvx128": 1024}
PREFIX = {"x86-avx2": "x86", "arm64": "arm", "hvx128": "hvx"}
MNEMONIC = {"arm.udot": "udot", "arm.sdot": "sdot", "x86.pmaddwd_pairs": "vpmaddwd",
            "x86.pmaddubsw_pairs": "vpmaddubsw", "hvx.vrmpy": "vrmpy", "x86.psadbw": "vpsadbw", "arm.uaddlp": "uaddlp",
            "arm.saddlp": "saddlp", "arm.uadalp": "uadalp", "arm.sadalp": "sadalp", "arm.addp": "addp",
            "hvx.vdmpy_pairs": "vdmpy", "hvx.vdmpy_pairs_acc": "vdmpy", "hvx.vdmpyhvsat": "vdmpy",
            "arm.umaxp": "umaxp", "arm.smaxp": "smaxp", "arm.uminp": "uminp", "arm.sminp": "sminp"}

# (expression, mnemonic regex in the isel=pitchfork code); together they fire every lane-combining rule.
EXAMPLES: dict[str, list[tuple[str, str]]] = {
    "arm64": [
        ("c_u32 + vector_reduce_add_x4(u32(widening_mul(a_u8, b_u8)))", "udot"),
        ("c_i32 + vector_reduce_add_x4(i32(u16(a_u8) * u16(b_u8)))", "udot"),
        ("c_i32 + vector_reduce_add_x4(i32(widening_mul(a_i8, b_i8)))", "sdot"),
        ("vector_reduce_add_x4(u32(widening_mul(a_u8, b_u8)))", "udot"),
        ("vector_reduce_add_x4(i32(widening_mul(a_u8, b_u8)))", "udot"),
        ("vector_reduce_add_x4(i32(i16(a_i8) * i16(b_i8)))", "sdot"),
        ("c_u32 + vector_reduce_add_x4(u32(a_u8))", "udot"),
        ("c_i32 + vector_reduce_add_x4(i32(a_u8))", "udot"),
        ("vector_reduce_add_x4(u32(a_u8))", "udot"),
        ("vector_reduce_add_x4(i32(a_u8))", "udot"),
        ("c_u32 + arm.udot(0, a_u8, b_u8)", "udot"),
        ("c_i32 + arm.sdot(0, a_i8, b_i8)", "sdot"),
        ("vector_reduce_add_x2(u16(a_u8))", "uaddlp"),
        ("vector_reduce_add_x2(i64(a_i32))", "saddlp"),
        ("c_u32 + vector_reduce_add_x2(u32(a_u16))", "uadalp"),
        ("c_i16 + vector_reduce_add_x2(i16(a_i8))", "sadalp"),
        ("vector_reduce_add_x2(a_i32)", "addp"),
        ("vector_reduce_add_x2(a_u8)", "addp"),
        # issue 27 (Halide's simd_op_check_arm): signed sums of unsigned lanes, sums of 4 lanes, longer dot
        # products, pairwise max/min
        ("vector_reduce_add_x2(i16(a_u8))", "uaddlp"),
        ("c_i32 + vector_reduce_add_x2(i32(a_u16))", "uadalp"),
        ("c_u8 + vector_reduce_add_x4(a_u8)", "addp"),
        ("vector_reduce_add_x4(u16(a_u8))", "uaddlp"),
        ("c_i32 + vector_reduce_add_x4(i32(a_u16))", "uaddlp"),
        ("vector_reduce_add_x4(i32(a_i16))", "saddlp"),
        ("c_u64 + vector_reduce_add_x4(u64(a_u16))", "uadalp"),
        ("vector_reduce_add_x4(i64(a_i16))", "saddlp"),
        ("c_i32 + vector_reduce_add_x4(i32(a_i8))", "sdot"),
        ("vector_reduce_add_x8(u32(widening_mul(a_u8, b_u8)))", "udot"),
        ("c_i32 + vector_reduce_add_x16(i32(u16(a_u8) * u16(b_u8)))", "udot"),
        ("vector_reduce_add_x8(i32(widening_mul(a_i8, b_i8)))", "sdot"),
        ("vector_reduce_add_x16(i32(widening_mul(a_i8, b_i8)))", "sdot"),
        ("vector_reduce_max_x2(a_u8)", "umaxp"),
        ("vector_reduce_max_x2(a_i16)", "smaxp"),
        ("vector_reduce_min_x2(a_u32)", "uminp"),
        ("vector_reduce_min_x2(a_i8)", "sminp"),
        ("vector_reduce_max_x4(a_u32)", "umaxp"),
        ("vector_reduce_max_x4(a_i8)", "smaxp"),
        ("vector_reduce_min_x4(a_u16)", "uminp"),
        ("vector_reduce_min_x4(a_i32)", "sminp"),
    ],
    "x86-avx2": [
        ("vector_reduce_add_x2(widening_mul(a_i16, b_i16))", "vpmaddwd"),
        ("c_i32 + vector_reduce_add_x2(i32(a_i16) * i32(b_i16))", "vpmaddwd"),
        ("vector_reduce_saturating_add_x2(widening_mul(a_u8, b_i8))", "vpmaddubsw"),
        ("vector_reduce_saturating_add_x2(widening_mul(b_i8, a_u8))", "vpmaddubsw"),
        ("vector_reduce_add_x8(u64(absd(a_u8, b_u8)))", "vpsadbw"),
        ("c_u64 + vector_reduce_add_x8(u64(absd(a_u8, b_u8)))", "vpsadbw"),
        ("c_u32 + vector_reduce_add_x2(u32(widening_mul(a_u8, b_u8)))", "vpmaddwd"),  # matmul's taps
        ("vector_reduce_add_x2(i32(widening_mul(a_i8, b_i8)))", "vpmaddwd"),
        ("c_i32 + vector_reduce_add_x2(i32(widening_mul(a_u8, b_i8)))", "vpmaddwd"),
        # longer sums of adjacent products: vpmaddwd, then the ordinary reduction (l2norm's x32)
        ("vector_reduce_add_x4(widening_mul(a_i16, b_i16))", "vpmaddwd"),
        ("c_i32 + vector_reduce_add_x8(i32(a_i16) * i32(b_i16))", "vpmaddwd"),
        ("vector_reduce_add_x16(widening_mul(a_i16, a_i16))", "vpmaddwd"),
        ("vector_reduce_add_x32(widening_mul(a_i16, b_i16))", "vpmaddwd"),
        ("vector_reduce_add_x64(widening_mul(a_i16, b_i16))", "vpmaddwd"),
        # issue 27 (Halide's simd_op_check_x86): psadbw sums in any type of 16 bits or more, widening pair
        # sums by 1, u8 x u8 dot products over 4, 8, 16 bytes
        ("vector_reduce_add_x8(u16(absd(a_u8, b_u8)))", "vpsadbw"),
        ("c_i32 + vector_reduce_add_x8(i32(absd(a_u8, b_u8)))", "vpsadbw"),
        ("vector_reduce_add_x2(u16(a_u8))", "vpmaddubsw"),
        ("vector_reduce_add_x2(i16(a_u8))", "vpmaddubsw"),
        ("vector_reduce_add_x2(i16(a_i8))", "vpmaddubsw"),
        ("vector_reduce_add_x2(i32(a_i16))", "vpmaddwd"),
        ("vector_reduce_add_x4(u32(widening_mul(a_u8, b_u8)))", "vpmaddwd"),
        ("c_i32 + vector_reduce_add_x8(i32(widening_mul(a_u8, b_u8)))", "vpmaddwd"),
        ("c_u32 + vector_reduce_add_x16(u32(u16(a_u8) * u16(b_u8)))", "vpmaddwd"),
    ],
    "hvx128": [
        ("c_u32 + vector_reduce_add_x4(u32(widening_mul(a_u8, b_u8)))", "vrmpy"),
        ("c_i32 + vector_reduce_add_x4(i32(u16(a_u8) * u16(b_u8)))", "vrmpy"),
        ("c_i32 + vector_reduce_add_x4(i32(widening_mul(a_i8, b_i8)))", "vrmpy"),
        ("c_i32 + vector_reduce_add_x4(i32(widening_mul(a_u8, b_i8)))", "vrmpy"),
        ("vector_reduce_add_x4(i32(widening_mul(a_u8, b_u8)))", "vrmpy"),
        ("vector_reduce_add_x4(i32(widening_mul(a_i8, b_i8)))", "vrmpy"),
        ("c_u32 + vector_reduce_add_x4(u32(a_u8))", "vrmpy"),
        ("vector_reduce_add_x4(i32(a_u8))", "vrmpy"),
        ("c_i32 + hvx.vrmpy(0, a_u8, b_i8)", "vrmpy"),
        # pair sums by a constant tap (vdmpy), accumulated or not
        ("vector_reduce_add_x2(i16(a_u8) * -3)", "vdmpy"),
        ("vector_reduce_add_x2(u16(a_u8) * 5)", "vdmpy"),
        ("vector_reduce_add_x2(i32(a_i16) * 100)", "vdmpy"),
        ("vector_reduce_add_x2(u16(a_u8))", "vdmpy"),
        ("vector_reduce_add_x2(u32(a_i16))", "vdmpy"),
        ("c_i16 + vector_reduce_add_x2(widening_mul(a_u8, i8(-3)))", "vdmpy"),
        ("c_u16 + vector_reduce_add_x2(u16(a_u8))", "vdmpy"),
        ("c_i32 + vector_reduce_add_x2(i32(a_i16))", "vdmpy"),
        # pair sums of two vectors' 16-bit products (vdmpy(Vu.h, Vv.h):sat)
        ("vector_reduce_saturating_add_x2(widening_mul(a_i16, b_i16))", r"vdmpy\(v\d+\.h,v\d+\.h\):sat"),
        ("vector_reduce_add_x2(widening_mul(max(a_i16, -32767), b_i16))", r"vdmpy\(v\d+\.h,v\d+\.h\):sat"),
        # issue 27: u8 x u8 dot products over 8 and 16 bytes (vrmpy, then the ordinary reduction)
        ("vector_reduce_add_x8(u32(widening_mul(a_u8, b_u8)))", "vrmpy"),
        ("c_i32 + vector_reduce_add_x16(i32(u16(a_u8) * u16(b_u8)))", "vrmpy"),
    ],
}
# Generic lowering (no instruction expected): every reduction kind, odd factors, narrow and wide types.
GENERIC = ["vector_reduce_add_x2(a_u8)", "vector_reduce_add_x3(a_i16)", "vector_reduce_max_x4(a_i8)",
           "vector_reduce_min_x2(a_u32)", "vector_reduce_saturating_add_x2(a_i8)",
           "vector_reduce_saturating_add_x4(a_u16)", "vector_reduce_add_x8(u16(a_u8))",
           "vector_reduce_max_x2(vector_reduce_add_x2(a_i16))"]


def _column(t: ScalarType, n: int, rng: np.random.Generator) -> np.ndarray:
    dt = storage_type(t).np_dtype
    col = rng.integers(t.min, t.max, size=n, endpoint=True, dtype=dt)
    q = n // 4  # a block of extremes: every lane t.min, then every lane t.max (saturation, pmaddwd wrap)
    col[:q // 2] = t.min
    col[q // 2:q] = t.max
    return col


class _Batch:
    def __init__(self, isa: str) -> None:
        self.isa = isa
        self.rng = np.random.default_rng(12)
        self.kernels: list[tuple[str, str, Term, Term, int, dict[str, np.ndarray]]] = []

    def add(self, label: str, emitted: Term, reference: Term, lanes: int, rows: int = 48) -> str:
        name = f"k{len(self.kernels)}"
        n = lanes * rows
        factors = input_factors(reference)
        args = {v.name: _column(v.type, n * factors[v.name], self.rng)
                for v in sorted(set(reference.variables()), key=lambda v: v.name)}
        self.kernels.append((name, label, emitted, reference, lanes, args))
        return name

    def run(self) -> tuple[str, list[str]]:
        module = new_module()
        for name, _, emitted, reference, lanes, args in self.kernels:
            order = [v for v in sorted(set(reference.variables()), key=lambda v: v.name)]
            add_expression_kernel(module, name, emitted, lanes, order)
        cm = compile_module(str(module), self.isa, isolate=True)
        calls = []
        for name, _, _, reference, lanes, args in self.kernels:
            n = len(next(iter(args.values()))) // input_factors(reference)[sorted(args)[0]]
            out = np.zeros(n, dtype=storage_type(reference.type).np_dtype)
            calls.append(Call(name, [Buffer.output(out), *[Buffer.input(args[k]) for k in sorted(args)],
                                     Scalar(n, 64)]))
        results = run_calls(cm, self.isa, calls)
        bad = []
        for (name, label, emitted, reference, lanes, args), res in zip(self.kernels, results):
            got = res[0]
            want = np.asarray(evaluate(reference, args)).astype(got.dtype)
            if not np.array_equal(got, want):
                i = int(np.flatnonzero(got != want)[0])
                bad.append(f"{label} [{lanes} lanes] ({to_text(emitted)}): output {i}: got {got[i]}, want {want[i]}")
        return cm.asm, bad  # type: ignore[attr-defined]


def _with_immediates(term: Term) -> Term:
    """`term` with trailing operands made constants (-3 or 3) until the instruction can encode it."""
    args = list(term.args)
    for k in reversed(range(len(args))):
        if encodable(make(term.op, *args)):
            break
        args[k] = const(-3 if args[k].type.signed else 3, args[k].type)
    return make(term.op, *args)


def _isa(isa: str):  # type: ignore[no-untyped-def]
    if isa == "x86-avx2":
        return pytest.param(isa, id=isa)
    return pytest.param(isa, id=isa, marks=[pytest.mark.qemu,
                                            pytest.mark.skipif(not tools_available(isa), reason="no qemu")])


def _horizontal_rules(isa: str) -> list:  # type: ignore[type-arg]
    return [r for r in load_target(isa).rules.rules if rule_combines_lanes(r)]


@pytest.mark.parametrize("isa", ["x86-avx2", "arm64", "hvx128"])
def test_horizontal_rules_verify_and_fire(isa: str) -> None:
    from synth.verify import verify_rule

    rules = _horizontal_rules(isa)
    assert rules, f"no lane-combining rules for {isa}"
    bad = [f"{r.name}: {v.summary()}" for r in rules if (v := verify_rule(r)).status != "VALID"]
    assert not bad, "\n".join(bad)
    fired: Counter = Counter()
    for text, _ in EXAMPLES[isa]:
        fired.update(select_instructions(parse(text), isa, "pitchfork").lower_stats.fired)
    unused = [r.name for r in rules if r.name not in fired]
    assert not unused, f"rules no example fires: {unused}"


@pytest.mark.parametrize("isa", [_isa(i) for i in ("x86-avx2", "arm64", "hvx128")])
def test_horizontal_instructions_and_rules_run_bit_exactly(isa: str) -> None:
    batch = _Batch(isa)
    checks: list[tuple[str, str, str]] = []
    for s in target_ops(PREFIX[isa]):
        if not s.combines_lanes:
            continue
        for text in s.meta["signatures"]:
            sg = sig(text)
            term = make(s.name, *[var(n, t) for n, t in zip("abc", sg.args)])
            native = REG_BITS[isa] // sg.result.bits
            if not encodable(term):  # an immediate operand (vdmpy's tap): run the fallback, then a constant
                batch.add(f"{s.name}({text}) fallback", term, term, native)
                term = _with_immediates(term)
            for lanes in (native, 3 * native, max(1, native // 2)):
                k = batch.add(f"{s.name}({text})", term, term, lanes)
                if lanes == native:
                    checks.append((k, MNEMONIC[s.name], f"{s.name}({text})"))
    for text, mn in EXAMPLES[isa]:
        term = parse(text)
        native = REG_BITS[isa] // term.type.bits
        for isel in ("pitchfork", "llvm"):
            final = select_instructions(term, isa, isel).final
            k = batch.add(f"{isel}: {text}", final, term, native)
            if isel == "pitchfork":
                checks.append((k, mn, text))
    for text in GENERIC:
        term = parse(text)
        for isel in ("pitchfork", "llvm"):
            final = select_instructions(term, isa, isel).final
            for lanes in (REG_BITS[isa] // term.type.bits, 5):
                batch.add(f"{isel}: {text}", final, term, lanes)
    asm, bad = batch.run()
    assert not bad, "\n".join(bad[:30])
    missing = []
    for k, mn, label in checks:
        ins = " ".join(asm_instructions(asm, k, target=isa))
        if not re.search(rf"\b{mn}\b", ins):
            missing.append(f"{label}: no {mn} in {ins[:400]}")
    assert not missing, "\n".join(missing)


def test_vdmpyhvsat_is_not_the_wrapping_pair_sum() -> None:
    """vdmpy(Vu.h, Vv.h):sat saturates the one pair sum that wraps, 2 * (-32768)^2: the rule for the
    wrapping reduction needs an operand clamped above -32768 (vdmpyhvsat_clamped)."""
    from pitchfork.trs.rules import parse_rule
    from synth.verify import verify_rule

    load_target("hvx128")
    rule = parse_rule("wrapping: vector_reduce_add_x2(widening_mul(x_i16, y_i16)) -> hvx.vdmpyhvsat(x_i16, y_i16)",
                      "<test>", 1)
    result = verify_rule(rule)
    assert result.status == "INVALID" and "-32768" in result.summary(), result.summary()


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu")
def test_vdmpyhvsat_saturates_under_qemu() -> None:
    """The saturating pair sum, run: 2 * (-32768)^2 gives 2^31 - 1 under qemu-hexagon, as the semantics say."""
    import numpy as np

    from fpir.interp import evaluate
    from fpir.types import parse_type
    from pitchfork.backend.harness import Buffer, Call, Scalar
    from pitchfork.codegen.kernel import add_expression_kernel, new_module
    from pitchfork.backend.machine import compile_module
    from pitchfork.backend.run import run_calls

    load_target("hvx128")
    a, b = var("a", parse_type("i16")), var("b", parse_type("i16"))
    term = make("hvx.vdmpyhvsat", a, b)
    module = new_module()
    add_expression_kernel(module, "k", term, 32, [a, b])
    cm = compile_module(str(module), "hvx128")
    n = 64
    x, y = np.full(2 * n, -32768, np.int16), np.full(2 * n, -32768, np.int16)
    x[1::4], y[3::8] = 32767, 5
    out = run_calls(cm, "hvx128", [Call("k", (Buffer.output(np.zeros(n, np.int32)), Buffer.input(x), Buffer.input(y),
                                              Scalar(n, 64)))])[0][0]
    want = np.asarray(evaluate(term, {"a": x.reshape(-1, 2), "b": y.reshape(-1, 2)})).reshape(-1)
    assert np.array_equal(out, want) and (out == 2**31 - 1).sum() == n // 4, (out[:8], want[:8])
    assert "vdmpy(" in cm.asm
