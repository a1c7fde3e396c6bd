"""Pipeline arguments as Halide `Argument`s: the one conversion capture, the float-literal pass and
the argument checks share (kept below all three so none of them imports another for it).

Halide is imported on first use, as everywhere in the frontend, so importing this module is cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import halide as hl


def as_argument(a: Any) -> "hl.Argument":
    """`a` (ImageParam, Param, Buffer or Argument) as an `hl.Argument`; TypeError names what it got."""
    import halide as hl

    if isinstance(a, hl.Argument):
        return a
    try:
        return hl.Argument(a)
    except TypeError as e:
        raise TypeError(f"cannot use {a!r} as a pipeline argument") from e
