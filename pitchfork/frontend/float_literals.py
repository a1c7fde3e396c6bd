"""Exact float32 constants for a captured statement.

Halide prints a float32 constant in its statement text with six decimals (`0.000312f` for 1/3200,
`1.842105f` for a folded constant), or, for a nonzero magnitude below 1e-6, with six decimals of
mantissa (`-2.596302e-07f`, a coefficient of fast_sin's polynomial; `halide_print`): the printed value
is not the constant the pipeline computes with. Halide's C backend prints the same constants exactly (`float_from_bits(967038730 /* ... */)`),
so for a statement that contains float literals we compile the pipeline to C once, collect those
exact values, and replace each printed literal by the unique exact value that prints as it. A literal
with no such value, or with two different ones, is refused (`InexactFloatLiteral`, which codegen
reports as unsupported) rather than guessed; a literal that is exact as printed (0.5, 255.0, ...) and
has no candidate keeps its value.

Invariant: the rewritten text parses to the same statement with every float32 constant exact.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from pitchfork.frontend.arguments import as_argument

#: A float32 literal as Halide prints it (the sign, if any, is a separate token).
FLOAT_LITERAL = re.compile(r"(?<![\w.$])(\d+\.\d+(?:e[+-]\d+)?)f(?![\w.$])")
_FROM_BITS = re.compile(r"float_from_bits\((\d+)\b")


class InexactFloatLiteral(ValueError):
    pass


def has_float_literals(text: str) -> bool:
    return FLOAT_LITERAL.search(text) is not None


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


def rewrite(text: str, exact: set[float]) -> str:
    """Replace each printed float32 literal by the exact value among `exact` that prints as it."""
    by_print: dict[str, set[float]] = {}
    for v in exact:
        by_print.setdefault(halide_print(v), set()).add(v)

    def one(m: re.Match[str]) -> str:
        printed = m.group(1)
        cands = by_print.get(printed, set())
        if len(cands) == 1:
            (v,) = cands
            return m.group(0) if float(v) == float(printed) else f"{float(v)!r}f"
        as_printed = float(np.float32(float(printed)))
        if not cands and as_printed == float(printed):
            return m.group(0)  # exact as printed (0.5f, 255.0f, ...)
        what = "no exact value" if not cands else f"{len(cands)} exact values"
        raise InexactFloatLiteral(f"float constant {printed}f: Halide printed it rounded and its C output has {what} "
                                  "that prints like it")

    return FLOAT_LITERAL.sub(one, text)


def halide_c_source(pipeline: Any, args: Sequence[Any], target: str) -> str:
    """Halide's C output of the pipeline for `target` (where exact constants and embedded buffers'
    contents are written out)."""
    import halide as hl

    with tempfile.TemporaryDirectory(prefix="pitchfork-c-") as d:
        path = Path(d) / "pipeline.c"
        pipeline.compile_to_c(str(path), [as_argument(a) for a in args], "pipeline", hl.Target(target))
        return path.read_text()

