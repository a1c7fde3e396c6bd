"""pitchfork/backend/hvx_i64.py: the 64-bit-lane code LLVM 22's O3 makes of a 32-bit mul_shr on hvx128.

AggressiveInstCombine folds the 16-bit partial products of a u32/i32 `mul_shr` / `rounding_mul_shr`
into `mul <N x i64> (zext a), (zext b)` and goes on computing on the 64-bit product (a shift by 31 or
33..63, a bit-63 test for the saturation), which the Hexagon backend scalarised: 64 scalar `mpyu` in
the loop of `mul_shr(u32, u32, 31)` at 32 lanes, and the module emitted without packets. The rewrite
computes such groups on (hi, lo) halves with HVX's 64-bit product (vmpye + vmpyo). These tests run
every 32-bit form under qemu-hexagon against FPIR's semantics on edge values (each pair of 0, +-1,
min, max and others meets in some lane) and random ones, at 32 and 64 lanes, and check that the
final code has no 64-bit-lane vector and no scalar multiply in the loop.
"""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from fpir.interp import evaluate
from fpir.text import parse
from fpir.types import ScalarType
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.backend.hvx_i64 import has_i64_products, rewrite_i64_products
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.asm import main_vector_loop
from pitchfork.backend.machine import compile_module
from pitchfork.backend.run import run_calls, tools_available
from pitchfork.selection.lower import select_instructions
from tests.pitchfork.targets.hvx_difftest import free_vars

TARGET = "hvx128"
needs_qemu = pytest.mark.skipif(not tools_available(TARGET), reason="qemu-hexagon / clang / lld missing")
SCALAR_MPY = re.compile(r"^\s*r\d+(:\d+)?\s*[+-]?=\s*mpy")

# The O3 IR of mul_shr(a_u32, b_u32, 31) at 32 lanes (the bit-63 test is what kept it 64-bit).
MUL_SHR_U31 = """define void @k(ptr %out, ptr %pa, ptr %pb) {
  %a = load <32 x i32>, ptr %pa, align 1
  %b = load <32 x i32>, ptr %pb, align 1
  %1 = zext <32 x i32> %a to <32 x i64>
  %2 = zext <32 x i32> %b to <32 x i64>
  %3 = mul nuw <32 x i64> %2, %1
  %4 = lshr <32 x i64> %3, splat (i64 32)
  %.34 = trunc nuw <32 x i64> %4 to <32 x i32>
  %.36.not = icmp sgt <32 x i64> %3, splat (i64 -1)
  %.38 = mul <32 x i32> %b, %a
  %.40 = tail call <32 x i32> @llvm.fshl.v32i32(<32 x i32> %.34, <32 x i32> %.38, <32 x i32> splat (i32 1))
  %.41 = select <32 x i1> %.36.not, <32 x i32> %.40, <32 x i32> splat (i32 -1)
  store <32 x i32> %.41, ptr %out, align 1
  ret void
}

declare <32 x i32> @llvm.fshl.v32i32(<32 x i32>, <32 x i32>, <32 x i32>)
"""


def test_rewrite_takes_the_group_to_32_bit_halves() -> None:
    assert has_i64_products(MUL_SHR_U31)
    out = rewrite_i64_products(MUL_SHR_U31)
    assert "x i64>" not in out
    assert out.count("@llvm.hexagon.V6.vmpyewuh.64.128B(") == 2  # the call and its declaration
    assert "%.41 = select <32 x i1> %.36.not, <32 x i32> %.40, <32 x i32> splat (i32 -1)" in out  # untouched
    assert re.search(r"%\.36\.not = bitcast <32 x i1> %pfx\.w\d+ to <32 x i1>", out)  # hi > -1
    assert re.search(r"%\.38 = bitcast <32 x i32> %pfx\.w2 to <32 x i32>", out)  # b * a: the product's low half
    # two kernels reusing the same local names (as in a difftest module): each is rewritten on its own
    two = MUL_SHR_U31.replace("declare", "").replace(" @llvm.fshl.v32i32(<32 x i32>, <32 x i32>, <32 x i32>)", "")
    two = MUL_SHR_U31 + "\n" + two.replace("@k(", "@k2(").strip() + "\n"
    assert rewrite_i64_products(two).count("call <64 x i32> @llvm.hexagon.V6.vmpyewuh") == 2


def test_compile_takes_the_group_to_halves_unless_asked_not_to() -> None:
    """`i64_halves=False` is the benchmark harness's LLVM-alone contender: LLVM's own code."""
    assert "x i64>" not in compile_module(MUL_SHR_U31, TARGET).optimized_ir
    assert "mul nuw <32 x i64>" in compile_module(MUL_SHR_U31, TARGET, i64_halves=False).optimized_ir
    assert "mul nuw <32 x i64>" in compile_module(MUL_SHR_U31, "arm64").optimized_ir  # hvx128 only


@pytest.mark.parametrize("change", [
    ("  store <32 x i32> %.41", "  store <32 x i64> %3, ptr %pa, align 1\n  store <32 x i32> %.41"),  # escapes
    ("%2 = zext <32 x i32> %b", "%2 = sext <32 x i32> %b"),  # unsigned x signed: not a 32 x 32 form we write
    ("%4 = lshr <32 x i64> %3, splat (i64 32)", "%4 = lshr <32 x i64> %3, %1"),  # a variable shift
])
def test_groups_with_other_instructions_are_left_alone(change: tuple[str, str]) -> None:
    text = MUL_SHR_U31.replace(*change)
    assert rewrite_i64_products(text) is text


N_OUT = 37  # outputs of the operations kernel
N_OPS = 640  # lanes of the operations kernel's run: output j of lane i is at j * N_OPS + i


# Every operation the rewrite knows, on products of each kind (u x u, s x s, by constants, u32 x u16).
def _ops_kernel(n: int) -> str:
    v, w, b = f"<{n} x i64>", f"<{n} x i32>", f"<{n} x i1>"
    body = f"""
  %A = zext {w} %a to {v}
  %B = zext {w} %b to {v}
  %SA = sext {w} %a to {v}
  %SB = sext {w} %b to {v}
  %H = zext <{n} x i16> %h to {v}
  %pu = mul nuw {v} %A, %B
  %ps = mul nsw {v} %SA, %SB
  %pk = mul nuw {v} %A, splat (i64 4000000000)
  %pn = mul nsw {v} %SA, splat (i64 -7)
  %pq = mul nuw {v} %H, %A
  %t0 = lshr {v} %pu, splat (i64 5)
  %t1 = lshr {v} %pu, splat (i64 32)
  %t2 = lshr exact {v} %pu, splat (i64 45)
  %t3 = ashr {v} %ps, splat (i64 7)
  %t4 = ashr {v} %ps, splat (i64 32)
  %t5 = ashr {v} %ps, splat (i64 50)
  %s6 = shl {v} %pu, splat (i64 3)
  %t6 = lshr {v} %s6, splat (i64 32)
  %s7 = shl nsw {v} %ps, splat (i64 40)
  %t7 = ashr {v} %s7, splat (i64 33)
  %s8 = add {v} %pu, %ps
  %t8 = lshr {v} %s8, splat (i64 32)
  %d9 = sub {v} %pk, %pn
  %t9 = lshr {v} %d9, splat (i64 31)
  %x = xor {v} %pu, %ps
  %o = or {v} %x, %pn
  %an = and {v} %o, %pk
  %t11 = lshr {v} %an, splat (i64 17)
  %c0 = icmp eq {v} %pu, %ps
  %c1 = icmp ne {v} %pu, %pk
  %c2 = icmp ult {v} %pu, %pk
  %c3 = icmp ule {v} %ps, %pn
  %c4 = icmp ugt {v} %pn, %pq
  %c5 = icmp uge {v} %pq, %pu
  %c6 = icmp slt {v} %ps, %pn
  %c7 = icmp sle {v} %pn, splat (i64 -4294967296)
  %c8 = icmp sgt {v} %ps, splat (i64 -1)
  %c9 = icmp sge {v} %pn, splat (i64 4294967296)
  %c10 = icmp ult {v} %pu, splat (i64 65536)
  %c11 = icmp samesign ugt {v} %pk, splat (i64 4294967295)
  %sel = select {b} %c6, {v} %pu, {v} %pn
  %t13 = lshr {v} %sel, splat (i64 20)
  %t15 = lshr {v} %pq, splat (i64 16)
  %t16 = lshr {v} %pk, splat (i64 32)
  %t17 = ashr {v} %pn, splat (i64 3)
  %u18 = ashr {v} %ps, splat (i64 40)
  %t18 = lshr {v} %u18, splat (i64 8)
  %u19 = lshr {v} %pu, splat (i64 5)
  %t19 = lshr {v} %u19, splat (i64 30)
  %u20 = ashr {v} %ps, splat (i64 7)
  %t20 = lshr {v} %u20, splat (i64 40)
  %c12 = icmp ult {v} %pu, splat (i64 12884901888)
  %c13 = icmp ult {v} %pu, splat (i64 4294967297)
  %c14 = icmp sle {v} %pn, splat (i64 -4294967297)
  %c15 = icmp ule {v} %pu, splat (i64 8589934591)"""
    outs = [f"trunc {v} %t{k} to {w}" for k in (0, 1, 2, 3, 4, 5, 6, 7, 8, 9)]
    outs += [f"trunc nuw {v} %d9 to {w}", f"trunc {v} %t11 to {w}"]
    outs += [f"zext {b} %c{k} to {w}" for k in range(16)]
    outs += [f"trunc {v} %t13 to {w}", f"trunc {v} %pq to <{n} x i16>", f"trunc {v} %t15 to {w}",
             f"trunc {v} %t16 to {w}", f"trunc {v} %t17 to {w}", f"trunc {v} %ps to <{n} x i8>",
             f"trunc {v} %t18 to {w}", f"trunc {v} %t19 to {w}", f"trunc {v} %t20 to {w}"]
    stores = []
    for j, rhs in enumerate(outs):
        ty = re.findall(r"<\d+ x i\d+>", rhs)[-1]
        if ty != w:
            rhs_w = f"r{j}n"
            stores.append(f"  %{rhs_w} = {rhs}\n  %r{j} = zext {ty} %{rhs_w} to {w}")
        else:
            stores.append(f"  %r{j} = {rhs}")
        stores.append(f"  %o{j} = add i64 %i, {j * N_OPS}\n  %q{j} = getelementptr i32, ptr %out, i64 %o{j}\n"
                      f"  store {w} %r{j}, ptr %q{j}, align 4")
    return f"""define void @ops(ptr %out, ptr %pa, ptr %pb, ptr %ph, i64 %n) {{
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %i1, %loop ]
  %ga = getelementptr i32, ptr %pa, i64 %i
  %a = load {w}, ptr %ga, align 4
  %gb = getelementptr i32, ptr %pb, i64 %i
  %b = load {w}, ptr %gb, align 4
  %gh = getelementptr i16, ptr %ph, i64 %i
  %h = load <{n} x i16>, ptr %gh, align 2
{body}
{chr(10).join(stores)}
  %i1 = add i64 %i, {n}
  %more = icmp slt i64 %i1, %n
  br i1 %more, label %loop, label %exit
exit:
  ret void
}}
"""


def _ops_model(a: int, b: int, h: int) -> list[int]:
    """The kernel's 37 outputs for one lane (a, b as signed i32, h as u16), by Python integers."""
    m64, m32 = (1 << 64) - 1, (1 << 32) - 1
    ua, ub = a & m32, b & m32
    pu, ps, pk, pn, ph = ua * ub, (a * b) & m64, ua * 4000000000, (a * -7) & m64, ua * h

    def s64(x: int) -> int:
        return x - (1 << 64) if x >> 63 else x

    t = [pu >> 5, pu >> 32, pu >> 45, s64(ps) >> 7, s64(ps) >> 32, s64(ps) >> 50, ((pu << 3) & m64) >> 32,
         s64((ps << 40) & m64) >> 33, ((pu + ps) & m64) >> 32, ((pk - pn) & m64) >> 31, pk - pn,
         (((pu ^ ps) | pn) & pk) >> 17]
    c = [pu == ps, pu != pk, pu < pk, ps <= pn, pn > ph, ph >= pu, s64(ps) < s64(pn), s64(pn) <= -(1 << 32),
         s64(ps) > -1, s64(pn) >= 1 << 32, pu < 65536, pk > m32, pu < 3 << 32, pu < (1 << 32) + 1,
         s64(pn) <= -(1 << 32) - 1, pu <= (2 << 32) - 1]
    sel = pu if s64(ps) < s64(pn) else pn
    return [x & m32 for x in t] + [int(x) for x in c] + [
        (sel >> 20) & m32, ph & 0xFFFF, (ph >> 16) & m32, pk >> 32, (s64(pn) >> 3) & m32, ps & 0xFF,
        ((s64(ps) >> 40) & m64) >> 8 & m32, (pu >> 35) & m32, ((s64(ps) >> 7) & m64) >> 40]


I32_EDGES = [0, 1, -1, 2, -2, 3, 2**31 - 1, -2**31, -2**31 + 1, 2**31 - 2, 2**30, -2**30, 65535, 65536, -65536,
             32767, -32768, 46341, -46341, 0x55555555, -0x55555556, 7, 2**16 + 1, -(2**16 + 1)]


def _edge_pairs(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Two i32 inputs of n lanes: every pair of I32_EDGES in the first lanes, random values after."""
    pairs = list(itertools.product(I32_EDGES, repeat=2))
    assert len(pairs) <= n
    a = rng.integers(-2**31, 2**31, size=n, dtype=np.int64)
    b = rng.integers(-2**31, 2**31, size=n, dtype=np.int64)
    a[: len(pairs)], b[: len(pairs)] = zip(*pairs)
    return a.astype(np.int32), b.astype(np.int32)


@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("lanes", [32, 64])
def test_every_rewritten_operation_is_bit_exact(lanes: int) -> None:
    """At -O0 the kernel reaches the rewrite as written; every 64-bit-lane value must be gone."""
    cm = compile_module(_ops_kernel(lanes), TARGET, opt=0)
    assert "x i64>" not in cm.optimized_ir
    rng = np.random.default_rng(lanes)
    a, b = _edge_pairs(N_OPS, rng)
    h = rng.integers(0, 1 << 16, size=N_OPS, dtype=np.uint16)
    h[:4] = [0, 1, 65535, 32768]
    call = Call("ops", (Buffer.output(np.zeros(N_OUT * N_OPS, dtype=np.uint32)), Buffer.input(a), Buffer.input(b),
                        Buffer.input(h), Scalar(N_OPS, 64)))
    got = run_calls([cm], TARGET, [call])[0][0].reshape(N_OUT, N_OPS).astype(np.uint64)
    want = np.array([_ops_model(int(x), int(y), int(z)) for x, y, z in zip(a, b, h)], dtype=np.uint64).T
    bad = [(j, np.nonzero(got[j] != want[j])[0][:4]) for j in range(N_OUT) if not np.array_equal(got[j], want[j])]
    assert not bad, bad


# The 32-bit forms: signed / unsigned, shifts below, at and above 32, rounding or not, saturating
# and truncating spellings (lifted to the same ops), constant and variable operands.
FORMS = [f"{op}(a_{t}, b_{t}, {k})" for t in ("i32", "u32") for op in ("mul_shr", "rounding_mul_shr")
         for k in (0, 1, 15, 16, 31, 32, 33, 47, 63)] + [
    "saturating_cast<i32>((i64(a_i32) * i64(b_i32)) >> 31)",
    "saturating_cast<u32>((u64(a_u32) * u64(b_u32)) >> 20)",
    "i32((i64(a_i32) * i64(b_i32)) >> 40)",
    "u32((u64(a_u32) * u64(b_u32) + 1073741824) >> 31)",
    "saturating_cast<i16>(rounding_mul_shr(a_i32, b_i32, 33))",
    "mul_shr(a_u32, 3000000000, 31)",
    "rounding_mul_shr(a_i32, -7, 40)",
    "mul_shr(a_u32, b_u32, c_u32)",
    "rounding_mul_shr(a_i32, b_i32, c_u32)",
    "rounding_mul_shr(a_i32, b_i32, 31) + rounding_mul_shr(a_i32, c_i32, 35)",
]


def _inputs(vs: list, n: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    a, b = _edge_pairs(n, rng)
    out = {}
    for v, base in zip(vs, (a, b, np.roll(a, 7))):
        st: ScalarType = v.type
        x = base.astype(np.int64)
        if v.name.startswith("c"):  # a shift amount: mostly 0..70, edges included
            x = np.where(np.arange(n) % 3 == 0, x, np.arange(n) % 71)
        out[v.name] = (x % (1 << 32)).astype(np.uint32).view(storage_type(st).np_dtype) if st.bits == 32 else x
    return out


@needs_qemu
@pytest.mark.qemu
@pytest.mark.parametrize("lanes", [32, 64])
def test_32_bit_mul_shr_forms_are_bit_exact_without_64_bit_lanes(lanes: int) -> None:
    terms = [parse(t) for t in FORMS]
    finals = [select_instructions(t, TARGET).final for t in terms]
    m = new_module("forms")
    for i, f in enumerate(finals):
        add_expression_kernel(m, f"k{i}", f, lanes, free_vars(f), TARGET, frozenset())
    cm = compile_module(str(m), TARGET)
    assert "x i64>" not in cm.optimized_ir  # so the module is emitted with packets, too
    for i, text in enumerate(FORMS):
        loop = main_vector_loop(cm.asm, f"k{i}", target=TARGET)
        assert not [x for x in loop.instructions if SCALAR_MPY.search(x)], text
    n, rng = N_OPS, np.random.default_rng(lanes + 1)
    calls, wants = [], []
    for i, (t, f) in enumerate(zip(terms, finals)):
        vs = free_vars(f)
        ins = _inputs(vs, n, rng)
        wants.append(np.asarray(evaluate(t, ins)).astype(storage_type(t.type).np_dtype))
        calls.append(Call(f"k{i}", (Buffer.output(np.zeros(n, dtype=storage_type(t.type).np_dtype)),
                                    *[Buffer.input(ins[v.name]) for v in vs], Scalar(n, 64))))
    bad = []
    for text, want, (got,) in zip(FORMS, wants, run_calls([cm], TARGET, calls)):
        if not np.array_equal(got, want):
            j = int(np.nonzero(got != want)[0][0])
            bad.append(f"{text}: {int((got != want).sum())} lanes differ, first {j}: got {got[j]}, want {want[j]}")
    assert not bad, bad
