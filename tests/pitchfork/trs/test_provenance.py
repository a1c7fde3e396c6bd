"""Leave-one-out: rules whose `# from:` provenance names a benchmark are dropped in its context."""

from __future__ import annotations

from pathlib import Path

from pitchfork.selection.lift import lift_rules
from pitchfork.targets import load_target
from pitchfork.trs.provenance import excluded_benchmark, excluding_rules_from, load_filtered, provenance_by_line

RULES = """\
# hand-written, no provenance
r_plain: x_u8 + 0 -> x_u8
r_add: x_u8 * 1 -> x_u8  # from: add,mul
# from: sobel3x3
r_sobel: x_u8 - 0 -> x_u8
r_cont: x_u8 | 0
   -> x_u8  # from: gaussian3x3
"""


def test_provenance_by_line() -> None:
    prov = provenance_by_line(RULES)
    assert prov == {3: frozenset({"add", "mul"}), 5: frozenset({"sobel3x3"}), 6: frozenset({"gaussian3x3"})}


def test_load_filtered_drops_only_rules_learned_from_the_benchmark(tmp_path: Path) -> None:
    p = tmp_path / "synth.rules"
    p.write_text(RULES)
    names = lambda ex: [r.name for r in load_filtered([p], ex)]  # noqa: E731
    assert names(None) == ["r_plain", "r_add", "r_sobel", "r_cont"]
    assert names("mul") == ["r_plain", "r_sobel", "r_cont"]
    assert names("sobel3x3") == ["r_plain", "r_add", "r_cont"]
    assert names("gaussian3x3") == ["r_plain", "r_add", "r_sobel"]
    assert names("blur3x3") == ["r_plain", "r_add", "r_sobel", "r_cont"]


def test_context_reaches_lifting_and_lowering_rule_loading() -> None:
    assert excluded_benchmark() is None
    with excluding_rules_from("add"):
        assert excluded_benchmark() == "add"
        # hand-written rules carry no provenance: the same rules, loaded through the filtering path
        assert len(lift_rules()) == len(lift_rules(exclude_from=None)) > 0
        assert len(load_target("arm64").rules) == len(load_target("arm64", None).rules)
    assert excluded_benchmark() is None
