"""What an app of the suite is (`App`), and running it through Halide 21 for reference.

An `App` holds the output Func, the pipeline's arguments in order (ImageParams, then Params), a
function making inputs for an output size, and the tolerance of its comparison with Halide's own
realize: 0 for integer outputs (bit-exact), a stated absolute bound for float outputs (Halide's
fast-math flags let LLVM contract and reassociate float code differently in the two compilers;
under strict_float the bound is 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import halide as hl
import numpy as np

#: natural vector lanes of Halide 21 per ISA and element width (x86 AVX2 32 bytes, Neon 16, HVX 128)
VECTOR_BYTES = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}
#: the Halide target each ISA's schedule is written for (what `g.target()` answers in a generator)
HALIDE_TARGETS = {"x86-avx2": "x86-64-linux-avx2-fma-sse41", "arm64": "arm-64-linux",
                  "hvx128": "hexagon-32-noos-hvx-hvx_128"}


def natural_vector_size(isa: str, t: hl.Type) -> int:
    return VECTOR_BYTES[isa] * 8 // t.bits()


@dataclass(frozen=True)
class App:
    name: str
    output: hl.Func
    #: the pipeline's arguments in call order (hl.ImageParam / hl.Param)
    args: tuple[Any, ...]
    #: (rng, output size) -> the argument values (numpy arrays for images, numbers for params)
    make_inputs: Callable[[np.random.Generator, Sequence[int]], list[Any]]
    #: output size for an app size (w, h[, c])
    output_size: Callable[[Sequence[int]], list[int]]
    #: max |pitchfork - Halide| accepted (0: bit-exact)
    tolerance: float = 0.0
    #: sizes: tests (small), timing
    test_size: tuple[int, ...] = (64, 48)
    timing_size: tuple[int, ...] = (1536, 1024)
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def halide_realize(app: App, values: Sequence[Any], size: Sequence[int], target: str = "host") -> np.ndarray:
    """The app's output computed by Halide 21's own JIT (the reference)."""
    for a, v in zip(app.args, values):
        if isinstance(a, hl.ImageParam):
            a.set(hl.Buffer(np.ascontiguousarray(v)))
        else:
            a.set(v)
    t = hl.Target(target) if target != "host" else hl.get_jit_target_from_environment()
    return np.asarray(app.output.realize(list(size), t))
