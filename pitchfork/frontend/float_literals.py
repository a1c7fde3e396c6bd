"""Exact float32 and float64 constants for a captured statement.

Halide prints a float32 constant in its statement text with six decimals (`0.000312f` for 1/3200,
`1.842105f` for a folded constant), or, for a nonzero magnitude below 1e-6, with six decimals of
mantissa (`-2.596302e-07f`, a coefficient of fast_sin's polynomial; `halide_print`): the printed value
is not the constant the pipeline computes with. Halide's C backend prints the same constants exactly (`float_from_bits(967038730 /* ... */)`),
so for a statement that contains float literals we compile the pipeline to C once, collect those
exact values, and replace each printed literal by the unique exact value that prints as it. A literal
with no such value, or with two different ones, is refused (`InexactFloatLiteral`, which codegen
reports as unsupported) rather than guessed; a literal that is exact as printed (0.5, 255.0, ...) and
has no candidate keeps its value.

float64 constants are printed the same way (six decimals, no suffix), but Halide's C output writes
them through a float (`(double) float_from_bits(...)`), so it cannot give them. Their exact values come
from the LLVM module Halide's own code generator builds, before any LLVM optimisation (which would fold
them into others): Halide logs that module at debug level 3 of CodeGen_LLVM.cpp ("Optimizing module"
... "After LLVM optimizations:"), and `llvm_doubles` reads every double constant in it. The same rule
then applies as for float32: one exact value prints as the literal, or the literal is exact as printed
and no constant prints like it, or the pipeline is refused.

Invariant: the rewritten text parses to the same statement with every float constant exact.
"""

from __future__ import annotations

import re
import tempfile
from decimal import Decimal
from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pitchfork.frontend.arguments import as_argument

#: A float32 literal as Halide prints it (the sign, if any, is a separate token).
FLOAT_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)f(?![\w.$])")
#: A float64 literal as Halide prints it: the same digits with no suffix (a float16 one ends in `h`).
FLOAT64_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)(?![\w.$])")
#: A float16 literal as Halide prints it (`1.500000h`; halide_print's digits).
HALF_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)h(?![\w.$])")
#: The float16 type named in a statement (a cast, a reinterpret, a vector of them: `float16x8(...)`).
#: The same matches as `(?<![\w.$])float16(?:x\d+)?(?![\w.$])`, with the word-boundary check after the
#: literal `float16` (the 8 characters ending there are not `[\w.$]float16`) so that the pattern starts
#: with a literal: the regex engine then jumps from one `float16` to the next instead of trying the
#: lookbehind at every character (0.5 ms on an 18 KB statement, most of which has no `float16`).
FLOAT16_TYPE = re.compile(r"float16(?<![\w.$]float16)(?:x\d+)?(?![\w.$])")
#: Any float literal as Halide prints it, its suffix in group 2: `f` (FLOAT_LITERAL), `h` (HALF_LITERAL)
#: or none (FLOAT64_LITERAL). At each position the three patterns and this one try the same digits
#: (`\d+\.\d+` then the optional exponent, greedy, backtracking alike) and this one accepts exactly
#: when one of them does, with that one's suffix; so a text has a match of one of them iff
#: `literal_suffixes` holds its suffix (tests/pitchfork/frontend/test_float_literals.py checks it).
_ANY_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)([fh]?)(?![\w.$])")
_FROM_BITS = re.compile(r"float_from_bits\((\d+)\b")
#: a floating-point constant in LLVM's textual IR: its bits in hex as a double (LLVM writes float
#: constants that way too), or a decimal, which LLVM prints only when it reads back exactly
_LLVM_FP_CONSTANT = r"(?:0x([0-9A-Fa-f]{16})\b|([-+]?\d+\.\d+e[-+]\d+))"
_LLVM_FP = re.compile(r"(?<![\w.])" + _LLVM_FP_CONSTANT)
#: the same, written right after its type
_LLVM_DOUBLE = re.compile(r"\bdouble " + _LLVM_FP_CONSTANT)
_LLVM_FLOAT_TYPE = re.compile(r"\b(?:float|half|bfloat)\b")
#: the log lines around the unoptimised module (CodeGen_LLVM.cpp, debug level 3)
UNOPTIMIZED_START, UNOPTIMIZED_END = "Optimizing module", "After LLVM optimizations:"


class InexactFloatLiteral(ValueError):
    pass


@lru_cache(maxsize=8)
def literal_suffixes(text: str) -> frozenset[str]:
    """The suffixes of the float literals in `text`: "f" (float32), "h" (float16 or bfloat16), ""
    (float64). Why one scan, remembered: a compile asks the statement about each kind from the
    capture (`has_float_literals`, `has_float64_literals`) and the checks (frontend/checks.py), and each
    regex search of a statement without literals tries its lookbehind at every character (~0.5 ms
    per 18 KB; 3 ms on matmul's 87 KB); the statement is one string object, found again by identity."""
    return frozenset(m.group(2) for m in _ANY_LITERAL.finditer(text))


def has_float_literals(text: str) -> bool:
    return "f" in literal_suffixes(text)


def has_float64_literals(text: str) -> bool:
    return "" in literal_suffixes(text)


def has_half_literals(text: str) -> bool:
    """Whether `text` has a float16 / bfloat16 literal (a match of HALF_LITERAL)."""
    return "h" in literal_suffixes(text)


def llvm_doubles(log: str) -> set[float]:
    """The magnitudes of every finite double constant in the unoptimised module of a Halide log
    (the text between UNOPTIMIZED_START and UNOPTIMIZED_END; the whole text if those are absent)."""
    start = log.find(UNOPTIMIZED_START)
    end = log.find(UNOPTIMIZED_END, max(start, 0))
    module = log[max(start, 0):end if end >= 0 else len(log)]
    out = set()
    # An operand's type is written once per instruction (`fadd double %a, 0x...`), so a line whose
    # only floating-point type is double holds only double constants; on a line that also has another
    # one, only a constant written right after `double` is known to be one.
    found = (m for line in module.splitlines() if "double" in line
             for m in (_LLVM_DOUBLE if _LLVM_FLOAT_TYPE.search(line) else _LLVM_FP).finditer(line))
    for m in found:
        if m.group(1) is not None:
            v = float(np.array(int(m.group(1), 16), np.uint64).view(np.float64))
        else:
            v = float(m.group(2))
        if np.isfinite(v):
            out.add(abs(v))
    return out


def c_constants(c_source: str) -> set[float]:
    """The magnitudes of every float32 constant in Halide's C output."""
    out = set()
    for m in _FROM_BITS.finditer(c_source):
        v = float(np.array(int(m.group(1)), np.uint32).view(np.float32))
        if np.isfinite(v):
            out.add(abs(v))
    return out


def halide_print(v: float) -> str:
    """A float32 magnitude as Halide 21's statement printer writes it (without the `f`): fixed with
    six decimals, scientific with six mantissa decimals below 1e-6 (zero stays `0.000000`). Checked
    against Halide's own output at the threshold in tests/pitchfork/frontend/test_float_literals.py."""
    return f"{v:.6e}" if v != 0 and abs(v) < 1e-6 else f"{v:.6f}"


def rewrite(text: str, exact: set[float], bits: int = 32) -> str:
    """Replace each printed float literal of `bits` (32 or 64) by the exact value among `exact` that
    prints as it."""
    suffix, pattern = ("f", FLOAT_LITERAL) if bits == 32 else ("", FLOAT64_LITERAL)
    rounded = (lambda v: float(np.float32(v))) if bits == 32 else float
    by_print: dict[str, set[float]] = {}
    for v in exact:
        by_print.setdefault(halide_print(v), set()).add(v)

    def one(m: re.Match[str]) -> str:
        printed = m.group(1)
        cands = by_print.get(printed, set())
        if len(cands) == 1:
            (v,) = cands
            return m.group(0) if float(v) == float(printed) else f"{float(v)!r}{suffix}"
        if not cands and Decimal(rounded(float(printed))) == Decimal(printed):
            return m.group(0)  # exact as printed (0.5f, 255.0f, ...)
        what = "no exact value" if not cands else f"{len(cands)} exact values"
        source = "its C output" if bits == 32 else "its unoptimised LLVM module"
        raise InexactFloatLiteral(f"float{bits} constant {printed}{suffix}: Halide printed it rounded and {source} "
                                  f"has {what} that prints like it")

    return pattern.sub(one, text)


def halide_c_source(pipeline: Any, args: Sequence[Any], target: str) -> str:
    """Halide's C output of the pipeline for `target` (where exact constants and embedded buffers'
    contents are written out)."""
    import halide as hl

    with tempfile.TemporaryDirectory(prefix="pitchfork-c-") as d:
        path = Path(d) / "pipeline.c"
        pipeline.compile_to_c(str(path), [as_argument(a) for a in args], "pipeline", hl.Target(target))
        return path.read_text()


@lru_cache(maxsize=1)
def _halves_by_print() -> dict[str, tuple[float, ...]]:
    """Every finite non-negative float16 value, by the text Halide prints for it."""
    out: dict[str, list[float]] = {}
    for v in np.arange(0x7C00, dtype=np.uint16).view(np.float16):
        out.setdefault(halide_print(float(v)), []).append(float(v))
    return {k: tuple(v) for k, v in out.items()}


def rewrite_half(text: str) -> str:
    """Replace each printed float16 literal (`0.333252h`) by the one float16 value that prints as it
    (0.333251953125h), keeping it as printed when that is the value. Halide prints a float16 constant
    like a float32 one (halide_print), and there is no exact source for float16 constants (the C
    backend does not compile float16), so a literal that more than one float16 value prints as (a
    small subnormal: 0.000030h is printed for 17 of them) is refused (`InexactFloatLiteral`). Only
    for statements with float16 values (bfloat16's literals print alike but are other values)."""
    table = _halves_by_print()

    def one(m: re.Match[str]) -> str:
        printed = m.group(1)
        cands = table.get(printed, ())
        if len(cands) == 1:
            (v,) = cands
            return m.group(0) if Decimal(v) == Decimal(printed) else f"{v!r}h"
        what = "no float16 value" if not cands else f"{len(cands)} float16 values"
        raise InexactFloatLiteral(f"float16 constant {printed}h: Halide printed it rounded and {what} "
                                  "print like it")

    return HALF_LITERAL.sub(one, text)
