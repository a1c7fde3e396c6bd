"""Reading assembly (pitchfork/backend/asm.py): instruction lines, functions and loops of hand-written
x86 (AT&T), AArch64 and Hexagon (packet) snippets; test_machine.py reads LLVM's own output."""

from __future__ import annotations

import pytest

from pitchfork.backend.asm import asm_instructions, find_loops, inner_loop, inner_loop_instructions, syntax_of

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


def test_syntax_of_names_the_known_targets() -> None:
    assert syntax_of("hvx128") == "hvx128"
    with pytest.raises(ValueError, match="unknown target 'sparc'"):
        syntax_of("sparc")
