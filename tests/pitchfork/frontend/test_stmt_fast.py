"""The one-pass statement parser (pitchfork/frontend/stmt_fast.py) builds exactly what the builder makes of
lark's tree (statement lines included), or declines, or fails where lark + builder fail.

Equality is checked on the loop-nest IR (its repr, which leaves `line` out) and on the `line` of every
statement in walk order (statement lines and error positions come from the tokens' lines).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pitchfork.frontend import ir
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.stmt import HalideParseError, _Builder, parse_stmt, parse_tree
from pitchfork.frontend.stmt_fast import fast_expr, fast_stmt

DATA = Path(__file__).with_name("data")
FAILS = "fails"


def lines(node: ir.Node) -> list[tuple[str, int]]:
    """Every node's kind and (statements) line, in walk order."""
    return [(type(n).__name__, getattr(n, "line", -1)) for n in ir.walk(node)]


def by_lark(text: str, start: str, buffers: dict[str, HType] | None) -> Any:
    """What the builder makes of lark's tree without positions: a node, or FAILS (lark or the builder
    raised)."""
    b = _Builder(text, buffers, None)
    try:
        tree = parse_tree(text, start, positions=False)
        return b.stmts(tree.children) if start == "start" else b.expr(tree)
    except HalideParseError:
        return FAILS


def one_pass(text: str, start: str, buffers: dict[str, HType] | None) -> Any:
    """The one-pass parser's node, None (declined) or FAILS (it raised)."""
    b = _Builder(text, buffers, None)
    try:
        return fast_stmt(text, b) if start == "start" else fast_expr(text, b)
    except HalideParseError:
        return FAILS


def check(text: str, start: str = "start", *, must_parse: bool = False,
          buffers: dict[str, HType] | None = None) -> None:
    """The one-pass node is lark + builder's (lines included), or it declines; it fails only where they
    fail."""
    if start == "start" and not text.endswith("\n"):
        text += "\n"
    want = by_lark(text, start, buffers)
    got = one_pass(text, start, buffers)
    if got is None:
        assert not (must_parse and want is not FAILS), f"declined: {text!r}"
        return
    if got is FAILS or want is FAILS:
        assert got is want, f"{text!r}: one pass {'fails' if got is FAILS else 'builds'}, lark + builder " \
                            f"{'fail' if want is FAILS else 'build'}"
        return
    # repr: every field but `line`, with NaN literals equal to themselves and -0.0 apart from 0.0
    assert repr(got) == repr(want), f"{text!r}: one pass {got!r}\n  lark + builder {want!r}"
    assert lines(got) == lines(want), f"{text!r}: statement lines differ"


def _golden_buffers(path: Path) -> dict[str, HType] | None:
    """The buffer types captures.json records for a golden statement, if it has them."""
    meta = json.loads((DATA / "captures.json").read_text()).get(path.stem)
    if not isinstance(meta, dict) or "buffers" not in meta:
        return None
    return {k: HType.parse(v) for k, v in meta["buffers"].items()}


@pytest.mark.parametrize("path", sorted(DATA.glob("*.stmt")), ids=lambda p: p.stem)
def test_every_golden_statement_gives_the_builders_ir(path: Path) -> None:
    text = path.read_text()
    # statements with `fork`/`atomic` are parsed with positions, never through the fast path
    check(text, must_parse="fork" not in text and "atomic" not in text, buffers=_golden_buffers(path))


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
def test_constructs_give_the_builders_ir(text: str) -> None:
    check(text, must_parse=bool(text.strip()))


@pytest.mark.parametrize("text", [
    "(uint8)-4", "a + b * c - d", "let t = 1 in t", "g[i] if c", "min(a, b) < max(c, d)",
    "reinterpret<uint8x16>(x)", "(void *)p", "!a && b",
])
def test_expressions_give_the_builders_ir(text: str) -> None:
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
    # type errors, which the builder raises on lark's tree: the one pass raises too (or declines); and a loop bound
    # of another type, which both build
    "f[0] = (uint8)1 + (uint16)2\n", "f[(uint8)0] = 1\n", "if (1) {\n f[0] = 1\n}\n", "f[0] = int16x8(x)\n",
    "let x = (uint8)1\nf[0] = x + 1\n", "f[0] = (uint8)1\nf[1] = (uint16)1\n", "f[0] = !x\n",
    "f[ramp(0, 1, 4)] = (uint8)1\n", "predicate (x4(c))\n f[ramp(0, 1, 8)] = x8((uint8)1)\n",
    "f[0] = ramp(0, 1, n)\n", "f[0] = g[0] if x\n", "f[0] = (uint8)300\n", "f[0] = (uint8)1.5f\n",
    "f[0] = a < b == c\n", "f[0] = let x = (uint8)1 in x + 1\n", "for (x, (uint8)0, 4) {\n f[x] = 1\n}\n",
]


@pytest.mark.parametrize("text", TRICKY)
def test_tricky_text_gives_the_builders_ir_or_declines(text: str) -> None:
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
def test_generated_statements_give_the_builders_ir_or_decline(e: str, shape: str) -> None:
    check(shape.format(e=e))
    check(e, "expr")


def test_parse_stmt_errors_unchanged_by_the_fast_path() -> None:
    """A malformed statement still fails with lark's message, line and column."""
    with pytest.raises(HalideParseError) as info:
        parse_stmt("f[0] = 1\nf[1] = a $ b\n")
    assert (info.value.line, info.value.column) == (2, 10)
    assert "unknown construct" in info.value.message


def test_float16_statement_gives_the_builders_ir() -> None:
    """A float16 statement as Halide 21 prints it for a target where float16 is compiled (x86 with f16c),
    its `h` literals exact (the capture log's precision: float_literals): float16 casts, loads, stores,
    comparisons, min / max / select, conversions to and from float32."""
    import halide as hl

    from pitchfork.frontend.capture import capture_stmt

    x = hl.Var("x")
    b, c = hl.ImageParam(hl.Float(16), 1, "b"), hl.ImageParam(hl.Float(32), 1, "c")
    f = hl.Func("f16_parse")
    h = hl.cast(hl.Float(16), c[x]) / hl.cast(hl.Float(16), 3.0)
    f[x] = hl.select(b[x] > h, hl.min(b[x], h), hl.max(b[x + 1], hl.cast(hl.Float(16), hl.f32(0.1))))
    f.vectorize(x, 16)
    cap = capture_stmt(f, [b, c], "x86-64-linux-avx2-fma-f16c", upto_intrinsics=True)
    assert "0.09997558593750000000000h" in cap.text and "float16x16" in cap.text
    buffers = {a.name: a.type.elem for a in cap.arguments if a.kind == "buffer"}
    buffers.update({o.name: o.types[0].elem for o in cap.output_buffers})
    check(cap.text, must_parse=True, buffers=buffers)
