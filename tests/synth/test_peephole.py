"""Peephole left sides (synth/peephole.py) and the run's own rules under a bring-up's hide list
(synth/rulesnap.py `hidden`): an instruction over an instruction that the rules produce is a left
side of its own, and a rule a bring-up finds again with a committed rule's text is not hidden by it."""

from __future__ import annotations

from pathlib import Path

from fpir.printer import to_text
from fpir.text import parse
from pitchfork.targets import load_target
from pitchfork.trs.rules import RuleSet, parse_rule
from synth.corpus import canonical
from synth.peephole import instruction_pairs
from synth.rulesnap import active, take
from synth.tasks import Task, _without, run_task


def _chain() -> object:
    load_target("hvx128")  # the instruction table the text names
    return parse("hvx.vmpy_acc(hvx.vmpy_acc(hvx.vmpa(a_u8, b_u8, s_i8, t_i8), x_u8, u_i8), y_u8, w_i8)")


def test_instruction_pairs_cut_below_the_inner_instruction() -> None:
    pairs = sorted(to_text(canonical(p)) for p in instruction_pairs(_chain()))  # type: ignore[arg-type]
    # the outer pair (its inner vmpy_acc's accumulator cut) and the inner one (vmpa's operands cut)
    assert pairs == [
        "hvx.vmpy_acc(hvx.vmpa(v0_u8, v1_u8, v2_i8, v3_i8), v4_u8, v5_i8)",
        "hvx.vmpy_acc(hvx.vmpy_acc(v0_i16, v1_u8, v2_i8), v3_u8, v4_i8)",
    ]
    load_target("hvx128")
    assert list(instruction_pairs(parse("hvx.vmpy(x_u8, s_i8) + y_i16"))) == []  # an FPIR root: a plain cut


def test_a_peephole_left_side_is_searched_and_verified_like_any_other() -> None:
    from synth.bringup import bring_up_hidden

    lhs = "hvx.vmpy_acc(hvx.vmpy_acc(v0_i16, v1_u8, v2_i8), v3_u8, v4_i8)"
    r = run_task(Task("lower", "hvx128", lhs, 2_000, hide=bring_up_hidden("hvx128"), topdown=False))
    assert r["status"] == "synthesized", r.get("reason")
    assert "hvx.vmpa_acc(" in r["rhs"] and r["verdict"].startswith("VALID")


def test_the_runs_own_rule_is_not_hidden_by_the_committed_rule_of_its_name(tmp_path: Path) -> None:
    base, out = tmp_path / "base", tmp_path / "out"
    base.mkdir()
    out.mkdir()
    same = "synth_lower_x_1: v0_i16 + v1_i16 -> v1_i16 + v0_i16  # committed"
    other = "synth_lower_x_2: v0_i16 - v1_i16 -> v0_i16 - v1_i16"
    (base / "lower_hvx.rules").write_text(same + "\n" + other + "\n")
    alone = take(out, base)
    assert alone.own == ()
    (out / "lower_hvx.rules").write_text(same.replace("committed", "found again") + "\n")
    snap = take(out, base)
    assert snap.own == ("synth_lower_x_1",)
    assert snap.stage_digest("lower:hvx128") != alone.stage_digest("lower:hvx128")  # the cache key sees it
    rules = RuleSet([parse_rule(ln.split("#")[0], "<t>", 1) for ln in (same, other)])
    hide = ("synth_lower_x_1", "synth_lower_x_2")
    with active(snap):
        assert [r.name for r in _without(rules, hide).rules] == ["synth_lower_x_1"]
    with active(alone):
        assert _without(rules, hide).rules == []
