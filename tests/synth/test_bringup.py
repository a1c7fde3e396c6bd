"""ISA bring-up: the hand-written lowering is hidden from the search, and rediscovery judges each
hand rule at the nodes where it fires against the synthesized rules alone (cost and Z3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fpir.text import parse
from pitchfork.targets import load_target
from pitchfork.trs.rules import parse_rule
from synth.bringup import bring_up_hidden, hand_lowering_names, rediscovery
from synth.cli import main as synth_main, options, parser
from synth.output import existing_rules
from synth.verify import verify_rule


def test_rediscovery_judges_each_hand_rule_where_it_fires() -> None:
    load_target("arm64")
    udot = parse_rule("s1: vector_reduce_add_x4(cast<u32>(arm.umull(v0_u8, v1_u8))) -> arm.udot(0, v0_u8, v1_u8)",
                      "<test>", 1)
    umull = parse_rule("s2: widening_mul(v0_u8, v1_u8) -> arm.umull(v0_u8, v1_u8)", "<test>", 1)
    exprs = [parse("x_u32 + vector_reduce_add_x4(u32(widening_mul(y_u8, z_u8)))")]
    rep = rediscovery("arm64", exprs, [udot])
    assert rep.exercised == {"umull": 1, "udot_u32": 1, "udot_fold": 1}
    assert rep.rediscovered == {"udot_u32": 1}  # the umull site costs 3 generic instructions, not 1
    # (arm64's cost counts issue cycles first: the generic form's ushll + ushll2, mul, mul against umull + umull2)
    assert "synthesized 600 issue cycles x 100 (cortex-a76)" in rep.examples["umull"]
    rep = rediscovery("arm64", exprs, [udot, umull])
    assert rep.rediscovered == {"udot_u32": 1, "umull": 1} and abs(rep.share - 2 / 3) < 1e-9
    assert rep.hand_rules == len(hand_lowering_names("arm64"))


def test_bring_up_option_hides_the_isa_lowering() -> None:
    opts = options(parser().parse_args(["--bring-up", "hvx128", "--quick", "-o", "/tmp/unused-bring-up"]))
    assert opts.isas == ("hvx128",) and opts.stages == ("lower",)
    hidden = set(opts.hide)
    assert set(hand_lowering_names("hvx128")) <= hidden and set(bring_up_hidden("hvx128")) == hidden
    assert "vrmpy_uu" in hidden


def test_bring_up_rounds_find_the_dot_product_chain(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """From the instruction table alone: round 1 lowers widening_mul to umull (its rule for the whole
    reduction of widening_mul never fires once umull is in), round 2 the reduction of umull to udot into
    0, round 3 the accumulation into udot; all three hand rules that fire are rediscovered."""
    f = tmp_path / "dot.txt"
    f.write_text("x_u32 + vector_reduce_add_x4(u32(widening_mul(y_u8, z_u8)))\n")
    out_dir = tmp_path / "o"
    code = synth_main(["--bring-up", "arm64", "--from", str(f), "--no-progress", "-o", str(out_dir)])
    out = capsys.readouterr().out
    assert code == 0
    assert "lower:arm64 round 3" in out
    load_target("arm64")
    text = (out_dir / "lower_arm_neon.rules").read_text()
    assert "-> arm.udot(0, v0_u8, v1_u8)" in text and "-> arm.udot(v0_u32, v1_u8, v2_u8)" in text
    rep = json.loads((out_dir / "bringup-arm64.json").read_text())
    assert rep["exercised"] == {"umull": 1, "udot_u32": 1, "udot_fold": 1}
    assert rep["rediscovered"] == rep["exercised"] and rep["share"] == 1.0
    # one udot either way: the synthesized-only selection costs what the hand-written one does
    assert rep["selection_instructions"] == {"dot": {"hand": 200, "synthesized": 200}}  # 4 udot, 0.5 cycles each
    assert "selected issue cycles x 100 (cortex-a76), hand-written lowering / synthesized alone: geomean 1.000x" in out
    for r in existing_rules(out_dir / "lower_arm_neon.rules"):
        assert verify_rule(r).status == "VALID", r.name


def test_a_sum_of_widened_bytes_is_a_lowering_task() -> None:
    """Cuts with a reduction and no FPIR op are searched too (udot / vrmpy by 1, addp of addp)."""
    from synth.driver import Options, lower_tasks

    tasks, _ = lower_tasks({"s": [parse("vector_reduce_add_x4(u32(x_u8))")]}, "arm64", Options(max_lower_lhs=0))
    assert sorted(t.lhs for t in tasks) == ["vector_reduce_add_x4(u32(v0_u8))", "vector_reduce_add_x4(v0_u32)"]


def test_compiler_judge_sees_children_as_the_synthesized_rules_lower_them() -> None:
    """x86 pmaddwd_pairs: the hand TRS lowers widening_mul to x86.wmul_pmaddwd before the reduction
    rule fires, so the strict judge hands the synthesized rules a left side holding the hand rules'
    instruction and counts a miss; the compiler judge lowers the lifted sub-term whole by each rule set
    and finds the same single instruction."""
    load_target("x86-avx2")
    rule = parse_rule("s1: vector_reduce_add_x2(widening_mul(v0_i16, v1_i16)) -> x86.pmaddwd_pairs(v0_i16, v1_i16)",
                      "<test>", 1)
    exprs = [parse("vector_reduce_add_x2(widening_mul(x_i16, y_i16))")]
    strict = rediscovery("x86-avx2", exprs, [rule], judge="strict")
    assert strict.exercised == {"wmul_pmaddwd": 1, "pmaddwd_pairs": 1}
    assert "pmaddwd_pairs" not in strict.rediscovered
    assert "x86.wmul_pmaddwd(x_i16, y_i16)" in strict.examples["pmaddwd_pairs"]
    compiler = rediscovery("x86-avx2", exprs, [rule], judge="compiler")
    assert compiler.exercised == strict.exercised
    assert compiler.rediscovered == {"wmul_pmaddwd": 1, "pmaddwd_pairs": 1} and compiler.share == 1.0
    assert rediscovery("x86-avx2", exprs, [rule], judge="subtree").rediscovered == compiler.rediscovered
    # without the rule the reduction stays generic and the compiler judge counts the miss at the root
    none = rediscovery("x86-avx2", exprs, [], judge="compiler")
    assert "pmaddwd_pairs" not in none.rediscovered
    assert "instructions at the root" in none.examples["pmaddwd_pairs"]
    with pytest.raises(ValueError, match="judge must be"):
        rediscovery("x86-avx2", exprs, [rule], judge="lenient")


def test_compiler_judge_charges_a_child_to_the_child_not_the_root() -> None:
    """arm64 `saturating_cast<u8>(absd(x_u16, y_u16))` with uqxtn found but not uabd: the subtree judge
    counts the uqxtn site a miss (its absd child is generic code), the compiler judge counts it found
    (the root's share is the one narrowing instruction, as the hand rule's) and uabd a miss."""
    load_target("arm64")
    uqxtn = parse_rule("s1: saturating_cast<u8>(v0_u16) -> arm.uqxtn(v0_u16)", "<test>", 1)
    exprs = [parse("saturating_cast<u8>(absd(x_u16, y_u16))")]
    comp = rediscovery("arm64", exprs, [uqxtn], judge="compiler")
    sub = rediscovery("arm64", exprs, [uqxtn], judge="subtree")
    assert comp.exercised == sub.exercised == {"uabd": 1, "uqxtn": 1}
    assert comp.rediscovered == {"uqxtn": 1}
    assert sub.rediscovered == {}


def test_judge_folder_rejudges_a_finished_bring_up(tmp_path: Path) -> None:
    from synth.bringup import judge_folder, main as bringup_main

    (tmp_path / ".synth-cache").mkdir()
    (tmp_path / ".synth-cache" / "corpus-matmul-x86-avx2-pitchfork.txt").write_text(
        "vector_reduce_add_x2(widening_mul(x_i16, y_i16))\n")
    (tmp_path / "lower_x86_avx2.rules").write_text(
        "s1: vector_reduce_add_x2(widening_mul(v0_i16, v1_i16)) -> x86.pmaddwd_pairs(v0_i16, v1_i16)\n")
    reps = judge_folder(tmp_path, "x86-avx2")
    assert reps["strict"].share == 0.5 and reps["compiler"].share == 1.0 and reps["subtree"].share == 1.0
    assert bringup_main([str(tmp_path), "x86-avx2", "--judge", "compiler", "--json", str(tmp_path / "j.json")]) == 0
    assert json.loads((tmp_path / "j.json").read_text())["compiler"]["share"] == 1.0
    with pytest.raises(SystemExit):
        bringup_main([str(tmp_path), "arm64"])  # no arm64 corpus there: a one-line error
    # a rule the regression check withdrew (withdrawn.txt) is judged as the compiler loads the folder: absent
    (tmp_path / "withdrawn.txt").write_text("s1  # bring-up regression check: matmul slower with it\n")
    reps = judge_folder(tmp_path, "x86-avx2", judges=("compiler",))
    assert reps["compiler"].share == 0.5 and not reps["compiler"].rediscovered.get("pmaddwd_pairs")


def test_strict_judge_keeps_the_broadcast_of_a_site() -> None:
    """The strict judge reads its sites back from the rewriter's text trace, which cannot state that a
    leaf is a broadcast: the expressions' uniform leaves are marked again, so an x86 shift by a count
    in a register is judged as it fired (the synthesized uniform rule matches it; without the marks
    the site was a per-lane shift that no uniform rule may take)."""
    from fpir.ops import make
    from fpir.term import var
    from fpir.types import parse_type
    from synth.driver import _corpus_text

    load_target("x86-avx2")
    expr = make("shr", var("x", parse_type("i16")), var("s", parse_type("u16"), uniform=True))
    rule = parse_rule("s1: v0_i16 >> v1_u16 -> x86.psra_uniform(v0_i16, v1_u16) "
                      "if is_variable(v1_u16) && is_uniform(v1_u16)", "<test>", 1)
    assert verify_rule(rule).status == "VALID"
    rep = rediscovery("x86-avx2", [expr], [rule], judge="strict")  # type: ignore[list-item]
    assert "psra_uniform" in rep.exercised
    assert rep.rediscovered.get("psra_uniform") == rep.exercised["psra_uniform"], rep.examples
    # a folder's corpus file keeps the marks (`-u` files), so judging the folder again agrees
    assert "\tuniform=s" in _corpus_text(expr)  # type: ignore[arg-type]


def test_judge_folder_reads_the_corpus_with_its_uniform_leaves(tmp_path: Path) -> None:
    from fpir.ops import make
    from fpir.term import var
    from fpir.types import parse_type
    from synth.bringup import judge_folder
    from synth.driver import _corpus_text

    load_target("x86-avx2")
    expr = make("shr", var("x", parse_type("i16")), var("s", parse_type("u16"), uniform=True))
    (tmp_path / ".synth-cache").mkdir()
    (tmp_path / ".synth-cache" / "corpus-softmax-x86-avx2-pitchfork-u.txt").write_text(_corpus_text(expr) + "\n")  # type: ignore[arg-type]
    (tmp_path / "lower_x86_avx2.rules").write_text(
        "s1: v0_i16 >> v1_u16 -> x86.psra_uniform(v0_i16, v1_u16) if is_variable(v1_u16) && is_uniform(v1_u16)\n")
    reps = judge_folder(tmp_path, "x86-avx2", judges=("strict", "compiler"))
    for rep in reps.values():
        assert rep.exercised.get("psra_uniform") and rep.rediscovered.get("psra_uniform") == rep.exercised["psra_uniform"]
