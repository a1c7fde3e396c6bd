"""A requantize-like pipeline with what Halide checks beyond buffer shapes: scalar Params with ranges
(halide_error_param_too_small/large) and an input with a declared host alignment and min
(halide_error_unaligned_host_ptr, constraint_violated). Used by test_abi.py:

    python3 requant_pipeline.py pitchfork|halide OUT_DIR NAME     # writes OUT_DIR/NAME.a (fresh process)
"""

import sys
from pathlib import Path

import halide as hl


def build() -> tuple[hl.Func, list]:
    x, y = hl.vars("x y")
    inp = hl.ImageParam(hl.Int(16), 2, "inp")
    mult = hl.Param(hl.Int(32), "mult", 100)
    mult.set_range(-1000, 1000)
    shift = hl.Param(hl.UInt(8), "shift", 3)
    shift.set_range(1, 15)
    out = hl.Func("requant")
    prod = hl.widening_mul(inp[x, y], hl.i16(mult))
    out[x, y] = hl.saturating_cast(hl.Int(8), hl.rounding_shift_right(prod, hl.u32(shift)))
    out.vectorize(x, 16, hl.TailStrategy.GuardWithIf)
    inp.dim(0).set_min(0)
    inp.set_host_alignment(32)
    out.output_buffer().dim(0).set_min(0)
    return out, [inp, mult, shift]


if __name__ == "__main__":
    who, out_dir, name = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
    f, args = build()
    if who == "pitchfork":
        import pitchfork
        from pitchfork.aot.abi import write_library

        write_library(pitchfork.compile(f, args, target="x86-avx2", name=name, fallback=False), out_dir)
    else:
        hl.Pipeline(f).compile_to_static_library(str(out_dir / name), args, name,
                                                 hl.Target("x86-64-linux-avx-avx2-fma-sse41"))
