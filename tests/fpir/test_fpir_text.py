"""Text syntax: parse/print round trip over random well-typed terms, the paper's notation, and errors."""

from __future__ import annotations

import functools
import random
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fpir.interp import evaluate
from fpir.ops import make
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.text import FPIRSyntaxError, parse
from fpir.types import INT_TYPES, USER_TYPES, ScalarType, i8, i16, i32, u1, u8, u16
from fpir_testlib import Instance, edges, instances, semantic_ops

# Every instance of every op over user types whose result is a user type, indexed by result type.
BY_RESULT: dict[ScalarType, list[Instance]] = defaultdict(list)
for _op in semantic_ops():
    for _inst in instances(_op):
        identity = _inst.explicit is not None and _inst.arg_types == (_inst.explicit,)
        if _inst.result.is_user_type and not identity:
            BY_RESULT[_inst.result].append(_inst)

NAMES = ["a", "b", "x", "in_0", "k.1", "$0", "u8", "min", "long_variable_name"]


@functools.cache
def leaves(t: ScalarType) -> st.SearchStrategy[Term]:
    """Variables of type t, and constants of t: edge values (incl. negatives), small values, any value."""
    small = [v for v in range(-3, 4) if t.contains(v)]
    values = st.one_of(st.sampled_from(edges(t) + small), st.integers(t.min, t.max))
    return st.one_of(st.sampled_from(NAMES).map(lambda n: var(n, t)), values.map(lambda v: const(v, t)))


@functools.cache
def terms(t: ScalarType, depth: int) -> st.SearchStrategy[Term]:
    """Random well-typed terms of type t (cached per (t, depth): building strategies is costly)."""
    return leaves(t) if depth == 0 else _node(t, depth)


@st.composite
def _node(draw: st.DrawFn, t: ScalarType, depth: int) -> Term:
    if draw(st.integers(0, 4)) == 0:
        return draw(leaves(t))
    inst = draw(st.sampled_from(BY_RESULT[t]))  # an op instance whose type rule gives t
    args = [draw(terms(at, depth - 1)) for at in inst.arg_types]
    return make(inst.op, *args, type=inst.explicit)


any_term = st.one_of(*[terms(t, 4) for t in USER_TYPES])


def test_generator_covers_every_op() -> None:
    ops = {i.op for insts in BY_RESULT.values() for i in insts}
    assert ops == set(semantic_ops())


@settings(max_examples=2000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(any_term)
def test_parse_print_round_trip(t: Term) -> None:
    text = to_text(t)
    assert parse(text) is t, text
    assert to_text(parse(text)) == text


@settings(max_examples=300, deadline=None)
@given(any_term)
def test_round_trip_with_whitespace_and_newlines(t: Term) -> None:
    text = to_text(t).replace(", ", " ,\n   ").replace("(", "( ")
    assert parse(text) is t


# ---------------------------------------------------------------------------------------------
# The paper's notation and C precedence


@pytest.mark.parametrize("text", [
    "u16(x_u8) + y_u16",
    "widening_shl(b_u8, 1)",
    "saturating_cast<u8>(absd(widening_add(a_u8, c_u8) + widening_shl(b_u8, 1), d_u16) + e_u16)",
    "reinterpret<i16>(x_u16) >> 3",
    "select(a_u8 < b_u8, a_u8, b_u8 - 1)",
    "mul_shr(a_i16, b_i16, 15)",
    "rounding_shr(a_i32, -3)",
    "a_u8 + b_u8 * c_u8",
    "(a_u8 + b_u8) * c_u8",
    "a_u8 - (b_u8 - c_u8)",
    "a_u8 - b_u8 - c_u8",
    "a_u8 << (b_u8 << c_u8)",
    "a_i8 * -5",
    "~a_u8 & b_u8",
    "-a_i8",
    "i8(-128) + x_i8",
])
def test_paper_notation_round_trips(text: str) -> None:
    t = parse(text)
    assert parse(to_text(t)) is t


def test_broadcast_and_bare_constants() -> None:
    b16 = make("cast", var("b", u8), type=u16)
    assert parse("u16(b_u8) * x(2)") is parse("u16(b_u8) * 2") is make("mul", b16, const(2, u16))
    assert parse("widening_shl(b_u8, x(1))") is make("widening_shl", var("b", u8), const(1, u8))
    assert parse("5") is const(5, i32) and parse("u8(5)") is const(5, u8) and parse("-5") is const(-5, i32)
    assert parse("x_i16 >> -2").args[1] is const(-2, i16)
    assert parse("mul_shr(a_i16, b_i16, 15)").args[2] is const(15, u16)
    assert parse("extending_add(a_u16, 3)").args[1] is const(3, u8)
    assert parse("0x10 + a_u8").args[0] is const(16, u8)
    assert parse("a_u8 # comment\n + 1") is parse("a_u8 + 1")


def test_c_precedence() -> None:
    a, b, c, d = (var(n, u8) for n in "abcd")
    assert parse("a_u8 + b_u8 * c_u8") is make("add", a, make("mul", b, c))
    assert parse("a_u8 << 1 + b_u8") is make("shl", a, make("add", const(1, u8), b))
    assert parse("a_u8 & b_u8 | c_u8") is make("or", make("and", a, b), c)
    assert parse("a_u8 | b_u8 ^ c_u8 & d_u8") is make("or", a, make("xor", b, make("and", c, d)))
    assert parse("a_u8 < b_u8 == c_u8 < d_u8") is make("eq", make("lt", a, b), make("lt", c, d))
    assert parse("a_u8 >> 1 < b_u8") is make("lt", make("shr", a, const(1, u8)), b)
    assert parse("a_u8 - b_u8 - c_u8") is make("sub", make("sub", a, b), c)
    assert parse("a_u8 / b_u8 % c_u8") is make("mod", make("div", a, b), c)
    assert parse("-a_i8 * b_i8") is make("mul", make("sub", const(0, i8), var("a", i8)), var("b", i8))
    p, q = var("p", u1), var("q", u1)
    assert parse("p_u1 && !q_u1 || p_u1") is make("or", make("and", p, make("not", q)), p)


def test_lane_agnostic_evaluation() -> None:
    t = parse("halving_add(a_u8, b_u8)")
    assert int(np.asarray(evaluate(t, {"a": 7, "b": 8}))) == 7
    out = evaluate(t, {"a": np.arange(4, dtype=np.uint8), "b": 1})
    assert out.tolist() == [0, 1, 1, 2]


# ---------------------------------------------------------------------------------------------
# Syntax errors name line and column


@pytest.mark.parametrize("text, line, column, message", [
    ("a_u8 +", 1, 7, "unexpected end of input"),
    ("foo(a_u8)", 1, 1, "unknown operation 'foo'"),
    ("u8(a_u8", 1, 8, "unexpected end of input"),
    ("a_u7", 1, 1, "unknown name 'a_u7'"),
    ("a_u8 +\n  b_u8 * )", 2, 10, "unexpected ')'"),
    ("a_u8 +\n  c_u7", 2, 3, "unknown name 'c_u7'"),
    ("min(a_u8)", 1, 1, "min takes 2 argument(s), got 1"),
    ("a_u8 @ b_u8", 1, 6, "unexpected character '@'"),
    ("saturating_cast(a_u16)", 1, 1, "saturating_cast needs a type"),
    ("min<u8>(a_u8, b_u8)", 1, 13, "unexpected ','"),  # min < u8 > (a_u8, b_u8)
    ("cast<u7>(a_u8)", 1, 1, "unknown type name 'u7'"),
    ("(a_u8 + b_u8", 1, 13, "unexpected end of input"),
    ("a_u8 + b_u8)", 1, 12, "unexpected ')'"),
    ("x_u16 +\n\n   widening_add(a_u8, b_i16)", 3, 4, "widening_add: operands must have the same type"),
])
def test_syntax_errors(text: str, line: int, column: int, message: str) -> None:
    with pytest.raises(FPIRSyntaxError) as e:
        parse(text)
    assert (e.value.line, e.value.column) == (line, column), str(e.value)
    assert message in e.value.message
    assert str(e.value).startswith(f"<expr>:{line}:{column}: ")


def test_unpositioned_parse_differs_only_in_positions() -> None:
    """`parse` elaborates a tree parsed without node positions (faster); the positioned tree it falls
    back to for errors (test_syntax_errors) is the same tree with lines and columns."""
    from fpir.text import Raw, parse_raw

    def strip(r: Raw) -> tuple:
        return (r.kind, r.text, r.tparam_text, tuple(strip(a) for a in r.args))

    def positions(r: Raw) -> list[tuple[int, int]]:
        return [(r.line, r.column), *(p for a in r.args for p in positions(a))]

    text = "u8(min(u16(a_u8) +\n  u16(b_u8), 255)) + saturating_cast<u8>(c_i16)"
    fast, slow = parse_raw(text, positions=False), parse_raw(text)
    assert strip(fast) == strip(slow)
    assert set(positions(fast)) == {(0, 0)} and (2, 3) in positions(slow)


def test_error_names_the_source() -> None:
    with pytest.raises(FPIRSyntaxError, match=r"^rules/lift.rules:1:7: "):
        parse("a_u8 +", source="rules/lift.rules")


def test_every_type_prints_and_parses_its_extremes() -> None:
    for t in INT_TYPES:
        for v in (t.min, t.max):
            c = const(v, t)
            assert parse(to_text(c)) is c
            x = make("add", var("x", t), c)
            assert parse(to_text(x)) is x, to_text(x)
    assert parse(to_text(make("cast", var("x", i16), type=u1))) is make("cast", var("x", i16), type=u1)
    assert parse("x_i16 - -32768") is make("sub", var("x", i16), const(-32768, i16))
    assert parse("x_i8 * -128").args[1] is const(-128, i8)


@pytest.mark.parametrize("text, same_as", [
    ("x_i32 >> i64(15)", "x_i32 >> 15"),
    ("x_u16 << u8(3)", "x_u16 << 3"),
    ("x_u32 << i8(-3)", "x_u32 << i32(-3)"),  # a negative amount keeps its sign: it shifts the other way
    ("rounding_shr(x_i16, u64(4))", "rounding_shr(x_i16, 4)"),
    ("widening_shl(x_u8, i32(9))", "widening_shl(x_u8, 9)"),
    ("mul_shr(x_i16, y_i16, u32(15))", "mul_shr(x_i16, y_i16, 15)"),
])
def test_shift_constant_at_another_width(text: str, same_as: str) -> None:
    """A constant shift amount written at another width reads as the amount at the op's own type,
    with the same value (it used to be a type error). At the same width the written type is kept
    (`x_i32 >> u32(15)` is its own term, so printing round-trips; lifting retypes it)."""
    assert parse(text) == parse(same_as)
    assert parse("x_i32 >> u32(15)") != parse("x_i32 >> 15")


def test_shift_constant_that_does_not_fit_is_an_error() -> None:
    with pytest.raises(FPIRSyntaxError, match=r"<expr>:1:1: shr: shift amount must have 32 bits"):
        parse("x_i32 >> u64(4294967296)")
    with pytest.raises(FPIRSyntaxError, match="mul_shr: shift amount must be u16"):
        parse("mul_shr(x_i16, y_i16, i32(-1))")


def test_lifting_retypes_shift_constants_of_the_other_signedness() -> None:
    from pitchfork.selection.lift import lift, normalize_shift_constants

    assert normalize_shift_constants(parse("(x_i32 >> u32(15)) + i32(y_u16 << i16(2))")) == parse("(x_i32 >> 15) + i32(y_u16 << 2)")
    assert str(lift(parse("i16(max(min((i32(a_i16) * i32(b_i16)) >> u32(15), 32767), -32768))"))) == "mul_shr(a_i16, b_i16, 15)"


# ---------------------------------------------------------------------------------------------
# fpir.text._fast_raw: lark's tree without lark, or a decline


def _raw_key(r: object) -> list[tuple[object, ...]]:
    """A Raw tree as the list of its nodes in pre-order (each with its arity), built and compared
    without recursion (Raw's own == recurses per level)."""
    out: list[tuple[object, ...]] = []
    stack = [r]
    while stack:
        node = stack.pop()
        out.append((node.kind, node.text, node.line, node.column, node.tparam_text, node.has_names,  # type: ignore[attr-defined]
                    len(node.args)))  # type: ignore[attr-defined]
        stack.extend(reversed(node.args))  # type: ignore[attr-defined]
    return out


_ATOMS = ["a_u8", "b_i16", "x", "k.1", "$0", "5", "0x1F", "12", "u16", "min", "castle", "cast", "f", "add.nsw"]
_CALLEES = ["min", "u8", "widening_add", "add.nsw", "cast<u8>", "saturating_cast<i16>", "reinterpret < u16 >", "f",
            "cast (u8)"]
_OPS = ["+", "-", "*", "/", "%", "<<", ">>", "==", "!=", "<", "<=", ">", ">=", "&", "|", "^", "&&", "||"]
_PUNCT = ["(", ")", ",", "-", "~", "!", " ", "\t", "\n", "#c\n", "=", "<", ">", "()", "<<=", "\v", "é"]


def _random_text(rng: random.Random) -> str:
    """An expression of the grammar, token soup, or an expression with one token replaced."""
    def expr(d: int) -> str:
        r = rng.random()
        if d > 5 or r < 0.3:
            return rng.choice(_ATOMS[:8])
        if r < 0.5:
            return expr(d + 1) + rng.choice([" ", ""]) + rng.choice(_OPS) + rng.choice([" ", ""]) + expr(d + 1)
        if r < 0.6:
            return rng.choice(["-", "~", "!", "- ", "--"]) + expr(d + 1)
        if r < 0.7:
            return "(" + expr(d + 1) + ")"
        f = rng.choice(_CALLEES)
        return f + rng.choice(["", " "]) + "(" + ", ".join(expr(d + 1) for _ in range(rng.randint(0, 3))) + ")"

    kind = rng.randrange(3)
    if kind == 0:
        return expr(0)
    if kind == 1:
        return "".join(rng.choice(rng.choice([_ATOMS, _OPS, _PUNCT])) for _ in range(rng.randint(1, 8)))
    t = expr(0)
    k = rng.randrange(len(t))
    return t[:k] + rng.choice(_OPS + _PUNCT + _ATOMS) + t[k + 1:]


def test_fast_parser_gives_larks_tree_or_declines() -> None:
    """On random text (valid expressions, token soup, one-token mutations), `_fast_raw` returns exactly
    the tree lark's unpositioned parser gives, or None; it returns None wherever lark refuses, and
    declines a valid expression only when it holds a comment."""
    from lark.exceptions import LarkError

    from fpir.text import _fast_raw, _parser, _transform

    rng = random.Random(2026)
    agreed = 0
    for _ in range(4000):
        text = _random_text(rng)
        try:
            ref = _raw_key(_transform(_parser(False).parse(text)))
        except (LarkError, FPIRSyntaxError):
            ref = None
        fast = _fast_raw(text)
        if fast is None:
            assert ref is None or "#" in text, text
        else:
            assert _raw_key(fast) == ref, text
            agreed += 1
    assert agreed > 1000  # the random text is valid often enough for the comparison to mean something


def test_fast_parser_deep_text_and_errors() -> None:
    """Deep text parses without recursion (the same tree as lark's); a syntax error still reports
    lark's located message (parse falls back to lark, with positions)."""
    from fpir.text import _fast_raw, _parser, _transform

    deep = "(" * 5000 + "a_u8" + ")" * 5000 + " + " + "-" * 5000 + "b_u8" + " * " + "u8(" * 3000 + "c_u16" + ")" * 3000
    fast = _fast_raw(deep)
    assert fast is not None and _raw_key(fast) == _raw_key(_transform(_parser(False).parse(deep)))
    with pytest.raises(FPIRSyntaxError, match=r"<expr>:1:14: unexpected '\)'"):
        parse("a_u8 + (b_u8))")
    with pytest.raises(FPIRSyntaxError, match="unexpected end of input"):
        parse("min(a_u8, ")
