"""Run kernels bit-exactly on x86 (JIT), AArch64 (qemu-aarch64) and Hexagon HVX (qemu-hexagon).

Each test makes one `run_calls` (so one link and one qemu run) per target.
"""

from __future__ import annotations

import numpy as np
import pytest

from pitchfork.backend import run as run_mod
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import Buffer, Call, RunError, Scalar, ToolMissing, check_tools, run_calls

from .kernels import ALL_TARGETS, VEC_BYTES, avg_add_ir, rounding_avg

# out64[i] = sext(in[i]) * c + n;  acc[i] += in[i] ^ trunc(c)   (generic IR, i32 and i64 scalars)
SCALARS_IR = """
define void @scalars(ptr noalias %in, ptr noalias %out64, ptr noalias %acc, i32 %n, i64 %c) {
entry:
  %ok = icmp sgt i32 %n, 0
  br i1 %ok, label %loop, label %exit
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %pi = getelementptr i32, ptr %in, i32 %i
  %x = load i32, ptr %pi, align 4
  %x64 = sext i32 %x to i64
  %m = mul i64 %x64, %c
  %n64 = sext i32 %n to i64
  %y = add i64 %m, %n64
  %po = getelementptr i64, ptr %out64, i32 %i
  store i64 %y, ptr %po, align 8
  %ct = trunc i64 %c to i32
  %z = xor i32 %x, %ct
  %pa = getelementptr i32, ptr %acc, i32 %i
  %a = load i32, ptr %pa, align 4
  %a1 = add i32 %a, %z
  store i32 %a1, ptr %pa, align 4
  %i1 = add nuw nsw i32 %i, 1
  %d = icmp slt i32 %i1, %n
  br i1 %d, label %loop, label %exit
exit:
  ret void
}
"""

# q32 = [a sdiv b, a udiv b, a srem c, a urem c] of i32 lanes; q64 likewise for i64 lanes. Hexagon has
# no divide instruction: these become libcalls the harness provides. 9 arguments: some go on the stack.
DIV_IR = """
define void @divs(ptr noalias %a, ptr noalias %b, ptr noalias %c, ptr noalias %a64, ptr noalias %b64,
                  ptr noalias %c64, ptr noalias %q32, ptr noalias %q64, i32 %n) {
entry:
  %ok = icmp sgt i32 %n, 0
  br i1 %ok, label %loop, label %exit
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %pa = getelementptr i32, ptr %a, i32 %i
  %pb = getelementptr i32, ptr %b, i32 %i
  %va = load i32, ptr %pa, align 4
  %vb = load i32, ptr %pb, align 4
  %pc = getelementptr i32, ptr %c, i32 %i
  %vc = load i32, ptr %pc, align 4
  %d0 = sdiv i32 %va, %vb
  %d1 = udiv i32 %va, %vb
  %d2 = srem i32 %va, %vc
  %d3 = urem i32 %va, %vc
  %o = mul i32 %i, 4
  %p0 = getelementptr i32, ptr %q32, i32 %o
  store i32 %d0, ptr %p0, align 4
  %p1 = getelementptr i32, ptr %p0, i32 1
  store i32 %d1, ptr %p1, align 4
  %p2 = getelementptr i32, ptr %p0, i32 2
  store i32 %d2, ptr %p2, align 4
  %p3 = getelementptr i32, ptr %p0, i32 3
  store i32 %d3, ptr %p3, align 4
  %pa64 = getelementptr i64, ptr %a64, i32 %i
  %pb64 = getelementptr i64, ptr %b64, i32 %i
  %wa = load i64, ptr %pa64, align 8
  %wb = load i64, ptr %pb64, align 8
  %pc64 = getelementptr i64, ptr %c64, i32 %i
  %wc = load i64, ptr %pc64, align 8
  %e0 = sdiv i64 %wa, %wb
  %e1 = udiv i64 %wa, %wb
  %e2 = srem i64 %wa, %wc
  %e3 = urem i64 %wa, %wc
  %r0 = getelementptr i64, ptr %q64, i32 %o
  store i64 %e0, ptr %r0, align 8
  %r1 = getelementptr i64, ptr %r0, i32 1
  store i64 %e1, ptr %r1, align 8
  %r2 = getelementptr i64, ptr %r0, i32 2
  store i64 %e2, ptr %r2, align 8
  %r3 = getelementptr i64, ptr %r0, i32 3
  store i64 %e3, ptr %r3, align 8
  %i1 = add nuw nsw i32 %i, 1
  %dd = icmp slt i32 %i1, %n
  br i1 %dd, label %loop, label %exit
exit:
  ret void
}
"""

# p[idx] = v: used to break the memory contract on purpose.
POKE_IR = """
define void @poke(ptr %p, i32 %idx, i32 %v) {
  %q = getelementptr i8, ptr %p, i32 %idx
  %b = trunc i32 %v to i8
  store volatile i8 %b, ptr %q, align 1
  ret void
}
"""


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_avg_add_bit_exact(target: str, rng: np.random.Generator) -> None:
    m = compile_module(avg_add_ir(target), target)
    vb = VEC_BYTES[target]
    calls, expect = [], []
    for n, mis in [(1, 0), (2, 1), (5, 0), (8, 3), (17, 64), (33, 127)]:
        a = rng.integers(0, 256, n * vb, dtype=np.uint8)
        b = rng.integers(0, 256, n * vb, dtype=np.uint8)
        avg, s = np.zeros_like(a), np.full_like(a, 7)
        calls.append(
            Call(
                "avg_add",
                [Buffer.input(a, mis), Buffer.input(b), Buffer.output(avg, mis), Buffer.output(s), Scalar(n)],
            )
        )
        expect.append((rounding_avg(a, b), (a + b).astype(np.uint8)))
    # n = 0 must leave the outputs' initial contents alone.
    calls.append(
        Call(
            "avg_add",
            [
                Buffer.input(a),
                Buffer.input(b),
                Buffer.output(np.zeros_like(a)),
                Buffer.output(np.full_like(a, 7)),
                Scalar(0),
            ],
        )
    )
    expect.append((np.zeros_like(a), np.full_like(a, 7)))
    results = run_calls(m, target, calls)
    assert len(results) == len(calls)
    for (avg, s), (want_avg, want_s) in zip(results, expect):
        assert avg.dtype == np.uint8 and avg.shape == want_avg.shape
        np.testing.assert_array_equal(avg, want_avg)
        np.testing.assert_array_equal(s, want_s)
    assert np.all(calls[0].args[2].array == 0)  # the caller's output array is not modified


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_scalars_and_division(target: str, rng: np.random.Generator) -> None:
    # Two modules in one run: i32/i64 scalar passing (register pairs on Hexagon), accumulating output,
    # and integer division, which Hexagon implements with libcalls the harness provides.
    n = 37
    x = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    acc = rng.integers(-(2**31), 2**31, n, dtype=np.int32)
    calls, expect = [], []
    for c in [3, -(2**40) + 5, 2**63 - 1]:
        calls.append(
            Call(
                "scalars",
                [
                    Buffer.input(x),
                    Buffer.output(np.zeros((1, n), np.int64)),  # any shape: outputs keep theirs
                    Buffer.output(acc.reshape(n, 1)),
                    Scalar(n),
                    Scalar(c, 64),
                ],
            )
        )
        with np.errstate(over="ignore"):
            out64 = x.astype(np.int64) * np.int64(c) + np.int64(n)
        ct = np.int64(c).astype(np.uint64).astype(np.uint32).view(np.int32)
        expect.append([out64.reshape(1, n), (acc.astype(np.int64) + (x ^ ct)).astype(np.int32).reshape(n, 1)])
    a, b, c = (_operands(rng, np.int32, n) for _ in range(3))
    a64, b64, c64 = (_operands(rng, np.int64, n) for _ in range(3))
    calls.append(
        Call(
            "divs",
            [
                *map(Buffer.input, (a, b, c, a64, b64, c64)),
                Buffer.output(np.zeros(4 * n, np.int32)),
                Buffer.output(np.zeros(4 * n, np.int64)),
                Scalar(n),
            ],
        )
    )
    expect.append([_div_reference(a, b, c, 32), _div_reference(a64, b64, c64, 64)])
    mods = [compile_module(SCALARS_IR, target), compile_module(DIV_IR, target)]
    for got, want in zip(run_calls(mods, target, calls), expect):
        for g, w in zip(got, want):
            assert (g.shape, g.dtype) == (w.shape, w.dtype)
            np.testing.assert_array_equal(g, w)


def _operands(rng: np.random.Generator, dtype: type, n: int) -> np.ndarray:
    """Random values of all magnitudes, never 0 or -1 (no division by zero, no MIN / -1 overflow)."""
    bits = np.dtype(dtype).itemsize * 8
    v = rng.integers(-(2 ** (bits - 1)), 2 ** (bits - 1), n, dtype=dtype) >> rng.integers(
        0, bits - 1, n
    ).astype(dtype)
    v[(v == 0) | (v == -1)] = 3
    return v


def _div_reference(a: np.ndarray, b: np.ndarray, c: np.ndarray, bits: int) -> np.ndarray:
    mask = (1 << bits) - 1

    def sdiv(x: int, y: int) -> int:  # truncating, like LLVM sdiv
        return abs(x) // abs(y) * (1 if (x < 0) == (y < 0) else -1)

    out = []
    for x, y, z in zip(a.tolist(), b.tolist(), c.tolist()):
        out += [sdiv(x, y), (x & mask) // (y & mask), x - sdiv(x, z) * z, (x & mask) % (z & mask)]
    return np.array([v & mask for v in out], dtype=np.uint64 if bits == 64 else np.uint32).view(a.dtype)


@pytest.mark.qemu
def test_large_input_hvx(rng: np.random.Generator) -> None:
    n = 16384  # 2 MiB per input
    a = rng.integers(0, 256, n * 128, dtype=np.uint8)
    b = rng.integers(0, 256, n * 128, dtype=np.uint8)
    call = Call(
        "avg_add",
        [
            Buffer.input(a),
            Buffer.input(b),
            Buffer.output(np.zeros_like(a)),
            Buffer.output(np.zeros_like(a)),
            Scalar(n),
        ],
    )
    ((avg, s),) = run_calls(avg_add_ir("hvx128"), "hvx128", [call])
    np.testing.assert_array_equal(avg, rounding_avg(a, b))
    np.testing.assert_array_equal(s, a + b)


@pytest.mark.qemu
def test_wrong_alignment_claim_is_silent_on_hvx(rng: np.random.Generator) -> None:
    # ISA_INTRINSICS §4.3.5: an `align 128` load from a misaligned address becomes an aligned vmem that
    # drops the low address bits. The harness honours `misalign`, so this is observable (and correct
    # at misalign 0).
    m = compile_module(avg_add_ir("hvx128", load_align=128), "hvx128")
    a = rng.integers(0, 256, 2 * 128, dtype=np.uint8)
    b = rng.integers(0, 256, 2 * 128, dtype=np.uint8)
    calls = [
        Call(
            "avg_add",
            [
                Buffer.input(a, mis),
                Buffer.input(b, mis),
                Buffer.output(np.zeros_like(a)),
                Buffer.output(np.zeros_like(a)),
                Scalar(2),
            ],
        )
        for mis in (0, 1)
    ]
    (good, _), (bad, _) = run_calls(m, "hvx128", calls)
    np.testing.assert_array_equal(good, rounding_avg(a, b))
    assert not np.array_equal(bad, rounding_avg(a, b))


@pytest.mark.parametrize("target", ALL_TARGETS)
def test_memory_contract_violations(target: str) -> None:
    m = compile_module(POKE_IR, target)
    buf = np.zeros(16, np.uint8)
    ok = Call("poke", [Buffer.output(buf), Scalar(3), Scalar(9)])
    ((out,),) = run_calls(m, target, [ok])
    assert out.tolist() == [0, 0, 0, 9] + [0] * 12
    shaped = [Buffer.output(np.array(5, np.int32)), Buffer.output(np.zeros((2, 3), np.uint16))]
    (zero_d,), (two_d,) = run_calls(m, target, [Call("poke", [b, Scalar(2), Scalar(1)]) for b in shaped])
    assert zero_d.shape == () and zero_d.dtype == np.int32 and int(zero_d) == 5 + (1 << 16)
    assert two_d.shape == (2, 3) and two_d.tolist() == [[0, 1, 0], [0, 0, 0]]
    for idx in (16, -1):
        with pytest.raises(RunError, match=r"call 1 \(poke\) wrote outside an output buffer"):
            run_calls(m, target, [ok, Call("poke", [Buffer.output(buf), Scalar(idx), Scalar(1)])])
    # Inputs are read-only: compared after the call on x86, in .rodata (so the write faults) under qemu.
    pattern = (
        "call 1 \\(poke\\) wrote to an input buffer" if target == "x86-avx2" else "during call 1 \\(poke\\)"
    )
    with pytest.raises(RunError, match=pattern):
        run_calls(m, target, [ok, Call("poke", [Buffer.input(buf), Scalar(0), Scalar(1)]), ok])


def test_signature_checked_before_running() -> None:
    m = compile_module(POKE_IR, "x86-avx2")
    buf = Buffer.output(np.zeros(4, np.uint8))
    with pytest.raises(TypeError, match="takes 3 arguments"):
        run_calls(m, "x86-avx2", [Call("poke", [buf, Scalar(0)])])
    with pytest.raises(TypeError, match="argument 1 is i32, call passes i64"):
        run_calls(m, "x86-avx2", [Call("poke", [buf, Scalar(0, 64), Scalar(0)])])
    with pytest.raises(TypeError, match="argument 1 is i32, call passes ptr"):
        run_calls(m, "x86-avx2", [Call("poke", [buf, buf, Scalar(0)])])
    with pytest.raises(TypeError, match="no function 'pokee'"):
        run_calls(m, "x86-avx2", [Call("pokee", [buf, Scalar(0), Scalar(0)])])
    with pytest.raises(ValueError, match="compiled for x86-avx2"):
        run_calls(m, "arm64", [])
    with pytest.raises(ValueError, match="more than one module"):
        run_calls([m, m], "x86-avx2", [])
    with pytest.raises(ValueError):
        Scalar(2**32, 32)
    with pytest.raises(ValueError):
        Buffer.input(np.zeros(4), misalign=128)
    assert Scalar(2**32 - 1).signed_value == -1


@pytest.mark.parametrize(
    ("target", "missing", "package"),
    [
        ("arm64", "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu"),
        ("arm64", "qemu-aarch64", "qemu-user"),
        ("hvx128", "clang", "clang"),
        ("hvx128", "ld.lld", "lld"),
        ("hvx128", "qemu-hexagon", "qemu-user"),
    ],
)
def test_tool_missing(monkeypatch: pytest.MonkeyPatch, target: str, missing: str, package: str) -> None:
    real_which = run_mod.shutil.which

    def which(name: str) -> str | None:
        return None if name.split("-")[0] == missing.split("-")[0] else real_which(name)

    monkeypatch.setattr(run_mod.shutil, "which", which)
    with pytest.raises(ToolMissing) as e:
        check_tools(target)
    assert e.value.package == package and package in str(e.value)
    call = Call("poke", [Buffer.output(np.zeros(4, np.uint8)), Scalar(0), Scalar(0)])
    with pytest.raises(ToolMissing):
        run_calls(POKE_IR, target, [call])
    assert check_tools("x86-avx2") is None
