"""The pass list as data (pitchfork/passes/pipeline.py): the default order per target and isel, the
checks on pass names, `pitchfork compile --print-passes / --disable-pass`, PITCHFORK_DEBUG's log, and
that disabling a pass changes the code and keeps the results bit-exact (against Halide's realize())."""

from __future__ import annotations

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.cli import main
from pitchfork.errors import UsageError
from pitchfork.frontend.capture import halide_target
from pitchfork.frontend.examples import sobel3x3
from pitchfork.passes.pipeline import PASSES, TARGETS, default_passes, format_passes, resolve
from tests.pitchfork.passes.test_stream_taps import CASES, N, _stencil

SOBEL_GEN = "examples/aot/sobel_generator.py:Sobel"


def test_default_order_is_the_one_compile_ran() -> None:
    """The loop passes compile() ran before they were data: dot_products for isel=pitchfork, then the
    three HVX ones on hvx128; none for isel=llvm."""
    hvx = default_passes("hvx128", "pitchfork")
    assert [p.name for p in hvx.of_kind("loop")] == ["dot_products", "hvx_windows", "stream_taps", "strided_stores"]
    for t in ("x86-avx2", "arm64"):
        assert [p.name for p in default_passes(t, "pitchfork").of_kind("loop")] == ["dot_products"]
    for t in TARGETS:
        assert default_passes(t, "llvm").of_kind("loop") == ()
    assert hvx.on("hvx_i64_halves") and not default_passes("hvx128", "llvm").on("hvx_i64_halves")
    kinds = [p.kind for p in PASSES]
    assert kinds == sorted(kinds, key=("loop", "codegen", "backend").index)  # listed in run order


def test_every_pass_is_named_and_documented_once() -> None:
    assert len({p.name for p in PASSES}) == len(PASSES)
    for p in PASSES:
        assert p.doc and "\n" not in p.doc and p.targets and set(p.targets) <= set(TARGETS), p.name
        assert (p.run is not None) == (p.kind == "loop"), p.name


def test_resolve_checks_names() -> None:
    with pytest.raises(UsageError, match=r"unknown pass 'bogus'; the passes for hvx128 .*: dot_products, hvx_windows"):
        resolve("hvx128", "pitchfork", disable=["bogus"])
    assert resolve("arm64", "pitchfork", disable=["hvx_windows"]) == default_passes("arm64", "pitchfork")
    with pytest.raises(UsageError, match=r"'branch_weights' is a codegen pass"):
        resolve("x86-avx2", "pitchfork", passes=["branch_weights"])
    # passes= picks loop passes for either isel (the harness gives LLVM alone the same ones)
    assert [p.name for p in resolve("hvx128", "llvm", passes=["stream_taps"]).of_kind("loop")] == ["stream_taps"]
    with pytest.raises(UsageError, match=r"'hvx_i128_mulh' cannot be disabled"):
        resolve("hvx128", "llvm", disable=["hvx_i128_mulh"])
    only = resolve("hvx128", "pitchfork", passes=["stream_taps"])
    assert [p.name for p in only.of_kind("loop")] == ["stream_taps"]
    assert only.on("hvx_predicate_selects") and only.on("hvx_accumulate")  # the others stay
    assert not resolve("hvx128", "pitchfork", disable=["stream_taps"]).on("stream_taps")


def test_cli_prints_the_passes_in_order(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", SOBEL_GEN, "--target", "hvx128", "--print-passes"]) == 0
    out = capsys.readouterr().out
    assert out.strip() == format_passes(default_passes("hvx128", "pitchfork"))
    lines = out.splitlines()
    assert lines[0] == "passes for target hvx128, isel=pitchfork (in order):"
    assert [ln.split()[1] for ln in lines[1:5]] == ["dot_products", "hvx_windows", "stream_taps", "strided_stores"]
    assert main(["compile", SOBEL_GEN, "-t", "hvx128", "--print-passes", "--disable-pass", "stream_taps"]) == 0
    assert "stream_taps" not in capsys.readouterr().out


def test_cli_refuses_an_unknown_pass_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compile", SOBEL_GEN, "-t", "x86-avx2", "--disable-pass", "stream_tap"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "unknown pass 'stream_tap'" in err and "dot_products" in err


def test_debug_logs_the_statement_after_each_loop_pass(monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    out, args = sobel3x3(32)
    monkeypatch.setenv("PITCHFORK_DEBUG", "1")
    pitchfork.compile(out, args, target="x86-avx2", name="dbg", fallback=False)
    err = capsys.readouterr().err
    assert "pitchfork: dbg: statement after parsing:" in err and "pitchfork: dbg: statement after dot_products:" in err
    assert "for (" in err and "LLVM IR" not in err
    monkeypatch.setenv("PITCHFORK_DEBUG", "2")
    pitchfork.compile(out, args, target="x86-avx2", name="dbg", fallback=False)
    err = capsys.readouterr().err
    assert "pitchfork: dbg: LLVM IR from codegen:" in err and "pitchfork: dbg: LLVM IR after O3:" in err
    monkeypatch.setenv("PITCHFORK_DEBUG", "yes")
    with pytest.raises(UsageError, match="PITCHFORK_DEBUG must be 0, 1 or 2"):
        pitchfork.compile(out, args, target="x86-avx2", fallback=False)


def test_disabling_branch_weights_on_x86_changes_ir_and_stays_exact() -> None:
    image = np.random.default_rng(5).integers(0, 256, (16, 256), dtype=np.uint8)
    out, (inp,) = sobel3x3(32)
    inp.set(hl.Buffer(image))
    want = np.asarray(out.realize([256, 16], halide_target("x86-avx2"))).copy()
    on = pitchfork.compile(out, [inp], target="x86-avx2", name="sobel", fallback=False)
    off = pitchfork.compile(out, [inp], target="x86-avx2", name="sobel", fallback=False,
                            disable_passes=["branch_weights"])
    # (some !prof remain: LLVM's own, from llvm.expect)
    assert on.llvm_ir().count("!prof") > off.llvm_ir().count("!prof")
    for prog in (on, off):
        assert np.array_equal(prog(image, size=[256, 16]), want)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
def test_disabling_stream_taps_on_hvx_changes_ir_and_stays_exact() -> None:
    """gaussian3x3's inlined sum without the [1 2 1] regrouping: no vtmpy, other code, same bytes."""
    expr, t, windows, _ = CASES["gaussian"]
    f, args = _stencil(expr, t)
    a = np.random.default_rng(17).integers(0, 256, (6, N + 5), dtype=np.uint8)
    args[0].set(hl.Buffer(a))
    want = np.asarray(f.realize([N, 4], halide_target("x86-avx2"))).copy()
    on = pitchfork.compile(f, args, target="hvx128", name="stencil", fallback=False)
    off = pitchfork.compile(f, args, target="hvx128", name="stencil", fallback=False, disable_passes=["stream_taps"])
    assert on.stats.rules_fired.get("vtmpy_121", 0) == 2 * windows
    assert off.stats.rules_fired.get("vtmpy_121", 0) == 0
    assert on.llvm_ir() != off.llvm_ir() and "vtmpy(" not in off.assembly()
    for prog in (on, off):
        assert np.array_equal(prog(a, size=[N, 4]), want)


def test_only_shared_codegen_passes_can_be_enabled() -> None:
    # hvx_aligned_loads moves data only: LLVM alone may get it (the harness's selection-only column)
    assert resolve("hvx128", "llvm", enable=["hvx_aligned_loads"]).on("hvx_aligned_loads")
    assert not resolve("hvx128", "llvm").on("hvx_aligned_loads")
    with pytest.raises(UsageError, match=r"'hvx_accumulate' cannot be enabled for isel=llvm: only shared codegen"):
        resolve("hvx128", "llvm", enable=["hvx_accumulate"])
    with pytest.raises(UsageError, match=r"'stream_taps' cannot be enabled .*loop passes are chosen with passes="):
        resolve("hvx128", "llvm", enable=["stream_taps"])
    assert all(p.shared for p in PASSES if p.kind == "loop")


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu-hexagon")
def test_llvm_alone_with_aligned_block_loads_stays_exact() -> None:
    """isel=llvm given PITCHFORK's aligned-block loads (as the harness does): sobel3x3's misaligned row
    loads (of its 128-aligned boundary buffer) become aligned blocks + valign, same bytes."""
    image = np.random.default_rng(23).integers(0, 256, (8, 256), dtype=np.uint8)
    out, (inp,) = sobel3x3(128)
    inp.set(hl.Buffer(image))
    want = np.asarray(out.realize([256, 8], halide_target("x86-avx2"))).copy()
    plain = pitchfork.compile(out, [inp], target="hvx128", isel="llvm", name="sobel", fallback=False)
    given = pitchfork.compile(out, [inp], target="hvx128", isel="llvm", name="sobel", fallback=False,
                              enable_passes=["hvx_aligned_loads"])
    assert given.llvm_ir().count("valignb") > plain.llvm_ir().count("valignb")
    assert given.assembly().count("vmemu") < plain.assembly().count("vmemu")
    for prog in (plain, given):
        assert np.array_equal(prog(image, size=[256, 8]), want)
