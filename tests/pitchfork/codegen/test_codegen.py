"""Loop-nest code generation end to end: Halide pipelines compiled by PITCHFORK, run, compared bit-exactly
with Halide's own realize() (and numpy where the spec gives a reference).

Pipelines (SPEC §13, §14 and the issue): a u16 3×3 blur whose `/3` becomes a multiply-high; a reduction
over an RDom computed at root (heap-allocated intermediates); a clamped / constant-exterior boundary
with a runtime parameter and GuardWithIf tails; gaussian3x3 on an input whose min is (-1, -1); a
pipeline written with Halide's FPIR intrinsics, which pass through to lowering unchanged; odd sizes
under every TailStrategy that allows them (predicated loads and stores, shifted-inward tails); and
the statement forms codegen must handle (vector reductions, shuffles, predicated gathers,
specializations, int64 index math, bit counts, scalar parameters of narrow types).

Each runs on x86 (JIT) with both isels and on AArch64 under qemu with isel=pitchfork; a few run on
Hexagon too. Slow (qemu-heavy) cases are marked `slow`.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import halide as hl
import numpy as np
import pytest
from tests.pitchfork.frontend.hl_cases import lut_predicated, shuffles, specialized, vector_reduce

import pitchfork
from benchmarks import registry
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import examples as ex
from pitchfork.frontend import ir as hir
from pitchfork.api import CompiledPipeline, PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import LoopNestCodegen

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
x, y = hl.Var("x"), hl.Var("y")
RNG = np.random.default_rng(2024)

needs = {t: pytest.mark.skipif(not tools_available(t), reason=f"no qemu toolchain for {t}")
         for t in ("arm64", "hvx128")}
#: (target, isel) combinations every pipeline runs with
RUNS = [
    pytest.param("x86-avx2", "pitchfork", id="x86-pitchfork"),
    pytest.param("x86-avx2", "llvm", id="x86-llvm"),
    pytest.param("arm64", "pitchfork", id="arm64-pitchfork", marks=[needs["arm64"], pytest.mark.qemu]),
]


# --------------------------------------------------------------------------------------------------
# Pipelines not in pitchfork.frontend.examples


def gaussian3x3() -> tuple[hl.Func, list[Any]]:
    """SPEC §14 (the benchmark's pipeline at x86's width, 32): no boundary condition (the input covers
    [-1, W] x [-1, H]), tiled V x 4 RoundUp."""
    b = registry.get("gaussian3x3")
    return b.build("x86-avx2", b.param_sets[0])


#: Halide's FPIR intrinsics used by `user_fpir` (the names the captured statement calls them by)
USER_FPIR_CALLS = {"absd", "rounding_halving_add", "widening_add", "widening_mul", "rounding_shift_right",
                   "saturating_add", "mul_shift_right", "halving_add", "saturating_sub", "saturating_cast"}


def user_fpir(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    """A pipeline written directly in FPIR with Halide 21's intrinsics."""
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    b = hl.ImageParam(hl.UInt(8), 2, "b")
    s = hl.ImageParam(hl.Int(16), 2, "s")
    out = hl.Func("user_fpir")
    d = hl.absd(a[x, y], b[x, y])
    r = hl.rounding_halving_add(a[x, y], b[x, y])
    w = hl.widening_add(d, r)
    m = hl.widening_mul(a[x, y], b[x, y])
    q = hl.rounding_shift_right(m, hl.u16(3))
    t = hl.saturating_add(hl.i16(q), s[x, y])
    u = hl.mul_shift_right(t, s[x, y], hl.u16(7))
    v = hl.halving_add(hl.i16(w), u)
    out[x, y] = hl.saturating_cast(hl.UInt(8), hl.saturating_sub(v, hl.i16(3)))
    out.vectorize(x, lanes)
    return out, [a, b, s]


def tail(strategy: str, lanes: int = 16) -> Callable[[], tuple[hl.Func, list[Any]]]:
    def build() -> tuple[hl.Func, list[Any]]:
        a = hl.ImageParam(hl.UInt(8), 2, "a")
        out = hl.Func("tail")
        out[x, y] = hl.u8((hl.u16(a[x, y]) + hl.u16(a[x + 1, y]) * 3 + 2) >> 2)
        out.vectorize(x, lanes, getattr(hl.TailStrategy, strategy))
        return out, [a]

    return build


def int64_math(lanes: int = 8) -> tuple[hl.Func, list[Any]]:
    a = hl.ImageParam(hl.Int(32), 2, "a")
    out = hl.Func("wide64")
    w = hl.i64(a[x, y]) * hl.i64(a[x, y] + 7) + hl.i64(x) * 1000003
    out[x, y] = hl.i32(w >> 13) ^ hl.i32(w)
    out.vectorize(x, lanes)
    return out, [a]


def bit_counts(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    a = hl.ImageParam(hl.UInt(16), 2, "a")
    out = hl.Func("clzsel")
    v = a[x, y]
    out[x, y] = hl.select(v > 1000, hl.count_leading_zeros(v), hl.select(v < 10, v * 3, v / 7)) + hl.u16(y)
    out.vectorize(x, lanes)
    return out, [a]


def narrow_params(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    k, off = hl.Param(hl.UInt(8), "k"), hl.Param(hl.Int(32), "off")
    out = hl.Func("narrow_params")
    out[x, y] = hl.u8_sat(hl.widening_mul(a[x, y], k) >> 3) + hl.u8(off)
    out.vectorize(x, lanes)
    return out, [a, k, off]


def compute_at_inner(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    """An update definition over an RDom computed per output vector (an allocation inside loops)."""
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    r = hl.RDom([(0, 5)], "r")
    s = hl.Func("s")
    s[x, y] = hl.u16(0)
    s[x, y] += hl.u16(a[x, y + r])
    out = hl.Func("colsum")
    out[x, y] = hl.u8(s[x, y] / 5)
    out.vectorize(x, lanes)
    s.compute_at(out, x).vectorize(x, lanes).update().vectorize(x, lanes)
    return out, [a]


# --------------------------------------------------------------------------------------------------
# Running


@dataclass
class Case:
    build: Callable[[], tuple[hl.Func, list[Any]]]
    inputs: Callable[[], list[Any]]  # fresh numpy arrays / hl.Buffers / scalars, in argument order
    size: list[int]
    numpy: Callable[..., np.ndarray] | None = None  # reference on the inputs (numpy arrays)


def u8(*shape: int) -> np.ndarray:
    return RNG.integers(0, 256, shape, dtype=np.uint8)


def blur_numpy(a: np.ndarray) -> np.ndarray:
    bx = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) // 3  # uint16 arithmetic wraps like Halide's
    return (bx[:-2] + bx[1:-1] + bx[2:]) // 3


def gaussian_numpy(buf: hl.Buffer) -> np.ndarray:
    p = np.asarray(buf).astype(np.int64)
    rows = p[:-2] + 2 * p[1:-1] + p[2:]
    cols = rows[:, :-2] + 2 * rows[:, 1:-1] + rows[:, 2:]
    return ((cols + 8) >> 4).astype(np.uint8)


def padded_min(h: int, w: int) -> hl.Buffer:
    buf = hl.Buffer(u8(h + 2, w + 2))
    buf.set_min([-1, -1])
    return buf


CASES: dict[str, Case] = {
    "blur3x3": Case(lambda: ex.blur3x3(32), lambda: [RNG.integers(0, 65536, (34, 130), dtype=np.uint16)],
                    [128, 32], blur_numpy),
    "box_sum_reduction": Case(lambda: ex.box_sum_reduction(16), lambda: [u8(40, 70)], [64, 30]),
    "clamped_boundary": Case(lambda: ex.clamped_boundary(16),
                             lambda: [RNG.integers(-3000, 3000, (20, 37), dtype=np.int16), 3], [37, 20]),
    "gaussian3x3_min_-1": Case(gaussian3x3, lambda: [padded_min(32, 64)], [64, 32], gaussian_numpy),
    "user_fpir": Case(user_fpir, lambda: [u8(9, 37), u8(9, 37), RNG.integers(-300, 300, (9, 37), dtype=np.int16)],
                      [37, 9]),
    "vector_reduce": Case(vector_reduce, lambda: [u8(11, 16)], [10]),
    "shuffles": Case(shuffles, lambda: [u8(2, 40, 3)], [32, 10]),
    "lut_predicated": Case(lut_predicated, lambda: [u8(3, 9, 70), RNG.integers(0, 65535, 256, dtype=np.uint16)],
                           [70, 9]),
    "specialized": Case(specialized, lambda: [u8(9, 64), 5], [64, 9]),
    "int64_math": Case(int64_math, lambda: [RNG.integers(-10**6, 10**6, (6, 21), dtype=np.int32)], [21, 6]),
    "bit_counts": Case(bit_counts, lambda: [RNG.integers(0, 65536, (6, 33), dtype=np.uint16)], [33, 6]),
    "narrow_params": Case(narrow_params, lambda: [u8(6, 32), 200, -3], [32, 6]),
    "compute_at_inner": Case(compute_at_inner, lambda: [u8(14, 32)], [32, 10]),
}
#: Odd widths (69) under each TailStrategy that allows them; the input is wide enough for rounded-up reads.
TAILS = ("GuardWithIf", "Predicate", "PredicateStores", "ShiftInwards", "ShiftInwardsAndBlend")
for _s in TAILS:
    CASES[f"tail_{_s}"] = Case(tail(_s), lambda: [u8(7, 100)], [69, 7])


def halide_reference(case: Case, inputs: list[Any]) -> np.ndarray:
    out, args = case.build()
    keep = []
    for a, v in zip(args, inputs):
        if isinstance(a, hl.ImageParam):
            buf = v if isinstance(v, hl.Buffer) else hl.Buffer(v)
            keep.append(buf)
            a.set(buf)
        else:
            a.set(v)
    return np.asarray(out.realize(case.size, X86)).copy()


def compile_case(case: Case, target: str, isel: str, name: str) -> CompiledPipeline:
    out, args = case.build()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)  # every case must compile, not fall back
        return pitchfork.compile(out, args, target=target, isel=isel, name=name)


@pytest.mark.parametrize(("target", "isel"), RUNS)
@pytest.mark.parametrize("name", list(CASES))
def test_pipeline_bit_exact(name: str, target: str, isel: str) -> None:
    case = CASES[name]
    inputs = case.inputs()
    want = halide_reference(case, inputs)
    prog = compile_case(case, target, isel, name.replace("-", "m"))
    got = prog(*inputs, size=case.size, check=True)  # guard bytes, inputs unchanged
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.array_equal(got, want)
    if case.numpy is not None:
        assert np.array_equal(got, case.numpy(*inputs))


#: Hexagon cases at HVX widths (LLVM legalizes sub-register vectors slowly on Hexagon), plus one tail at
#: 16 lanes: LLVM's masked stores narrower than an HVX register write every lane, so codegen must
#: not use them there.
HVX_CASES: dict[str, Case] = {
    "blur3x3": Case(lambda: ex.blur3x3(64, hvx=True), lambda: [RNG.integers(0, 65536, (131, 130), dtype=np.uint16)],
                    [128, 129], blur_numpy),
    "box_sum_reduction": Case(lambda: ex.box_sum_reduction(128), lambda: [u8(20, 300)], [256, 12]),
    "vector_reduce": Case(lambda: vector_reduce(128), lambda: [u8(5, 128)], [4]),
    "user_fpir": Case(lambda: user_fpir(128), lambda: [u8(3, 256), u8(3, 256), RNG.integers(-300, 300, (3, 256),
                                                                                           dtype=np.int16)], [256, 3]),
    "bit_counts": Case(lambda: bit_counts(64), lambda: [RNG.integers(0, 65536, (3, 128), dtype=np.uint16)], [128, 3]),
    "tail_GuardWithIf_128": Case(tail("GuardWithIf", 128), lambda: [u8(3, 300)], [259, 3]),
    "tail_Predicate_16": CASES["tail_Predicate"],
}


@pytest.mark.slow
@pytest.mark.qemu
@needs["hvx128"]
@pytest.mark.parametrize("name", list(HVX_CASES))
def test_pipeline_bit_exact_hvx(name: str) -> None:
    case = HVX_CASES[name]
    inputs = case.inputs()
    want = halide_reference(case, inputs)
    got = compile_case(case, "hvx128", "pitchfork", name)(*inputs, size=case.size, check=True)
    assert np.array_equal(got, want)
    if case.numpy is not None:
        assert np.array_equal(got, case.numpy(*inputs))


@pytest.mark.parametrize("target", ["x86-avx2", pytest.param("hvx128", marks=[needs["hvx128"], pytest.mark.qemu])])
def test_predicated_tail_at_register_width(target: str) -> None:
    """Predicate at the native width (32 u8 lanes on AVX2, 128 on HVX: llvm.masked.load/store)."""
    lanes = {"x86-avx2": 32, "hvx128": 128}[target]
    case = Case(tail("Predicate", lanes), lambda: [u8(5, 300)], [259, 5])
    inputs = case.inputs()
    assert np.array_equal(compile_case(case, target, "pitchfork", "tailp")(*inputs, size=case.size),
                          halide_reference(case, inputs))


# --------------------------------------------------------------------------------------------------
# What the generated code looks like


def selections(prog: CompiledPipeline, isel: str = "pitchfork") -> list:
    cap = prog.captured
    assert cap is not None
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, isel, prog.name)
    cg.build()
    return cg.selections


@pytest.mark.parametrize(("target", "mulhi"), [("x86-avx2", "vpmulhuw"), ("arm64", "umull"), ("hvx128", "vmpy")])
def test_blur_divide_by_3_is_multiply_high(target: str, mulhi: str) -> None:
    """SPEC §13: u16 `/ 3` becomes a multiply-high (and a shift), never a division."""
    lanes = {"x86-avx2": 32, "arm64": 16, "hvx128": 64}[target]
    out, args = ex.blur3x3(lanes, hvx=target == "hvx128")
    prog = pitchfork.compile(out, args, target=target, name="blur")
    loop = main_vector_loop(prog.assembly(), "blur", target=target)
    text = "\n".join(loop.instructions)
    assert mulhi in text
    assert "div" not in text


def test_user_fpir_passes_through() -> None:
    """Halide's FPIR intrinsics reach the selector as FPIR ops (nothing to lift) and are lowered to
    target instructions directly."""
    out, args = user_fpir(16)
    prog = pitchfork.compile(out, args, target="arm64", name="user_fpir")
    calls = {n.name for n in _walk(prog.captured.parse()) if isinstance(n, hir.Call)}
    assert USER_FPIR_CALLS <= calls
    sel = next(s for n, s in selections(prog) if isinstance(n, hir.Store))
    ops = {t.op for t in _subterms(sel.input)}
    assert {"absd", "rounding_halving_add", "widening_add", "widening_mul", "rounding_shr", "saturating_add",
            "mul_shr", "halving_add", "saturating_sub", "saturating_cast"} <= ops
    assert sel.fpir is sel.input or {t.op for t in _subterms(sel.fpir)} >= {"absd", "mul_shr"}
    final_ops = {t.op for t in _subterms(sel.final)}
    assert not final_ops & {"absd", "rounding_halving_add", "widening_mul"}  # all became instructions
    loop = main_vector_loop(prog.assembly(), "user_fpir", target="arm64")
    names = {i.split()[0] for i in loop.instructions}
    assert {"uabd", "urhadd", "umull"} <= names, sorted(names)


def _walk(node: Any):
    yield node
    if isinstance(node, (hir.Stmt, hir.Expr)):
        for f in getattr(node, "__dataclass_fields__", {}):
            v = getattr(node, f)
            for c in v if isinstance(v, tuple) else (v,):
                if isinstance(c, (hir.Stmt, hir.Expr)):
                    yield from _walk(c)


def _subterms(t: Any):
    seen = set()
    stack = [t]
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        yield u
        stack.extend(u.args)


def test_reduction_intermediates_on_heap_large_image() -> None:
    """compute_root intermediates of a real image size go to halide_malloc/halide_free (a stack
    allocation of this size would overflow an 8 MB stack)."""
    case = Case(lambda: ex.box_sum_reduction(16), lambda: [u8(1210, 1930)], [1920, 1200])
    inputs = case.inputs()
    prog = compile_case(case, "x86-avx2", "pitchfork", "boxsum")
    text = prog.llvm_ir()
    assert re.search(r"call [^\n]*@halide_malloc\(", text) and re.search(r"call [^\n]*@halide_free\(", text)
    assert np.array_equal(prog(*inputs, size=case.size), halide_reference(case, inputs))


def staged(lanes: int = 16) -> tuple[hl.Func, list[Any]]:
    """A producer computed per output split (`allocate gray[uint8 * 33]`: a constant-size buffer)."""
    a = hl.ImageParam(hl.UInt(8), 3, "rgb")
    g = hl.Func("gray")
    g[x, y] = hl.u8((hl.u16(a[x, y, 0]) * 77 + hl.u16(a[x, y, 1]) * 150 + hl.u16(a[x, y, 2]) * 29 + 128) >> 8)
    out = hl.Func("staged")
    out[x, y] = hl.max(g[x, y], g[x + 1, y]) - hl.min(g[x, y], g[x + 1, y])
    xo, xi = hl.Var("xo"), hl.Var("xi")
    out.split(x, xo, xi, lanes * 2).vectorize(xi, lanes).unroll(xi)
    g.compute_at(out, xo).vectorize(x, lanes)
    return out, [a]


@pytest.mark.parametrize("build", [staged, lut_predicated], ids=["constant_size", "in_Stack"])
def test_small_or_stack_allocation_on_stack(build: Callable) -> None:
    case = Case(build, lambda: [u8(3, 6, 65)] if build is staged else [u8(3, 6, 70), u8(256).astype(np.uint16)],
                [64, 6] if build is staged else [70, 6])
    prog = compile_case(case, "x86-avx2", "pitchfork", "alloc")
    assert "@halide_malloc" not in prog.llvm_ir() and "alloca" in prog.llvm_ir()
    inputs = case.inputs()
    assert np.array_equal(prog(*inputs, size=case.size), halide_reference(case, inputs))


def test_assertion_messages_recorded() -> None:
    out, args = ex.sobel3x3(16)
    prog = pitchfork.compile(out, args, target="arm64", name="sobel")
    msgs = list(prog.assertions.values())
    assert len(msgs) == prog.stats.asserts_checked
    assert any("halide_error_bad_type" in m for m in msgs)


def test_no_asserts_target_compiles_no_assertions() -> None:
    """A `no_asserts` target string: the statement's assertions are left out (Halide's code generator does
    the same), the kernel is otherwise the same code and gives the same output; without it they are checked."""
    image = RNG.integers(0, 256, (24, 64), dtype=np.uint8)
    progs = {}
    for target in ("x86-64-linux-avx-avx2-fma-sse41", "x86-64-linux-avx-avx2-fma-sse41-no_asserts"):
        out, args = ex.sobel3x3(16)
        progs[target] = pitchfork.compile(out, args, target=target, name="sobel", fallback=False)
    checked, stripped = progs.values()
    assert checked.stats.asserts_checked > 0 and "assert_" in checked.module.source_ir
    assert stripped.stats.asserts_checked == 0 and stripped.assertions == {}
    assert "assert_" not in stripped.module.source_ir
    loops = [main_vector_loop(prog.assembly(), "sobel", target="x86-avx2") for prog in (checked, stripped)]
    assert [i.split()[0] for i in loops[0].instructions] == [i.split()[0] for i in loops[1].instructions]
    out, (inp,) = ex.sobel3x3(16)
    inp.set(hl.Buffer(image))
    want = np.asarray(out.realize([64, 24], X86))
    assert np.array_equal(stripped(image), want) and np.array_equal(checked(image), want)


def test_entry_alloca_keeps_the_builders_place_in_the_entry_block() -> None:
    """A stack slot made while the kernel's builder still appends to the entry block (no argument check
    moved it on: camera_pipe on a no_asserts hvx128 target) goes at the builder's place. It used to go at
    the block's start through a second builder, which shifted this one back one place and put the block's
    last instruction after its terminator (IR that does not parse)."""
    from llvmlite import ir

    from pitchfork.codegen.memory import MemoryMixin

    i32 = ir.IntType(32)
    module = ir.Module("m")
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [i32]), "f")
    entry = fn.append_basic_block("entry")
    host = type("Host", (), {})()
    host.fn, host.b = fn, ir.IRBuilder(entry)
    x = host.b.add(fn.args[0], fn.args[0])
    MemoryMixin._entry_alloca(host, ir.ArrayType(ir.IntType(8), 16))
    host.b.mul(x, x)
    host.b.ret_void()
    # The slot stays in the entry block (a static alloca), the terminator stays last, and LLVM accepts it.
    assert [i.opname.split()[0] for i in entry.instructions] == ["add", "alloca", "mul", "ret"]
    import llvmlite.binding as llvm

    llvm.parse_assembly(str(module)).verify()


def test_unsupported_names_construct_briefly() -> None:
    """Fallback reasons quote the construct in Halide syntax, shortened, with its statement line."""
    inp = hl.ImageParam(hl.UInt(16), 2, "a")
    p = hl.Func("p")
    p[x, y] = inp[x, y] * 2
    q = hl.Func("q")
    q[x, y] = p[x, y] + p[x, y + 1]
    yo, yi = hl.Var("yo"), hl.Var("yi")
    q.split(y, yo, yi, 8).vectorize(x, 8)
    p.compute_at(q, yi).store_at(q, yo).fold_storage(y, 4).async_().vectorize(x, 8)
    with pytest.warns(PitchforkFallbackWarning) as w:  # (async producers need runtime threads: not on hvx128)
        prog = pitchfork.compile(q, [inp], target="hvx128", name="async")
    msg = str(w[0].message)
    assert "statement line" in msg and len(msg) < 400
    a = RNG.integers(0, 65536, (9, 16), dtype=np.uint16)
    want = (a[:-1] * 2).astype(np.uint16) + (a[1:] * 2).astype(np.uint16)
    assert np.array_equal(prog(a, size=[16, 8]), want)
    # on x86 the async producer runs on Halide's task system (pitchfork/codegen/parallel.py)
    prog = pitchfork.compile(q, [inp], target="x86-avx2", name="async_x86", fallback=False)
    assert np.array_equal(prog(a, size=[16, 8]), want)


def test_two_outputs_return_a_tuple() -> None:
    a = hl.ImageParam(hl.UInt(8), 2, "a")
    f, g = hl.Func("plus1"), hl.Func("times3")
    f[x, y] = a[x, y] + 1
    g[x, y] = hl.u16(a[x, y]) * 3
    f.vectorize(x, 16)
    g.vectorize(x, 16)
    prog = pitchfork.compile(hl.Pipeline([f, g]), [a], target="x86-avx2", name="two", fallback=False)
    arr = u8(3, 40)
    p1, t3 = prog(arr)
    assert np.array_equal(p1, arr + 1) and np.array_equal(t3, arr.astype(np.uint16) * 3)
