"""Leave-one-out withdrawal: a synthesized rule that fired in a cell whose static estimate got worse
is withdrawn (named in withdrawn.txt with the figures, removed from its file, no longer loaded), and
compiler processes started for the ablation read the run's rules (PITCHFORK_SYNTH_DIR)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pitchfork.selection.synthesized import load_rules, withdrawn
from synth.loo import compiler_rules, regressions, second_gain, static_gain, withdraw

CELLS = {
    "cells": [
        {"bench": "gaussian7x7", "isa": "hvx128", "status": "measured", "gain": 0.735,
         "static_total": {"hand": 1000, "synth": 1361}, "static_alt": {"hand": 2000, "synth": 2600},
         "compile": {"synth": {"synth_fired": {"synth_lift_bad": 12}}}},
        {"bench": "add", "isa": "x86-avx2", "status": "measured", "gain": 0.97, "static_gain": 1.02,
         "static_alt": {"hand": 100, "synth": 99},
         "compile": {"synth": {"synth_fired": {"synth_lift_timed_noise": 3}}}},
        # slower under the primary model only (the second says faster): not a regression
        {"bench": "softmax", "isa": "x86-avx2", "status": "measured", "gain": 1.0, "static_gain": 0.99,
         "static_alt": {"hand": 2_997_451, "synth": 2_911_868},
         "compile": {"synth": {"synth_fired": {"synth_lower_twin": 3}}}},
        # slower under the primary model, no second figure: not a regression either
        {"bench": "sobel3x3", "isa": "arm64", "status": "measured", "gain": 0.95,
         "compile": {"synth": {"synth_fired": {"synth_lower_unseconded": 3}}}},
        {"bench": "mul", "isa": "arm64", "status": "same-code", "gain": 1.0,
         "compile": {"synth": {"synth_fired": {}}}},
    ]
}


def test_regressions_are_judged_on_the_static_estimate() -> None:
    assert [static_gain(c) for c in CELLS["cells"]] == [0.735, 1.02, 0.99, 0.95, 1.0]
    assert [second_gain(c) for c in CELLS["cells"]] == [2000 / 2600, 100 / 99, 2_997_451 / 2_911_868, None, 1.0]
    bad = regressions(CELLS)
    # the x86 timing dip is not a static regression; a primary-model verdict alone is none either
    assert list(bad) == ["synth_lift_bad"]
    assert ("gaussian7x7 on hvx128 static estimate 1000 -> 1361 (0.735x), second model 2000 -> 2600 (0.769x)"
            in bad["synth_lift_bad"])


def test_withdraw_records_the_reason_and_the_loader_drops_the_rule(tmp_path: Path) -> None:
    (tmp_path / "lift.rules").write_text(
        "synth_lift_bad: x_u8 + 0 -> x_u8  # from: depthwise_conv; verdict: VALID\n"
        "synth_lift_ok: x_u8 * 1 -> x_u8  # from: add; verdict: VALID\n"
    )
    assert withdraw(tmp_path, regressions(CELLS)) == ["synth_lift_bad"]
    assert "0.735x" in withdrawn(tmp_path)["synth_lift_bad"]
    assert [r.name for r in load_rules(tmp_path / "lift.rules")] == ["synth_lift_ok"]
    assert withdraw(tmp_path, regressions(CELLS)) == []  # recorded once


def test_ablation_processes_read_the_run_rules(tmp_path: Path) -> None:
    (tmp_path / "lift.rules").write_text("synth_lift_probe: x_u8 * 1 -> x_u8  # from: add; verdict: VALID\n")
    code = (
        "from pitchfork.selection.lift import lift_rules;"
        "print(any(r.name == 'synth_lift_probe' for r in lift_rules().rules))"
    )
    with compiler_rules(tmp_path):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
