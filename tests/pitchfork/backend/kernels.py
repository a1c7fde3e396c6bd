"""Hand-written LLVM IR kernels shared by the emit tests (one per target, same generic shape)."""

from __future__ import annotations

import numpy as np
import pytest

VEC_BYTES = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}
AVG_INTRINSIC = {
    "x86-avx2": "llvm.x86.avx2.pavg.b",
    "arm64": "llvm.aarch64.neon.urhadd.v16i8",
    "hvx128": "llvm.hexagon.V6.vavgubrnd.128B",
}
# The intrinsic's mnemonic as it appears in the assembly.
AVG_MNEMONIC = {
    "x86-avx2": r"\bvpavgb\s",
    "arm64": r"\burhadd\s+v\d+\.16b",
    "hvx128": r"\.ub = vavg\(v\d+\.ub,v\d+\.ub\):rnd",
}
ALL_TARGETS = [
    "x86-avx2",
    pytest.param("arm64", marks=pytest.mark.qemu),
    pytest.param("hvx128", marks=pytest.mark.qemu),
]


def _avg_call(target: str, va: str, vb: str, out: str, intrinsic: str | None = None) -> str:
    n = VEC_BYTES[target]
    name = intrinsic or AVG_INTRINSIC[target]
    if target != "hvx128":
        return f"  {out} = call <{n} x i8> @{name}(<{n} x i8> {va}, <{n} x i8> {vb})\n"
    return (
        f"  {out}.a = bitcast <128 x i8> {va} to <32 x i32>\n"
        f"  {out}.b = bitcast <128 x i8> {vb} to <32 x i32>\n"
        f"  {out}.w = call <32 x i32> @{name}(<32 x i32> {out}.a, <32 x i32> {out}.b)\n"
        f"  {out} = bitcast <32 x i32> {out}.w to <128 x i8>\n"
    )


def _declare(target: str, intrinsic: str | None = None) -> str:
    n = VEC_BYTES[target]
    name = intrinsic or AVG_INTRINSIC[target]
    t = "<32 x i32>" if target == "hvx128" else f"<{n} x i8>"
    return f"declare {t} @{name}({t}, {t})\n"


def avg_add_ir(target: str, intrinsic: str | None = None, load_align: int = 1) -> str:
    """`avg_add(a, b, avg, sum, n)`: over n native vectors of u8, avg = rounding average (target
    intrinsic), sum = a + b (generic IR, wrapping)."""
    n = VEC_BYTES[target]
    v = f"<{n} x i8>"
    return (
        _declare(target, intrinsic)
        + f"""
define void @avg_add(ptr noalias %a, ptr noalias %b, ptr noalias %avg, ptr noalias %sum, i32 %n) {{
entry:
  %c = icmp sgt i32 %n, 0
  br i1 %c, label %loop, label %exit
loop:
  %i = phi i32 [0, %entry], [%i1, %loop]
  %pa = getelementptr {v}, ptr %a, i32 %i
  %pb = getelementptr {v}, ptr %b, i32 %i
  %pavg = getelementptr {v}, ptr %avg, i32 %i
  %psum = getelementptr {v}, ptr %sum, i32 %i
  %va = load {v}, ptr %pa, align {load_align}
  %vb = load {v}, ptr %pb, align {load_align}
"""
        + _avg_call(target, "%va", "%vb", "%r", intrinsic)
        + f"""  %s = add {v} %va, %vb
  store {v} %r, ptr %pavg, align 1
  store {v} %s, ptr %psum, align 1
  %i1 = add nuw nsw i32 %i, 1
  %d = icmp slt i32 %i1, %n
  br i1 %d, label %loop, label %exit
exit:
  ret void
}}
"""
    )


def avg2d_ir(target: str) -> str:
    """`avg2d(a, b, out, n, rows, stride)`: a 2-D loop nest (rows x n vectors, row stride in vectors)."""
    n = VEC_BYTES[target]
    v = f"<{n} x i8>"
    return (
        _declare(target)
        + f"""
define void @avg2d(ptr noalias %a, ptr noalias %b, ptr noalias %out, i32 %n, i32 %rows, i32 %stride) {{
entry:
  %c0 = icmp sgt i32 %rows, 0
  %c1 = icmp sgt i32 %n, 0
  %c = and i1 %c0, %c1
  br i1 %c, label %outer, label %exit
outer:
  %y = phi i32 [0, %entry], [%y1, %outer.end]
  %row = mul i32 %y, %stride
  br label %inner
inner:
  %x = phi i32 [0, %outer], [%x1, %inner]
  %i = add i32 %row, %x
  %pa = getelementptr {v}, ptr %a, i32 %i
  %pb = getelementptr {v}, ptr %b, i32 %i
  %po = getelementptr {v}, ptr %out, i32 %i
  %va = load {v}, ptr %pa, align 1
  %vb = load {v}, ptr %pb, align 1
"""
        + _avg_call(target, "%va", "%vb", "%r")
        + f"""  store {v} %r, ptr %po, align 1
  %x1 = add nuw nsw i32 %x, 1
  %dx = icmp slt i32 %x1, %n
  br i1 %dx, label %inner, label %outer.end
outer.end:
  %y1 = add nuw nsw i32 %y, 1
  %dy = icmp slt i32 %y1, %rows
  br i1 %dy, label %outer, label %exit
exit:
  ret void
}}
"""
    )


def rounding_avg(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return ((a.astype(np.uint16) + b + 1) >> 1).astype(np.uint8)
