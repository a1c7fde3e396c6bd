"""10,000-node terms through every pass that walks terms (issue 8, item 5): no RecursionError, the
right answer, and no quadratic runaway. Halide expressions get this big after inlining.

Each shape stresses a different recursion: a left-deep chain (`a + b + c ...`, what the parser
builds for flat sums), a right-deep parenthesised nest, a tower of unary operators, nested calls.
The interpreter checks the lifted and the lowered term against the input on random data, so the
passes are not only crash-free but right.
"""

from __future__ import annotations

import numpy as np
import pytest

from fpir import parse, to_text
from fpir.interp import evaluate
from fpir.z3enc import to_z3
from pitchfork.selection.bounds import bounds
from pitchfork.selection.cost import cost
from pitchfork.selection.lift import lift
from pitchfork.selection.lower import select_instructions

N = 10_000

SHAPES = {
    "left_chain": " + ".join(f"x{i % 5}_u8" for i in range(N // 2)) + " ^ " + " + ".join(["y_u8"] * (N // 2)),
    "right_nest": "(x0_u8 ^ " * (N // 2 - 1) + "y_u8" + ")" * (N // 2 - 1),
    "unary": "~" * N + "x0_u8",
    "calls": "absd(" * (N // 2) + "x0_u8, y_u8)" + ", x1_u8)" * (N // 2 - 1),
}


def _env(term: object) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(8)
    return {v.name: rng.integers(v.type.min, v.type.max + 1, 64, dtype=np.int64).astype(v.type.np_dtype)
            for v in term.variables()}  # type: ignore[attr-defined]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_deep_term_through_every_pass(shape: str) -> None:
    t = parse(SHAPES[shape])
    assert t.size() >= N // 2
    assert parse(to_text(t)) is t  # printer and parser round-trip
    env = _env(t)
    want = evaluate(t, env)
    lo, hi = bounds(t)
    assert lo <= int(want.min()) and int(want.max()) <= hi
    assert cost(t) >= (0, 0)
    to_z3(t)
    lifted = lift(t)
    assert np.array_equal(evaluate(lifted, env), want)
    sel = select_instructions(t, "x86-avx2", "pitchfork")
    assert np.array_equal(evaluate(sel.final, env), want)
