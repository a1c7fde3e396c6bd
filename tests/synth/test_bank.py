"""Term banks (synth/bank.py): native fast paths agree with the op table, OE pruning, sharing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.opspec import spec
from fpir.text import parse
from fpir.types import ScalarType, parse_type
from pitchfork.selection.cost import cost
from synth import bank
from synth.search import base_examples, synthesize
from synth.tasks import lifting_grammar

INT_TYPES = [parse_type(n) for n in ("u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64")]


def _random(t: ScalarType, n: int, rng: np.random.Generator) -> np.ndarray:
    import random

    r = random.Random(int(rng.integers(1 << 30)))
    edges = [t.min, t.max, 0, 1, -1 if t.signed else 2, t.bits, t.bits - 1, t.bits + 1]
    vals = [r.randint(t.min, t.max) for _ in range(n - len(edges))]
    return np.array(edges + vals, dtype=object).astype(t.np_dtype)


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.name)
def test_native_fast_paths_agree_with_the_op_table(t: ScalarType) -> None:
    rng = np.random.default_rng(7)
    a, b = _random(t, 64, rng), _random(t, 64, rng)
    for op in ("add", "sub", "mul", "min", "max", "and", "or", "xor"):
        ref = spec(op).np_impl([a, b], [t, t], t)
        assert np.array_equal(bank.fast_apply(op, [a, b], [t, t], t), ref), op
    assert np.array_equal(bank.fast_apply("not", [a], [t], t), spec("not").np_impl([a], [t], t))
    for rt in INT_TYPES:
        for op in ("cast", "reinterpret"):
            if op == "reinterpret" and rt.bits != t.bits:
                continue
            ref = spec(op).np_impl([a], [t], rt)
            assert np.array_equal(bank.fast_apply(op, [a], [t], rt), ref), (op, rt)
    for at in INT_TYPES:
        if at.bits > 32 and not at.signed:
            continue
        amounts = np.array([0, 1, t.bits - 1, t.bits, t.bits + 3, -1, -t.bits, -t.bits - 1, at.min, at.max - 1, 65, -65,
                            2, 3, -2, -3]
                           * 4, dtype=object)
        amounts = np.array([at.wrap(int(x)) for x in amounts], dtype=object).astype(at.np_dtype)
        for op in ("shl", "shr"):
            ref = spec(op).np_impl([a, amounts], [t, at], t)
            got = bank.fast_apply(op, [a, amounts], [t, at], t)
            assert np.array_equal(got, ref), (op, at, a, amounts, got, ref)


@pytest.mark.parametrize("t", INT_TYPES, ids=lambda t: t.name)
def test_native_saturating_cast_agrees_with_its_definition(t: ScalarType) -> None:
    """saturating_cast's native path (no 128-bit object arrays) against the interpreter, which
    evaluates its definition (the clamp in a type twice as wide)."""
    a = _random(t, 64, np.random.default_rng(11))
    for rt in INT_TYPES:
        ref = evaluate(parse(f"saturating_cast<{rt.name}>(x_{t.name})"), {"x": a})
        got = bank.fast_apply("saturating_cast", [a], [t], rt)
        assert got.dtype == rt.np_dtype and np.array_equal(got, ref), rt


def test_fpir_ops_through_templates_agree_with_the_interpreter() -> None:
    rng = np.random.default_rng(3)
    u8, i16 = parse_type("u8"), parse_type("i16")
    a, b = _random(u8, 64, rng), _random(u8, 64, rng)
    for text in ("widening_mul(x_u8, y_u8)", "rounding_halving_add(x_u8, y_u8)", "absd(x_u8, y_u8)",
                 "saturating_sub(x_u8, y_u8)"):
        t = parse(text)
        ref = evaluate(t, {"x": a, "y": b})
        got = bank.fast_apply(t.op, [a, b], [u8, u8], t.type)
        assert np.array_equal(got, ref), text
    c = _random(i16, 64, rng)
    t = parse("saturating_cast<u8>(x_i16)")
    assert np.array_equal(bank.fast_apply("saturating_cast", [c], [i16], u8), evaluate(t, {"x": c}))


def _grammar_and_bank(lhs_text: str) -> tuple:
    lhs = parse(lhs_text)
    g = lifting_grammar(lhs, lhs)
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = list(base_examples(tuple((v.name, v.type) for v in vars_)))
    return lhs, g, bank.Bank(g, vars_, rows), vars_, rows


def test_representatives_have_distinct_fingerprints_and_their_recorded_values() -> None:
    lhs, g, b, vars_, rows = _grammar_and_bank("(v0_u8 + v1_u8) >> 1")
    b.ensure(3, 10**6)
    env = {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    seen: set[tuple] = set()
    for (level, t, _factor), blk in b.blocks.items():
        for k, gid in enumerate(blk.gids.tolist()):
            term = b.term(gid)
            assert term.type == t
            vals = np.broadcast_to(evaluate(term, env), (len(rows),)).astype(t.np_dtype)
            assert np.array_equal(vals, blk.vals[k]), term
            key = (t, vals.tobytes())
            assert key not in seen, term  # observational equivalence: one term per fingerprint
            seen.add(key)
    # every argument combination counted before a level was built
    assert b.candidates <= sum(b.level_count)


def test_budget_is_a_count_known_before_a_level_is_built() -> None:
    lhs, g, b, _, _ = _grammar_and_bank("(v0_u8 + v1_u8) >> 1")
    b.ensure(2, 10**6)
    built = len(b.levels)
    with pytest.raises(bank.BudgetExceeded):
        b.ensure(9, sum(b.level_count))  # no room for one more level
    assert len(b.levels) == built  # nothing half-built


def test_shared_and_fresh_banks_give_the_same_answer() -> None:
    lhs = parse("u8((u16(v0_u8) + u16(v1_u8) + 1) >> 1)")
    bank.clear_banks()
    fresh = synthesize(lhs, lifting_grammar(lhs, lhs), cost(lhs), max_terms=200_000)
    # warm the shared bank with another left side of the same grammar first
    other = parse("u8((u16(v0_u8) + u16(v1_u8) + 1) >> 1) >> 1")
    g_other = lifting_grammar(other, other)
    g = lifting_grammar(lhs, lhs)
    assert g.key == g_other.key
    synthesize(other, g_other, cost(other), max_terms=200_000)
    shared = synthesize(lhs, g, cost(lhs), max_terms=200_000)
    assert fresh.status == shared.status == "found"
    assert fresh.rhs is shared.rhs and fresh.terms == shared.terms
    assert str(fresh.rhs) == "rounding_halving_add(v0_u8, v1_u8)"
    bank.clear_banks()


def test_splits_and_tuples_enumerate_every_combination() -> None:
    assert bank._splits(2, 2) == [(0, 2), (1, 1), (2, 0)]
    assert len(bank._splits(4, 3)) == len([p for p in itertools.product(range(5), repeat=3) if sum(p) == 4])


def test_top_matches_hold_every_match_of_the_built_level_of_that_type() -> None:
    """`top_matches` (the last level for one type, not built) finds every candidate of that type the
    built level matches, and nothing of another type or other values."""
    from fpir.printer import to_text
    from pitchfork.targets import load_target
    from synth.search import _lhs_hash, lane_names
    from synth.tasks import lowering_grammar

    load_target("arm64")
    lhs = parse("u8((v0_i16 + v1_i16) >> 8)")
    g = lowering_grammar(lhs, "arm64")
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = list(base_examples(lane_names(vars_, {})))
    target, th = _lhs_hash(lhs, vars_, rows)
    b = bank.Bank(g, vars_, rows)
    b.ensure(0, 10**6)
    top = b.top_matches(1, lhs.type, th)
    assert b.top_count(1, lhs.type) < b._count(1)
    b.ensure(1, 10**6)
    full = {to_text(b.candidate_term(1, i)) for i in b.matches(1, th).tolist()}
    full = {t for t in full if parse(t).type == lhs.type}
    assert full and full <= {to_text(t) for t in top}
    env = {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    for t in top:
        assert t.type == lhs.type
        assert np.array_equal(np.asarray(evaluate(t, env)).astype(target.dtype), target)


def test_a_compound_leaf_is_a_level_0_entry_with_its_values() -> None:
    """A compound leaf (hoisted work on a uniform operand, synth/tasks.py `hoisted_leaves`) is built at
    level 0 with its values on the rows, and terms over it evaluate as it does."""
    from dataclasses import replace

    from fpir.ops import make
    from fpir.term import const, var
    from synth.search import lane_names
    from synth.tasks import lowering_grammar

    u = var("v1", parse_type("u16"), uniform=True)
    lhs = make("shr", var("v0", parse_type("u16")), u)
    leaf = make("min", u, const(16, u.type))
    g = lowering_grammar(lhs, "x86-avx2")
    g = replace(g, leaves=g.leaves + (leaf,), key=None)
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = base_examples(lane_names(vars_, {}))
    b = bank.Bank(g, vars_, rows)
    b.ensure(1, 10**6)
    env = {v.name: np.array([r[i] for r in rows], dtype=v.type.np_dtype) for i, v in enumerate(vars_)}
    terms = [b.term(int(gid)) for blk in b.blocks.values() for gid in blk.gids]
    assert leaf in terms
    for (level, t, _f), blk in b.blocks.items():
        for k, gid in enumerate(blk.gids.tolist()):
            if any(x.args and spec(x.op).reads_lane0 for x in b.term(gid).walk()):
                continue  # one lane per row there (synth/search.py `_same_values`)
            vals = np.broadcast_to(evaluate(b.term(gid), env), (len(rows),)).astype(t.np_dtype)
            assert np.array_equal(vals, blk.vals[k])
