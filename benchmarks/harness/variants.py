"""The contenders of a harness run: how each variant of our compiler is compiled, and which share code.

* `pitchfork`: PITCHFORK as shipped (isel=pitchfork, every loop pass);
* `pitchfork_sel`: isel=pitchfork with only the passes LLVM alone gets too (`pitchfork.passes.pipeline.shared_passes`):
  instruction selection alone, the headline's column (a) against `llvm`;
* `pitchfork_nopass`: isel=pitchfork with no shared pass (no loop pass): column (b) is it against `pitchfork`;
* `pitchfork_hand`: PITCHFORK as shipped with the synthesized rules off (the ablation, Figure 7);
* `llvm`: LLVM alone (isel=llvm) with the shared passes;
* `halide21`: Halide 21's own compiler (halide21.py).

A loop pass belongs to the shared set when it is not instruction selection and isel=llvm can run it
(its output is ordinary Halide IR both isels compile), and so does each codegen strategy marked
`shared` in `pitchfork.passes.pipeline` (one that only moves data: hvx128's aligned-block loads).
The other codegen passes of isel=pitchfork (accumulation order, register-pair forms, vshuff
interleaves, reductions to one lane, x86 pack lane order, widened splats) choose instructions: they
are instruction selection and stay in every pitchfork variant.

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


def pass_options(target: str, variant: Variant) -> dict[str, Any]:
    """Keyword arguments of pitchfork.compile for `variant`'s passes: "shared" runs every shared pass
    (loop passes by `passes=`, shared codegen passes the isel does not run by default by
    `enable_passes=`); "none" runs no loop pass and none of those codegen passes."""
    if variant.loop_passes == "all":
        return {}
    from pitchfork.passes.pipeline import BY_NAME, passes_for, shared_passes

    shared = shared_passes(target)
    loop = [n for n in shared if BY_NAME[n].kind == "loop"]
    default = {p.name for p in passes_for(target, variant.isel)}
    extra = [n for n in shared if BY_NAME[n].kind != "loop"]
    if variant.loop_passes == "shared":
        return {"passes": loop, "enable_passes": [n for n in extra if n not in default]}
    return {"passes": [], "disable_passes": [n for n in extra if n in default]}


def compile_key(target: str, name: str) -> tuple[Any, ...]:
    """What `name` is compiled with (isel, the statement passes it runs, synthesized rules on/off): two
    variants with equal keys compile to the same code, so the second is not compiled at all."""
    from pitchfork.passes.pipeline import resolve

    v = COMPILED[name]
    kw = pass_options(target, v)
    passes = resolve(target, v.isel, kw.get("passes"), kw.get("disable_passes", ()), kw.get("enable_passes", ())).names
    return (v.isel, passes, v.synthesized)


def code_key(prog: Any) -> str:
    """The assembly's identity, the function's own name left out."""
    return hashlib.sha1(prog.assembly().replace(prog.name, "@F").encode()).hexdigest()


#: Row fields a duplicate copies from the variant it shares code with.
MEASURED = ("time", "time_static_size", "static", "hot_loop", "exact", "static_error")
