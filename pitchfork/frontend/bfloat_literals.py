"""Typed bfloat16 constants for a captured statement.

Halide prints a bfloat16 constant like a float16 one (its digits and an `h`; exact digits in the
capture log, pitchfork/frontend/float_literals.py), so the parser would read it as a float16 literal.
In a statement with bfloat16 values (and no float16 ones: their literals would be indistinguishable),
`rewrite_bfloat` writes each such literal with its type (`(bfloat16)1.5000000000000000000000000h`,
`(bfloat16)-0.3007812500000000000000000h`), which the parser reads as a bfloat16 constant of that
value. A literal that is not exactly a bfloat16 value (it cannot be one of Halide's bfloat16
constants) is refused (`InexactFloatLiteral`).

Invariant: the rewritten text parses to the same statement with every bfloat16 constant typed.
"""

from __future__ import annotations

import re

import numpy as np

from pitchfork.frontend.float_literals import FLOAT16_TYPE, HALF_LITERAL, InexactFloatLiteral

#: an `h` literal with its sign when Halide printed one against it (`x8(-0.300781h)`; a subtraction
#: is printed with spaces around its `-`)
_SIGNED_HALF = re.compile(r"(?<![\w.$])(-?)" + HALF_LITERAL.pattern.removeprefix(r"(?<![\w.$])"))


def is_bfloat16(v: float) -> bool:
    """Whether the double `v` is exactly a finite bfloat16 value (a float32 whose low 16 bits are 0)."""
    f = np.float32(v)
    return bool(np.isfinite(f)) and float(f) == v and not int(f.view(np.uint32)) & 0xFFFF


def rewrite_bfloat(text: str) -> str:
    """Each printed `h` literal of a bfloat16 statement with its type (module docstring);
    InexactFloatLiteral for a literal that is not a bfloat16 value, or for a statement that also has
    float16 values."""
    if FLOAT16_TYPE.search(text):
        raise InexactFloatLiteral("float16 and bfloat16 values in one statement: Halide prints their "
                                  "constants alike")

    def one(m: re.Match[str]) -> str:
        sign, printed = m.group(1), m.group(2)
        if not is_bfloat16(float(printed)):
            raise InexactFloatLiteral(f"bfloat16 constant {printed}h is not a bfloat16 value")
        return f"(bfloat16){sign}{printed}h"  # (the parser reads a type prefix before a signed literal)

    return _SIGNED_HALF.sub(one, text)
