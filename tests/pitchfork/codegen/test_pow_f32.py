"""float32 `pow` on x86 and arm64 as Halide 21 computes it (codegen/floats.py, FloatOps.halide_pow).

Halide 21 does not call the C library's powf for `pow_f32`: CodeGen_LLVM expands it into its own
polynomial exp and log, exp(log(|x|) * y), with selects for x > 0, y == 0, x == 0, a non-integer y
(NaN) and the sign of an odd integer power; x86 tests y != floor(y) unordered and negates as 0 - r,
arm64 ordered and with fneg (both read from Halide 21's own modules). pitchfork emits the same
expansion there (hvx128 keeps pitchfork's powf, codegen/powf.py). Checked bit for bit against Halide's
own code: x86 against its realize (vectors with Halide's fast-math flags, vectors and scalars under
strict_float), arm64 against Halide's arm64 object in one qemu-aarch64 driver. Inputs: negative,
zero and positive bases, integer and fractional exponents, y == 0 (NaN for a negative base to a
fractional power). strict_float is the target feature (no fast-math flags in either module)."""

from __future__ import annotations

import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from tests.pitchfork.codegen.test_floats_half_arm import _assert_same_bits, ours_and_halides

x = hl.Var("x")
X86 = "x86-64-linux-avx2-fma-sse41"
FLOAT32_CODE = 2 | 32 << 8 | 1 << 16


def _pow_of(a: hl.Expr, c: hl.Expr) -> hl.Expr:
    """pow(base, exponent) of two uint16 values: base in [-4, 12), exponent in [-6, 6) (every fourth
    one rounded to an integer, every sixteenth zero)."""
    base = hl.f32(a) * hl.f32(1 / 4096) - hl.f32(4)
    e = hl.f32(c) * hl.f32(1 / 5461) - hl.f32(6)
    e = hl.select((c & 3) == 0, hl.floor(e), e)
    e = hl.select((c & 15) == 1, hl.f32(0), e)
    base = hl.select((a & 31) == 2, hl.f32(0), base)
    return hl.pow(base, e)


def _func(name: str, lanes: int) -> tuple[hl.Func, list]:
    a, c = hl.ImageParam(hl.UInt(16), 1, "a"), hl.ImageParam(hl.UInt(16), 1, "c")
    f = hl.Func(name)
    e = _pow_of(a[x], c[x])
    f[x] = e
    if lanes > 1:
        f.vectorize(x, lanes)
    return f, [a, c]


@pytest.mark.parametrize("strict,lanes", [(False, 8), (True, 8), (True, 1)], ids=["fast-8", "strict-8", "strict-1"])
def test_x86_pow_f32_bit_exact_with_halides_realize(strict: bool, lanes: int) -> None:
    rng = np.random.default_rng(25)
    n = 4096
    a = rng.integers(0, 2**16, n, dtype=np.uint16)
    c = rng.integers(0, 2**16, n, dtype=np.uint16)
    target = X86 + ("-strict_float" if strict else "")
    f, args = _func(f"pow_x86_{lanes}_{int(strict)}", lanes)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, args, target=target, name=f"pow_x86_{lanes}_{int(strict)}", fallback=False)
    assert "powf" not in prog.llvm_ir()  # Halide's expansion, not pitchfork's powf
    got = prog(a, c, size=[n])
    g, hargs = _func(f"pow_x86_hl_{lanes}_{int(strict)}", lanes)
    hargs[0].set(hl.Buffer(a))
    hargs[1].set(hl.Buffer(c))
    want = np.asarray(g.realize([n], hl.Target(target)))
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32)), \
        [(float(got[i]), float(want[i])) for i in np.flatnonzero(got.view(np.uint32) != want.view(np.uint32))[:8]]
    assert np.isnan(got).any() and (got < 0).any() and (got == 0).any() and (got == 1).any()


@pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")
@pytest.mark.parametrize("strict,lanes", [(False, 4), (True, 4), (True, 1)], ids=["fast-4", "strict-4", "strict-1"])
def test_arm64_pow_f32_bit_exact_with_halides_object(strict: bool, lanes: int, tmp_path: Path) -> None:
    f, args = _func(f"pow_arm_{lanes}_{int(strict)}", lanes)
    target = "arm-64-linux" + ("-strict_float" if strict else "")
    _assert_same_bits(*ours_and_halides(f, args, target, tmp_path, FLOAT32_CODE, 4), np.uint32)
