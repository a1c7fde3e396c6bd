"""The paper's Sobel example (Figure 2): the Halide-IR input (2b) and its FPIR lifting (2c)."""

from __future__ import annotations

import numpy as np

from fpir.interp import evaluate
from fpir.printer import to_text
from fpir.text import parse
from fpir.types import u8
from fpir.z3enc import equivalent

FIG_2B = """
u8(
    min(
        absd(
            u16(a_u8) + u16(b_u8) * x(2) + u16(c_u8),
            u16(d_u8) + u16(e_u8) * x(2) + u16(f_u8)) +
        absd(
            u16(g_u8) + u16(h_u8) * x(2) + u16(i_u8),
            u16(j_u8) + u16(k_u8) * x(2) + u16(l_u8)),
        x(255)))
"""

FIG_2C = """
saturating_cast<u8>(
    absd(
        widening_add(a_u8, c_u8) + widening_shl(b_u8, x(1)),
        widening_add(d_u8, f_u8) + widening_shl(e_u8, x(1))) +
    absd(
        widening_add(g_u8, i_u8) + widening_shl(h_u8, x(1)),
        widening_add(j_u8, l_u8) + widening_shl(k_u8, x(1))))
"""

NAMES = "abcdefghijkl"
LANES = 100_000


def sobel_numpy(v: dict[str, np.ndarray]) -> np.ndarray:
    """The Sobel formula by hand in int64 (no intermediate can wrap: 4 * 255 + 4 * 255 < 2^16)."""
    w = {k: x.astype(np.int64) for k, x in v.items()}
    sobel_x = np.abs((w["a"] + 2 * w["b"] + w["c"]) - (w["d"] + 2 * w["e"] + w["f"]))
    sobel_y = np.abs((w["g"] + 2 * w["h"] + w["i"]) - (w["j"] + 2 * w["k"] + w["l"]))
    return np.minimum(sobel_x + sobel_y, 255)


def random_inputs(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    v = {n: rng.integers(0, 256, size=LANES, dtype=np.uint8) for n in NAMES}
    # make sure the saturating and the extreme lanes occur
    for n in NAMES:
        v[n][:4] = [0, 255, 0, 255] if n in "abcghi" else [255, 0, 0, 255]
    return v


def test_figure_2b_parses_and_type_checks() -> None:
    t = parse(FIG_2B)
    assert t.type == u8
    assert t.op == "cast" and t.args[0].op == "min"
    assert sorted(v.name for v in t.variables()) == list(NAMES)
    assert all(v.type == u8 for v in t.variables())
    assert parse(to_text(t)) is t


def test_figure_2b_evaluates_like_numpy() -> None:
    t = parse(FIG_2B)
    v = random_inputs(2)
    got = evaluate(t, v)
    assert got.dtype == np.uint8 and got.shape == (LANES,)
    want = sobel_numpy(v)
    assert np.array_equal(got.astype(np.int64), want)
    assert (want == 255).any() and (want == 0).any() and ((want > 0) & (want < 255)).any()


def test_figure_2c_evaluates_to_the_same_values() -> None:
    t2b, t2c = parse(FIG_2B), parse(FIG_2C)
    assert t2c.type == u8 and t2c.op == "saturating_cast"
    v = random_inputs(3)
    assert np.array_equal(evaluate(t2c, v), evaluate(t2b, v))
    assert np.array_equal(evaluate(t2c, v).astype(np.int64), sobel_numpy(v))


def test_figure_2_lifting_steps_are_valid() -> None:
    """The two rewrites that take 2b to 2c, proved by Z3 (the whole expression takes too long)."""
    kernel = equivalent(parse("u16(a_u8) + u16(b_u8) * x(2) + u16(c_u8)"),
                        parse("widening_add(a_u8, c_u8) + widening_shl(b_u8, x(1))"))
    assert kernel.valid, kernel
    clamp = equivalent(parse("u8(min(s_u16, x(255)))"), parse("saturating_cast<u8>(s_u16)"))
    assert clamp.valid, clamp
    wrong = equivalent(parse("u8(s_u16)"), parse("saturating_cast<u8>(s_u16)"))
    assert wrong.status == "INVALID" and wrong.counterexample["s"] > 255
