"""`fast_inverse` and `fast_inverse_sqrt` (float32) as Halide 21's runtime defines them per target.

Halide leaves these two calls to its runtime's target modules (src/runtime/x86.ll, x86_avx.ll,
aarch64.ll), inlined into the pipeline:
* x86: the hardware estimate alone, `rcpps` / `rsqrtps` (Halide uses the 8-lane AVX forms on an avx2
  target, `rcp.ss` / `rsqrt.ss` for a scalar: the same estimate per lane), no refinement step. The
  estimate is the CPU's (Intel and AMD tables differ), so results match Halide's on the same machine.
* arm64: the Neon estimate and one Newton step, `frecpe` then `frecps` and a multiply for the
  inverse; `frsqrte`, its square, `frsqrts` and a multiply for the inverse square root, four lanes at
  a time (a scalar uses lane 0: the estimate instructions are defined lane by lane).
Halide's Hexagon runtime defines neither (its code calls an undefined symbol), so hvx128 refuses them.
The multiplies are the runtime function's own instructions: no fast-math flags.
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.float_math import declare
from pitchfork.codegen.ir_constants import undef

F32 = ir.FloatType()
I32 = ir.IntType(32)
#: per target: (chunk lanes, the estimate intrinsic of `fast_inverse`, of `fast_inverse_sqrt`)
_ESTIMATES: dict[str, tuple[int, str, str]] = {
    "x86-avx2": (8, "llvm.x86.avx.rcp.ps.256", "llvm.x86.avx.rsqrt.ps.256"),
    "arm64": (4, "llvm.aarch64.neon.frecpe", "llvm.aarch64.neon.frsqrte"),
}
_ARM_STEPS = {"llvm.aarch64.neon.frecpe": "llvm.aarch64.neon.frecps",
              "llvm.aarch64.neon.frsqrte": "llvm.aarch64.neon.frsqrts"}


def supports_estimates(target: str) -> bool:
    return target in _ESTIMATES


def fast_inverse(b: ir.IRBuilder, module: ir.Module, target: str, x: ir.Value, sqrt: bool) -> ir.Value:
    """Halide's fast_inverse_f32 (sqrt=False) or fast_inverse_sqrt_f32 (sqrt=True) of `x` (a float32
    scalar or vector) on `target` (see supports_estimates)."""
    width, recip, rsqrt = _ESTIMATES[target]
    name = rsqrt if sqrt else recip
    chunk_t = ir.VectorType(F32, width)
    if target == "x86-avx2":
        est = module.globals.get(name) or ir.Function(module, ir.FunctionType(chunk_t, [chunk_t]), name=name)

        def one(v: ir.Value) -> ir.Value:
            return b.call(est, [v])
    else:
        est = declare(module, name, chunk_t, [chunk_t])
        step = declare(module, _ARM_STEPS[name], chunk_t, [chunk_t, chunk_t])

        def one(v: ir.Value) -> ir.Value:
            a = b.call(est, [v])
            if sqrt:
                return b.fmul(a, b.call(step, [b.fmul(a, a), v]))
            return b.fmul(a, b.call(step, [a, v]))

    lanes = x.type.count if isinstance(x.type, ir.VectorType) else 1
    if lanes == 1:
        v = b.insert_element(undef(chunk_t), x, I32(0))
        return b.extract_element(one(v), I32(0))
    padded = -(-lanes // width) * width
    src = x if padded == lanes else b.shuffle_vector(
        x, undef(x.type), ir.Constant(ir.VectorType(I32, padded), [min(i, lanes - 1) for i in range(padded)]))
    out: ir.Value = undef(x.type)
    for k in range(0, padded, width):
        part = one(b.shuffle_vector(src, undef(src.type), ir.Constant(ir.VectorType(I32, width),
                                                                      list(range(k, k + width)))))
        for i in range(min(width, lanes - k)):  # (LLVM folds these lane moves into shuffles)
            out = b.insert_element(out, b.extract_element(part, I32(i)), I32(k + i))
    return out
