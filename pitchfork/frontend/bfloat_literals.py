"""Exact bfloat16 constants for a captured statement.

Halide prints a bfloat16 constant like a float16 one (`1.500000h`: halide_print's digits and an `h`),
so the parser would read it as a float16 literal of a value the pipeline does not compute with. In a
statement with bfloat16 values (and no float16 ones: their literals would be indistinguishable),
`rewrite_bfloat` replaces each such literal by the one bfloat16 value that prints as it, written
with its type (`(bfloat16)1.50000000000000000e+00h`, `(bfloat16)-3.00781250000000000e-01h`, which
the parser reads as a bfloat16 constant of exactly that value: 17 significant digits round-trip a
float32). A literal that several bfloat16
values print as (below 1e-3 the six decimals cannot tell them apart: `0.000010h`) or none does is
refused (`InexactFloatLiteral`).

Invariant: the rewritten text parses to the same statement with every bfloat16 constant exact.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

from pitchfork.frontend.float_literals import FLOAT16_TYPE, HALF_LITERAL, InexactFloatLiteral, halide_print

#: an `h` literal with its sign when Halide printed one against it (`x8(-0.300781h)`; a subtraction
#: is printed with spaces around its `-`)
_SIGNED_HALF = re.compile(r"(?<![\w.$])(-?)" + HALF_LITERAL.pattern.removeprefix(r"(?<![\w.$])"))


@lru_cache(maxsize=1)
def _bfloats_by_print() -> dict[str, tuple[float, ...]]:
    """Every finite non-negative bfloat16 value, by the text Halide prints for it."""
    out: dict[str, list[float]] = {}
    values = (np.arange(0x7F80, dtype=np.uint32) << 16).view(np.float32)
    for v in values:
        out.setdefault(halide_print(float(v)), []).append(float(v))
    return {k: tuple(v) for k, v in out.items()}


def rewrite_bfloat(text: str) -> str:
    """Each printed `h` literal of a bfloat16 statement as its exact bfloat16 constant (module
    docstring); InexactFloatLiteral for a literal with no unique value, or for a statement that also
    has float16 values."""
    if FLOAT16_TYPE.search(text):
        raise InexactFloatLiteral("float16 and bfloat16 values in one statement: Halide prints their "
                                  "constants alike")
    table = _bfloats_by_print()

    def one(m: re.Match[str]) -> str:
        sign, printed = m.group(1), m.group(2)
        cands = table.get(printed, ())
        if len(cands) == 1:  # (the parser reads a type prefix before a signed literal)
            return f"(bfloat16){sign}{cands[0]:.17e}h"
        what = "no bfloat16 value" if not cands else f"{len(cands)} bfloat16 values"
        raise InexactFloatLiteral(f"bfloat16 constant {printed}h: Halide printed it rounded and {what} "
                                  "print like it")

    return _SIGNED_HALF.sub(one, text)
