"""Float literals in a captured statement: which kinds it has, and why their digits are exact.

Halide's statement printer writes a float constant with the stream's precision: six decimals by
default (`0.000312f` for 1/3200, `-2.596302e-07f` below 1e-6), not the constant the pipeline computes
with. The capture child sets `std::cerr`'s precision first (`_capture_worker.exact_float_log`, 23
decimals, its log then starts with `EXACT_FLOATS_MARKER`), so every literal in the captured text reads
back bit for bit: a float32 `0.1000000014901161193847656250f`, a float64 (no suffix)
`0.1000000000000000055511151`, a float16 or bfloat16 one (`h`) `0.3332519531250000000000000h`. The
capture refuses a statement with float literals from a log without the marker (capture._build).
(Before session 26 the literals were printed with six decimals and replaced by exact values from
Halide's C output, its unoptimised LLVM module, and tables of every float16 / bfloat16 value.)

Halide prints bfloat16 constants with an `h` too: `bfloat_literals.rewrite_bfloat` types them.

Invariant: a literal parses (frontend/stmt.py: `float(text)`) to exactly the constant Halide holds.
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np

#: A float16 (or bfloat16) literal as Halide prints it (the sign, if any, is a separate token) (`1.5000000000000000000000000h`).
HALF_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)h(?![\w.$])")
#: The float16 type named in a statement (a cast, a reinterpret, a vector of them: `float16x8(...)`).
#: The same matches as `(?<![\w.$])float16(?:x\d+)?(?![\w.$])`, with the word-boundary check after the
#: literal `float16` (the 8 characters ending there are not `[\w.$]float16`) so that the pattern starts
#: with a literal: the regex engine then jumps from one `float16` to the next instead of trying the
#: lookbehind at every character (0.5 ms on an 18 KB statement, most of which has no `float16`).
FLOAT16_TYPE = re.compile(r"float16(?<![\w.$]float16)(?:x\d+)?(?![\w.$])")
#: Any float literal as Halide prints it, its suffix in group 2: `f` (float32), `h` (HALF_LITERAL) or
#: none (float64). At each position the per-suffix patterns (HALF_LITERAL and its `f` / no-suffix
#: versions) and this one try the same digits (`\d+\.\d+` then the optional exponent, greedy,
#: backtracking alike) and this one accepts exactly when one of them does, with that one's suffix; so a
#: text has a match of one of them iff `literal_suffixes` holds its suffix
#: (tests/pitchfork/frontend/test_float_literals.py checks it).
_ANY_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)([fh]?)(?![\w.$])")


class InexactFloatLiteral(ValueError):
    """A literal that is not a value of its type (bfloat_literals), which is refused, never guessed."""


@lru_cache(maxsize=8)
def literal_suffixes(text: str) -> frozenset[str]:
    """The suffixes of the float literals in `text`: "f" (float32), "h" (float16 or bfloat16), ""
    (float64). Why one scan, remembered: a compile asks the statement about its literals from the
    capture (`capture._build`) and the checks (frontend/checks.py), and each
    regex search of a statement without literals tries its lookbehind at every character (~0.5 ms
    per 18 KB; 3 ms on matmul's 87 KB); the statement is one string object, found again by identity."""
    return frozenset(m.group(2) for m in _ANY_LITERAL.finditer(text))


def has_half_literals(text: str) -> bool:
    """Whether `text` has a float16 / bfloat16 literal (a match of HALF_LITERAL)."""
    return "h" in literal_suffixes(text)


def is_float16(v: float) -> bool:
    """Whether the double `v` is exactly a float16 value (bfloat_literals.is_bfloat16's twin)."""
    return float(np.float16(v)) == v


def check_half(text: str) -> None:
    """InexactFloatLiteral for the first `h` literal of a float16 statement that is not a float16 value
    (the exact digits cannot be one of Halide's float16 constants); bfloat16 statements go through
    bfloat_literals.rewrite_bfloat instead."""
    for m in HALF_LITERAL.finditer(text):
        if not is_float16(float(m.group(1))):
            raise InexactFloatLiteral(f"float16 constant {m.group(0)} is not a float16 value")
