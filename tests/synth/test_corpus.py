"""The synthesis corpus: cuts of at most N nodes, canonical names, counts, sources; expression files
with malformed lines (file:line:col, the rest still read)."""

from __future__ import annotations

from pathlib import Path

from fpir.printer import to_text
from fpir.text import parse
from synth.corpus import Corpus, build_corpus, canonical, cuts, read_expression_file


def test_cuts_are_small_canonical_and_counted() -> None:
    c = Corpus()
    c.add_expression(parse("u8(min(u16(a_u8) + u16(b_u8), 255))"), "one")
    c.add_expression(parse("u16(x_u8) + u16(y_u8) + u16(z_u8)"), "two")
    keys = {e.key: e for e in c.entries()}
    # the same shape under different variable names is one entry, found in both sources
    assert keys["u16(v0_u8) + u16(v1_u8)"].count == 2
    assert keys["u16(v0_u8) + u16(v1_u8)"].sources == ("one", "two")
    assert "u8(min(v0_u16, 255))" in keys  # a child cut to a variable; the constant kept
    assert keys["u8(min(u16(v0_u8) + u16(v1_u8), 255))"].count == 1
    for e in c.entries():
        assert sum(1 for _ in _tree(e.term)) <= 10
        assert [v.name for v in _first_order(e.term)] == [f"v{i}" for i in range(len(_first_order(e.term)))]


def test_cut_size_limit_and_sharing() -> None:
    t = parse("(a_u16 + b_u16) * (a_u16 + b_u16) + c_u16")
    small = {to_text(canonical(x)) for x in cuts(t, 3)}
    # a shared sub-term cut twice is one variable (v0 * v0, not v0 * v1)
    assert small == {"v0_u16 + v1_u16", "v0_u16 * v0_u16"}
    assert "v0_u16 * v0_u16 + v1_u16" in {to_text(canonical(x)) for x in cuts(t, 5)}


def test_expression_file_errors_have_positions_and_do_not_stop_reading(tmp_path: Path) -> None:
    f = tmp_path / "exprs.txt"
    f.write_text(
        "# my pipeline\n"
        "u16(a_u8) + u16(b_u8)\n"
        "u16(a_u8) +\n"
        "\n"
        "  nosuchop(a_u8, b_u8)\n"
        "u8(u16(a_u8) * 2)  # trailing comment\n"
    )
    terms, errors = read_expression_file(f)
    assert [to_text(t) for t in terms] == ["u16(a_u8) + u16(b_u8)", "u8(u16(a_u8) * 2)"]
    assert [(e.line, e.column) for e in errors][0][0] == 3
    assert errors[1].line == 5 and errors[1].column == 3
    assert all(str(e).startswith(f"{f}:") for e in errors)
    corpus = build_corpus(files=[f])
    assert len(corpus.errors) == 2 and len(corpus) > 0
    assert all(e.sources == ("exprs",) for e in corpus.entries())


def _tree(t):  # type: ignore[no-untyped-def]
    yield t
    for a in t.args:
        yield from _tree(a)


def _first_order(t):  # type: ignore[no-untyped-def]
    out = []
    for x in _tree(t):
        if x.is_var and x not in out:
            out.append(x)
    return out


def test_benchmark_expressions_are_taken_after_the_loop_passes() -> None:
    """The corpus is what pitchfork.compile selects for: matmul's written-out 4-tap sums reach
    selection as reductions (the dot_products loop pass), so the lowering search sees the left sides
    the compiler lowers (pmaddwd_pairs on x86), not the sums the pass rewrote."""
    from synth.corpus import benchmark_expressions

    exprs = benchmark_expressions("matmul", ("x86-avx2",))
    assert any("vector_reduce_add_x2(u32(u16(" in str(t) for t in exprs)
