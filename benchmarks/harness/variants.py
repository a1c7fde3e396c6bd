"""The contenders of a harness run: how each variant of our compiler is compiled, and which share code.

* `pitchfork`: PITCHFORK as shipped (isel=pitchfork, every loop pass);
* `pitchfork_sel`: isel=pitchfork with only the loop passes LLVM alone gets too (`shared_passes`):
  instruction selection alone, the headline's column (a) against `llvm`;
* `pitchfork_nopass`: isel=pitchfork with no loop pass: column (b) is it against `pitchfork`;
* `pitchfork_hand`: PITCHFORK as shipped with the synthesized rules off (the ablation, Figure 7);
* `llvm`: LLVM alone (isel=llvm) with the shared loop passes;
* `halide21`: Halide 21's own compiler (halide21.py).

A loop pass belongs to the shared set when it is not instruction selection and isel=llvm can run it
(its output is ordinary Halide IR both isels compile). The pass list and its switches are
`pitchfork.passes.pipeline.STATEMENT_PASSES` (`passes=` of `pitchfork.compile`); the codegen-level HVX
restructurings (hvx_accumulate, valign loads, ...) are not switchable yet (issue 23's pass list) and
run with isel=pitchfork in every pitchfork variant. Without switches `pass_options` raises
`PassSwitchUnavailable` for the variants that need one, which the worker reports as failure rows.

Variants whose assembly is identical (up to the function's name) are measured once (`code_key`): the
others copy the measurement and say so (`same_code_as`), so a pass or rule set that changes nothing
costs nothing and shows an exact 1.00x.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

#: Every variant, in the order rows are written and representatives chosen.
VARIANTS = ("pitchfork", "pitchfork_sel", "pitchfork_nopass", "pitchfork_hand", "llvm", "halide21")


@dataclass(frozen=True)
class Variant:
    isel: str
    #: "all": the isel's default passes (pitchfork: every loop pass; llvm: none); "shared": the shared
    #: set; "none": no loop pass
    loop_passes: str = "all"
    synthesized: bool = True


COMPILED: dict[str, Variant] = {
    "pitchfork": Variant("pitchfork"),
    "pitchfork_sel": Variant("pitchfork", "shared"),
    "pitchfork_nopass": Variant("pitchfork", "none"),
    "pitchfork_hand": Variant("pitchfork", synthesized=False),
    "llvm": Variant("llvm", "shared"),
}


class PassSwitchUnavailable(RuntimeError):
    """pitchfork.compile has no pass switches yet (issue 23's pass list has not landed)."""


def shared_passes(target: str) -> list[str]:
    """The loop passes both isels get on `target` (see the module docstring): every statement pass of
    `pitchfork.passes.pipeline.STATEMENT_PASSES` for the target. Each is a semantics-preserving rewrite of the loop
    nest into ordinary Halide IR that isel=llvm compiles as well (dot_products makes the VectorReduce
    Halide itself makes of a written-out dot product); none chooses an instruction. The codegen-level
    HVX restructurings are not switchable yet and stay with isel=pitchfork (said in RESULTS.md)."""
    try:
        from pitchfork.passes.pipeline import STATEMENT_PASSES
    except ImportError as e:
        raise PassSwitchUnavailable("pitchfork.api has no pass switches") from e
    return [p for p, (targets, _) in STATEMENT_PASSES.items() if target in targets]


def pass_options(target: str, variant: Variant) -> dict[str, Any]:
    """Keyword arguments of pitchfork.compile for `variant`'s loop passes."""
    if variant.loop_passes == "all":
        return {}
    try:
        return {"passes": shared_passes(target) if variant.loop_passes == "shared" else []}
    except PassSwitchUnavailable:
        if variant.isel == "llvm":  # no switches: LLVM alone runs no loop pass (its default)
            return {}
        raise


def compile_key(target: str, name: str) -> tuple[Any, ...]:
    """What `name` is compiled with (isel, the statement passes it runs, synthesized rules on/off): two
    variants with equal keys compile to the same code, so the second is not compiled at all."""
    from pitchfork.passes.pipeline import statement_passes

    v = COMPILED[name]
    try:
        passes = tuple(statement_passes(target, v.isel, pass_options(target, v).get("passes")))
    except PassSwitchUnavailable:
        passes = (name,)  # unknown: never equal to another variant's
    return (v.isel, passes, v.synthesized)


def code_key(prog: Any) -> str:
    """The assembly's identity, the function's own name left out."""
    return hashlib.sha1(prog.assembly().replace(prog.name, "@F").encode()).hexdigest()


#: Row fields a duplicate copies from the variant it shares code with.
MEASURED = ("time", "time_static_size", "static", "hot_loop", "exact", "static_error")
