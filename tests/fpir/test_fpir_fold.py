"""Constant folding in `fpir.ops.make` computes what the interpreter computes, for every op.

`make` folds an op whose arguments are all constants without calling fpir.interp (which sits above
it): primitives through their numpy rows, FPIR and target ops through their definitions rebuilt on the
constants, lane-combining ops as the left fold of their combining op. This checks the fold against
`fpir.interp.evaluate` of the unfolded node on the same values, for every op of the table (the target
instructions of all three ISAs included) at every type instance over the user types, on edge values
and random ones. Ops of more than 4 operands (five HVX multiply-accumulate forms) are left out: their
instances over the 9 user types number 9^5 .. 9^9; their definitions use ops checked here.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import pitchfork.targets.arm  # noqa: F401  (these three register the target instructions)
import pitchfork.targets.hvx  # noqa: F401
import pitchfork.targets.x86  # noqa: F401
from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import const, intern, var
from fpir.types import FPIRTypeError
from tests.fpir.fpir_testlib import edges, instances

ARG_NAMES = "abcdefgh"


def _values(t, rng: np.random.Generator) -> list[int]:
    vals = edges(t)
    if t.bits > 1:
        vals += [int(v) for v in rng.integers(t.min, t.max, size=4, endpoint=True, dtype=np.int64)] if t.bits < 64 \
            else [int(rng.integers(-2**62, 2**62)) % (t.max + 1) if not t.signed else int(rng.integers(-2**62, 2**62))]
    return sorted({v for v in vals if t.contains(v)})


@pytest.mark.parametrize("kind", ["primitive", "fpir", "target"])
def test_fold_matches_interpreter(kind: str) -> None:
    rng = np.random.default_rng(23)
    checked = 0
    for op in sorted(n for n, s in OPS.items() if s.kind == kind and s.arity <= 4):
        for inst in instances(op):
            per_arg = [_values(t, rng) for t in inst.arg_types]
            combos = list(itertools.product(*per_arg))
            picks = [combos[i] for i in rng.choice(len(combos), size=min(len(combos), 12), replace=False)]
            for vals in picks:
                consts = [const(v, t) for v, t in zip(vals, inst.arg_types)]
                node = intern(op, inst.result, tuple(var(n, t) for n, t in zip(ARG_NAMES, inst.arg_types)))
                try:
                    want = int(np.asarray(evaluate(node, dict(zip(ARG_NAMES, vals)))).item())
                except (FPIRTypeError, KeyError) as e:  # an instance the op's definition has no form for
                    with pytest.raises(type(e)):
                        make(op, *consts, type=inst.explicit)
                    continue
                folded = make(op, *consts, type=inst.explicit)
                assert folded.is_const and folded.type == inst.result, (inst.id, vals, folded)
                assert folded.value == want, (inst.id, vals, folded.value, want)
                checked += 1
    assert checked > 0
