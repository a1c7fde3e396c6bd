"""Pointing the synthesized-rule loader at another folder (`set_directory`, what pitchfork-synth does per
task) drops the cached rule sets of both loaders above it: lifting (pitchfork/selection/greedy.py) and
the targets' lowering (pitchfork/targets), which register their caches with
`synthesized.on_directory_change` so that pitchfork.selection.synthesized imports neither."""

from __future__ import annotations

from pathlib import Path

from pitchfork.selection.lift import lift_rules
from pitchfork.selection.synthesized import set_directory
from pitchfork.targets import load_target

LIFT = "synth_lift_dir_test: v0_T + v0_T -> v0_T << 1  # from: add; count: 1; verdict: VALID"
LOWER = "synth_lower_dir_test: v0_T + v0_T -> v0_T << 1  # from: add; count: 1; verdict: VALID"


def test_set_directory_drops_lift_and_target_caches(tmp_path: Path) -> None:
    (tmp_path / "lift.rules").write_text(LIFT + "\n")
    (tmp_path / "lower_arm_neon.rules").write_text(LOWER + "\n")
    before_lift = {r.name for r in lift_rules().rules}
    before_arm = {r.name for r in load_target("arm64").rules.rules}
    prev = set_directory(tmp_path)
    try:
        lifted = {r.name for r in lift_rules().rules}
        arm = {r.name for r in load_target("arm64").rules.rules}
        assert "synth_lift_dir_test" in lifted and "synth_lower_dir_test" in arm
        # the folder replaces rules/synthesized/: hand-written rules stay, committed synthesized ones go
        assert not any(n.startswith("synth_lift_") and n != "synth_lift_dir_test" for n in lifted)
    finally:
        set_directory(prev)
    assert {r.name for r in lift_rules().rules} == before_lift
    assert {r.name for r in load_target("arm64").rules.rules} == before_arm
