"""Calling a compiled pipeline's raw kernel: the argument list, and a zero-copy in-process x86 call.

`pitchfork.compile(...)` produces one LLVM function `void name(ptr err, <per input: ptr data, then
(min, extent, stride) per dimension | scalar>, <per output: ptr data, (min, extent, stride) per
dimension>)` (the convention `CompiledPipeline.__call__` follows). `kernel_args` builds that list as
`pitchfork.backend.harness` `Buffer`/`Scalar` values, so the same list feeds the qemu / native C harness
of the static estimate (`static.py`). `DirectKernel` is the timing path on x86: the JIT'd function is
called through ctypes on preallocated, 128-byte-aligned buffers, with nothing copied per call.

Invariant: the argument list is exactly the one `CompiledPipeline.__call__` passes (same order, same
scalar widths), so a kernel timed here is the kernel the correctness tests check.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from pitchfork.backend.harness import ALIGN, Buffer, Scalar
from pitchfork.api import CompiledPipeline


def kernel_args(prog: CompiledPipeline, values: Sequence[Any], size: Sequence[int]) -> list[Buffer | Scalar]:
    """The raw argument list of `prog`'s kernel for inputs `values` and output extents `size`.

    The first argument is the i32 error slot; output buffers are zero-filled arrays (outputs, like the
    error slot, are `Buffer.output`). This is `CompiledPipeline.bind`'s list itself (buffer mins of
    `hl.Buffer` inputs, f32 parameters as their bit patterns, Param values checked as Halide does)."""
    if prog.module is None or prog.captured is None:
        raise ValueError(f"{prog.name}: a Halide fallback has no PITCHFORK kernel")
    return list(prog.bind(values, size).args)


def aligned_copy(a: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of `a` whose data starts on an ALIGN-byte boundary (with ALIGN bytes of
    readable slack after it, like the qemu harness gives)."""
    raw = np.zeros(a.nbytes + 2 * ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    out = raw[off : off + a.nbytes].view(a.dtype).reshape(a.shape)
    out[...] = a
    return out


@dataclass
class DirectKernel:
    """One x86 kernel bound to preallocated buffers: `run()` is a single ctypes call."""

    function: Callable[..., None]
    values: tuple[int, ...]
    error: np.ndarray
    outputs: list[np.ndarray]
    keep: list[np.ndarray]

    def run(self) -> None:
        self.function(*self.values)

    def check(self, prog: CompiledPipeline) -> None:
        code = int(self.error[0])
        if code:
            what = prog.assertions.get(code, "(unknown)")
            raise RuntimeError(f"{prog.name}: Halide assertion #{code} failed: {what}")


def direct_kernel(prog: CompiledPipeline, values: Sequence[Any], size: Sequence[int],
                  share: "DirectKernel | None" = None) -> DirectKernel:
    """Bind `prog` (compiled for x86-avx2) to aligned copies of `values` and fresh output buffers, or,
    with `share` (a kernel of the same pipeline, same argument list), to `share`'s own arrays."""
    from pitchfork.backend.run import _jit  # the JIT engine cache run_calls uses (one engine per module)

    if prog.target != "x86-avx2":
        raise ValueError(f"direct calls run x86-avx2 kernels only, not {prog.target}")
    assert prog.module is not None
    args = kernel_args(prog, values, size)
    kinds = tuple("p" if isinstance(a, Buffer) else a.llvm_type for a in args)
    fn = _jit([prog.module]).function(prog.name, kinds)
    keep: list[np.ndarray] = []
    outputs: list[np.ndarray] = []
    vals: list[int] = []
    shared = iter(share.keep) if share is not None else None
    for a in args:
        if isinstance(a, Scalar):
            vals.append(a.signed_value)
            continue
        arr = next(shared) if shared is not None else aligned_copy(a.array)
        if arr.shape != a.array.shape or arr.dtype != a.array.dtype:
            raise ValueError(f"{prog.name}: shared array {arr.shape} {arr.dtype} does not fit argument "
                             f"{a.array.shape} {a.array.dtype}")
        keep.append(arr)
        if a.is_output:
            outputs.append(arr)
        vals.append(arr.ctypes.data)
    error, *outs = outputs
    return DirectKernel(fn, tuple(vals), error, outs, keep)
