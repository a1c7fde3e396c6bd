"""The contenders of a harness run: how each variant of our compiler is compiled, and which share code.

* `pitchfork`: PITCHFORK as shipped (isel=pitchfork, every loop pass);
* `pitchfork_sel`: isel=pitchfork with only the loop passes LLVM alone gets too (`shared_passes`):
  instruction selection alone, the headline's column (a) against `llvm`;
* `pitchfork_hand`: PITCHFORK as shipped with the synthesized rules off (the ablation, Figure 7);
* `llvm`: LLVM alone (isel=llvm) with the shared loop passes;
* `halide21`: Halide 21's own compiler (halide21.py).

A loop pass belongs to the shared set when it is not instruction selection and isel=llvm can run it
(its output is ordinary Halide IR both isels compile). The pass list and its switches are
pitchfork.passes.pipeline's (issue 23); until that module exists, `pass_options` raises
`PassSwitchUnavailable` for the variants that need a switch, which the worker reports as failure rows.

Variants whose assembly is identical (up to the function's name) are measured once (`code_key`): the
others copy the measurement and say so (`same_code_as`), so a pass or rule set that changes nothing
costs nothing and shows an exact 1.00x.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

#: Every variant, in the order rows are written and representatives chosen.
VARIANTS = ("pitchfork", "pitchfork_sel", "pitchfork_hand", "llvm", "halide21")


@dataclass(frozen=True)
class Variant:
    isel: str
    #: "all": the isel's default passes (pitchfork: every loop pass; llvm: none); "shared": the shared set
    loop_passes: str = "all"
    synthesized: bool = True


COMPILED: dict[str, Variant] = {
    "pitchfork": Variant("pitchfork"),
    "pitchfork_sel": Variant("pitchfork", "shared"),
    "pitchfork_hand": Variant("pitchfork", synthesized=False),
    "llvm": Variant("llvm", "shared"),
}


class PassSwitchUnavailable(RuntimeError):
    """pitchfork.compile has no pass switches yet (issue 23's pass list has not landed)."""


def shared_passes(target: str) -> list[str]:
    """The loop passes both isels get on `target` (see the module docstring)."""
    try:
        from pitchfork.passes import pipeline  # type: ignore[attr-defined]
    except ImportError as e:
        raise PassSwitchUnavailable("pitchfork.passes.pipeline (issue 23) is not available") from e
    return list(pipeline.shared_passes(target))


def pass_options(target: str, variant: Variant) -> dict[str, Any]:
    """Keyword arguments of pitchfork.compile for `variant`'s loop passes."""
    if variant.loop_passes == "all":
        return {}
    try:
        return {"passes": shared_passes(target)}
    except PassSwitchUnavailable:
        if variant.isel == "llvm":  # no switches: LLVM alone runs no loop pass (its default)
            return {}
        raise


def code_key(prog: Any) -> str:
    """The assembly's identity, the function's own name left out."""
    return hashlib.sha1(prog.assembly().replace(prog.name, "@F").encode()).hexdigest()


#: Row fields a duplicate copies from the variant it shares code with.
MEASURED = ("time", "time_static_size", "static", "hot_loop", "exact", "static_error")
