"""Halide's facts about the shifts it builds (fpir/flags.py: `inrange`, `nsw` on shl / widening_shl).

Halide leaves a shift by the lane width or more undefined and reads a signed 32-bit `x << y` as
x * 2^y, which never overflows; its ARM backend relies on both to select one `sqshl` for
`i16_sat(1 << (n + 15))` (softmax's exp2). Checked here:
* the flags' numpy and Z3 facts agree (the difftests draw inputs with the numpy one, the verifier
  assumes the Z3 one);
* the rules that need them (rules/lift/shifts.rules widening_shl_in_range, rules/lower/arm_neon.rules
  sqshl_in_range) verify under the facts and are INVALID without them (negative tests);
* the Halide frontend states them, FPIR text only where written or with `pitchfork lift
  --assume-no-overflow --assume-shifts-in-range`;
* a Halide pipeline with softmax's exp2 shift gets sqshl on arm64 and runs bit-exactly under qemu
  against Halide's realize();
* under `inrange` a runtime shl/shr is one ushl/sshl (arm_neon.rules ushl_in_range ... sshr_in_range:
  no clamp, no mask; softmax's `x - (n << q)`), bit-exact under qemu; without the fact the generic
  code keeps its mask and is bit-exact on amounts past the width.
"""

from __future__ import annotations

import subprocess
import sys

import halide as hl
import numpy as np
import pytest
import z3

import pitchfork
from fpir.interp import facts_hold
from fpir.ops import make
from fpir.opspec import spec
from fpir.term import var
from fpir.text import parse
from fpir.types import parse_type
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as hir
from pitchfork.codegen.loop_nest import LoopNestCodegen
from pitchfork.selection.lower import select_instructions
from pitchfork.selection.select_batch import select_expression
from pitchfork.targets import load_target
from pitchfork.trs.rules import parse_rule
from synth.verify import verify_rule


@pytest.mark.parametrize(("op", "flag", "xt", "yt"), [
    ("shl", "inrange", "i8", "i8"), ("shl", "inrange", "u8", "u8"), ("shr", "inrange", "i8", "u8"),
    ("shl", "nsw", "i8", "i8"), ("shl", "nsw", "i8", "u8"), ("widening_shl", "nsw", "i8", "i8"),
    ("widening_shl", "inrange", "u8", "i8"),
])
def test_numpy_and_z3_facts_agree(op: str, flag: str, xt: str, yt: str) -> None:
    """Edge and random 8-bit input pairs: the numpy fact equals the Z3 fact evaluated on them."""
    x, y = var("x", parse_type(xt)), var("y", parse_type(yt))
    term = make(op, x, y, flags=(flag,))
    tx, ty = x.type, y.type
    edges = [v for v in (-128, -127, -17, -16, -15, -9, -8, -7, -1, 0, 1, 2, 7, 8, 9, 15, 16, 17, 63, 64, 127, 128,
                         255) if tx.contains(v) or ty.contains(v)]
    rng = np.random.default_rng(3)
    pairs = [(a, b) for a in edges for b in edges if tx.contains(a) and ty.contains(b)]
    pairs += list(zip(rng.integers(tx.min, tx.max + 1, 200), rng.integers(ty.min, ty.max + 1, 200)))
    xs, ys = np.array([p[0] for p in pairs]), np.array([p[1] for p in pairs])
    got = np.broadcast_to(facts_hold(term, {"x": xs, "y": ys}), xs.shape)
    zx, zy = z3.BitVec("x", 8), z3.BitVec("y", 8)
    fact = spec(op).flags[flag].z3_holds([zx, zy], [tx, ty], term.type)
    for (xv, yv), ok in zip(pairs, got):
        v = z3.simplify(z3.substitute(fact, (zx, z3.BitVecVal(int(xv) % 256, 8)), (zy, z3.BitVecVal(int(yv) % 256, 8))))
        assert z3.is_true(v) == bool(ok), (xv, yv, bool(ok))
    assert 0 < got.mean() < 1  # both outcomes are exercised


def _rule(path: str, name: str):  # type: ignore[no-untyped-def]
    from pitchfork.trs.rules import load_rule_file

    return next(r for r in load_rule_file(path) if r.name == name)


def test_rules_valid_under_the_facts_only() -> None:
    lift = _rule("rules/lift/shifts.rules", "widening_shl_in_range")
    sqshl = next(r for r in load_target("arm64", include_synthesized=False).rules.rules if r.name == "sqshl_in_range")
    assert verify_rule(lift).status == "VALID", verify_rule(lift).summary()
    assert verify_rule(sqshl).status == "VALID", verify_rule(sqshl).summary()
    negatives = [
        # no facts on the left: the right side's flags are promises nothing guarantees
        "lift_no_facts: shl(c0_W, cast<W>(y_T)) -> widening_shl.inrange.nsw(c0, y_T) "
        "if is_signed(T) && W == wide(T) && c0 >= tmin(T) && c0 <= tmax(T)",
        # sqshl without the facts, or with only one of them
        "sqshl_no_facts: saturating_cast<T>(widening_shl(x_T, y_T)) -> arm.sqshl(x_T, y_T) if is_signed(T) && bits(T) <= 32",
        "sqshl_inrange_only: saturating_cast<T>(widening_shl.inrange(x_T, y_T)) -> arm.sqshl(x_T, y_T) "
        "if is_signed(T) && bits(T) <= 32",
        "sqshl_nsw_only: saturating_cast<T>(widening_shl.nsw(x_T, y_T)) -> arm.sqshl(x_T, y_T) "
        "if is_signed(T) && bits(T) <= 32",
    ]
    for text in negatives:
        result = verify_rule(parse_rule(text, "<test>", 1))
        assert result.status == "INVALID", f"{text}: {result.summary()}"


def _exp2_shift(lanes: int) -> tuple[hl.Func, list]:
    """softmax's exp2 integer part: i16_sat(1 << (n + 15)) with n = i16(x >> q), q a Param."""
    a = hl.ImageParam(hl.Int(16), 1, "a")
    q = hl.Param(hl.UInt(16), "q")
    x = hl.Var("x")
    f = hl.Func("exp2_shift")
    n = hl.i16(a[x] >> q)
    f[x] = hl.saturating_cast(hl.Int(16), hl.i32(1) << (n + 15))
    f.vectorize(x, lanes)
    return f, [a, q]


def test_frontend_states_the_facts_and_text_only_on_request() -> None:
    f, args = _exp2_shift(8)
    prog = pitchfork.compile(f, args, target="arm64", name="exp2_shift")
    cap = prog.captured
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, "pitchfork", prog.name)
    cg.build()
    sel = next(s for n, s in cg.selections if isinstance(n, hir.Store))
    assert "shl.inrange.nsw(" in str(sel.input) and "shr.inrange(" in str(sel.input)
    assert "widening_shl.inrange.nsw(" in str(sel.fpir)
    assert "arm.sqshl(" in str(sel.final)
    # FPIR text: no facts unless written or asked for
    text = "saturating_cast<i16>(i32(1) << i32(x_i16 + 15))"
    cmd = [sys.executable, "-m", "pitchfork", "lift"]
    plain = subprocess.run([*cmd, text], capture_output=True, text=True, check=True).stdout
    flagged = subprocess.run([*cmd, "--assume-no-overflow", "--assume-shifts-in-range", text],
                             capture_output=True, text=True, check=True).stdout
    assert "inrange" not in plain and "widening_shl.inrange.nsw(1, x_i16 + 15)" in flagged
    assert "arm.sqshl" not in str(select_instructions(parse(text), "arm64").final)
    # `pitchfork select` (its library call): both facts are needed, each only on request
    assert select_expression(text, "arm64", no_overflow=True, shifts_in_range=True).final == "arm.sqshl(1, x_i16 + 15)"
    assert "sqshl" not in str(select_expression(text, "arm64", no_overflow=True).final)
    assert "sqshl" not in str(select_expression(text, "arm64", shifts_in_range=True).final)


@pytest.mark.skipif(not tools_available("arm64"), reason="needs qemu-aarch64")
def test_exp2_shift_is_one_sqshl_and_bit_exact() -> None:
    f, args = _exp2_shift(8)
    prog = pitchfork.compile(f, args, target="arm64", name="exp2_shift")
    loop = main_vector_loop(prog.assembly(), "exp2_shift", target="arm64").instructions
    mnemonics = [i.split()[0] for i in loop]
    assert "sqshl" in mnemonics, loop
    assert "sqxtn" not in mnemonics, loop  # (the sshl left is the runtime `>> q`)
    rng = np.random.default_rng(7)
    data = rng.integers(-32768, 32767, 512, dtype=np.int16)
    data[:6] = [-32768, -1, 0, 1, 32767, 16]
    a = args[0]
    a.set(hl.Buffer(data))
    # every input keeps Halide's facts: n + 15 in [-31, 30] needs n in [-46, 15]; q = 11..15 makes
    # |n| <= 16, and the data's extremes hit both ends (n = 15 saturates, n = -16 gives 0)
    for q in (11, 12, 15):
        args[1].set(q)
        want = np.asarray(f.realize([512], hl.get_host_target()))
        got = np.asarray(prog(data, q))
        assert np.array_equal(got, want), q


# ---- register shifts under `inrange` (rules/lower/arm_neon.rules ushl_in_range ... sshr_in_range) ----
# Halide's shift rule lets a runtime shift be one ushl/sshl: no clamp of the amount, no mask of the
# result. Without the fact the generic code keeps its mask (the `and` softmax's arm64 loop had).

_IN_RANGE_RULES = ("ushl_in_range", "ushl_in_range_unsigned_amount", "sshl_in_range",
                   "sshl_in_range_unsigned_amount", "ushr_in_range", "sshr_in_range")


def test_register_shift_rules_valid_under_inrange_only() -> None:
    rules = {r.name: r for r in load_target("arm64", include_synthesized=False).rules.rules}
    for name in _IN_RANGE_RULES:
        result = verify_rule(rules[name])
        assert result.status == "VALID", f"{name}: {result.summary()}"
        # the same rule on a plain shift: a shift by the width or more differs (0 vs the low byte's shift)
        r = rules[name]
        pred = f" if {r.predicate}" if r.predicate else ""
        text = f"{name}_no_fact: {r.lhs.replace('.inrange(', '(')} -> {r.rhs}{pred}"
        assert ".inrange" not in text, text
        negative = verify_rule(parse_rule(text, "<test>", 1))
        assert negative.status == "INVALID", f"{text}: {negative.summary()}"


def test_plain_shift_text_keeps_its_mask() -> None:
    """FPIR text without the fact: the amount is not provably in range, so no register shift."""
    text = "x_i16 - (x_i16 >> y_u16 << y_u16)"
    plain = select_expression(text, "arm64").final
    assert "arm.sshl" not in plain and "arm.ushl" not in plain, plain
    flagged = select_expression(text, "arm64", shifts_in_range=True).final
    # the left shift is one sshl; the right shift by an unsigned amount stays generic (no cheaper)
    assert flagged == "x_i16 - arm.sshl(shr.inrange(x_i16, y_u16), reinterpret<i16>(y_u16))", flagged


def _sub_shifted(lanes: int) -> tuple[hl.Func, list]:
    """softmax's exp2 fraction `x - (i16(x >> q) << q)` (q a u16 Param) and a shift by a per-lane
    amount b (u16 lanes)."""
    a = hl.ImageParam(hl.Int(16), 1, "a")
    b = hl.ImageParam(hl.UInt(16), 1, "b")
    q = hl.Param(hl.UInt(16), "q")
    x = hl.Var("x")
    f = hl.Func("sub_shifted")
    n = hl.i16(a[x] >> q)
    f[x] = (a[x] - (n << q)) + (a[x] << b[x])
    f.vectorize(x, lanes)
    return f, [a, b, q]


@pytest.mark.skipif(not tools_available("arm64"), reason="needs qemu-aarch64")
def test_in_range_shifts_are_bare_register_shifts_and_bit_exact() -> None:
    f, args = _sub_shifted(8)
    prog = pitchfork.compile(f, args, target="arm64", name="sub_shifted")
    assert prog.stats.rules_fired.get("sshl_in_range_unsigned_amount", 0) >= 2, prog.stats.rules_fired
    loop = main_vector_loop(prog.assembly(), "sub_shifted", target="arm64").instructions
    mnemonics = [i.split()[0] for i in loop]
    # the uniform amount's negation and clamp are hoisted; a mask would be an and/bic, a compare cm*
    assert not {"and", "bic", "cmhi", "cmhs", "bsl", "bif", "bit"} & set(mnemonics), loop
    assert mnemonics.count("sshl") + mnemonics.count("ushl") == 3, loop
    rng = np.random.default_rng(11)
    data = rng.integers(-32768, 32767, 512, dtype=np.int16)
    data[:6] = [-32768, -1, 0, 1, 32767, 16]
    amounts = rng.integers(0, 16, 512, dtype=np.uint16)  # Halide's facts: every amount below 16
    args[0].set(hl.Buffer(data))
    args[1].set(hl.Buffer(amounts))
    for q in (0, 4, 8, 15):
        args[2].set(q)
        want = np.asarray(f.realize([512], hl.get_host_target()))
        got = np.asarray(prog(data, amounts, q))
        assert np.array_equal(got, want), q


@pytest.mark.skipif(not tools_available("arm64"), reason="needs qemu-aarch64")
def test_plain_shift_keeps_its_mask_and_is_bit_exact_past_the_width() -> None:
    """`x << y` (u16 amount, no fact) on amounts up to 65535: the loop keeps the mask (an and/bic or a
    compare) and every lane equals the interpreter's, 0 for amounts of 16 or more."""
    from fpir.interp import evaluate
    from pitchfork.codegen.kernel import add_expression_kernel, new_module
    from pitchfork.backend.machine import compile_module, inner_loop_instructions
    from pitchfork.backend.run import Buffer, Call, Scalar, run_calls

    term = parse("x_i16 << y_u16")
    final = select_instructions(term, "arm64").final
    assert "arm." not in str(final), final
    module = new_module()
    xs, ys = var("x", parse_type("i16")), var("y", parse_type("u16"))
    add_expression_kernel(module, "plain_shl", final, 8, [xs, ys])
    cm = compile_module(str(module), "arm64", isolate=True)
    loop = [i.split()[0] for i in inner_loop_instructions(cm.asm, "plain_shl", target="arm64")]
    assert {"and", "bic", "cmhi", "cmhs", "bsl", "bif", "bit"} & set(loop), loop
    rng = np.random.default_rng(5)
    n = 1024
    x = rng.integers(-32768, 32767, n, dtype=np.int16)
    y = rng.integers(0, 65535, n, dtype=np.uint16)
    y[:64] = np.arange(64)  # every amount around the width, and low bytes that wrap (256 + k)
    y[64:80] = 256 + np.arange(16)
    out = np.zeros(n, dtype=np.int16)
    call = Call("plain_shl", [Buffer.output(out), Buffer.input(x), Buffer.input(y), Scalar(n, 64)])
    got = run_calls(cm, "arm64", [call])[0][0]
    want = np.asarray(evaluate(term, {"x": x, "y": y})).astype(np.int16)
    assert np.array_equal(got, want)
    assert (got[16:64] == 0).all() and (got[64:80] == 0).all()
