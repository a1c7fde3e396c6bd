"""x86 shifts by one count for every lane (vpsllw / vpsrlw / vpsraw, vpslld / vpsrld / vpsrad, vpsllq /
vpsrlq with the count in an xmm register; bytes as the 16-bit shift and a mask).

The instructions read their amount at lane 0 only (`OpSpec.lane0_args`); rules select them when the
amount is uniform (`is_uniform`: a broadcast the Halide frontend states, `var(uniform=True)`).
Checked here:
* each instruction runs bit-exactly against its declared semantics, with an amount that differs per
  lane (so reading lane 0 is what is tested) and counts past the width (0 / sign fill);
* the rules verify with `is_uniform` and are INVALID without it (negative tests), and a lane-0
  instruction is not equivalent to the lane-wise shift by a non-uniform amount;
* each rule fires on a term with a uniform leaf and the selected code runs bit-exactly for amounts in
  and out of range;
* a Halide pipeline shifting by a scalar Param gets vpsraw/vpsllw/vpsrlw and no vpsravd; at 8 and 32
  bits the byte forms and vpsrad/vpslld, fewer loop instructions than LLVM alone at 8 bits.
"""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest

import pitchfork
from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import Term, var
from fpir.types import parse_type
from fpir.z3enc import equivalent
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.asm import inner_loop_instructions, main_vector_loop
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import run_calls
from pitchfork.targets import load_target
from pitchfork.targets.base import PARAMS, sig, target_ops
from pitchfork.trs.rules import parse_rule
from synth.verify import verify_rule
from tests.pitchfork.targets.test_x86 import TARGET, pytestmark, select  # noqa: F401  (AVX2 host skip)

# (instruction, lane bits) -> the mnemonic its loop must contain (bytes use the 16-bit shift)
_STEM = {"x86.psll_uniform": "vpsll", "x86.psrl_uniform": "vpsrl", "x86.psra_uniform": "vpsra",
         "x86.psll_uniform_signed": "vpsll", "x86.psll_uniform_bytes": "vpsll", "x86.psrl_uniform_bytes": "vpsrl",
         "x86.psra_uniform_bytes": "vpsrl", "x86.psll_uniform_signed_bytes": "vpsll"}


def mnemonic(op: str, bits: int) -> str:
    return _STEM[op] + {8: "w", 16: "w", 32: "d", 64: "q"}[bits]


UNIFORM_RULES = ("psll_uniform", "psrl_uniform", "psra_uniform", "psll_uniform_signed", "psll_uniform_bytes",
                 "psrl_uniform_bytes", "psra_uniform_bytes", "psll_uniform_signed_bytes", "rounding_shr_psrl_uniform",
                 "rounding_shr_psra_uniform")
# counts in and out of range: the width and more give 0 or the sign fill; a negative signed count shifts right
COUNTS = {"u8": [0, 1, 3, 7, 8, 9, 15, 16, 17, 128, 255],
          "i8": [0, 1, 3, 7, 8, 9, 16, 127, -1, -3, -7, -8, -9, -16, -128],
          "u16": [0, 1, 5, 15, 16, 17, 255, 256, 32768, 65535],
          "i16": [0, 1, 5, 15, 16, 17, 32767, -1, -5, -15, -16, -17, -32768],
          "u32": [0, 1, 5, 31, 32, 33, 64, 65, 2**31, 2**32 - 1],
          "i32": [0, 1, 5, 31, 32, 33, 64, 2**31 - 1, -1, -5, -31, -32, -33, -64, -2**31],
          "u64": [0, 1, 5, 63, 64, 65, 128, 2**63, 2**64 - 1]}


def _values(t: str, n: int, rng: np.random.Generator) -> np.ndarray:
    st = parse_type(t)
    edge = [st.min, st.min + 1, -1 if st.signed else 1, 0, 1, st.max]
    dt = storage_type(st).np_dtype
    v = rng.integers(st.min, st.max, endpoint=True, size=n, dtype=np.uint64 if st.min == 0 else np.int64)
    v[:len(edge)] = edge
    return v.astype(dt)


def _run(kernels: list[tuple[str, Term, int, list[Term], dict[str, np.ndarray], np.ndarray]]) -> tuple[list[str], object]:
    module = new_module()
    for name, term, lanes, vs, _inputs, _exp in kernels:
        add_expression_kernel(module, name, term, lanes, vs)
    cm = compile_module(str(module), TARGET)
    calls = [Call(name, (Buffer.output(np.zeros(len(exp), exp.dtype)), *[Buffer.input(inputs[v.name]) for v in vs],
                         Scalar(len(exp), 64))) for name, _t, _l, vs, inputs, exp in kernels]
    bad = []
    for (name, term, lanes, vs, inputs, exp), out in zip(kernels, run_calls(cm, TARGET, calls)):
        if not np.array_equal(out[0], exp):
            i = int(np.flatnonzero(out[0] != exp)[0])
            bad.append(f"{name} {term} [lanes {lanes}] element {i}: "
                       f"{ {v.name: inputs[v.name][i] for v in vs} } gives {out[0][i]}, expected {exp[i]}")
    return bad, cm


def _forms() -> list[tuple[str, str]]:
    return [(s.name, text) for s in target_ops("x86") if s.reads_lane0 for text in s.meta["signatures"]]


def test_uniform_shift_instructions_read_lane_0() -> None:
    """Amounts differ in every lane: the result must be each lane's x shifted by lane 0's amount of
    its vector (the declared semantics, evaluated per vector by the interpreter)."""
    assert {n for n, _ in _forms()} == set(_STEM)
    rng = np.random.default_rng(11)
    kernels = []
    for name, text in _forms():
        sg = sig(text)
        vs = [var(PARAMS[i], t) for i, t in enumerate(sg.args)]
        term = make(name, *vs)
        for lanes in ((16, 48) if sg.result.bits > 8 else (32, 96)) if sg.result.bits < 64 else (4, 12):
            n = lanes * 40
            x = _values(sg.args[0].name, n, rng)
            counts = np.array([c % (1 << sg.args[1].bits) for c in COUNTS[sg.args[1].name]],
                              dtype=np.uint64).astype(storage_type(sg.args[1]).np_dtype)
            y = rng.permutation(np.resize(counts, n)).astype(counts.dtype)
            y.reshape(-1, lanes)[:, 0] = np.resize(counts, n // lanes)  # lane 0 takes every count
            inputs = {"x": x, "y": y}
            exp = np.asarray(evaluate(term, {k: v.reshape(-1, lanes) for k, v in inputs.items()})).reshape(-1)
            kernels.append((f"k{len(kernels)}", term, lanes, vs, inputs, exp.astype(storage_type(sg.result).np_dtype)))
    bad, cm = _run(kernels)
    assert not bad, "\n".join(bad)
    for (kname, term, *_rest) in kernels:
        loop = " ".join(line.split()[0] for line in inner_loop_instructions(cm.asm, kname, target=TARGET))
        assert mnemonic(term.op, term.type.bits) in loop, f"{term}: {loop}"
        assert not re.search(r"vps[lr][la]v[dq]", loop), f"{term}: {loop}"


def _rules() -> dict:
    return {r.name: r for r in load_target(TARGET, include_synthesized=False).rules.rules if r.name in UNIFORM_RULES}


@pytest.mark.parametrize("name", UNIFORM_RULES)
def test_rule_valid_with_uniform_and_invalid_without(name: str) -> None:
    rule = _rules()[name]
    assert verify_rule(rule).status == "VALID", verify_rule(rule).summary()
    pred = re.sub(r"\s*&&\s*is_uniform\(\w+\)|is_uniform\(\w+\)\s*&&\s*", "", rule.predicate)
    pred = "" if pred.startswith("is_uniform") else f" if {pred}"
    weaker = parse_rule(f"{name}_any_amount: {rule.lhs} -> {rule.rhs}{pred}", "<test>", 1)
    result = verify_rule(weaker)
    assert result.status == "INVALID", result.summary()
    assert "@1" in result.summary()  # the counterexample has a second lane with another amount


def test_is_uniform_must_be_a_conjunct() -> None:
    """`!is_uniform(y)` or a disjunction would assume uniformity where the predicate does not require it."""
    rule = parse_rule("bad: x_i16 >> y_u16 -> x86.psra_uniform(x_i16, y_u16) if !is_uniform(y_u16) || false",
                      "<test>", 1)
    assert verify_rule(rule).status == "INVALID"


def test_lane0_instruction_is_not_the_lanewise_shift() -> None:
    x, y = var("x", parse_type("i16")), var("y", parse_type("u16"))
    assert equivalent(make("shr", x, y), make("x86.psra_uniform", x, y)).status == "INVALID"
    yu = var("y", parse_type("u16"), uniform=True)
    assert equivalent(make("shr", x, yu), make("x86.psra_uniform", x, yu)).status == "VALID"


# rule -> (op, type of x, type of the uniform amount)
EXAMPLES = {
    "psll_uniform": [("shl", "u16", "u16"), ("shl", "i16", "u16"), ("shl", "i32", "u32"), ("shl", "u64", "u64")],
    "psrl_uniform": [("shr", "u16", "u16"), ("shr", "u32", "u32"), ("shr", "u64", "u64")],
    "psra_uniform": [("shr", "i16", "u16"), ("shr", "i32", "u32")],
    "psll_uniform_signed": [("shl", "i16", "i16"), ("shl", "u16", "i16"), ("shl", "i32", "i32"), ("shl", "u32", "i32")],
    "psll_uniform_bytes": [("shl", "u8", "u8"), ("shl", "i8", "u8")],
    "psrl_uniform_bytes": [("shr", "u8", "u8")],
    "psra_uniform_bytes": [("shr", "i8", "u8")],
    "psll_uniform_signed_bytes": [("shl", "i8", "i8"), ("shl", "u8", "i8")],
    "rounding_shr_psrl_uniform": [("rounding_shr", "u16", "u16")],
    "rounding_shr_psra_uniform": [("rounding_shr", "i16", "u16")],
}


def test_uniform_rules_fire_and_run() -> None:
    """Each rule fires on a term whose amount is a uniform leaf; the selected code runs bit-exactly for
    every count in COUNTS (one count per kernel: the data is uniform, as the fact says)."""
    assert set(EXAMPLES) == set(UNIFORM_RULES) == set(_rules())
    rng = np.random.default_rng(5)
    kernels, missing = [], []
    for name, texts in EXAMPLES.items():
        for op, xt, nt in texts:
            term = make(op, var("x", parse_type(xt)), var("n", parse_type(nt), uniform=True))
            sel = select(term)
            if sel.lower_stats is None or not sel.lower_stats.fired[name]:
                missing.append(f"{name}: {term} -> {sel.final}")
                continue
            x, amount = term.args
            for c in COUNTS[amount.type.name]:
                n = 32 * 12
                inputs = {"x": _values(x.type.name, n, rng),
                          amount.name: np.full(n, c % (1 << amount.type.bits), dtype=np.uint64)
                          .astype(storage_type(amount.type).np_dtype)}
                exp = np.asarray(evaluate(term, inputs)).astype(storage_type(term.type).np_dtype)
                kernels.append((f"k{len(kernels)}", sel.final, 32, [x, amount], inputs, exp))
    assert not missing, "\n".join(missing)
    bad, _cm = _run(kernels)
    assert not bad, "\n".join(bad)


def test_halide_scalar_shift_uses_xmm_count_shifts() -> None:
    """A Halide pipeline shifting i16 data by scalar Params: vpsraw / vpsllw / vpsrlw in the loop
    (Halide 21 selects the same), no 32-bit variable shift, and bit-exact against Halide's realize()."""
    a = hl.ImageParam(hl.Int(16), 1, "a")
    n = hl.Param(hl.UInt(16), "n")
    s = hl.Param(hl.Int(16), "s")
    x = hl.Var("x")
    f = hl.Func("scalar_shifts")
    f[x] = (a[x] >> n) + (a[x] << s) + hl.rounding_shift_right(a[x], n) + hl.i16(hl.u16(a[x]) >> n)
    f.vectorize(x, 32)
    prog = pitchfork.compile(f, [a, n, s], target=TARGET, name="scalar_shifts")
    loop = " ".join(main_vector_loop(prog.assembly(), "scalar_shifts", target=TARGET).instructions)
    for m in ("vpsraw", "vpsllw", "vpsrlw"):
        assert m in loop, loop
    assert "vpsravd" not in loop and "vpsllvd" not in loop and "vpsrlvd" not in loop, loop
    rng = np.random.default_rng(1)
    data = rng.integers(-32768, 32767, 1024, dtype=np.int16)
    data[:3] = [-32768, -1, 32767]
    buf = hl.Buffer(data)
    a.set(buf)
    # Shifts by the width or more are undefined in Halide: its realize() is the reference for counts in
    # range; past the width, FPIR's definition (0 / sign fill), which isel=llvm's generic code emits.
    generic = pitchfork.compile(f, [a, n, s], target=TARGET, isel="llvm", name="scalar_shifts_llvm")
    for nv, sv in ((0, 0), (3, -3), (15, 15), (7, -15), (16, -16), (17, 17), (40000, -32768), (1, 32767)):
        got = np.asarray(prog(data, nv, sv))
        assert np.array_equal(got, np.asarray(generic(data, nv, sv))), (nv, sv)
        if nv < 16 and abs(sv) < 16:
            n.set(nv)
            s.set(sv)
            want = np.asarray(f.realize([1024], hl.Target("x86-64-linux-avx-avx2-fma-sse41")))
            assert np.array_equal(got, want), (nv, sv)


@pytest.mark.parametrize("bits", [8, 32])
def test_halide_scalar_shift_bytes_and_words(bits: int) -> None:
    """The same at 8 bits (no x86 byte shift: the 16-bit shift and a mask, against LLVM alone's
    vpsraw/vpblendvb ladder on both unpacked halves) and 32 bits (vpsrad/vpslld by the xmm count):
    fewer loop instructions than isel=llvm, and bit-exact against it for every count (in range also
    against Halide's realize())."""
    ht, ut = (hl.Int(8), hl.UInt(8)) if bits == 8 else (hl.Int(32), hl.UInt(32))
    a = hl.ImageParam(ht, 1, "a")
    n = hl.Param(ut, "n")
    s = hl.Param(ht, "s")
    x = hl.Var("x")
    f = hl.Func(f"scalar_shifts{bits}")
    f[x] = (a[x] >> n) ^ (a[x] << s)
    f.vectorize(x, 256 // bits)
    name = f"scalar_shifts{bits}"
    prog = pitchfork.compile(f, [a, n, s], target=TARGET, name=name)
    generic = pitchfork.compile(f, [a, n, s], target=TARGET, isel="llvm", name=name + "_llvm")
    ours = main_vector_loop(prog.assembly(), name, target=TARGET).instructions
    theirs = main_vector_loop(generic.assembly(), name + "_llvm", target=TARGET).instructions
    assert len(ours) < len(theirs), (ours, theirs)
    if bits == 32:
        assert {"vpsrad", "vpslld"} <= {i.split()[0] for i in ours}, ours
    assert not any(re.match(r"vps[lr][la]v[dq]|vpblendvb|vpunpck", i) for i in ours), ours
    st = parse_type(f"i{bits}")
    rng = np.random.default_rng(bits)
    data = rng.integers(st.min, st.max, 1024, endpoint=True).astype(storage_type(st).np_dtype)
    data[:3] = [st.min, -1, st.max]
    a.set(hl.Buffer(data))
    for nv, sv in ((0, 0), (1, -1), (3, 5), (bits - 1, 1 - bits), (bits, -bits), (bits + 1, bits + 1),
                   (2 ** bits - 1, st.min), (5, st.max)):
        got = np.asarray(prog(data, nv, sv))
        assert np.array_equal(got, np.asarray(generic(data, nv, sv))), (nv, sv)
        if nv < bits and abs(sv) < bits:
            n.set(nv)
            s.set(sv)
            want = np.asarray(f.realize([1024], hl.Target("x86-64-linux-avx-avx2-fma-sse41")))
            assert np.array_equal(got, want), (nv, sv)
