"""The hand-written statement parser (pitchfork/frontend/stmt_fast.py) builds exactly lark's tree, or declines.

Equality is checked on everything a tree carries: rule names, children, kept tokens' types, texts,
offsets, lines and columns (the statement `line`s and error positions come from those).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lark import Token, Tree

from pitchfork.frontend.stmt import HalideParseError, parse_stmt, parse_tree
from pitchfork.frontend.stmt_fast import fast_tree

DATA = Path(__file__).with_name("data")


def difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where two parse trees differ (None: identical, positions included)."""
    if isinstance(a, Tree) != isinstance(b, Tree):
        return f"{path}: {a!r} vs {b!r}"
    if isinstance(a, Tree):
        if a.data != b.data or len(a.children) != len(b.children):
            return f"{path}: {a.data}/{len(a.children)} vs {b.data}/{len(b.children)}"
        for k, (x, y) in enumerate(zip(a.children, b.children)):
            d = difference(x, y, f"{path}/{a.data}[{k}]")
            if d:
                return d
        return None
    assert isinstance(a, Token) and isinstance(b, Token)
    ka = (a.type, str(a), a.start_pos, a.line, a.column)
    kb = (b.type, str(b), b.start_pos, b.line, b.column)
    return None if ka == kb else f"{path}: {ka} vs {kb}"


def lark_tree(text: str, start: str) -> Tree | None:
    try:
        return parse_tree(text, start, positions=False)
    except HalideParseError:
        return None


def check(text: str, start: str = "start", *, must_parse: bool = False) -> None:
    """fast_tree is lark's tree, or None; None wherever lark rejects the text."""
    if start == "start" and not text.endswith("\n"):
        text += "\n"
    want = lark_tree(text, start)
    got = fast_tree(text, start)
    if want is None:
        assert got is None, f"accepted what lark rejects: {text!r}"
        return
    if got is None:
        assert not must_parse, f"declined: {text!r}"
        return
    d = difference(want, got)
    assert d is None, f"{text!r}: {d}"


@pytest.mark.parametrize("path", sorted(DATA.glob("*.stmt")), ids=lambda p: p.stem)
def test_every_golden_statement_gives_lark_tree(path: Path) -> None:
    text = path.read_text()
    # statements with `fork`/`atomic` are parsed with positions, never through the fast path
    check(text, must_parse="fork" not in text and "atomic" not in text)


CONSTRUCTS = [
    "let t1 = (int32)input.min.0 + 4\nf[t1] = (uint8)3\n",
    "for (f.s0.y, 0, 16) {\n  parallel (f.s0.x, t2, (t3 - 1)/2) {\n    f[f.s0.x] = x16((uint8)1)\n  }\n}\n",
    "for<Hexagon> (f.s0.__outermost, 0, 1) {\n f[0] = 1\n}\n",
    "vectorized (v, 0, 8) {\n f[v] = v\n}\n",
    "predicate (ramp(0, 1, 16) < x16(n))\n  f[ramp(0, 1, 16) aligned(16, 0)] = g[ramp(1, 1, 16)] if ramp(0, 1, 16) < x16(n)\n",
    "f[ramp(t, 1, 8)] = int16x8((uint8x8)input[ramp(t, 2, 8) aligned(2, 1)]) * x8((int16)-3)\n",
    "allocate buf[uint16 * (t4 + 2) * 16] in Stack if t4 > 0\nfree buf\n",
    "allocate p[(void *) * 4]\n",
    "allocate q[int32 * 4] in Heap\n",
    "if (a < b) {\n f[0] = 1\n} else if (a == b) {\n f[0] = 2\n} else {\n f[0] = 3\n}\n",
    "if (!(a <= b) && c != d || e >= (int64)-9) {\n f[0] = 1\n}\n",
    "produce f {\n consume g {\n  f[0] = g[0]\n }\n}\n",
    'assert(f.type == (uint32)69633, halide_error_bad_type("Output buffer f", f.type, (uint32)69633))\n',
    'assert(x >= 0, halide_error_access_out_of_bounds("in\\"put", 0, x, 0, 1))\n',
    "acquire (sema, 1) {\n f[0] = 1\n}\n",
    "hoisted_storage buf {\n f[0] = 1\n}\n",
    "halide_memoization_cache_release(f.buffer, (void *)t5)\n",
    "f[0] = let t6 = a * 2 in t6 + t6\n",
    "let t7 = 3 in t7 + 1\n",
    "f[0] = reinterpret<uint32>(g[0]) + reinterpret<(void *)>(h)\n",
    "f[0] = (float32)2 + 1.5f + -2.25 + (float32)inf + (float64)-nan + 1e5 + inff\n",
    "f[0] = select(c, (uint8x16)shuffle(a, b, 0, 16, 1, 17), vector_reduce_add(x))\n",
    "f[0] = (struct halide_buffer_t *)t8\n",
    "f[0] = a % b / c - d * e + -1\n",
    "g[0] + 1\n",
    "g[0] if c\n",
    "f[0] = g[ramp(0, 1, 4)] if ramp(0, 1, 4) < x4(n)\n",
    "\n\n  f[0] = 1\n\n  f[1] = 2   \n",
    "",
]


@pytest.mark.parametrize("text", CONSTRUCTS)
def test_constructs_give_lark_tree(text: str) -> None:
    check(text, must_parse=bool(text.strip()))


@pytest.mark.parametrize("text", [
    "(uint8)-4", "a + b * c - d", "let t = 1 in t", "g[i] if c", "min(a, b) < max(c, d)",
    "reinterpret<uint8x16>(x)", "(void *)p", "!a && b",
])
def test_expressions_give_lark_tree(text: str) -> None:
    check(text, "expr", must_parse=True)


# Words that look like types, floats or keywords where lark's contextual lexer gives them another
# meaning; and malformed text: the fast parser gives lark's tree or declines, and never accepts what
# lark rejects.
TRICKY = [
    "let int32 = 1\nf[int32] = 1\n", "let inf = 1\n", "for (if, 0, 4) {\n f[if] = 1\n}\n", "f[let] = 1\n",
    "free free\n", "produce in {\n f[0] = 1\n}\n", "f[0] = (uint8)int32\n", "f[0] = (uint8)uint8[0]\n",
    "f[0] = a + let\n", "f[0] = int32\n", "uint8[0] = 1\n", "inf[0] = 1\n", "for[0] = 1\n",
    "f[0] = a < b < c\n", "f[0] = (g[0]) if c\n", "f[0] = (uint8)g[0] if c\n", "f[0] = a + g[0] if c\n",
    "f[0] = -a\n", "f[0] = 1.5.x\n", "f[0] = a $ b\n", "f[0] = (a *)\n", "f[0 aligned(16.0, 0)] = 1\n",
    "f[0] = 1\n}\n", "if (a) {\n f[0] = 1\n", "f[0] = \n", "f[0] = g(\n", "f[0] = 'x'\n", "f[0] = 1\r\n",
    "gpu_block(x)\n", "extern (x, 0, 1) {\n f[0] = 1\n}\n", "f[0] = 1 f[1] = 2\n", "let x = 1 in\n",
    "allocate b[foo * 4]\n", "allocate b[int32 * 4] in\n", "f[0] = reinterpret(x)\n", "f[0] = \"a\nb\"\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_text_gives_lark_tree_or_declines(text: str) -> None:
    check(text)


_NAMES = st.sampled_from(["a", "b", "t1", "f.s0.x", "input.min.0", "x16", "int32", "inf", "let", "if", "in",
                          "aligned", "reinterpret", "uint8x16", "for", "nan"])
_ATOMS = st.one_of(
    _NAMES, st.integers(-300, 300).map(str), st.sampled_from(["1.5f", "2.25", "inf", "nanf", '"s"', "(void *)p"]),
    st.tuples(st.sampled_from(["(uint8)", "(int16x8)", "(float32)", "(void *)"]), _NAMES).map("".join),
)


def _exprs() -> st.SearchStrategy[str]:
    return st.recursive(_ATOMS, lambda inner: st.one_of(
        st.tuples(inner, st.sampled_from([" + ", " - ", "*", " / ", " % ", " < ", " == ", " && ", " || ", " >= "]),
                  inner).map("".join),
        inner.map(lambda e: f"({e})"), inner.map(lambda e: f"!{e}"),
        st.tuples(_NAMES, st.lists(inner, max_size=3)).map(lambda t: f"{t[0]}({', '.join(t[1])})"),
        st.tuples(_NAMES, inner).map(lambda t: f"{t[0]}[{t[1]}]"),
        st.tuples(_NAMES, inner, inner).map(lambda t: f"{t[0]}[{t[1]}] if {t[2]}"),
        st.tuples(_NAMES, inner, inner).map(lambda t: f"let {t[0]} = {t[1]} in {t[2]}"),
        inner.map(lambda e: f"uint16x8({e})"), inner.map(lambda e: f"reinterpret<int8>({e})"),
    ), max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(_exprs(), st.sampled_from(["f[{e}] = {e}\n", "let t = {e}\n", "{e}\n", "if ({e}) {{\n g[0] = {e}\n}}\n",
                                  "allocate b[int32 * {e}]\n", "for (x, {e}, 4) {{\n f[x] = {e}\n}}\n"]))
def test_generated_statements_give_lark_tree_or_decline(e: str, shape: str) -> None:
    check(shape.format(e=e))
    check(e, "expr")


def test_parse_stmt_errors_unchanged_by_the_fast_path() -> None:
    """A malformed statement still fails with lark's message, line and column."""
    with pytest.raises(HalideParseError) as info:
        parse_stmt("f[0] = 1\nf[1] = a $ b\n")
    assert (info.value.line, info.value.column) == (2, 10)
    assert "unknown construct" in info.value.message
