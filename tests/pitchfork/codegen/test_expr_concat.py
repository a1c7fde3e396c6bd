"""pitchfork/codegen/expr.py `ExprEmitter.concat`: the plain concatenation for parts of any lengths.

Found by the schedule fuzzer (tests/pitchfork/difftest_schedules.py, seed 1 case 10): `f[x] = a[x / 4]`
bounded to 47 lanes and vectorized by 8 ends in Halide's `interleave_vectors(a[ramp(9, 1, 2)], t, t, t)`,
whose first operand the hvx128 codegen loads as a whole-register window (32 u32 lanes) beside three 2-lane
vectors; the pairwise concatenation padded the second part of each pair to the first's length, so the
interleave read undefined lanes: 4 of 47 lanes wrong under qemu-hexagon (u16 x 16: 8, u8 x 32: 16), with
isel=pitchfork and isel=llvm alike.
"""

from __future__ import annotations

import ctypes
import itertools

import numpy as np
import pytest
from llvmlite import ir

from pitchfork.backend.run import tools_available
from pitchfork.codegen.expr import ExprEmitter, _pairwise_is_concatenation


def _pairwise_by_lanes(counts: list[int], want: int) -> bool:
    """The pairwise scheme followed lane by lane (the reference for the run-based check)."""
    parts = [[(k, i) for i in range(n)] for k, n in enumerate(counts)]
    while len(parts) > 1:
        nxt = [parts[i] + [parts[i + 1][j] if j < len(parts[i + 1]) else None for j in range(len(parts[i]))]
               for i in range(0, len(parts) - 1, 2)]
        parts = nxt + parts[len(parts) - len(parts) % 2:]
    plain = [(k, i) for k, n in enumerate(counts) for i in range(n)]
    return all(j < len(parts[0]) and parts[0][j] == plain[j] for j in range(min(want, len(plain))))


def test_pairwise_check_follows_the_lanes() -> None:
    assert not _pairwise_is_concatenation([32, 2, 2, 2], 38)  # the fuzzer's case
    assert _pairwise_is_concatenation([8, 8, 8, 2], 26)  # one length, a shorter last part
    assert _pairwise_is_concatenation([4, 4, 8], 16)
    for counts in itertools.product((1, 2, 3, 8), repeat=3):
        for want in (1, 4, sum(counts), sum(counts) + 3):
            assert _pairwise_is_concatenation(list(counts), want) == _pairwise_by_lanes(list(counts), want), counts


@pytest.mark.parametrize("counts", [[32, 2, 2, 2], [2, 32], [8, 8, 8, 2], [3, 5, 1], [16, 4, 4, 16, 1]])
def test_concat_gives_the_plain_concatenation(counts: list[int]) -> None:
    """The parts' lanes, in order, JIT-compiled for the host (whichever path `concat` takes)."""
    import llvmlite.binding as llvm

    i32 = ir.IntType(32)
    total = sum(counts)
    m = ir.Module()
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.PointerType(i32), ir.PointerType(i32)]), "run")
    b = ir.IRBuilder(fn.append_basic_block())
    parts, at = [], 0
    for n in counts:
        p = b.bitcast(b.gep(fn.args[0], [ir.Constant(i32, at)]), ir.PointerType(ir.VectorType(i32, n)))
        parts.append(b.load(p, align=4))
        at += n
    whole = ExprEmitter(b, total, {}, "x86-avx2").concat(parts, total)
    b.store(whole, b.bitcast(fn.args[1], ir.PointerType(ir.VectorType(i32, total))), align=4)
    b.ret_void()
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(str(m))
    mod.verify()
    with llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine()) as ee:
        ee.finalize_object()
        run = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(ee.get_function_address("run"))
        src = np.arange(100, 100 + total, dtype=np.int32)
        out = np.zeros(total, np.int32)
        run(src.ctypes.data, out.ctypes.data)
    assert out.tolist() == src.tolist()


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
@pytest.mark.parametrize("bits,vec,size", [(32, 8, 47), (16, 16, 47), (8, 32, 95)])
def test_upsampled_tail_runs_bit_exactly(bits: int, vec: int, size: int) -> None:
    import halide as hl

    import pitchfork

    t, dt = hl.UInt(bits), {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
    x = hl.Var("x")
    a = hl.ImageParam(t, 1, "a")
    f = hl.Func("f")
    f[x] = a[x / 4]
    f.bound(x, 0, size).vectorize(x, vec)
    buf = (np.arange(1, 1001) * 7919 % 65521).astype(dt)
    a.set(hl.Buffer(buf))
    want = np.asarray(f.realize([size]))
    for isel in ("pitchfork", "llvm"):
        prog = pitchfork.compile(f, [a], target="hvx128", isel=isel)
        assert prog.module is not None, prog.fallback_reason
        got = np.asarray(prog(buf, size=[size], check=True))
        assert np.array_equal(got, want), f"{isel}: lanes {np.nonzero(got != want)[0].tolist()} differ"
