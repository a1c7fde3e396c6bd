"""Equal compiler options (issue 25): every LLVM backend option, pass setting and target feature is the
same for isel=pitchfork, isel=llvm and the llc run of Halide 21's Hexagon IR. Only instruction
selection differs between the isels (on HVX, 64-bit products on 32-bit halves: `i64_halves`)."""

from __future__ import annotations

import warnings

import halide as hl
import pytest

import pitchfork
import pitchfork.backend.machine as machine
from benchmarks.harness.halide21 import llc_command


def _stencil() -> tuple[hl.Func, list[hl.ImageParam]]:
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    x = hl.Var("x")
    f = hl.Func("f")
    f[x] = hl.u8((hl.u16(inp[x]) + hl.u16(inp[x + 1]) * 2 + hl.u16(inp[x + 2]) + 2) >> 2)
    f.vectorize(x, 128)
    return f, [inp]


@pytest.mark.parametrize("setting", [True, False])
def test_both_isels_and_halide_llc_share_one_option_set(monkeypatch: pytest.MonkeyPatch, setting: bool) -> None:
    monkeypatch.setattr(machine, "HVX_ALIGN_VECTORS", setting)
    f, args = _stencil()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        progs = {isel: pitchfork.compile(f, args, target="hvx128", isel=isel, name=f"eq_{isel}", fallback=False)
                 for isel in ("pitchfork", "llvm")}
    assert {p.module.align_vectors for p in progs.values()} == {setting}
    opts = machine.backend_options("hvx128")
    assert f"-hvc-va={'true' if setting else 'false'}" in opts
    cmd = llc_command("in.ll", "out.s")
    t = machine.get_target("hvx128")
    for want in (*opts, f"-mtriple={t.triple}", f"-mcpu={t.cpu}", f"-mattr={t.features}", f"-relocation-model={t.reloc}"):
        assert want in cmd
    assert all(p.module.target == t for p in progs.values())


def test_options_outside_hvx_are_llvm_defaults() -> None:
    assert machine.backend_options("x86-avx2") == machine.backend_options("arm64") == ()
