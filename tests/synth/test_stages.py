"""synth/stages.py: the file each stage writes and the expressions its rules apply to."""

from __future__ import annotations

from pathlib import Path

from fpir import parse
from synth.stages import ISA_STEMS, merged_inputs, stage_inputs, stage_path


def test_each_stage_writes_its_own_file_under_its_header(tmp_path: Path) -> None:
    path, header = stage_path("lift", tmp_path)
    assert path == tmp_path / "lift.rules" and header.startswith("# Lifting rules synthesized by pitchfork-synth")
    for isa, stem in ISA_STEMS.items():
        path, header = stage_path(f"lower:{isa}", tmp_path)
        assert path == tmp_path / f"lower_{stem}.rules" and header.startswith(f"# {isa} lowering rules")
        assert (Path(__file__).resolve().parents[2] / "rules" / "lower" / f"{stem}.rules").exists()


def test_lifting_sees_every_isa_and_lowering_its_own() -> None:
    a, b, c = parse("x_u8 + y_u8"), parse("x_u8 - y_u8"), parse("x_i16 * y_i16")
    inputs = {"arm64": {"add": [a, b], "mul": [c]}, "hvx128": {"add": [b, a], "f": [c]}}
    assert merged_inputs(inputs) == {"add": [a, b], "mul": [c], "f": [c]}  # each term once, first order
    assert stage_inputs("lift", inputs) == merged_inputs(inputs)
    assert stage_inputs("lower:hvx128", inputs) is inputs["hvx128"]
