"""Compile hand-written kernels for the three targets and read their assembly."""

from __future__ import annotations

import re

import pytest

from pitchfork.backend.machine import (
    TARGETS,
    CompileError,
    IntrinsicError,
    asm_instructions,
    compile_module,
    find_loops,
    get_target,
    inner_loop,
    inner_loop_instructions,
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


X86_SNIPPET = """\
\t.text
\t.globl\tf                               # -- Begin function f
f:                                      # @f
# %bb.0:
\tmovl\t$3, %eax        # imm = 0x3
.LBB0_1:                                # =>This Inner Loop Header: Depth=1
\tvpaddb\t(%rdi), %ymm0, %ymm0
\tdecl\t%eax
\tjne\t.LBB0_1
# %bb.2:
\tretq
.Lfunc_end0:
\t.size\tf, .Lfunc_end0-f
"""

ARM_SNIPPET = """\
f:                                      // @f
// %bb.0:
\tmov\tw8, #16                          // =0x10
.LBB0_1:                                // =>This Inner Loop Header: Depth=1
\tldr\tq0, [x0], #16
\tsubs\tw8, w8, #1
\tb.ne\t.LBB0_1
\tret
.Lfunc_end0:
"""

HVX_SNIPPET = """\
f:
\t{
\t\tp0 = cmp.gt(r3,#0); if (!p0.new) jump:nt .LBB0_4
\t}
\t{
\t\tloop1(.LBB0_2,r3)
\t\tr4 = #0
\t}
.LBB0_2:
\t{
\t\tloop0(.LBB0_3,r2)
\t}
.LBB0_3:                                // inner
\t{
\t\tv0 = vmemu(r0++#1)
\t\tr4 = add(r4,#1)
\t}
\t{ vmemu(r1++#1) = v0 }  :endloop0
\t{
\t\tnop
\t} :endloop1
.LBB0_4:
\t{
\t\tjumpr r31
\t}
.Lfunc_end0:
"""


def test_asm_instructions_syntax() -> None:
    assert asm_instructions(X86_SNIPPET, "f") == [
        "movl $3, %eax",
        "vpaddb (%rdi), %ymm0, %ymm0",
        "decl %eax",
        "jne .LBB0_1",
        "retq",
    ]
    assert asm_instructions(ARM_SNIPPET, "f", target="arm64") == [
        "mov w8, #16",
        "ldr q0, [x0], #16",
        "subs w8, w8, #1",
        "b.ne .LBB0_1",
        "ret",
    ]
    assert asm_instructions(HVX_SNIPPET, "f") == [
        "p0 = cmp.gt(r3,#0); if (!p0.new) jump:nt .LBB0_4",
        "loop1(.LBB0_2,r3)",
        "r4 = #0",
        "loop0(.LBB0_3,r2)",
        "v0 = vmemu(r0++#1)",
        "r4 = add(r4,#1)",
        "vmemu(r1++#1) = v0",
        "nop",
        "jumpr r31",
    ]
    with pytest.raises(ValueError):
        asm_instructions(X86_SNIPPET, "g")


def test_find_loops_snippets() -> None:
    assert inner_loop_instructions(X86_SNIPPET, "f") == [
        "vpaddb (%rdi), %ymm0, %ymm0",
        "decl %eax",
        "jne .LBB0_1",
    ]
    assert inner_loop_instructions(ARM_SNIPPET) == ["ldr q0, [x0], #16", "subs w8, w8, #1", "b.ne .LBB0_1"]
    loops = find_loops(HVX_SNIPPET, "f")
    assert [(lp.label, lp.innermost, lp.hardware_loop) for lp in loops] == [
        (".LBB0_2", False, True),
        (".LBB0_3", True, True),
    ]
    assert loops[1].packets == (("v0 = vmemu(r0++#1)", "r4 = add(r4,#1)"), ("vmemu(r1++#1) = v0",))
    assert len(loops[0].packets) == 4
    with pytest.raises(ValueError):
        inner_loop("f:\n\tretq\n", "f")


@pytest.mark.parametrize("target", TARGET_NAMES)
def test_misspelt_intrinsic_is_reported(target: str) -> None:
    head, _, tail = AVG_INTRINSIC[target].rpartition(".")
    bad = f"{head}x.{tail}"  # e.g. llvm.x86.avx2.pavgx.b
    with pytest.raises(IntrinsicError) as e:
        compile_module(avg_add_ir(target, intrinsic=bad), target)
    assert e.value.symbols == [bad]
    assert bad in str(e.value)


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


def test_vector_bytes_match_targets() -> None:
    for name, n in VEC_BYTES.items():
        assert get_target(name).vector_bytes == n


# A cold block after the loop jumps back to a join point: a backward branch that is not a loop.
COLD_BLOCK_SNIPPET = """\
g:
\ttestl\t%esi, %esi
\tje\t.LBB1_4
.LBB1_1:
\tvpaddb\t(%rdi), %ymm0, %ymm0
\tdecl\t%esi
\tjne\t.LBB1_1
.LBB1_2:
\tvzeroupper
\tretq
.LBB1_4:
\tmovl\t$1, %eax
\tjmp\t.LBB1_2
.Lfunc_end1:
"""


def test_backward_jump_that_is_not_a_loop() -> None:
    loops = find_loops(COLD_BLOCK_SNIPPET, "g")
    assert [lp.label for lp in loops] == [".LBB1_1"]
    assert inner_loop_instructions(COLD_BLOCK_SNIPPET, "g") == [
        "vpaddb (%rdi), %ymm0, %ymm0",
        "decl %esi",
        "jne .LBB1_1",
    ]


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
