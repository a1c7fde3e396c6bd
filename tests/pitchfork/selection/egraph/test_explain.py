"""`--explain` derivations (pitchfork/selection/egraph/explain.py): an ordered chain from the input to the
engine's result, each step one named rule of a rule file applied at one position; every step is replayed
(the rule re-applied there gives the step's term) and its two terms are checked equal by exhaustive
evaluation with the reference interpreter (8-bit inputs) or by Z3."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from fpir.text import parse
from pitchfork.selection.egraph.engine import Budget
from pitchfork.selection.egraph.explain import NORMALIZE, DROP_FLAGS, explain_derivation, format_derivation, replay, rule_registry
from pitchfork.selection.egraph.validate import exhaustive, prove_equal

ROOT = Path(__file__).resolve().parents[4]
SMALL = Budget(rounds=3, nodes=3000)


def _check_chain(text: str, budget: Budget = SMALL) -> list:
    t = parse(text)
    res, d = explain_derivation(t, budget=budget)
    assert d.complete, d.note
    assert d.start is t and d.end is res.term
    prev = t
    for s in d.steps:
        assert s.before is prev  # a chain
        assert s.rule in rule_registry() or s.rule in (NORMALIZE, DROP_FLAGS), s.rule
        assert replay(s) == "", (s.rule, str(s.before), str(s.after))
        same = exhaustive(s.before, s.after)
        if same is None:  # too many input points: Z3
            assert prove_equal(s.before, s.after, 60_000_000) == "", (s.rule, str(s.before), str(s.after))
        else:
            assert same == "", (s.rule, str(s.before), str(s.after), same)
        prev = s.after
    return list(d.steps)


@pytest.mark.parametrize("text, rules", [
    ("i16(a_u8) + (0 - i16(b_u8))", {"add_negated", "widening_sub_of_casts"}),
    ("u8((u16(a_u8) + 1 + u16(b_u8) - 1) >> 1)", {"add_sub_cancel"}),
    ("(u16(a_u8) * 2 + u16(b_u8) * 2) / 2", {"mul_add_factor", "shr_of_shl_in_range"}),
    ("saturating_cast<u8>((i16(a_u8) + i16(a_u8) * 2 - i16(b_u8) * 2) >> 4)", {"mul_sub_factor"}),
])
def test_egraph_derivation_replays_step_by_step(text: str, rules: set[str]) -> None:
    steps = _check_chain(text)
    names = {s.rule for s in steps}
    assert rules <= names, names
    # an algebra equivalence (rules/egraph/) and a lifting rule (rules/lift/) both take part
    assert any("rules/egraph/" in s.source for s in steps) and any("rules/lift/" in s.source for s in steps)


def test_greedy_result_is_derived_by_lifting_rules() -> None:
    steps = _check_chain("u8((u16(a_u8) + u16(b_u8) + 1) >> 1)")
    assert steps and all("rules/lift/" in s.source for s in steps)


def test_replay_rejects_a_wrong_step() -> None:
    _, d = explain_derivation(parse("i16(a_u8) + (0 - i16(b_u8))"), budget=SMALL)
    s = d.steps[0]
    assert replay(s) == ""
    assert replay(replace(s, rule="add_comm")) != ""
    assert replay(replace(s, rule="no_such_rule")) != ""
    assert replay(replace(s, path=(0,))) != ""
    assert replay(replace(s, after=s.before)) != ""


def test_format_names_each_step_and_the_extracted_term() -> None:
    res, d = explain_derivation(parse("(u16(a_u8) * 2 + u16(b_u8) * 2) / 2"), budget=SMALL)
    lines = format_derivation(d, res.extracted)
    assert lines[0].startswith(f"derivation ({len(d.steps)} steps")
    assert "input: (u16(a_u8) * 2 + u16(b_u8) * 2) / 2" in lines[1]
    assert any("mul_add_factor [rules/egraph/algebra.rules:" in x for x in lines)
    assert any("(the extracted term)" in x for x in lines)


def test_cli_explain_prints_the_derivation() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pitchfork", "lift", "--engine", "egraph", "--explain",
                          "i16(a_u8) + (0 - i16(b_u8))"], capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    assert "derivation (2 steps)" in out.stderr
    assert "add_negated [rules/egraph/algebra.rules:" in out.stderr
    assert "widening_sub_of_casts [rules/lift/widening.rules:" in out.stderr


def test_cli_batch_with_egraph_engine_writes_json(tmp_path: Path) -> None:
    import json

    src = tmp_path / "in.txt"
    src.write_text("i16(a_u8) + (0 - i16(b_u8))\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-m", "pitchfork", "lift", "--engine", "egraph", "--batch", str(src)],
                         capture_output=True, text=True, cwd=ROOT, env=env)
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout.strip().splitlines()[0])
    assert "widening_sub" in row["lifted"] and row["engine"] == "egraph"


def test_factoring_a_large_constant_is_derived() -> None:
    # blur3x3's key expression with its constant split: x * 43690 + x = x * 43691 (mul_add_self_factor,
    # rules/egraph/algebra.rules; the constant folds as the right side is built)
    steps = _check_chain("u16((u32(a_u16) * 43690 + u32(a_u16)) >> 17)", Budget())
    assert steps[0].rule == "mul_add_self_factor"
    assert str(steps[-1].after) == "mul_shr(a_u16, 43691, 17)"


def test_deeper_algebra_is_derived_by_the_wider_search() -> None:
    # softmax's key expression with the shift folded into the constant (bench_keys.txt): the constant
    # is split (1482880 = 23170 << 6) and re-associated four levels below the root, which only the
    # second, wider search limits of explain.LIMITS reach
    from pitchfork.selection.egraph.explain import LIMITS

    assert LIMITS[1].depth > LIMITS[0].depth
    steps = _check_chain("saturating_cast<i16>(((i32(a_u8) - i32(b_u8)) * 1482880 + 16384) >> 15)", Budget())
    assert {"mul_split_pow2", "shl_add_const_factor"} <= {s.rule for s in steps}
    assert any(len(s.path) >= 4 for s in steps)
    assert str(steps[-1].after) == "rounding_mul_shr(widening_sub(a_u8, b_u8), 11585, 8)"
