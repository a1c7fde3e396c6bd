"""Whether `vgatherdps` pays on the CPU the x86 code will run on: LLVM's own answer, asked once.

The codegen pass `x86_float_gathers` (codegen/memory.py `_avx2_gather`) reads an unmasked 8/16/32-lane
gather of a float32 buffer with one `vgatherdps` per 8 lanes instead of lane by lane (Halide 21's form:
per 8 lanes 8 scalar loads and inserts). Whether that is faster depends on the CPU, not on the ISA:

* Intel Skylake and later (no GDS microcode slowdown): much faster. Session 25, a Xeon: bilateral_grid
  0.99-1.04x -> 0.73-0.76x of Halide 21's CPU time, local_laplacian 0.90x -> 0.61x.
* AMD Zen (session 33, an EPYC, LLVM host CPU znver5; process CPU per call, interleaved,
  `python3 -m benchmarks.harness.apps_suite_alloc --variants p,pnogather,h`): local_laplacian's
  gPyramid_1 (32 gathers of the 14 KB `remap` table per 8 pixels; 65% of that stage's perf samples fall
  on the instruction after a vgatherdps) 1.067x / 1.050x of Halide's CPU at 1 / 2 threads with gathers,
  0.959x / 0.998x without; bilateral_grid 0.903x / 0.899x with, 0.883x / 0.919x without (no gain).

LLVM encodes the same knowledge in its per-CPU tuning (X86.td: `TuningFastGather` on Skylake and later
Intel cores; not on Haswell, nor on any Zen): for such a CPU its own lowering of `llvm.masked.gather`
is vgatherdps, otherwise lane by lane. `fast_float_gathers(cpu)` asks LLVM exactly that, by compiling
an 8-lane float gather for `cpu` (AVX2 only, as our x86 code is) and looking for vgatherdps: no table
of CPU names of our own to keep up to date. The compiling host's CPU is the default, since the x86 code
is JIT-run on it; for code meant for another machine, `enable_passes=["x86_float_gathers"]` /
`disable_passes=[...]` choose explicitly.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Optional

#: an unmasked 8-lane float32 gather, as LLVM's vectorizers emit one
_PROBE_IR = """
define <8 x float> @probe(ptr %p, <8 x i32> %i) {
  %e = sext <8 x i32> %i to <8 x i64>
  %a = getelementptr float, ptr %p, <8 x i64> %e
  %v = call <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr> %a, i32 4, <8 x i1> splat (i1 true),
                                                       <8 x float> poison)
  ret <8 x float> %v
}
declare <8 x float> @llvm.masked.gather.v8f32.v8p0(<8 x ptr>, i32, <8 x i1>, <8 x float>)
"""


@lru_cache(maxsize=None)
def fast_float_gathers(cpu: Optional[str] = None) -> bool:
    """Whether LLVM's tuning for `cpu` (default: the host's, `llvm.get_host_cpu_name()`) lowers an
    unmasked 8-lane float32 gather to `vgatherdps` with AVX2 (and without AVX-512, as our code is
    compiled). An unknown or generic CPU answers False (Halide 21's lane-by-lane form)."""
    import llvmlite.binding as llvm

    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    name = cpu if cpu is not None else llvm.get_host_cpu_name()
    module = llvm.parse_assembly(_PROBE_IR)
    machine = llvm.Target.from_triple("x86_64-unknown-linux-gnu").create_target_machine(
        cpu=name, features="+64bit,+avx2,+fma,-avx512f", opt=3)
    return "vgatherdps" in machine.emit_assembly(module)
