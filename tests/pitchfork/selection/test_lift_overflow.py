"""Halide's overflow rule (`nsw` flags) and the lifting families that need it (rules/lift/overflow.rules).

* The flag itself: text syntax and errors, pattern matching (a flagged pattern needs the flag, a plain
  one takes either), the facts (numpy and bounds), and the Halide frontend putting it on signed
  >= 32-bit add/sub/mul only.
* Verification: every rule that says `.nsw` is INVALID without the flags (a counterexample), while
  tests/synth/test_verify.py proves it VALID with them at every type instance.
* Lifting: several spellings per family (FPIR text, and what Halide 21's simplifier makes of tiny
  Funcs, through the frontend) reach the expected FPIR form; the unflagged spellings do not.
* Running: the Halide Funcs compiled by PITCHFORK are bit-exact against Halide's realize() on inputs
  that respect the rule (x86 both isels; arm64 and hvx128 under qemu), and the lowered code is the
  short form (x86: add + shift, no overflow-free expansion) or the instruction (arm64 shadd / srhadd /
  srshl, hvx vavg).
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import Any, Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from fpir.ops import with_halide_overflow
from fpir.interp import evaluate, facts_hold
from fpir.term import Term
from fpir.printer import to_text
from fpir.text import FPIRSyntaxError, parse
from pitchfork.selection.bounds import bounds
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as hir
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import LoopNestCodegen
from pitchfork.selection.lift import lift
from pitchfork.selection.lower import generic_rules, select_instructions
from pitchfork.trs.pattern import Bindings, compile_pattern, match
from pitchfork.trs.rules import load_rule_file, parse_rule
from fpir.text import parse_raw
from synth.verify import verify_rule

ROOT = Path(__file__).resolve().parents[3]
OVERFLOW_RULES = load_rule_file(ROOT / "rules" / "lift" / "overflow.rules")
GENERIC_NSW_RULES = [r for r in generic_rules().rules if ".nsw" in r.lhs]


# --------------------------------------------------------------------------------------------------
# The flag


def test_flag_text_round_trip_and_identity() -> None:
    t = parse("add.nsw(a_i32, b_i32) >> 1")
    assert to_text(t) == "add.nsw(a_i32, b_i32) >> 1"
    assert parse(to_text(t)) is t
    assert t.args[0].attrs == ("nsw",)
    assert parse("a_i32 + b_i32") is not parse("add.nsw(a_i32, b_i32)")  # a different term (interned)
    assert parse("rounding_shr.nsw(a_i64, 3)").attrs == ("nsw",)


@pytest.mark.parametrize(("text", "message"), [
    ("add.nsw(a_u32, b_u32)", "applies to signed integers, not u32"),
    ("add.nuw(a_i32, b_i32)", "add takes no flag 'nuw'"),
    ("shr.nsw(a_i32, 1)", "shr takes no flag 'nsw'"),
    ("addd.nsw(a_i32, b_i32)", "unknown operation"),
])
def test_flag_errors_are_located(text: str, message: str) -> None:
    with pytest.raises(FPIRSyntaxError, match=f"<expr>:1:1: .*{re.escape(message)}"):
        parse(text)


def test_flagged_pattern_needs_the_flag_plain_pattern_takes_either() -> None:
    flagged = compile_pattern(parse_raw("add.nsw(x_T, y_T)"))[0]
    plain = compile_pattern(parse_raw("x_T + y_T"))[0]
    with_flag, without = parse("add.nsw(a_i32, b_i32)"), parse("a_i32 + b_i32")
    assert list(match(flagged, with_flag, Bindings()))
    assert not list(match(flagged, without, Bindings()))
    assert list(match(plain, with_flag, Bindings())) and list(match(plain, without, Bindings()))


def test_facts_and_bounds() -> None:
    t = parse("add.nsw(a_i32, b_i32)")
    env = {"a": np.array([2**31 - 1, 5, -2**31]), "b": np.array([1, 1, -1])}
    assert facts_hold(t, env).tolist() == [False, True, False]
    assert evaluate(t, env).tolist() == evaluate(parse("a_i32 + b_i32"), env).tolist()  # value unchanged
    # Bounds: the exact range clipped to the type, where the wrapping op could be anything.
    assert bounds(parse("i32(a_u16) * 70000")) == (-2**31, 2**31 - 1)
    assert bounds(parse("mul.nsw(i32(a_u16), 70000)")) == (0, 2**31 - 1)
    r = parse("rounding_halving_add.nsw(a_i32, b_i32)")
    assert facts_hold(r, {"a": np.array([2**31 - 2, 2**31 - 1]), "b": np.array([0, 0])}).tolist() == [True, False]


def test_halide_overflow_marks_signed_wide_arithmetic_only() -> None:
    t = with_halide_overflow(parse("i64((a_i32 + b_i32) * c_i32 - i32(u8(d_i16 + e_i16))) + i64(f_u32 + g_u32)"))
    flagged = {to_text(s) for s in t.walk() if s.args and s.attrs}
    assert all(s.startswith(("add.nsw", "sub.nsw", "mul.nsw")) for s in flagged)
    ops = {(s.op, s.type.name, s.attrs) for s in t.walk() if s.op in ("add", "sub", "mul")}
    assert ("add", "i16", ()) in ops and ("add", "u32", ()) in ops  # 16-bit and unsigned arithmetic wraps
    assert {("add", "i32", ("nsw",)), ("mul", "i32", ("nsw",)), ("sub", "i32", ("nsw",)),
            ("add", "i64", ("nsw",))} <= ops


# --------------------------------------------------------------------------------------------------
# Verification without the precondition


def _without_flags(rule: Any) -> Any:
    return parse_rule(rule.text().replace(".nsw", ""), rule.source, rule.line)


@pytest.mark.parametrize("rule", OVERFLOW_RULES + GENERIC_NSW_RULES, ids=lambda r: r.name)
def test_no_overflow_rule_is_invalid_without_the_flags(rule: Any) -> None:
    assert ".nsw" in rule.lhs
    res = verify_rule(_without_flags(rule), rlimit=20_000_000)
    assert res.status == "INVALID", res.summary()
    bad = next(i for i in res.instances if i.verdict.status == "INVALID")
    assert bad.verdict.counterexample, bad.verdict  # a concrete input, not a typing problem
    assert bad.verdict.lhs_value != bad.verdict.rhs_value


def test_rhs_flag_is_a_promise_the_verifier_checks() -> None:
    """A right side may not claim a fact the left side does not give."""
    bogus = parse_rule("bogus: (x_T + y_T) >> 1 -> halving_add.nsw(x_T, y_T) if is_signed(T)")
    res = verify_rule(bogus)
    assert res.status == "INVALID" and "flag on the right side" in res.summary()


# --------------------------------------------------------------------------------------------------
# Lifting FPIR text


def _same(a: Term, b: Term) -> bool:
    """Equal up to the operand order of commutative ops (checked on the numpy interpreter too)."""
    if a is b:
        return True
    if (a.op, a.type, a.attrs) != (b.op, b.type, b.attrs) or len(a.args) != len(b.args):
        return False
    return all(_same(x, y) for x, y in zip(a.args, b.args)) or \
        (len(a.args) == 2 and _same(a.args[0], b.args[1]) and _same(a.args[1], b.args[0]))


SPELLINGS = {
    "halving_add.nsw(a_T, b_T)": [
        "add.nsw(a_T, b_T) >> 1", "add.nsw(a_T, b_T) / 2", "add.nsw(b_T, a_T) / 2"],
    "halving_sub.nsw(a_T, b_T)": ["sub.nsw(a_T, b_T) >> 1", "sub.nsw(a_T, b_T) / 2"],
    "rounding_halving_add.nsw(a_T, b_T)": [
        "add.nsw(add.nsw(a_T, b_T), 1) >> 1", "add.nsw(add.nsw(a_T, b_T), 1) / 2",
        "add.nsw(1, add.nsw(b_T, a_T)) >> 1", "add.nsw(add.nsw(a_T, 1), b_T) / 2"],
    "rounding_shr.nsw(a_T, 4)": ["add.nsw(a_T, 8) >> 4", "add.nsw(a_T, 8) / 16", "add.nsw(8, a_T) >> 4"],
    "rounding_shr.nsw(a_T, min(n_T, 20))": [
        "add.nsw(a_T, (1 << min(n_T, 20)) >> 1) >> min(n_T, 20)",
        "add.nsw(a_T, (1 << min(n_T, 20)) / 2) >> min(n_T, 20)",
        "add.nsw(a_T, 1 << (min(n_T, 20) - 1)) >> min(n_T, 20)"],
    "rounding_shr.nsw(a_T, U(max(min(n_T, 30), 0)))": [
        "add.nsw(a_T, (T(1) << U(max(min(n_T, 30), 0))) / 2) >> U(max(min(n_T, 30), 0))"],
    # Halide's clamp - 1 on the left, the clamp as unsigned on the right (saturating_cast after lifting)
    "rounding_shr.nsw(a_T, U(max(min(n_T, 30), 0)))": [
        "add.nsw(a_T, 1 << add.nsw(max(min(n_T, 30), 0), -1)) >> U(max(min(n_T, 30), 0))"],
    "rounding_shl(a_T, max(n_T, -30))": [
        "add.nsw(a_T, (1 >> max(n_T, -30)) >> 1) << max(n_T, -30)",
        "add.nsw(a_T, (1 >> max(n_T, -30)) / 2) << max(n_T, -30)",
        "add.nsw((1 >> max(n_T, -30)) >> 1, a_T) << max(n_T, -30)",
        "add.nsw(a_T, 1 >> add.nsw(max(n_T, -30), 1)) << max(n_T, -30)",
        "add.nsw(a_T, 1 >> (max(n_T, -30) + 1)) << max(n_T, -30)"],
}


def _inst(text: str, t: str) -> str:
    return text.replace("_T", f"_{t}").replace("U(", f"u{t[1:]}(").replace("T(", f"{t}(")


CASES = [(want, spelling, t) for want, ss in SPELLINGS.items() for spelling in ss for t in ("i32", "i64")]


@pytest.mark.parametrize(("want", "spelling", "t"), CASES, ids=[f"{s}-{t}" for _, s, t in CASES])
def test_spelling_lifts(want: str, spelling: str, t: str) -> None:
    got = lift(parse(_inst(spelling, t)))
    expected = lift(parse(_inst(want, t)))  # lift the expected side too: its amount is lifted alike
    assert _same(got, expected), f"{to_text(got)} != {to_text(expected)}"


@pytest.mark.parametrize("text", [
    "(a_i32 + b_i32) >> 1",  # no flag: (a + b) may wrap, so halving_add would be wrong
    "(a_i32 + b_i32 + 1) / 2",
    "(a_i32 + 8) >> 4",
    "add.nsw(a_i32, 8) >> 5",  # 8 is not 2^(5-1)
    "add.nsw(a_i32, (1 << n_i32) >> 1) >> n_i32",  # n may be 31: (1 << 31) >> 1 is negative
    "add.nsw(a_i32, (1 << min(n_i32, 31)) >> 1) >> min(n_i32, 31)",
    "add.nsw(a_i32, (1 >> n_i32) >> 1) << n_i32",  # n may be -32
    "add.nsw(a_i32, 1 >> (n_i32 + 1)) << n_i32",
    "add.nsw(a_i32, 1 >> (max(n_i32, -30) + 2)) << max(n_i32, -30)",  # 2^(k-2): not the rounding term
])
def test_unsafe_spellings_do_not_lift(text: str) -> None:
    got = lift(parse(text))
    assert not {s.op for s in got.walk()} & {"halving_add", "rounding_halving_add", "rounding_shr", "rounding_shl"}


def test_assume_no_overflow_cli(capsys: pytest.CaptureFixture[str]) -> None:
    from pitchfork.cli import main

    assert main(["lift", "(a_i32 + b_i32 + 1) / 2"]) == 0
    assert capsys.readouterr().out.strip() == "a_i32 + b_i32 + 1 >> 1"
    assert main(["lift", "--assume-no-overflow", "(a_i32 + b_i32 + 1) / 2"]) == 0
    assert capsys.readouterr().out.strip() == "rounding_halving_add.nsw(a_i32, b_i32)"
    assert main(["select", "-t", "arm64", "--assume-no-overflow", "(a_i32 + b_i32) / 2"]) == 0
    assert "final:    arm.shadd(a_i32, b_i32)" in capsys.readouterr().out
    assert main(["select", "-t", "arm64", "(a_i32 + b_i32) / 2"]) == 0
    assert "shadd" not in capsys.readouterr().out


@pytest.mark.parametrize(("text", "target", "want_ops"), [
    ("halving_add.nsw(a_i32, b_i32)", "x86-avx2", {"add", "shr"}),
    ("rounding_halving_add.nsw(a_i64, b_i64)", "x86-avx2", {"add", "shr"}),
    ("halving_sub.nsw(a_i32, b_i32)", "x86-avx2", {"sub", "shr"}),
    ("rounding_shr.nsw(a_i32, 4)", "x86-avx2", {"add", "shr"}),
    ("halving_add.nsw(a_i32, b_i32)", "arm64", {"arm.shadd"}),
    ("rounding_halving_add.nsw(a_i32, b_i32)", "arm64", {"arm.srhadd"}),
    ("rounding_shr.nsw(a_i64, 4)", "arm64", {"arm.srshl"}),
    ("rounding_halving_add.nsw(a_i32, b_i32)", "hvx128", {"hvx.vavg_rnd"}),
    # Halide's (a + b + 2^(h-1)) >> h narrowed: lifted to rounding_shr, still one raddhn / rsubhn
    ("i16(add.nsw(add.nsw(a_i32, b_i32), 32768) >> 16)", "arm64", {"arm.raddhn"}),
    ("i32(add.nsw(sub.nsw(a_i64, b_i64), 2147483648) >> 32)", "arm64", {"arm.rsubhn"}),
])
def test_lowering_uses_the_fact_or_the_instruction(text: str, target: str, want_ops: set[str]) -> None:
    final = select_instructions(parse(text), target).final
    assert {s.op for s in final.walk() if s.args} == want_ops, to_text(final)


FLAGGED_RUNS = [
    "add.nsw(a_i32, b_i32) >> 1", "add.nsw(add.nsw(a_i64, b_i64), 1) / 2", "sub.nsw(a_i32, b_i32) >> 1",
    "add.nsw(a_i32, 512) >> 10", "add.nsw(a_i64, 1099511627776) / 2199023255552",
    "add.nsw(a_i32, (1 << min(max(n_i32, -3), 30)) >> 1) >> min(max(n_i32, -3), 30)",
    "add.nsw(a_i32, (1 >> max(min(n_i32, 5), -30)) >> 1) << max(min(n_i32, 5), -30)",
    "i16(add.nsw(add.nsw(a_i32, b_i32), 32768) >> 16)", "i32(add.nsw(sub.nsw(a_i64, b_i64), 2147483648) >> 32)",
]


@pytest.mark.parametrize("target", ["x86-avx2", pytest.param("arm64", marks=pytest.mark.qemu),
                                    pytest.param("hvx128", marks=pytest.mark.qemu)])
def test_flagged_spellings_run_bit_exact(target: str) -> None:
    """Compiled and run (JIT / qemu), compared with the interpreter on inputs respecting the facts."""
    from tests.pitchfork.difftest import run_batch, summary

    terms = [parse(e) for e in FLAGGED_RUNS]
    if target == "hvx128":
        terms = [t for t in terms if max(s.type.bits for s in t.walk()) <= 32]
    r = run_batch(terms * 2, target, "pitchfork", seed=11)
    if r.skipped:
        pytest.skip(r.skipped)
    assert not r.mismatches and not r.errors, summary(r) + "\n" + "\n".join(
        [m.report() for m in r.mismatches] + r.errors)
    assert r.ran == 2 * len(terms)


# --------------------------------------------------------------------------------------------------
# Halide Funcs through the frontend

x = hl.Var("x")
FAMILIES: dict[str, tuple[Callable[..., Any], str]] = {
    "hadd": (lambda a, b, n: (a + b) >> 1, "halving_add"),
    "hadd_div": (lambda a, b, n: (a + b) / 2, "halving_add"),
    "hsub": (lambda a, b, n: (a - b) >> 1, "halving_sub"),
    "rhadd": (lambda a, b, n: (a + b + 1) >> 1, "rounding_halving_add"),
    "rhadd_lead": (lambda a, b, n: (1 + a + b) / 2, "rounding_halving_add"),
    "rshr_const": (lambda a, b, n: (a + (1 << 5)) >> 6, "rounding_shr"),
    "rshr_var": (lambda a, b, n: (a + ((1 << hl.clamp(n, 0, 30)) >> 1)) >> hl.clamp(n, 0, 30), "rounding_shr"),
    "rshr_var_min": (lambda a, b, n: (a + (1 << (hl.min(n, 20) - 1))) >> hl.min(n, 20), "rounding_shr"),
    "rshr_var_clamp_m1": (lambda a, b, n: (a + (1 << (hl.clamp(n, 0, 30) - 1))) >> hl.clamp(n, 0, 30), "rounding_shr"),
    "rshl_var": (lambda a, b, n: (a + ((1 >> hl.clamp(n, -30, 3)) >> 1)) << hl.clamp(n, -30, 3), "rounding_shl"),
}
N = 200


def _func(name: str, t: hl.Type, lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    a, b, n = (hl.ImageParam(t, 1, s) for s in ("a", "b", "n"))
    f = hl.Func(f"ovf_{name}")
    f[x] = FAMILIES[name][0](a[x], b[x], n[x])
    f.vectorize(x, lanes)
    return f, [a, b, n]


def _inputs(t: hl.Type, seed: int) -> list[np.ndarray]:
    """Values whose sums cannot overflow (Halide's rule), edges included; amounts from -40 to 40."""
    rng = np.random.default_rng(seed)
    dt = np.int32 if t.bits() == 32 else np.int64
    lim = (1 << (t.bits() - 2)) - 1
    a = rng.integers(-lim, lim, N, dtype=np.int64).astype(dt)
    b = rng.integers(-lim, lim, N, dtype=np.int64).astype(dt)
    a[:4], b[:4] = [lim, -lim, lim, -1], [lim, -lim, 0, 1]
    n = rng.integers(-40, 40, N).astype(dt)
    return [a, b, n]


def _halide(f: hl.Func, args: list[Any], values: list[np.ndarray]) -> np.ndarray:
    keep = []
    for p, v in zip(args, values):
        buf = hl.Buffer(v)
        keep.append(buf)
        p.set(buf)
    return np.asarray(f.realize([N], hl.Target("x86-64-linux-avx-avx2-fma-sse41"))).copy()


def _compile(name: str, t: hl.Type, target: str, isel: str = "pitchfork") -> Any:
    f, args = _func(name, t)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        return pitchfork.compile(f, args, target=target, isel=isel, name=f"ovf_{name}"), f, args


def _lifted_store(prog: Any) -> Term:
    cap = prog.captured
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, "pitchfork", prog.name)
    cg.build()
    return next(s.fpir for n, s in cg.selections if isinstance(n, hir.Store))


HL_CASES = [(name, t) for name in FAMILIES for t in ("i32", "i64")]


@pytest.mark.parametrize(("name", "tname"), HL_CASES, ids=[f"{n}-{t}" for n, t in HL_CASES])
def test_halide_spelling_lifts_and_runs_bit_exact_x86(name: str, tname: str) -> None:
    t = hl.Int(32) if tname == "i32" else hl.Int(64)
    prog, f, args = _compile(name, t, "x86-avx2")
    lifted = _lifted_store(prog)
    assert lifted.op == FAMILIES[name][1], to_text(lifted)
    values = _inputs(t, seed=len(name))
    want = _halide(f, args, values)
    assert np.array_equal(prog(*values, size=[N]), want)
    if tname == "i32":
        llvm, _, _ = _compile(name, t, "x86-avx2", isel="llvm")
        assert np.array_equal(llvm(*values, size=[N]), want)


QEMU_CASES = [("hadd", "arm64", "shadd"), ("rhadd", "arm64", "srhadd"), ("rshr_const", "arm64", "srshr"),
              ("rshr_var", "arm64", "srshl"), ("rhadd", "hvx128", "vavg")]


@pytest.mark.qemu
@pytest.mark.parametrize(("name", "target", "insn"), QEMU_CASES, ids=[f"{n}-{t}" for n, t, _ in QEMU_CASES])
def test_halide_spelling_runs_bit_exact_under_qemu(name: str, target: str, insn: str) -> None:
    if not tools_available(target):
        pytest.skip(f"no qemu toolchain for {target}")
    t = hl.Int(32)
    prog, f, args = _compile(name, t, target)
    values = _inputs(t, seed=7)
    assert np.array_equal(prog(*values, size=[N]), _halide(f, args, values))
    loop = main_vector_loop(prog.assembly(), f"ovf_{name}", target=target)
    assert any(insn in i for i in loop.instructions), loop.instructions
