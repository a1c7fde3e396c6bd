"""Synthesized-only lowering (pitchfork/selection/synthesized.py `set_lowering_only`,
PITCHFORK_LOWERING_ONLY): a target's lowering TRS is the named folder's lower_<isa>.rules alone."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from pitchfork.selection.lower import select_instructions
from pitchfork.selection.synthesized import lowering_only, lowering_only_config
from pitchfork.targets import load_target

UMULL = "s_umull: widening_mul(v0_u8, v1_u8) -> arm.umull(v0_u8, v1_u8)\n"
EXPR = "widening_mul(x_u8, y_u8) + cast<u16>(absd(x_u8, y_u8))"


def _ops(t: object) -> set[str]:
    return {u.op for u in t.walk()}  # type: ignore[attr-defined]


def test_lowering_only_replaces_the_hand_rules(tmp_path: Path) -> None:
    (tmp_path / "lower_arm_neon.rules").write_text(UMULL)
    term = parse(EXPR)
    hand = select_instructions(term, "arm64")
    assert "arm.umull" in _ops(hand.final) and _ops(hand.final) & {"arm.uabd", "arm.uabal"}  # hand rules
    with lowering_only_config(tmp_path):
        assert lowering_only() == tmp_path
        rules = load_target("arm64").rules.rules
        assert [r.name for r in rules] == ["s_umull"]
        only = select_instructions(term, "arm64")
    assert lowering_only() is None
    assert "arm.umull" in _ops(only.final) and not _ops(only.final) & {"arm.uabd", "arm.uabal"}
    assert only.lower_stats is not None and set(only.lower_stats.fired) == {"s_umull"}
    # same lifting, same meaning
    assert only.fpir == hand.fpir
    rng = np.random.default_rng(0)
    env = {"x": rng.integers(0, 256, 64, dtype=np.uint8), "y": rng.integers(0, 256, 64, dtype=np.uint8)}
    assert np.array_equal(evaluate(only.final, env), evaluate(hand.final, env))


def test_lowering_only_refuses_a_folder_without_the_isa(tmp_path: Path) -> None:
    (tmp_path / "lower_arm_neon.rules").write_text(UMULL)
    with lowering_only_config(tmp_path), pytest.raises(ValueError, match="no lower_hvx.rules there for hvx128"):
        load_target("hvx128")


def test_lowering_only_environment_variable(tmp_path: Path) -> None:
    (tmp_path / "lower_arm_neon.rules").write_text(UMULL)
    code = ("from pitchfork.targets import load_target; "
            "print(','.join(r.name for r in load_target('arm64').rules.rules))")
    root = Path(__file__).resolve().parents[3]
    env = dict(os.environ, PITCHFORK_LOWERING_ONLY=str(tmp_path), PYTHONPATH=str(root))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=root, check=True)
    assert out.stdout.strip() == "s_umull"
