"""HVX truncating narrowing by even / odd halves: hvx.vpacke / hvx.vpacko (pitchfork/targets/hvx.py).

Each op is one meaning (`cast<N>(x)`, `cast<N>(x >> bits(N))`) with two encodings, picked by the
operand's lane order at emission, as Halide's EliminateInterleaves turns a pack of an interleave into
its `trunc` (vshuffe): an in-order pair -> vpacke / vpacko (keep order); a de-interleaved pair (what the
widening instructions vmpy / vadd_w produce) -> vshuffe / vshuffo (the even / odd halves of each lane,
interleaved back into order), with no vshuff / vdeal around it. Both run bit-exactly under qemu-hexagon
against the text's own meaning (their semantics are also run by
test_hvx.py::test_every_instruction_matches_its_semantics_under_qemu, de-interleaved operands included).
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from pitchfork.backend.run import tools_available
from pitchfork.selection.lower import select_instructions

from .hvx_difftest import TARGET, Case, loop_of, run_cases

needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")

# (text, lanes, mnemonic the loop must contain)
CASES = [
    ("u8(widening_mul(a_u8, b_u8) >> 3)", 128, r"\.b = vshuffe\("),        # de-interleaved pair, even bytes
    # multiply-high, mul_shr(x, y, bits) (rule mul_shr_high_half): odd bytes / halfwords
    ("u8(widening_mul(a_u8, b_u8) >> 8)", 128, r"\.b = vshuffo\("),
    ("mul_shr(a_i8, b_i8, 8)", 128, r"\.b = vshuffo\("),
    ("i16(widening_mul(a_i16, b_i16) >> 16)", 64, r"\.h = vshuffo\("),
    ("mul_shr(a_u16, b_u16, 16)", 64, r"\.h = vshuffo\("),
    ("u8(a_u16 >> 8)", 128, r"\.b = vpacko\("),                           # in-order operand: the packs
    ("i8(a_i16 + b_i16)", 128, r"\.b = vpacke\("),
]


@needs_qemu
@pytest.mark.qemu
def test_even_odd_narrowing_picks_shuffle_or_pack_by_lane_order() -> None:
    cases, terms = [], []
    for text, lanes, _m in CASES:
        term = parse(text)
        final = select_instructions(term, TARGET).final
        assert re.search(r"hvx\.vpack[eo]\(", str(final)), final
        cases.append(Case(text, final, lanes))
        terms.append(term)
    failures = run_cases(cases, np.random.default_rng(4))
    assert not failures, "\n".join(failures)
    for c, term, (_t, _l, mnemonic) in zip(cases, terms, CASES):
        vs = {v.name: v.type for v in term.walk() if v.is_var}
        want = np.asarray(evaluate(term, {k: a.astype(vs[k].np_dtype) for k, a in c.inputs.items()}))
        assert np.array_equal(np.asarray(c.expected).astype(np.int64), want.astype(np.int64)), c.name
        body = loop_of(c).instructions
        assert any(re.search(mnemonic, i) for i in body), (c.name, body)
        assert not any(re.search(r"\bv(shuff|deal)\(v\d+\.[bh]\)|vshuff\(v\d+,v\d+,r|vdeal\(v\d+,v\d+,r", i)
                       for i in body), (c.name, body)
