"""The stages of a synthesis run and the rule files they write: `lift`, then `lower:<isa>` per ISA.

One place for what the driver, the firing census, the rule snapshots and the bring-up all need to
agree on: the file each stage writes (`lift.rules`, `lower_<stem>.rules`, the stems of the hand-written
rules/lower/<stem>.rules), the header written at the top of it, and the whole expressions a stage's
rules apply to (lifting: every ISA's corpus; lowering: its own ISA's).

Invariant: nothing here reads or writes a file; every function is a pure function of its arguments.
"""

from __future__ import annotations

from pathlib import Path

from fpir.term import Term

#: ISA -> the stem of its lowering rule files (rules/lower/<stem>.rules, lower_<stem>.rules)
ISA_STEMS = {"x86-avx2": "x86_avx2", "arm64": "arm_neon", "hvx128": "hvx"}

HEADERS = {
    "lift": "# Lifting rules synthesized by pitchfork-synth (synth/): do not edit by hand; re-run it.\n"
    "# Each rule was proven by Z3 at every type instance it can match (synth/verify.py).",
    "lower": "# {isa} lowering rules synthesized by pitchfork-synth (synth/): do not edit by hand; "
    "re-run it.\n"
    "# Each rule was proven by Z3 at every type instance it can match (synth/verify.py).",
}


def stage_path(stage: str, out_dir: Path) -> tuple[Path, str]:
    """The rule file `stage` writes in `out_dir`, and the header at its top."""
    if stage == "lift":
        return out_dir / "lift.rules", HEADERS["lift"]
    isa = stage.split(":", 1)[1]
    return out_dir / f"lower_{ISA_STEMS[isa]}.rules", HEADERS["lower"].format(isa=isa)


def merged_inputs(inputs: dict[str, dict[str, list[Term]]]) -> dict[str, list[Term]]:
    """ISA -> source -> expressions, as source -> the expressions of every ISA (each once, in order)."""
    merged: dict[str, list[Term]] = {}
    for per_isa in inputs.values():
        for source, terms in per_isa.items():
            have = merged.setdefault(source, [])
            have.extend(t for t in terms if t not in have)
    return merged


def stage_inputs(stage: str, inputs: dict[str, dict[str, list[Term]]]) -> dict[str, list[Term]]:
    """The whole expressions a stage's rules apply to (lifting: every ISA's; lowering: its ISA's)."""
    return merged_inputs(inputs) if stage == "lift" else inputs[stage.split(":", 1)[1]]
