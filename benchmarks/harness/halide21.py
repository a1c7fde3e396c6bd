"""Halide 21's own compiler as the third contender: JIT timing on x86, assembly for the static estimate.

Each use builds a fresh pipeline from the benchmark module (the same algorithm and schedule our two
isels compile). Timing: `compile_jit` for `x86-64-linux-avx-avx2-fma-sse41`, inputs bound once, the
output realized into one preallocated buffer per call (SPEC 1.7), one thread (no schedule here is
parallel, and `HL_NUM_THREADS=1` is set). Assembly: `compile_to_assembly` with the ISA's Halide target
plus `no_runtime` (the harness supplies the two runtime calls pipelines make, `halide_malloc` and
`halide_free`, and on Hexagon the libm calls LLVM emits for float rounding,
`static.FREESTANDING_LIBM`). On AArch64 and Hexagon, Halide's LLVM IR for the target (its
instruction selection: Neon / HVX intrinsics already chosen) is compiled by Debian's `llc` (LLVM 22,
the LLVM of our own backend) with our own target machine (AArch64: cortex-a76 +neon,+dotprod) and the
backend options both isels get (`llc_command`, `machine.backend_options`), for every benchmark
alike: one option set for all three contenders (for Hexagon it is also needed: Halide 21's bundled
LLVM aborts in register allocation when emitting assembly for some of these pipelines). On x86
Halide's own JIT is timed, with Halide's own x86 code generation (mcpu haswell, as ours). Where Halide's own code fails,
`KNOWN_FAILURES` says why.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from benchmarks.common import HALIDE_TARGETS, Benchmark, ParamSet
from pitchfork.frontend.htypes import HType

os.environ.setdefault("HL_NUM_THREADS", "1")


def _pipeline(out: Any) -> Any:
    import halide as hl

    return out if isinstance(out, hl.Pipeline) else hl.Pipeline(out)


def output_dtype(out: Any) -> np.dtype:
    import halide as hl

    f = out if isinstance(out, hl.Func) else out.outputs()[0]
    return HType.from_halide(f.type()).np_dtype


def bind(args: Sequence[Any], values: Sequence[Any]) -> list[Any]:
    """Set every param to its value; returns what must stay alive while they are bound."""
    import halide as hl

    keep: list[Any] = []
    for a, v in zip(args, values):
        if isinstance(a, hl.ImageParam):
            if isinstance(v, hl.Buffer):  # keeps its min (gaussian3x3's input starts at (-1, -1))
                keep.append(v)
                a.set(v)
                continue
            arr = np.ascontiguousarray(v)
            buf = hl.Buffer(arr)
            keep += [arr, buf]  # param.set does not keep the array alive (SPEC 1.7)
            a.set(buf)
        else:
            a.set(v)
    return keep


@dataclass
class HalideRunner:
    """Halide's JIT-compiled pipeline bound to inputs, realizing into one preallocated buffer."""

    pipeline: Any
    out: Any
    keep: list[Any]
    compile_seconds: float
    args: list[Any] = field(default_factory=list)

    def run(self) -> None:
        self.pipeline.realize(self.out)

    def rebind(self, values: Sequence[Any], out: np.ndarray) -> None:
        """Read `values` and realize into `out` (wrapped, not copied) from now on; no recompile."""
        import halide as hl

        self.keep = bind(self.args, values)
        self.out = hl.Buffer(out)
        self.keep.append(out)

    def result(self) -> np.ndarray:
        return np.asarray(self.out).copy()


def halide_runner(bench: Benchmark, pset: ParamSet, values: Sequence[Any], size: Sequence[int]) -> HalideRunner:
    import halide as hl

    out, args = bench.build("x86-avx2", pset)
    pipe = _pipeline(out)
    keep = bind(args, values)
    target = hl.Target(HALIDE_TARGETS["x86-avx2"])
    t0 = time.perf_counter()
    pipe.compile_jit(target)
    secs = time.perf_counter() - t0
    buf = pipe.realize(list(size), target)
    return HalideRunner(pipe, buf, keep, secs, list(args))


#: Why Halide 21's own code fails where it does (investigated; appended to the failure row only when
#: that failure actually happens, so an entry cannot hide a success).
KNOWN_FAILURES: dict[tuple[str, str], str] = {
    ("softmax", "hvx128"): (
        "Halide 21 rejects its own HVX schedule: an internal error (IR.cpp:239, a Select whose condition and "
        "values have different lane counts) raised by its Hexagon-only passes after 'Looking for "
        "vscatter-vgather', on the rounding_mul_shift_right by the scalar beta_mult; Halide's lowering up to "
        "the statement we capture succeeds, which is why our two isels compile it"),
    ("fully_connected", "hvx128"): (
        "Halide 21's HVX code is wrong, not our runner: its Hexagon pass 'Carrying values across loop iterations' "
        "(LoopCarry) deletes the rfactor intermediates' update loop over rco (Halide's own HL_DEBUG_CODEGEN=3 "
        "statements: 22 -> 20 loops, 55 -> 19 vector_reduce_add), so no product is computed; "
        "python -m benchmarks.harness.halide21_repro"),
    ("matmul", "hvx128"): (
        "Halide 21's HVX code is wrong, not our runner (parameter set 1, whose row sums are used): its pass "
        "'optimizing Hexagon instructions' hoists the interleave of a widened u8 load over the u32 row-sum "
        "accumulator (interleave.vw(acc + zxt(unpack(load)))), permuting the accumulator every iteration; a "
        "10-line pipeline reproduces it: python -m benchmarks.harness.halide21_repro"),
}


def known_failure(bench: str, isa: str) -> str:
    return KNOWN_FAILURES.get((bench, isa), "")


@dataclass
class HalideAsm:
    asm: str
    function: str
    args: list[Any]
    out_dtype: np.dtype
    compile_seconds: float


def halide_assembly(bench: Benchmark, pset: ParamSet, isa: str, function: str) -> HalideAsm:
    """Halide 21's assembly of `bench` for `isa` (see the module docstring for Hexagon)."""
    import halide as hl

    from benchmarks.harness.static import StaticError

    out, args = bench.build(isa, pset)
    pipe = _pipeline(out)
    target = hl.Target(HALIDE_TARGETS[isa] + "-no_runtime")
    with tempfile.TemporaryDirectory(prefix="pf-bench-halide-") as d:
        t0 = time.perf_counter()
        if isa == "x86-avx2":  # the x86 figure is Halide's own JIT; its assembly is Halide's own compile
            path = os.path.join(d, f"{function}.s")
            pipe.compile_to_assembly(path, list(args), function, target)
            secs = time.perf_counter() - t0
            with open(path) as f:
                asm = f.read()
        else:  # Halide's instruction selection, our target machine and backend options (llc_command)
            ll = os.path.join(d, f"{function}.ll")
            pipe.compile_to_llvm_assembly(ll, list(args), function, target)
            s = os.path.join(d, f"{function}.s")
            p = subprocess.run(llc_command(ll, s, isa), capture_output=True, text=True)
            secs = time.perf_counter() - t0
            if p.returncode:
                raise StaticError(f"llc failed on Halide's {isa} IR: {p.stderr[-1500:]}")
            with open(s) as f:
                asm = f.read()
    return HalideAsm(asm, function, list(args), output_dtype(out), secs)


def llc_command(ll: str, s: str, isa: str = "hvx128") -> list[str]:
    """llc on Halide's IR for `isa` with our own target (triple, CPU, features, relocation model) and the
    backend options both isels are compiled with (`machine.backend_options`): one option set."""
    from benchmarks.harness.static import llvm_tool
    from pitchfork.backend.machine import backend_options, get_target

    t = get_target(isa)
    return [llvm_tool("llc"), "-O3", f"-mtriple={t.triple}", f"-mcpu={t.cpu}", f"-mattr={t.features}",
            *backend_options(t), f"-relocation-model={t.reloc}", ll, "-o", s]


Runner = Callable[[], None]
