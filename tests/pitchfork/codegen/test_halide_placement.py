"""Session 16, x86 code laid out as Halide 21's: float `lerp` emitted in the order Halide's code
generator emits it (codegen/float_math.py `FloatOps.lerp`: the left product before the right operand
is computed, which freed the ymm register whose spill bilateral_grid's slicing loop reloaded every
iteration), and heap blocks from Halide's own default `halide_malloc` formula (codegen/alloc.py
`heap_functions`: 64-byte alignment on x86, `align_up(n, 64) + 64` bytes from malloc). Both are
checked by running: the lerp against Halide's realize, the allocator by calling it."""

from __future__ import annotations

import ctypes
import ctypes.util
import re
import warnings

import halide as hl
import llvmlite.binding as llvm
import numpy as np

import pitchfork
from pitchfork.codegen.base import STACK_LIMIT, X86_HEAP_ALIGN
from tests.pitchfork.codegen.test_codegen_alloc import row_stage


def _lerp3() -> tuple[hl.Func, list]:
    zero, one, w = (hl.ImageParam(hl.Float(32), 1, n) for n in ("zero", "one", "w"))
    x = hl.Var("x")
    out = hl.Func("out")
    out[x] = hl.lerp(zero[x], one[x], w[x])
    out.vectorize(x, 8)
    return out, [zero, one, w]


def test_lerp_left_product_before_right_operand_and_matches_halide() -> None:
    out, args = _lerp3()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(out, args, target="x86-avx2", name="lerp3", fallback=False)
    src = prog.module.source_ir
    body = src[src.index("define"):]
    ops = [m.group(1) for m in re.finditer(r"= (load|fsub|fmul|fadd) ", body)]
    # per vector: zero, w, 1 - w, zero * (1 - w), then one, one * w, the sum (Halide's order)
    seq = " ".join(ops)
    assert "load load fsub fmul load fmul fadd" in seq, seq
    assert "load load load fsub" not in seq, seq
    rng = np.random.default_rng(16)
    values = [rng.standard_normal(64).astype(np.float32) for _ in range(2)] + [rng.random(64, dtype=np.float32)]
    for a, v in zip(args, values):
        a.set(hl.Buffer(v))
    want = np.asarray(out.realize([64]))
    got = prog(*values, size=[64])
    assert np.allclose(got, want, rtol=1e-6, atol=1e-6), np.abs(got - want).max()


def _jit_heap_functions(ir_text: str) -> tuple[ctypes._CFuncPtr, ctypes._CFuncPtr, llvm.ExecutionEngine]:
    """The module's own `halide_malloc`/`halide_free` bodies, compiled alone by MCJIT over libc."""
    found = [re.search(rf"define weak [^\n]*@{n}\(.*?\n}}\n", ir_text, re.S) for n in ("halide_malloc", "halide_free")]
    assert all(found), "no halide_malloc/halide_free bodies in the module"
    text = "declare ptr @malloc(i64)\ndeclare void @free(ptr)\n" + "".join(m.group(0) for m in found if m)
    text = re.sub(r", ![a-z.]+ ![0-9]+", "", text)  # branch weights: metadata not carried over
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    engine = llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine())
    engine.finalize_object()
    hmalloc = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)(
        engine.get_function_address("halide_malloc"))
    hfree = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(engine.get_function_address("halide_free"))
    return hmalloc, hfree, engine


def test_x86_heap_blocks_placed_as_halides_default_malloc() -> None:
    func, args = row_stage(STACK_LIMIT)  # a row buffer of 16385 bytes: a heap block
    prog = pitchfork.compile(func, args, target="x86-avx2", fallback=False)
    hmalloc, hfree, _engine = _jit_heap_functions(prog.module.optimized_ir)
    libc = ctypes.CDLL(ctypes.util.find_library("c"))
    libc.malloc_usable_size.restype = ctypes.c_size_t
    libc.malloc_usable_size.argtypes = [ctypes.c_void_p]
    a = X86_HEAP_ALIGN
    for n in (1, 63, 64, 65, 4096, 25728, 1 << 20):
        p = hmalloc(None, n)
        raw = ctypes.c_void_p.from_address(p - 8).value
        assert raw is not None and p % a == 0
        assert p == (raw + 8 + a - 1) // a * a  # Halide's align_up(malloc + sizeof(void *), 64)
        assert libc.malloc_usable_size(raw) >= (n + a - 1) // a * a + a  # align_up(n, 64) + 64 asked for
        hfree(None, p)
    hfree(None, None)  # NULL is ignored, as Halide's
    img = np.random.default_rng(1).integers(0, 256, (3, STACK_LIMIT + 1), dtype=np.uint8)
    args[0].set(hl.Buffer(img))
    want = np.asarray(func.realize([STACK_LIMIT, 3], hl.Target("x86-64-linux-avx2-fma-sse41"))).copy()
    assert np.array_equal(prog(img, size=[STACK_LIMIT, 3]), want)
