"""HVX kernels have no variable-sized alloca, so LLVM 22 never gives them an aligned-stack base
register (AP).

The bug this guards against (depthwise_conv on hvx128 failed Halide's output-bounds assertion #13):
with a variable-sized alloca and any stack object aligned beyond 8 bytes (HVX spill slots, LLVM's
stack temporaries for scalarized vector ops, our 128-byte aligned slots), LLVM 22's Hexagon backend
addresses the frame through AP (`rN = and(r30, #-A)`) and may spill an argument through AP before
setting it: the reload reads garbage (there, the output's extent.1 came back as 0). Dynamic
allocations on HVX are therefore malloc'd (codegen `_s_Allocate`); the qemu harness supplies malloc.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available

pytestmark = [pytest.mark.qemu, pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")]


def _pipeline():  # type: ignore[no-untyped-def]
    import halide as hl

    x = hl.Var("x")
    inp = hl.ImageParam(hl.UInt(8), 1, "input")
    lut, g, out = hl.Func("lut"), hl.Func("g"), hl.Func("out")
    lut[x] = hl.u8((x * x) % 251)
    g[x] = inp[x] + hl.u8(1)
    out[x] = lut[hl.i32(g[x])] + g[x]  # a gather: a 128-byte aligned scratch slot
    lut.compute_root().bound(x, 0, 256).vectorize(x, 128)
    # dynamic size, `in Stack`: before the fix a variable-sized alloca next to the aligned slots
    g.compute_root().store_in(hl.MemoryType.Stack).vectorize(x, 128, hl.TailStrategy.RoundUp)
    out.vectorize(x, 128, hl.TailStrategy.RoundUp)
    return out, [inp]


@pytest.mark.parametrize("isel", ["pitchfork", "llvm"])
def test_dynamic_allocations_on_hvx_are_not_variable_sized_allocas(isel: str) -> None:
    out, args = _pipeline()
    prog = pitchfork.compile(out, args, target="hvx128", isel=isel, name=f"hvx_stack_{isel}", fallback=False)
    ir_text, asm = prog.llvm_ir(), prog.assembly()
    assert not re.search(r"alloca i8, i(32|64) %", ir_text), "a variable-sized alloca in an HVX kernel"
    assert re.search(r"call .*@halide_malloc\(", ir_text) and re.search(r"call void @halide_free\(", ir_text)
    assert not re.search(r"=\s*and\(r30,\s*#-", asm), "the frame uses an aligned-stack base register (AP)"
    a = np.random.default_rng(0).integers(0, 250, 384, dtype=np.uint8)
    want = (((a.astype(np.int64) + 1) ** 2 % 251) + a + 1).astype(np.uint8)
    assert np.array_equal(prog(a), want)
