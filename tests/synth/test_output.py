"""Rule selection: duplicates and subsumed candidates are dropped, a lifting rule that would turn a
constant operand into a form the search never builds is rejected, written files parse and carry
provenance."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpir.text import parse
from pitchfork.selection.cost import cost
from pitchfork.selection.lift import lift_rules
from pitchfork.selection.synthesized import load_rules
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import parse_rule
from synth.output import Candidate, constant_regression, select, write_rules

HAND = list(lift_rules(False).rules)


def _cand(text: str, example: str, rhs_cost: tuple) -> Candidate:
    return Candidate(text, example, rhs_cost, ("bench",), 3, "polymorphic", "symbolic", "VALID")


def _lift_cost(rules, t):  # type: ignore[no-untyped-def]
    return cost(Rewriter(rules).rewrite(t))


def test_mixed_sign_rules_that_capture_constants_are_rejected() -> None:
    rule = parse_rule("x: cast<A>(v0_T) * v1_A -> extending_mul(v1_A, v0_T) if A == signed(wide(T))")
    why = constant_regression(rule, parse("i16(v0_u8) * v1_i16"), HAND)
    assert why is not None and "extending_mul(i16(2), v0_u8)" in why
    ok = parse_rule(
        "y: cast<A>(v0_T) << c0_A -> reinterpret<A>(widening_shl(v0_T, c0)) "
        "if A == signed(wide(T)) && c0 >= 0 && c0 <= tmax(T)"
    )
    assert constant_regression(ok, parse("i16(v0_u8) << 6"), HAND) is None


def test_a_rule_that_captures_constants_is_kept_for_variables_only() -> None:
    # the mixed-sign rule regresses when v1 is a constant; with `is_variable(v1_A)` it no longer fires
    # on constants (and still verifies, the guard states no fact about values)
    text = "cast<A>(v0_T) * v1_A -> extending_mul(v1_A, v0_T) if A == signed(wide(T))"
    rhs_cost = cost(parse("extending_mul(v1_i16, v0_u8)"))
    decisions = select([_cand(text, "i16(v0_u8) * v1_i16", rhs_cost)], "lift", HAND, _lift_cost)
    (d,) = decisions
    assert d.outcome == "written", d
    assert d.candidate.text == text + " && is_variable(v1_A)"
    guarded = parse_rule(f"{d.name}: {d.candidate.text}")
    assert constant_regression(guarded, parse("i16(v0_u8) * v1_i16"), HAND) is None


def test_duplicates_and_subsumed_candidates_are_not_written(tmp_path: Path) -> None:
    hand_text = [r for r in HAND if r.name == "widening_shl_of_cast"][0]
    body = hand_text.text().split(":", 1)[1].strip()
    dup = _cand(body, "i16(v0_u8) << 6", (32, 2))
    # a monomorphic instance of a hand-written rule: the TRS already reaches that cost
    sub = _cand(
        "cast<u16>(v0_u8) << c0_u16 -> widening_shl(v0_u8, c0) if c0 == 3", "u16(v0_u8) << 3", (16, 2)
    )
    decisions = select([dup, sub], "lift", HAND, _lift_cost)
    assert sorted(d.outcome for d in decisions) == ["duplicate", "subsumed"]
    path = tmp_path / "lift.rules"
    assert write_rules(path, decisions, "# header") == 0


def test_written_rules_parse_with_provenance(tmp_path: Path) -> None:
    hidden = [r for r in HAND if r.name != "widening_shl_of_cast"]
    c = _cand(
        "cast<A>(v0_T) << c0_A -> reinterpret<A>(widening_shl(v0_T, c0)) "
        "if A == signed(wide(T)) && c0 >= 0 && c0 <= tmax(T)",
        "i16(v0_u8) << 6",
        (32, 2),
    )
    decisions = select([c], "lift", hidden, _lift_cost)
    assert [d.outcome for d in decisions] == ["written"], decisions
    path = tmp_path / "lift.rules"
    assert write_rules(path, decisions, "# header") == 1
    assert [r.name for r in load_rules(path)] == [decisions[0].name]
    assert load_rules(path, exclude_from=["bench"]) == []
    assert "# from: bench; count: 3;" in path.read_text()


def _committed_lowering_rules() -> list:
    from pitchfork.selection.synthesized import SYNTH_DIR
    from pitchfork.targets import load_target

    for isa in ("arm64", "hvx128", "x86-avx2"):
        load_target(isa, include_synthesized=False)  # registers the target instructions
    return [r for f in sorted(SYNTH_DIR.glob("lower*.rules")) for r in load_rules(f)]


LOWERING = _committed_lowering_rules()


# One case per rule, so that pytest-xdist spreads the proofs over its workers. The committed lifting
# rules (rules/synthesized/lift*.rules) are verified at the same budget (VERIFY_RLIMIT), one case each,
# by tests/synth/test_verify.py::test_lifting_rule_verifies.
@pytest.mark.parametrize("rule", LOWERING, ids=[f"{r.source.rsplit('/', 1)[-1]}:{r.name}" for r in LOWERING])
def test_every_committed_synthesized_rule_verifies(rule) -> None:  # type: ignore[no-untyped-def]
    """rules/synthesized/lower_*.rules (every ISA's lowering) as committed: each rule VALID at every
    type instance."""
    from synth.output import VERIFY_RLIMIT
    from synth.verify import verify_rule

    res = verify_rule(rule, VERIFY_RLIMIT)
    assert res.status == "VALID", f"{rule.location}: {res.summary()}"


def test_rules_of_earlier_runs_that_others_subsume_leave_the_file(tmp_path: Path) -> None:
    from synth.output import subsumed_file_rules

    path = tmp_path / "lift.rules"
    path.write_text(
        "# header\n\n"
        "synth_lift_old: cast<u16>(v0_u8) << c0_u16 -> widening_shl(v0_u8, c0) if c0 == 3  # from: b; count: 1; "
        "cost: (16, 2); level: monomorphic/pinned; verdict: VALID; z3 x; example: u16(v0_u8) << 3\n"
        "synth_lift_noexample: cast<u16>(v0_u8) << c0_u16 -> widening_shl(v0_u8, c0) if c0 == 2  # from: b\n"
    )
    kept = HAND + list(load_rules(path))
    (gone,) = subsumed_file_rules(path, kept, _lift_cost)
    assert gone[0] == "synth_lift_old"  # widening_shl_of_cast (hand-written) does it; no example: kept
    decisions: list = []
    assert write_rules(path, decisions, "# header", [gone[0]]) == 1
    assert "synth_lift_old" not in path.read_text() and "synth_lift_noexample" in path.read_text()
