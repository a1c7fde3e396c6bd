"""What Halide 21 writes into `halide_filter_metadata_t` beyond names and types: a scalar Param's
default, range and estimate, and a buffer's per-dimension (min, extent) estimates.

    estimates = argument_estimates(args, pipeline)   # one ArgEstimates per argument and output buffer

Halide's CodeGen_LLVM::embed_metadata_getter reads them from each `Argument`'s `argument_estimates`
(`Parameter::get_argument_estimates`: `Param.set_range` / `set_estimate`, a generator input's default,
`ImageParam.dim(d).set_estimate`, `Func.set_estimate(s)` for the output buffers). Serialization does
not carry them and the statement does not show them, so they are read here, in the caller's process,
from the same Halide objects: the AOT metadata (pitchfork/aot/abi.py) then carries the same values.

A scalar value is kept as the bits of the Param's own type (what `halide_scalar_value_t` holds in its
low bytes: a float16 as its 16 bits, a float32 as its 32), a buffer bound as the int64 Halide embeds.
An undefined or non-constant estimate is None, and Halide writes a null pointer for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Sequence

from pitchfork.frontend.arguments import as_argument

if TYPE_CHECKING:
    import halide as hl


@dataclass(frozen=True, slots=True)
class ArgEstimates:
    """One argument's (or output buffer's) estimates, by its Halide name. `scalar_*` are the value's
    bits in the scalar's type (None: not set); `buffer` has one (min, extent) pair per dimension of a
    buffer, each an int64 or None, and is empty for a scalar."""

    name: str
    scalar_def: int | None = None
    scalar_min: int | None = None
    scalar_max: int | None = None
    scalar_estimate: int | None = None
    buffer: tuple[tuple[int | None, int | None], ...] = ()


def _bits(e: Any, t: Any) -> int | None:
    """The constant `e` converted to type `t` (Halide's scalar type), as the unsigned bits of that
    type, or None if `e` is undefined or not a constant. A reinterpret keeps float16 / bfloat16
    exact: Halide's Python binding has no scalar of those types."""
    import halide as hl

    if not e.defined():
        return None
    width = 8 if t.bits() == 1 else t.bits()  # a bool is stored as one byte
    if e.type() == t and (v := integer_constant(e)) is not None:
        return v & ((1 << width) - 1)
    as_t = hl.cast(t, e)
    try:
        v = hl.evaluate(hl.cast(hl.UInt(8), as_t) if t.bits() == 1 else hl.reinterpret(hl.UInt(width), as_t))
    except Exception:  # noqa: BLE001 - a non-constant estimate (a Param of another Param) is not known
        return None
    return int(v)


def _int64(e: Any) -> int | None:
    import halide as hl

    if not e.defined():
        return None
    if (v := integer_constant(e)) is not None:  # int64 holds every integer type's value but uint64's top half
        return v - (1 << 64) if v >= 1 << 63 else v
    try:
        return int(hl.evaluate(hl.cast(hl.Int(64), e)))
    except Exception:  # noqa: BLE001 - as _bits
        return None


# The printed form of an integer constant: `5` (int32), `(uint8)200`, `(int64)-5`, `(uint1)1` (a bool).
_INTEGER_TEXT = re.compile(r"<halide\.Expr of type \w+: (?:\(u?int\d+\))?(-?\d+)>")


def integer_constant(e: Any) -> int | None:
    """The value of `e` if it is an integer (or bool) constant, read from its printed form, which
    Halide writes exactly for integers; None otherwise (a float, an expression of other Params).
    Why not `hl.evaluate`: each evaluation JIT-compiles a pipeline (~40 ms), and a benchmark with a
    handful of estimates paid ~0.2 s a compile for them; floats still go through it (their printed
    form is rounded)."""
    t = e.type()
    if not (t.is_int() or t.is_uint()):
        return None
    m = _INTEGER_TEXT.fullmatch(str(e))
    return None if m is None else int(m.group(1))


def _one(name: str, est: Any, t: Any, is_buffer: bool) -> ArgEstimates:
    if is_buffer:
        return ArgEstimates(name, buffer=tuple((_int64(r.min), _int64(r.extent)) for r in est.buffer_estimates))
    return ArgEstimates(name, _bits(est.scalar_def, t), _bits(est.scalar_min, t), _bits(est.scalar_max, t),
                        _bits(est.scalar_estimate, t))


def argument_estimates(args: Sequence[Any], pipeline: hl.Pipeline) -> tuple[ArgEstimates, ...]:
    """The estimates of every argument of `args` (ImageParam, Param, Buffer or Argument), then of
    every output buffer of `pipeline` (a Tuple output's `f.0`, `f.1`, ...). Cheap when nothing is
    set, and for integers (read from their printed form); a defined float estimate costs one small
    JIT compile."""
    import halide as hl

    out = []
    for a in args:
        arg = as_argument(a)
        out.append(_one(arg.name, arg.argument_estimates, arg.type, arg.kind != hl.ArgumentKind.InputScalar))
    for f in pipeline.outputs():
        for b in f.output_buffers():
            p = b.parameter()
            out.append(_one(b.name(), p.get_argument_estimates(), p.type(), True))
    return tuple(out)
