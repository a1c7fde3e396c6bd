"""The variant-program suite (benchmarks/variants/variants.txt: FPIR idioms; bench_keys.txt: the 16
benchmarks' key expressions): every variant is exactly equal to its idiom's canonical FPIR: exhaustively where the inputs span at most 2^17 points (two 8-bit or one 16-bit
variable), by Z3 otherwise (the two 16-bit product groups: ~40 s of Z3 each on the CI machine, so in the
`extended` set, as are the 32-bit Halide-style pairs; CI checks them on 2^16 inputs: every edge value pair and a seeded random sample), and
on a sample the e-graph engine reaches the canonical ops where the greedy TRS does not (the full run:
`python3 -m benchmarks.variants`)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.variants import DATA, hit, load
from fpir.interp import evaluate
from fpir.text import parse
from pitchfork.selection.cost import cost
from fpir.z3enc import equivalent
from pitchfork.selection.egraph.engine import Budget, lift_egraph
from pitchfork.selection.lift import lift

GROUPS = load()
KEYS = load(DATA.with_name("bench_keys.txt"))
PAIRS = load(DATA.with_name("halide_pairs.txt"))
ALL = GROUPS + KEYS + PAIRS
IDS = [f"variants-{g.name}" for g in GROUPS] + [f"keys-{g.name}" for g in KEYS] + [f"halide-{g.name}" for g in PAIRS]


def _vars(*terms):
    return sorted({v.name: v for t in terms for v in t.variables()}.values(), key=lambda v: v.name)


def _exhaustive(group) -> bool:
    return int(np.prod([1 << v.type.bits for v in _vars(parse(group.canonical))])) <= 1 << 17


def _same_on(a, b, env) -> bool:
    return bool(np.array_equal(np.asarray(evaluate(a, env)), np.asarray(evaluate(b, env))))


def _equal(a, b) -> bool:
    vs = _vars(a, b)
    if int(np.prod([1 << v.type.bits for v in vs])) <= 1 << 17:
        grids = np.meshgrid(*[np.arange(v.type.min, v.type.max + 1) for v in vs], indexing="ij")
        return _same_on(a, b, {v.name: g.ravel().astype(v.type.np_dtype) for v, g in zip(vs, grids)})
    return equivalent(a, b).status == "VALID"


def _sampled_equal(a, b) -> bool:
    rng = np.random.default_rng(28)
    vs = _vars(a, b)
    edges = [np.array([v.type.min, v.type.min + 1, -1, 0, 1, v.type.max - 1, v.type.max]) for v in vs]
    grids = np.meshgrid(*edges, indexing="ij")
    env = {}
    for v, g in zip(vs, grids):
        rand = rng.integers(v.type.min, v.type.max + 1, size=1 << 16)
        env[v.name] = np.concatenate([g.ravel(), rand]).astype(v.type.np_dtype)
    return _same_on(a, b, env)


def test_suite_shape() -> None:
    assert len(GROUPS) >= 14
    assert all(len(g.variants) >= 5 for g in GROUPS)
    assert len(PAIRS) >= 30


def test_every_benchmark_has_a_key_expression_group() -> None:
    from benchmarks import registry

    assert sorted(g.name for g in KEYS) == sorted(registry.NAMES)
    assert all(len(g.variants) >= 5 and _exhaustive(g) for g in KEYS)
    for g in KEYS:  # the first spelling is the benchmark's own; its greedy lifting is the canonical form
        assert str(lift(parse(g.variants[0]))) == g.canonical, g.name


def test_hit_criterion() -> None:
    canon = parse("widening_add(widening_mul(x_i8, 6), widening_mul(y_i8, -5))")
    assert hit(parse("widening_sub(widening_mul(x_i8, 6), widening_mul(y_i8, 5))"), canon)
    assert not hit(parse("i32(x_i8) * 6 - i32(y_i8) * 5"), canon)
    # a strictly cheaper, narrower spelling (the sum fits i16) is a hit, but not a strict one
    canon32 = parse("saturating_cast<u8>(widening_add(widening_mul(i8(20), a_u8), widening_mul(i8(15), b_u8)) >> 5)")
    narrow = parse("saturating_cast<u8>(widening_mul(i8(20), a_u8) + widening_mul(i8(15), b_u8) >> 5)")
    assert hit(narrow, canon32) and not hit(narrow, canon32, strict=True)


@pytest.mark.parametrize("group", [pytest.param(g, marks=() if _exhaustive(g) else pytest.mark.extended)
                                   for g in ALL], ids=IDS)
def test_variants_equal_canonical(group) -> None:
    canon = parse(group.canonical)
    for text in group.variants:
        assert _equal(parse(text), canon), text


@pytest.mark.parametrize("group", [g for g in ALL if not _exhaustive(g)],
                         ids=[i for g, i in zip(ALL, IDS) if not _exhaustive(g)])
def test_wide_variants_sampled(group) -> None:
    canon = parse(group.canonical)
    for text in group.variants:
        assert _sampled_equal(parse(text), canon), text


@pytest.mark.parametrize("text,name", [
    ("i32(x_i8) * 3 + i32(y_i8) * 5", "widening_mul_sum"),
    ("widening_shl(a_u8, 1) + widening_shl(b_u8, 1)", "shifted_sum"),
    ("u8(max(i16(a_u8) - i16(b_u8), i16(b_u8) - i16(a_u8)))", "absd"),
])
def test_egraph_reaches_what_greedy_misses(text: str, name: str) -> None:
    canon = parse(next(g.canonical for g in GROUPS if g.name == name))
    t = parse(text)
    assert not hit(lift(t), canon)
    assert hit(lift_egraph(t, budget=Budget(rounds=4, nodes=3000)).term, canon)


@pytest.mark.parametrize("text,name", [
    # the rounding constant folded into another add: only the sketch-guided lifting pass sees (x + 2) >> 2
    ("u8((u16(a_u8) + u16(b_u8) * 2 + 2) >> 2)", "gaussian3x3"),
    # a multiple of the shift joins it: x * 64 - 8192 = (x << 6) - 8192 = (x - 128) << 6 (shl_sub_const_factor)
    ("(i32(a_u8) * 64 - 8192) * (i32(b_u8) * 64 - 8192)", "mul"),
    # x * 8 - x = x * 7 (mul_const_sub_self)
    ("u32(a_u8) * 8 - u32(a_u8) + u32(b_u8) * 9", "matmul"),
    # x - y * 2 = x + y * -2 (sub_mul_const_as_add), then widening_mul(b, i8(-2))
    ("saturating_cast<u8>((i16(a_u8) * 3 - i16(b_u8) * 2) >> 4)", "conv3x3a16"),
    # u8(min(x_u32, 255)) through saturating_cast<u16> (saturating_cast_split) to rounding_mul_shr
    ("u8(min((u32(u16(a_u8) + u16(b_u8)) * 21845 + 32768) >> 16, 255))", "average_pool"),
    # x * 43690 + x = x * 43691 (mul_add_self_factor, any constant), then mul_shr
    ("u16((u32(a_u16) * 43690 + u32(a_u16)) >> 17)", "blur3x3"),
    # b * 3 - 15 = (b - 5) * 3 (mul_sub_const_factor), then (a - 3) * (b - 5) by mul_sub_factor
    ("i32(a_u8) * i32(b_u8) - i32(a_u8) * 5 - i32(b_u8) * 3 + 15", "fully_connected"),
    # a difference of two products by one constant: factored, split and narrowed in five rounds
    ("saturating_cast<i16>((i32(a_u8) * 97088 - i32(b_u8) * 97088 + 16384) >> 15)", "add"),
])
def test_egraph_reaches_key_expressions_greedy_misses(text: str, name: str) -> None:
    canon = parse(next(g.canonical for g in KEYS if g.name == name))
    t = parse(text)
    assert not hit(lift(t), canon)
    res = lift_egraph(t, budget=Budget())
    assert hit(res.term, canon), str(res.term)
    assert _equal(res.term, t)


def test_power_of_two_factor_of_a_constant_reaches_rounding_mul_shr() -> None:
    """i32(d) * 97088 = (i32(d) << 6) * 1517 (mul_split_pow2) = widening_mul(d << 6, 1517) for d in
    [-255, 255] (bounded.rules widening_shl_times_const), then rounding_mul_shr through the sketch of
    multiply.rules' saturating_cast(rounding_shr(widening_mul(..))) rule."""
    t = parse("saturating_cast<i16>(((i32(a_u8) - i32(b_u8)) * 97088 + 16384) >> 15)")
    res = lift_egraph(t, budget=Budget(rounds=4))
    assert str(res.term) == "rounding_mul_shr(widening_sub(a_u8, b_u8) << 6, 1517, 15)"
    assert _equal(res.term, t)
    # a fifth round (the default) moves the shift into the multiply's: cheaper, and still exact
    five = lift_egraph(t, budget=Budget(rounds=5))
    assert str(five.term) == "rounding_mul_shr(widening_sub(a_u8, b_u8), 1517, 9)"
    assert cost(five.term) < cost(res.term) and _equal(five.term, t)


def test_sketch_guidance_is_what_finds_the_folded_rounding_constant() -> None:
    canon = parse(next(g.canonical for g in KEYS if g.name == "gaussian3x3"))
    t = parse("u8((u16(a_u8) + (u16(b_u8) << 1) + 2) >> 2)")
    assert not hit(lift_egraph(t, budget=Budget(guided=False)).term, canon)
    assert hit(lift_egraph(t, budget=Budget(guided=True)).term, canon)
