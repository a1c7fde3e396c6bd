"""Buffers embedded in a pipeline (`hl.Buffer`s a Func reads: lookup tables, weights): their contents.

The captured statement names such a buffer like an argument (`lut.buffer`, `_halide_buffer_get_host`
...), but it is neither an argument nor an output: Halide's own code generator emits its contents as
a constant global. The statement does not carry the contents, and the Python bindings cannot list a
pipeline's buffers, so we read them where Halide writes them out in full: its C backend, which emits
each embedded buffer as `static const ... uint8_t _<name>_data[] = {bytes}`, its shape as
`halide_dimension_t(min, extent, stride)` entries and its type as `halide_type_t(code, bits, lanes)`
(`halide_c_source`).

Invariant: an `EmbeddedBuffer` holds exactly the bytes, type and shape Halide compiles into its own
code; a buffer the C output describes only in part is refused by name, never guessed, and one it does
not describe at all is not embedded (codegen then names the construct it cannot compile).
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Sequence

from pitchfork.frontend.arguments import as_argument
from pitchfork.frontend.htypes import HType

_BUFFER_REF = re.compile(r"\(struct halide_buffer_t \*\)([A-Za-z_][\w.$]*?)\.buffer\b")
_CODES = {0: "int", 1: "uint", 2: "float", 4: "bfloat"}


class EmbeddedBufferError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class EmbeddedBuffer:
    """One embedded buffer: its name in the statement, element type, (min, extent, stride) per
    dimension, and its bytes (Halide's dense layout for those strides)."""

    name: str
    type: HType
    dims: tuple[tuple[int, int, int], ...]
    data: bytes


def referenced_buffers(text: str, known: Iterable[str]) -> list[str]:
    """Names of the buffers the statement uses (`(struct halide_buffer_t *)X.buffer`) that are not
    in `known` (the arguments and outputs), in order of first use."""
    skip = set(known)
    seen: list[str] = []
    for m in _BUFFER_REF.finditer(text):
        n = m.group(1)
        if n not in skip and n not in seen:
            seen.append(n)
    return seen


def c_name(name: str) -> str:
    """Halide's C backend name of a buffer (`c_print_name`): `_` and the name with every character
    other than a letter, digit or `_` replaced by `_`."""
    return "_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def from_c_source(c_source: str, names: Iterable[str]) -> tuple[EmbeddedBuffer, ...]:
    """The embedded buffers among `names` as Halide's C output defines them (a name it defines no
    constant buffer for is left out)."""
    out = []
    for name in names:
        cn = re.escape(c_name(name))
        data = re.search(rf"\buint8_t {cn}_data\[\] = \{{([^}}]*)\}};", c_source)
        shape = re.search(rf"\b{cn}_buffer_shape\[\] = \{{(.*?)\}};", c_source)
        buf = re.search(rf"\b{cn}_buffer_ = \{{.*?halide_type_t\(\(halide_type_code_t\)\((\d+)\), (\d+), (\d+)\), "
                        rf"(\d+),", c_source)
        if data is None and buf is None:
            continue  # not an embedded buffer (a buffer the pipeline makes itself): codegen says what it is
        if data is None or buf is None:
            raise EmbeddedBufferError(f"embedded buffer {name}: Halide's C output has no constant data for it")
        code, bits, lanes, dimensions = (int(g) for g in buf.groups())
        if code not in _CODES or lanes != 1:
            raise EmbeddedBufferError(f"embedded buffer {name}: element type code {code} x{lanes} not supported")
        dims = tuple((int(a), int(b), int(c)) for a, b, c in
                     re.findall(r"halide_dimension_t\((-?\d+), (-?\d+), (-?\d+)", shape.group(1) if shape else ""))
        if len(dims) != dimensions:
            raise EmbeddedBufferError(f"embedded buffer {name}: {dimensions} dimensions, {len(dims)} in its shape")
        raw = bytes(int(v) for v in re.findall(r"\d+", data.group(1)))
        # Halide's bool buffers hold one byte per element, like ours
        t = HType(_CODES[code], bits)
        size = max(1, bits // 8)
        need = size * (1 + sum((e - 1) * abs(s) for _, e, s in dims)) if all(e > 0 for _, e, _ in dims) else 0
        if len(raw) < need:
            raise EmbeddedBufferError(f"embedded buffer {name}: {len(raw)} bytes for a shape needing {need}")
        out.append(EmbeddedBuffer(name, t, dims, raw))
    return tuple(out)


def halide_c_source(pipeline: Any, args: Sequence[Any], target: str) -> str:
    """Halide's C output of the pipeline for `target` (where embedded buffers' contents are written out)."""
    import halide as hl

    with tempfile.TemporaryDirectory(prefix="pitchfork-c-") as d:
        path = Path(d) / "pipeline.c"
        pipeline.compile_to_c(str(path), [as_argument(a) for a in args], "pipeline", hl.Target(target))
        return path.read_text()
