"""Issue 10: address arithmetic and loop bounds the way Halide's own backend gives them to LLVM.

* hvx128 has 32-bit pointers: buffer indices stay 32-bit `nsw` values (Halide promotes indices to 64
  bits only where pointers are 64 bits), so the hot loop addresses with post-incremented pointers
  instead of 64-bit register pairs (the add benchmark: 30 -> 20 instructions, Halide 21: 20);
* a scalar division or modulo by a power of two is a shift or a mask (Halide's Euclidean semantics
  are floor division there), not sdiv/srem plus a sign fix-up: a loop bound `e / 16` then lets
  strength reduction count the induction variable in bytes (fully_connected arm64: no `lsl` per
  iteration, 32 -> 31 instructions, Halide 21: 31; checked in test_lean_arm.py);
* the assembly is what the backend makes of the optimised IR *text*, the same text the object file,
  the x86 JIT and the AOT entry are compiled from (the in-memory module's use-list order gave
  gaussian5x5 arm64 a 97-instruction hot loop in `.s` and a 95-instruction one in `.o`).
"""

from __future__ import annotations

import re

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.machine import _parse, _set_align_vectors, _shared_machine, find_loops, get_target
from pitchfork.frontend import examples as ex


def _kernel_lines(ir_text: str, name: str) -> list[str]:
    lines = ir_text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("define") and f"@{name}(" in line
                 or line.startswith("define") and f'@"{name}"(' in line)
    end = next(i for i in range(start, len(lines)) if lines[i] == "}")
    return lines[start:end]


@pytest.fixture(scope="module")
def hvx_blur() -> pitchfork.api.CompiledPipeline:
    func, args = ex.blur3x3(64, hvx=True)
    return pitchfork.compile(func, args, target="hvx128", name="blur_hvx", fallback=False)


def test_hvx_indices_are_32_bit(hvx_blur) -> None:
    body = _kernel_lines(hvx_blur.module.source_ir, "blur_hvx")
    geps = [line for line in body if "getelementptr" in line]
    assert geps
    wide = [line for line in geps if re.search(r", i64 %", line)]
    assert not wide, wide[:3]  # (64-bit arithmetic remains where Halide's checks ask for it: sizes)


def test_hvx_hot_loop_has_no_register_pair_address_arithmetic(hvx_blur) -> None:
    loops = [lp for lp in find_loops(hvx_blur.assembly(), target="hvx128")
             if lp.innermost and any("vmem" in i for i in lp.instructions)]
    assert loops
    for lp in loops:
        pairs = [i for i in lp.instructions if re.search(r"\br\d+:\d+\s*=\s*(add|asl|combine)\(", i)]
        assert not pairs, pairs


@pytest.mark.qemu
def test_hvx_blur_bit_exact(hvx_blur) -> None:
    from pitchfork.backend.run import tools_available

    if not tools_available("hvx128"):
        pytest.skip("no toolchain for hvx128")
    rng = np.random.default_rng(3)
    img = rng.integers(0, 2**14, (128 + 2, 128 + 2), dtype=np.uint16)  # sums fit u16
    out = hvx_blur(img, size=[128, 128], check=True)  # (the schedule's strips are 128 rows)
    a = img.astype(np.int64)
    h = (a[:, :-2] + a[:, 1:-1] + a[:, 2:]) // 3
    want = (h[:-2] + h[1:-1] + h[2:]) // 3
    assert np.array_equal(out, want.astype(np.uint16))


def _pow2_pipeline() -> tuple[hl.Func, list]:
    x = hl.Var("x")
    inp = hl.ImageParam(hl.Int(32), 1, "inp")
    n = hl.Param(hl.Int(32), "n")
    out = hl.Func("pow2")
    out[x] = inp[x] + n / 16 * 1000 + n % 8 + (n + x) / 4 * 7
    out.vectorize(x, 8, hl.TailStrategy.RoundUp)
    return out, [inp, n]


def test_scalar_division_by_power_of_two_is_a_shift() -> None:
    func, args = _pow2_pipeline()
    prog = pitchfork.compile(func, args, target="x86-avx2", name="pow2", fallback=False)
    body = _kernel_lines(prog.module.source_ir, "pow2")
    assert not [line for line in body if re.search(r"= (sdiv|srem) ", line)]
    assert any(re.search(r"= ashr .*i32>? .*, <?i32 4>?$", line) for line in body)  # n / 16
    rng = np.random.default_rng(5)
    inp = rng.integers(-1000, 1000, 64, dtype=np.int32)
    for nv in (-33, -17, -16, -1, 0, 1, 15, 16, 47, -(2**20) - 3, 2**20 + 5):  # no int32 overflow (Halide's rule)
        got = prog(inp, nv, size=[64])
        xs = np.arange(64, dtype=np.int64)
        want = (inp + nv // 16 * 1000 + nv % 8 + (nv + xs) // 4 * 7).astype(np.int32)
        assert np.array_equal(got, want), nv


@pytest.mark.parametrize("target", ["arm64", "hvx128"])
def test_assembly_is_what_the_optimised_text_compiles_to(target: str) -> None:
    from benchmarks.registry import get

    g = get("gaussian5x5")
    func, args = g.build(target, g.param_sets[0])
    prog = pitchfork.compile(func, args, target=target, fallback=False)
    t = get_target(target)
    if target == "hvx128":
        _set_align_vectors(prog.module.align_vectors)
    again = _shared_machine(t.name, prog.module.opt).emit_assembly(_parse(prog.module.optimized_ir, t))
    assert again == prog.assembly()
    assert "lsr.iv" not in prog.llvm_ir()  # the backend's own IR rewrites stay out of the text


def test_hvx_gather_lane_loops_keep_the_base_pointer_in_a_register() -> None:
    """matmul hvx128 gathers its border columns lane by lane (`codegen_memory._gather`). The kernel's
    argument pointer is spilled there, and LLVM reloaded it in every lane (3 packets a lane instead
    of 2: +11% of the whole static estimate). The lane loop reads a loop-local copy of the pointer,
    reloaded at most once before the loop: no lane-loop load reads the stack."""
    from benchmarks.registry import get

    bench = get("matmul")
    func, args = bench.build("hvx128", bench.param_sets[0])
    prog = pitchfork.compile(func, args, target="hvx128", name="matmul_gather", fallback=False)
    loops = [lp for lp in find_loops(prog.assembly(), target="hvx128") if lp.innermost]
    lane = [lp for lp in loops if any(re.search(r"= mem(u?b|u?h|w)\(r\d+\+r\d+<<#\d\)", i) for i in lp.instructions)]
    assert len(lane) > 10  # the gathers of every border case
    reloads = [lp.instructions for lp in lane if any(re.search(r"= memw\(r(29|30)\+", i) for i in lp.instructions)]
    assert not reloads, reloads[:2]
