"""Compile hand-written kernels for the three targets (pitchfork/backend/machine.py) and read their assembly."""

from __future__ import annotations

import re

import pytest

from pitchfork.backend.asm import asm_instructions, find_loops, inner_loop, inner_loop_instructions
from pitchfork.backend.machine import (
    TARGETS,
    CompileError,
    IntrinsicError,
    compile_module,
    get_target,
    llvm_assertions_enabled,
)

from .kernels import AVG_INTRINSIC, AVG_MNEMONIC, VEC_BYTES, avg2d_ir, avg_add_ir

TARGET_NAMES = ["x86-avx2", "arm64", "hvx128"]
ELF_MACHINE = {"x86-avx2": 62, "arm64": 183, "hvx128": 164}
BACK_BRANCH = {"x86-avx2": r"^j[a-z]+ \.L", "arm64": r"^(b\.[a-z]+|cbn?z|tbn?z|b) .*\.L", "hvx128": r"jump"}


def test_targets() -> None:
    assert set(TARGETS) == set(TARGET_NAMES)
    x86, arm, hvx = (get_target(n) for n in TARGET_NAMES)
    assert (x86.triple, x86.cpu, x86.features) == ("x86_64-unknown-linux-gnu", "haswell", "+avx2")
    assert (arm.triple, arm.cpu, arm.features) == (
        "aarch64-unknown-linux-gnu",
        "cortex-a76",
        "+neon,+dotprod",
    )
    assert (hvx.triple, hvx.cpu, hvx.reloc) == ("hexagon-unknown-linux-musl", "hexagonv66", "static")
    assert hvx.features == "+hvxv66,+hvx-length128b"
    assert [x86.natural_lanes(8), arm.natural_lanes(16), hvx.natural_lanes(32)] == [32, 8, 32]
    assert hvx.natural_lanes(8) == 128 and hvx.vector_bytes == 128
    assert get_target(x86) is x86
    with pytest.raises(ValueError):
        get_target("riscv")
    with pytest.raises(ValueError):
        x86.natural_lanes(3)


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_compile_selects_intrinsic(target: str) -> None:
    m = compile_module(avg_add_ir(target), target)
    asm = m.assembly()
    assert re.search(AVG_MNEMONIC[target], asm), asm
    assert AVG_INTRINSIC[target] in m.llvm_ir()
    assert m.signatures["avg_add"].params == ("ptr", "ptr", "ptr", "ptr", "i32")
    assert m.signatures["avg_add"].ret == "void"
    obj = m.object_bytes()
    assert obj[:4] == b"\x7fELF"
    assert int.from_bytes(obj[18:20], "little") == ELF_MACHINE[target]
    insts = asm_instructions(asm, "avg_add")
    assert insts and not any(i.startswith(".") or i.endswith(":") or i in "{}" for i in insts)


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_inner_loop_of_real_code(target: str) -> None:
    asm = compile_module(avg_add_ir(target), target).assembly()
    loop = inner_loop(asm, "avg_add")
    body = inner_loop_instructions(asm, "avg_add")
    assert body == list(loop.instructions)
    assert any(re.search(AVG_MNEMONIC[target], i) for i in body)
    assert len(body) < len(asm_instructions(asm, "avg_add"))
    if target == "hvx128":
        assert loop.hardware_loop and loop.packets
        assert sum(len(p) for p in loop.packets) == len(body)
    else:
        assert re.search(BACK_BRANCH[target], body[-1]), body[-1]
        assert loop.packets == ()


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_loop_nest(target: str) -> None:
    asm = compile_module(avg2d_ir(target), target).assembly()
    loops = find_loops(asm, "avg2d")
    outer = [lp for lp in loops if not lp.innermost]
    inner = [lp for lp in loops if lp.innermost]
    assert outer and inner
    assert all(any(o.start <= i.start and i.end <= o.end for o in outer) for i in inner)
    assert any(re.search(AVG_MNEMONIC[target], x) for x in inner_loop_instructions(asm, "avg2d"))


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_misspelt_intrinsic_is_reported(target: str) -> None:
    head, _, tail = AVG_INTRINSIC[target].rpartition(".")
    bad = f"{head}x.{tail}"  # e.g. llvm.x86.avx2.pavgx.b
    with pytest.raises(IntrinsicError) as e:
        compile_module(avg_add_ir(target, intrinsic=bad), target)
    assert e.value.symbols == [bad]
    assert bad in str(e.value)


def test_unknown_intrinsic_calls_in_assembly() -> None:
    # what the hvx128 pair path checks its assembly with: calls found outside comments and directives,
    # and text without any `llvm.` answered without reading each line
    from pitchfork.backend.machine import _unknown_intrinsic_calls

    asm = "\t.text\n// llvm.in.a.comment\n\t{\n\t\tcall llvm.hexagon.V6.vaddbx.128B\n\t}\n\tjumpr r31\n"
    assert _unknown_intrinsic_calls(asm) == ["llvm.hexagon.V6.vaddbx.128B"]
    assert _unknown_intrinsic_calls(asm.replace("llvm.", "lvm.")) == []


def test_compile_errors() -> None:
    with pytest.raises(CompileError, match="does not parse"):
        compile_module("define void @f( {", "x86-avx2")
    wrong_type = avg_add_ir("arm64").replace(
        "declare <16 x i8> @llvm.aarch64.neon.urhadd.v16i8(<16 x i8>, <16 x i8>)",
        "declare <16 x i8> @llvm.aarch64.neon.urhadd.v16i8(<16 x i8>, <8 x i16>)",
    )
    with pytest.raises(CompileError):
        compile_module(wrong_type, "arm64")


USDOT_IR = """
declare <4 x i32> @llvm.aarch64.neon.usdot.v4i32.v16i8(<4 x i32>, <16 x i8>, <16 x i8>)
define <4 x i32> @f(<4 x i32> %a, <16 x i8> %b, <16 x i8> %c) {
  %r = call <4 x i32> @llvm.aarch64.neon.usdot.v4i32.v16i8(<4 x i32> %a, <16 x i8> %b, <16 x i8> %c)
  ret <4 x i32> %r
}
"""


def test_isolated_compile_survives_llvm_abort() -> None:
    # usdot needs +i8mm, which cortex-a76 lacks: LLVM aborts the process in instruction selection.
    with pytest.raises(CompileError, match="Cannot select"):
        compile_module(USDOT_IR, "arm64", isolate=True)
    ok = compile_module(USDOT_IR.replace("usdot", "udot"), "arm64", isolate=True)
    assert "udot" in ok.assembly()
    assert ok.assembly() == compile_module(USDOT_IR.replace("usdot", "udot"), "arm64").assembly()
    with pytest.raises(IntrinsicError):
        compile_module(
            avg_add_ir("arm64", intrinsic="llvm.aarch64.neon.urhaddd.v16i8"), "arm64", isolate=True
        )


def test_isolated_compile_reports_the_childs_llvm_phases() -> None:
    """`timings` with `isolate=True` gets the phases the child measured (pitchfork.compile isolates isel=llvm
    on hvx128 under an assertion-enabled LLVM, and the harness still reads its LLVM split)."""
    timings: dict[str, float] = {}
    compile_module(USDOT_IR.replace("usdot", "udot"), "arm64", isolate=True, timings=timings)
    assert {"llvm_parse", "llvm_verify", "llvm_O3", "llvm_emit_object"} <= set(timings)
    assert all(secs >= 0 for secs in timings.values()) and timings["llvm_O3"] > 0


def test_llvm_assertions_enabled_reads_the_loaded_llvm() -> None:
    """A static llvmlite (the PyPI wheel) records its LLVM's assertion state at build time; one linked to a
    shared libLLVM (scripts/install.sh's) says "unknown", and that libLLVM exports exactly one of LLVM's
    two ABI-breaking-checks markers, which says it."""
    import llvmlite.binding as llvm

    state = llvm.config.llvm_assertions_state
    if state in ("on", "off"):
        assert llvm_assertions_enabled() == (state == "on")
        return
    assert state == "unknown"
    lib = llvm.ffi.lib._lib
    off, on = (hasattr(lib, f"_ZN4llvm{n}ABIBreakingChecksE") for n in ("24Disable", "23Enable"))
    assert off != on
    assert llvm_assertions_enabled() == on


def test_vector_bytes_match_targets() -> None:
    for name, n in VEC_BYTES.items():
        assert get_target(name).vector_bytes == n


_STENCIL_IR = """
define void @stencil(ptr noalias %in, ptr noalias %out, i32 %n) {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %next, %loop ]
  %p0 = getelementptr inbounds i16, ptr %in, i32 %i
  %p1 = getelementptr inbounds i16, ptr %p0, i32 1
  %p2 = getelementptr inbounds i16, ptr %p0, i32 2
  %p3 = getelementptr inbounds i16, ptr %p0, i32 3
  %a = load <64 x i16>, ptr %p0, align 128
  %b = load <64 x i16>, ptr %p1, align 2
  %c = load <64 x i16>, ptr %p2, align 4
  %d = load <64 x i16>, ptr %p3, align 2
  %s1 = add <64 x i16> %a, %b
  %s2 = add <64 x i16> %c, %d
  %s = add <64 x i16> %s1, %s2
  %q = getelementptr inbounds i16, ptr %out, i32 %i
  store <64 x i16> %s, ptr %q, align 128
  %next = add i32 %i, 64
  %more = icmp slt i32 %next, %n
  br i1 %more, label %loop, label %done
done:
  ret void
}
"""


def test_hvx_align_vectors_is_per_module() -> None:
    """`align_vectors=False` keeps LLVM's HexagonVectorCombine from merging a stencil's unaligned loads
    into byte shuffles lowered with predicate selects; the option is set for each module, so a later
    compile with the default gets LLVM's behaviour back."""
    def vector_ops(align_vectors: bool) -> set[str]:
        asm = compile_module(_STENCIL_IR, "hvx128", align_vectors=align_vectors).assembly()
        return set(re.findall(r"\b(vmemu|valign|vmux|vcmp|vdelta|vrdelta)\b", asm))

    plain = vector_ops(False)
    assert "vmemu" in plain and not plain & {"vmux", "vcmp"}, plain
    default = vector_ops(True)
    assert "vmemu" not in default, default  # realigned loads (valign / shuffles) instead
    assert vector_ops(False) == plain


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_one_emission_per_output(target: str) -> None:
    """compile_module emits the object only; the assembly is emitted once, when first asked for, and
    is what a module compiled the same way gives (the outputs do not depend on which came first)."""
    m = compile_module(avg2d_ir(target), target)
    assert m.emitted("obj") and not m.emitted("asm")
    asm = m.assembly()
    assert m.emitted("asm") and m.assembly() is asm and m.asm is asm
    again = compile_module(avg2d_ir(target), target)
    assert again.assembly() == asm and again.object_bytes() == m.object_bytes()
    assert again.llvm_ir() == m.llvm_ir()


def test_compile_timings() -> None:
    timings: dict[str, float] = {}
    compile_module(avg_add_ir("x86-avx2"), "x86-avx2", timings=timings)
    assert set(timings) == {"llvm_parse", "llvm_verify", "llvm_O3", "llvm_print", "llvm_fixups",
                            "llvm_parse_optimized", "llvm_emit_object"}
    assert all(v >= 0 for v in timings.values())
