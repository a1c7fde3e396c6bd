"""Does a lifting rule pay off on every ISA? Compiles each expression twice per ISA, with every lifting
rule and without the rules whose names start with the given prefix, and prints the assembly lines and
the steady-state loop's instructions (HVX: also its packets, the performance proxy there).

    PYTHONPATH=. python3 scripts/lift_vs_unlifted.py --exclude rounding_shl_var_ \\
        'i16((i32(a_i16) + ((1 >> max(min(n_i32, 15), -16)) >> 1)) << max(min(n_i32, 15), -16))'

(tests/pitchfork/selection/test_lift_families.py::test_rounding_shl_lifting_never_loses asserts the same
comparison for the rounding_shl spellings.)
"""

from __future__ import annotations

import argparse
from typing import Optional

import pitchfork.selection.lift as lift_mod
from pitchfork.backend.asm import main_vector_loop
from pitchfork.selection.select_batch import select_expression
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleSet

ISAS = ("x86-avx2", "arm64", "hvx128")


def measure(text: str, isa: str) -> str:
    rec = select_expression(text, isa, emit="asm")
    if rec.error or rec.asm is None:
        return f"error: {rec.error}"
    lines = sum(1 for line in rec.asm.splitlines() if line.strip())
    try:
        lp = main_vector_loop(rec.asm, target=isa)
    except ValueError:
        return f"{lines} asm lines, no vector loop"
    packets = f", {len(lp.packets)} packets" if isa == "hvx128" else ""
    return f"{lines} asm lines, loop {len(lp.instructions)} instructions{packets}  [{rec.fpir}]"


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--exclude", required=True, help="name prefix of the lifting rules left out for 'unlifted'")
    ap.add_argument("--isa", action="append", choices=ISAS, help="ISA (repeatable; default all three)")
    ap.add_argument("expressions", nargs="+")
    args = ap.parse_args(argv)
    full = lift_mod.lift_rules()
    kept = RuleSet([r for r in full.rules if not r.name.startswith(args.exclude)])
    if len(kept.rules) == len(full.rules):
        ap.error(f"no lifting rule name starts with {args.exclude!r}")
    original = lift_mod.lifter
    for text in args.expressions:
        print(text)
        for isa in args.isa or ISAS:
            lifted = measure(text, isa)
            lift_mod.lifter = lambda rules=None, trace=False: Rewriter(kept, trace=trace)  # type: ignore[assignment]
            try:
                unlifted = measure(text, isa)
            finally:
                lift_mod.lifter = original  # type: ignore[assignment]
            print(f"  {isa:9} lifted:   {lifted}\n  {'':9} unlifted: {unlifted}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
