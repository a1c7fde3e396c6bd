"""Float scalar Params with a range (`Param.set_range`) through PITCHFORK's ahead-of-time entry point.

Halide checks them in the prologue with `halide_error_param_too_small_f64` / `_too_large_f64`, whose
messages print doubles as its runtime's Printer does (halide_double_to_string, scientific:
`1.234560e+02`); aot/abi_runtime.py formats them the same way. The capture transfers the bounds
exactly (frontend/capture.argument_constraints: a float32 bound of -2.5 used to become -2, a float16
one was dropped). Our object and Halide's own `compile_to_static_library` output of the same pipeline
are called by one C driver (x86 natively, arm-64-linux-arm_fp16 under qemu-aarch64) with in-range
and out-of-range float16 / float32 / float64 values: same codes, messages and output bytes. The JIT
call refuses exactly the values Halide's realize refuses."""

from __future__ import annotations

from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results
from pitchfork.backend.run import tools_available
from pitchfork.errors import PipelineError

X86, ARM_FP16 = "x86-64-linux-avx2", "arm-64-linux-arm_fp16"
F16 = hl.Float(16)
W = 67
FLOAT32_CODE = 2 | 32 << 8 | 1 << 16


def _pipeline(name: str) -> tuple[hl.Func, list]:
    """out = float32(v * s16) + s32 + float32(s64), v the input's uint16 bits masked to a finite half;
    s16, s32 in [-2.5, 3.5], s64 in [-1e10, 0.1]."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.UInt(16), 1, "input")
    s16, s32, s64 = hl.Param(F16, "s16"), hl.Param(hl.Float(32), "s32"), hl.Param(hl.Float(64), "s64")
    s16.set_range(hl.cast(F16, hl.f32(-2.5)), hl.cast(F16, hl.f32(3.5)))
    s32.set_range(hl.f32(-2.5), hl.f32(3.5))
    s64.set_range(hl.f64(-1e10), hl.f64(0.1))
    f = hl.Func(name)
    v = hl.reinterpret(F16, inp[x] & 0xBBFF)
    f[x] = hl.f32(v * s16) + s32 + hl.f32(s64)
    f.vectorize(x, 8)
    return f, [inp, s16, s32, s64]


#: (name, float16 bits, float32, float64): in range, and each bound broken, with values whose printing
#: needs rounding, a three-digit exponent and a negative one
VALUES = [
    ("in_range", 0x3C00, 1.5, -3.25), ("in_range_tiny", 0x8001, -2.5, 5e-324),
    ("s16_too_large", 0x4400, 0.0, 0.0), ("s16_too_small", 0xC200, 0.0, 0.0),
    ("s32_too_large", 0x3C00, 123.456, 0.0), ("s32_too_small", 0x3C00, -2.5000002, 0.0),
    ("s64_too_large", 0x3C00, 0.0, 0.30000000000000004), ("s64_too_large_huge", 0x3C00, 0.0, 1e300),
    ("s64_too_large_rounds", 0x3C00, 0.0, 0.15), ("s64_too_small", 0x3C00, 0.0, -1.5e10),
    ("two_broken", 0x4400, 99.0, -1e11),
]


@pytest.mark.parametrize("target", [X86, pytest.param(ARM_FP16, marks=[
    pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64"), pytest.mark.qemu])])
def test_range_messages_same_as_halides_library(target: str, tmp_path: Path) -> None:
    f, args = _pipeline("ranged")
    prog = pitchfork.compile(f, args, target=target, name="ranged_pf", fallback=False)
    ours = prog.object_file(tmp_path / "ranged_pf.o")
    f.compile_to_static_library(str(tmp_path / "ranged_hl"), args, "ranged_hl", hl.Target(target))
    as_half = target == ARM_FP16
    cases = [Case(n, (Buf(((0, W, 1),), type="uint16", alloc=2 * W), f"PF_F16({h:#x})" if as_half else h,
                      repr(a), repr(b), Buf(((0, W, 1),), type=FLOAT32_CODE, alloc=4 * W)))
             for n, h, a, b in VALUES]
    src = driver_source(cases, ["ranged_pf", "ranged_hl"], ["_Float16" if as_half else "uint16_t", "float", "double"],
                        freestanding=False)
    results = parse_results(build_and_run("x86-avx2" if target == X86 else "arm64", src,
                                          [ours, tmp_path / "ranged_hl.a"], tmp_path), cases, 2)
    by = {}
    for case, (r_ours, r_theirs) in zip(cases, results):
        assert (r_ours.rc, r_ours.message) == (r_theirs.rc, r_theirs.message), case.name
        assert r_ours.outputs == r_theirs.outputs, f"{case.name}: output allocations differ"
        by[case.name] = r_ours
    for n, r in by.items():
        want = 0 if n.startswith("in_range") else -10 if "too_large" in n else -9 if "too_small" in n else r.rc
        assert r.rc == want and (r.rc == 0) == (r.message == ""), (n, r.rc, r.message)
    assert by["two_broken"].rc in (-9, -10)
    # Halide's own texts, for the reader (the comparison above is the check)
    assert by["s32_too_large"].message == "Parameter s32 is 1.234560e+02 but must be at most 3.500000e+00"
    assert by["s64_too_small"].message == "Parameter s64 is -1.500000e+10 but must be at least -1.000000e+10"
    assert by["s64_too_large_huge"].message.startswith("Parameter s64 is 1.000000e+300 ")
    assert by["in_range"].outputs[-1] != bytes(4 * W)


def test_jit_refuses_what_halide_refuses() -> None:
    """The JIT checks the same bounds (a float32 -2.5 was truncated to -2, so -2.25 was refused; the
    float16 bounds were dropped, so 4.0 was accepted). Halide's realize is the reference: of the
    pipeline with the float16 value written in (Halide's Python binding cannot set a float16 Param),
    and, for whether a call is refused, of s32 + s64 alone (float16: its declared bounds)."""
    f, (inp, s16, s32, s64) = _pipeline("ranged_jit")
    prog = pitchfork.compile(f, [inp, s16, s32, s64], target="x86-avx2", name="ranged_jit", fallback=False)
    bits = np.arange(W, dtype=np.uint16) * 997
    inp.set(hl.Buffer(bits))
    x = hl.Var("x")
    checks = hl.Func("ranged_checks")
    checks[x] = s32 + hl.f32(s64)
    for v16, v32, v64 in [(1.0, -2.25, 0.05), (-2.5, -2.5, 0.0625), (4.0, 0.0, 0.0), (1.0, 3.75, 0.0),
                          (1.0, 0.0, 0.125), (1.0, -2.75, 0.0)]:
        s32.set(v32)
        s64.set(v64)
        try:
            checks.realize([1])
            halide_ok = -2.5 <= v16 <= 3.5
        except hl.HalideError:  # (Param.set rounds a float64 value through float32: values exact in both)
            halide_ok = False
        if not halide_ok:
            with pytest.raises(Exception, match="s16|s32|s64"):
                prog(bits, v16, v32, v64, size=[W])
            continue
        k = hl.reinterpret(F16, hl.u16(int(np.array(v16, np.float16).view(np.uint16))))
        g = hl.Func("ranged_ref")
        g[x] = hl.f32(hl.reinterpret(F16, inp[x] & 0xBBFF) * k) + s32 + hl.f32(s64)
        assert np.array_equal(prog(bits, v16, v32, v64, size=[W]), np.asarray(g.realize([W])))


def test_bfloat16_param_with_a_range_compiles_and_enforces_it() -> None:
    """Halide 21 cannot compile a bfloat16 Param with a range: its own range check calls
    halide_error_param_too_large_f64 with a "bfloat64" argument and the compile raises "Error: " with no
    text. Its lowering up to "Finding intrinsics" is fine, and since the capture log carries exact
    float constants (ebcaa8c) PITCHFORK compiles that statement: the range is enforced (out-of-range
    values fail naming the Param) and in-range results are bit-exact with Halide's realize of the same
    pipeline without the range. (Before ebcaa8c the float64-constants compile hit Halide's error and the
    pipeline was refused; before that the bounds were dropped: both older behaviours are worse.)"""
    x = hl.Var("x")
    inp, s = hl.ImageParam(hl.UInt(16), 1, "input"), hl.Param(hl.BFloat(16), "s")
    s.set_range(hl.cast(hl.BFloat(16), hl.f32(-2.5)), hl.cast(hl.BFloat(16), hl.f32(3.5)))
    f = hl.Func("ranged_bf16")
    f[x] = hl.reinterpret(hl.UInt(16), hl.reinterpret(hl.BFloat(16), inp[x]) * s)
    with pytest.raises(hl.HalideError):
        f.compile_to_llvm_assembly("/dev/null", [inp, s], "ranged_bf16", hl.Target(X86))
    prog = pitchfork.compile(f, [inp, s], target="x86-avx2", name=f.name(), fallback=False)
    rng = np.random.default_rng(26)
    bits = rng.integers(0, 1 << 16, 64, dtype=np.uint16)
    inp2 = hl.ImageParam(hl.UInt(16), 1, "input_unranged")
    inp2.set(hl.Buffer(bits))
    # exact in bfloat16 (Halide's Python cannot set a bfloat16 Param, so the reference has the value as a
    # constant); not 0 or 1, which Halide's simplifier folds (x * 0 -> 0 loses -0 and NaN, x * 1 -> x)
    for v in (-2.5, -1.25, 0.5, 3.0, 3.5):
        g = hl.Func("unranged_bf16")
        g[x] = hl.reinterpret(hl.UInt(16), hl.reinterpret(hl.BFloat(16), inp2[x]) * hl.cast(hl.BFloat(16), hl.f32(v)))
        want = np.asarray(g.realize([bits.size], hl.Target(X86)))
        assert np.array_equal(prog(bits, v, size=[bits.size]), want), v
    for v in (3.75, -2.75, 100.0):
        with pytest.raises(Exception, match=r"\bs\b"):
            prog(bits, v, size=[bits.size])
