"""Basic blocks, loops and counter instrumentation on small known assembly (all three syntaxes), and
the count-weighted estimate built from them."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from benchmarks.harness.asmblocks import find_loops, instrument, split_blocks
from benchmarks.harness import static

X86 = """\
	.text
	.globl	f
f:                                      # @f
	xorl	%eax, %eax
	testq	%rdx, %rdx
	jle	.LBB0_4
.LBB0_1:                                # %outer
	xorl	%ecx, %ecx
.LBB0_2:                                # %inner
	vpaddw	(%rsi,%rcx,2), %ymm0, %ymm0
	addq	$16, %rcx
	cmpq	%rdx, %rcx
	jl	.LBB0_2
# %bb.3:
	incq	%rax
	cmpq	$4, %rax
	jne	.LBB0_1
.LBB0_4:
	vzeroupper
	retq
.Lfunc_end0:
	.size	f, .Lfunc_end0-f
"""

ARM = """\
f:
	mov x8, xzr
.LBB0_1:
	ldr q0, [x1, x8]
	uabd v0.16b, v0.16b, v1.16b   // bic-like names are not branches
	bic v2.16b, v2.16b, v0.16b
	add x8, x8, #16
	cmp x8, x2
	b.lt .LBB0_1
	ret
.Lfunc_end0:
"""

HEX = """\
f:
	{
		loop0(.LBB0_2,r2)
		r3 = #0
	}
	.p2align 4
.LBB0_2:
	{
		v0 = vmem(r1+#0)
		r1 = add(r1,#128)
	}
	{
		v1.ub = vabsdiff(v0.ub,v2.ub)
		vmem(r0++#1) = v1.new
	} :endloop0
	{
		p0 = cmp.eq(r3,#0)
		if (p0.new) jump:nt .LBB0_4
	}
	{
		r3 = add(r3,#1)
	}
.LBB0_4:
	{
		jumpr r31
	}
.Lfunc_end0:
"""


def test_x86_blocks_and_nested_loops() -> None:
    blocks = split_blocks(X86, "f", "x86-avx2")
    assert [b.label for b in blocks] == [None, ".LBB0_1", ".LBB0_2", None, ".LBB0_4"]
    assert blocks[2].instructions[-1] == "jl .LBB0_2" and blocks[2].targets == (".LBB0_2",)
    assert blocks[4].falls_through is False  # ends in retq
    loops = find_loops(blocks)
    assert [(lp.header, lp.first, lp.last, lp.innermost) for lp in loops] == [
        (".LBB0_1", 1, 3, False), (".LBB0_2", 2, 2, True)]


def test_arm_bic_is_not_a_branch_and_one_block_loop() -> None:
    blocks = split_blocks(ARM, "f", "arm64")
    assert [b.label for b in blocks] == [None, ".LBB0_1", None]
    assert len(blocks[1].instructions) == 6
    assert [(lp.header, lp.innermost) for lp in find_loops(blocks)] == [(".LBB0_1", True)]


def test_hexagon_packets_hardware_loop_and_branches() -> None:
    blocks = split_blocks(HEX, "f", "hvx128")
    assert [b.label for b in blocks] == [None, ".LBB0_2", None, None, ".LBB0_4"]
    loop_block = blocks[1]
    assert len(loop_block.packets) == 2 and loop_block.targets == (".LBB0_2",)  # :endloop0 -> loop0's label
    assert blocks[2].targets == (".LBB0_4",) and blocks[2].falls_through
    assert [(lp.header, lp.first, lp.last) for lp in find_loops(blocks)] == [(".LBB0_2", 1, 1)]


def test_hexagon_hardware_loop_with_constant_extended_label() -> None:
    # LLVM writes `loop0(##.LBB0_2,#31)` when it cannot prove the label in range (matmul hvx128):
    # still the loop's header, else the enclosing loop is taken for the innermost one.
    blocks = split_blocks(HEX.replace("loop0(.LBB0_2,r2)", "loop0(##.LBB0_2,#31)"), "f", "hvx128")
    assert blocks[1].targets == (".LBB0_2",)
    assert [(lp.header, lp.first, lp.last) for lp in find_loops(blocks)] == [(".LBB0_2", 1, 1)]
    from pitchfork.backend.machine import find_loops as machine_loops

    text = HEX.replace("loop0(.LBB0_2,r2)", "loop0(##.LBB0_2,#31)")
    assert [(lp.label, lp.hardware_loop) for lp in machine_loops(text, target="hvx128")] == [(".LBB0_2", True)]


@pytest.mark.parametrize("syntax,text", [("x86-avx2", X86), ("arm64", ARM), ("hvx128", HEX)])
def test_instrument_puts_one_counter_at_each_block_start(syntax: str, text: str) -> None:
    out, blocks = instrument(text, "f", syntax)  # type: ignore[arg-type]
    lines = out.splitlines()
    for b in blocks:
        # the snippet for block i is the only reference to pf_cnt+4i
        assert sum(f"pf_cnt+{4 * b.index}" in ln and "add" not in ln.split("pf_cnt")[0][-6:] for ln in lines) >= 1
    # the label of the inner loop is directly followed by its counter
    label = {"x86-avx2": ".LBB0_2:", "arm64": ".LBB0_1:", "hvx128": ".LBB0_2:"}[syntax]
    i = next(k for k, ln in enumerate(lines) if ln.startswith(label))
    assert "pf_save" in lines[i + 1] or "stp x0, x1" in lines[i + 1] or ".Lpf_stub" in lines[i + 1]
    assert any(ln.startswith("pf_cnt:") for ln in lines)


def test_regions_cover_every_block_that_ran_and_weight_by_count() -> None:
    blocks = split_blocks(X86, "f", "x86-avx2")
    counts = np.array([1, 4, 400, 4, 0])
    regs = static.regions(blocks, counts)
    assert [(r.first, r.last, r.count) for r in regs] == [(0, 0, 1), (1, 1, 4), (2, 2, 400), (3, 3, 4)]
    hblocks = split_blocks(HEX, "f", "hvx128")
    est = static.estimate(hblocks, np.array([1, 10, 1, 0, 1]), "hvx128")
    assert est.unit == "packets" and est.total == 1 * 1 + 10 * 2 + 1 * 1 + 0 * 1 + 1 * 1
    (loop,) = est.loops
    assert loop["header_count"] == 10 and loop["weighted"] == 20 and loop["innermost"]
    assert est.histogram["vabsdiff"] == 10 and est.histogram["vmem(st)"] == 10


def test_estimate_counts_executed_vector_instructions() -> None:
    """`vector_executed`: executions of instructions naming a vector register; 0 when only scalar
    blocks ran (the synthesis regression check then has no evidence about a lowering rule)."""
    hblocks = split_blocks(HEX, "f", "hvx128")
    est = static.estimate(hblocks, np.array([1, 10, 1, 0, 1]), "hvx128")
    assert est.vector_executed == 10 * 3 and est.to_json()["vector_executed"] == 30  # vmem, vabsdiff, vmem store
    assert static.estimate(hblocks, np.array([1, 0, 1, 0, 1]), "hvx128").vector_executed == 0
    assert not static.VECTOR_REGISTER["hvx128"].search("r1:0 = vaddh(r3:2,r5:4)")  # scalar pair "vector" op
    arm = split_blocks(ARM, "f", "arm64")
    assert [sum(1 for i in b.instructions if static.VECTOR_REGISTER["arm64"].search(i)) for b in arm] == [0, 3, 0]


@pytest.mark.skipif(not shutil.which(static.llvm_tool("llvm-mca")) and not static.os.path.exists(
    static.os.path.join(static.LLVM_BIN, "llvm-mca")), reason="llvm-mca (llvm-22) not installed")
def test_mca_cycles_scale_with_the_work() -> None:
    one = ["vpaddw %ymm1, %ymm0, %ymm0"]
    four = ["vpaddw %ymm1, %ymm0, %ymm0"] * 4  # a dependency chain: 4x the latency
    c1, c4 = static.mca_cycles([one, four], "x86-avx2", "znver3")
    assert c1 is not None and c4 is not None and 3.5 < c4 / c1 < 4.5


def test_counted_run_on_arm_matches_the_loop_trip_count() -> None:
    """A hand-written AArch64 kernel run under qemu: the counts are exact."""
    from pitchfork.backend.run import tools_available

    if not tools_available("arm64"):
        pytest.skip("qemu-aarch64 / aarch64 gcc not installed")
    asm = """\
	.text
	.globl	f
	.p2align	2
f:
	mov x8, xzr
.LBB0_1:
	add x8, x8, #1
	cmp x8, x1
	b.lt .LBB0_1
	str x8, [x0]
	ret
.Lfunc_end0:
	.size f, .Lfunc_end0-f
"""
    spec = static.HarnessSpec("f", "void")
    spec.args = [static.CArg("void *", spec.add_output(8, np.dtype(np.int64))), static.CArg("long long", "37LL")]
    run = static.counted_run(asm, "f", "arm64", spec)
    assert [b.label for b in run.blocks] == [None, ".LBB0_1", None]
    assert run.counts.tolist() == [1, 37, 1]
    assert run.outputs[0].tolist() == [37] and run.returned == 0


def test_counted_run_on_hexagon_hardware_loop_is_exact() -> None:
    """The out-of-line counter stubs leave a hardware loop's trip count and the result unchanged."""
    from pitchfork.backend.run import tools_available

    if not tools_available("hvx128"):
        pytest.skip("qemu-hexagon / clang / lld not installed")
    asm = """\
	.text
	.globl	f
	.p2align	4
f:
	{
		loop0(.LBB0_1,r1)
		r2 = #0
	}
.LBB0_1:
	{
		r2 = add(r2,#3)
	} :endloop0
	{
		p0 = cmp.gt(r2,#100)
		if (p0.new) jump:nt .LBB0_3
	}
	{
		r2 = add(r2,#1000)
	}
.LBB0_3:
	{
		memw(r0+#0) = r2
		jumpr r31
	}
.Lfunc_end0:
	.size f, .Lfunc_end0-f
"""
    spec = static.HarnessSpec("f", "void")
    spec.args = [static.CArg("void *", spec.add_output(4, np.dtype(np.int32))), static.CArg("int", "37")]
    run = static.counted_run(asm, "f", "hvx128", spec)
    assert [b.label for b in run.blocks] == [None, ".LBB0_1", None, None, ".LBB0_3"]
    assert run.counts.tolist() == [1, 37, 1, 0, 1]  # 3 * 37 > 100: the add of 1000 is skipped
    assert run.outputs[0].tolist() == [111]


def test_arm_short_range_branches_become_inverted_test_over_b() -> None:
    text = "f:\n\tcbz x0, .LBB0_2\n\tadd x1, x1, #1\n.LBB0_2:\n\tret\n.Lfunc_end0:\n"
    out, blocks = instrument(text, "f", "arm64")
    assert [b.label for b in blocks] == [None, None, ".LBB0_2"]
    assert "\tcbnz x0, .Lpf_skip1" in out and "\tb .LBB0_2" in out
    lines = out.splitlines()
    k = lines.index(".Lpf_skip1:")
    assert lines[k + 1] == "\tb .Lpf_stub1"  # the fall-through block is counted after the skip label


HEX_NOSHUF = """\
\t.text
\t.globl\tf
\t.type\tf,@function
f:
\t{
\t\tif (p0) jump:nt .LBB0_2
\t\tmemw(r0+#0) = #0
\t} :mem_noshuf
\t{
\t\tr1 = add(r1,#1)
\t}
.LBB0_2:
\t{
\t\tjumpr r31
\t}
.Lfunc_end0:
"""


def test_hexagon_packet_attributes_stay_with_their_packet() -> None:
    """`} :mem_noshuf` closes a packet like `}` (found on matmul/fully_connected hvx128, where the
    counter stub landed inside the packet and llvm-mc refused the instrumented assembly)."""
    blocks = split_blocks(HEX_NOSHUF, "f", "hvx128")
    assert [len(b.packets) for b in blocks] == [1, 1, 1]
    assert blocks[0].targets == (".LBB0_2",) and blocks[0].falls_through
    out, _ = instrument(HEX_NOSHUF, "f", "hvx128")
    lines = out.splitlines()
    close = next(k for k, ln in enumerate(lines) if ":mem_noshuf" in ln)
    assert "{" in lines[close - 1] or "memw" in lines[close - 1]  # nothing inserted inside the packet


@pytest.mark.skipif(not shutil.which(static.llvm_tool("llvm-mca")) and not static.os.path.exists(
    static.os.path.join(static.LLVM_BIN, "llvm-mca")), reason="llvm-mca (llvm-22) not installed")
def test_x86_estimate_carries_a_second_model_on_request() -> None:
    """x86 has no second model by default; the bring-up regression check asks for haswell's."""
    blocks = split_blocks(X86, "f", "x86-avx2")
    counts = np.array([1, 4, 400, 4, 0])
    plain = static.estimate(blocks, counts, "x86-avx2", "znver3")
    both = static.estimate(blocks, counts, "x86-avx2", "znver3", second="haswell")
    assert plain.alt == {} and both.total == plain.total
    assert both.alt["model"] == "haswell" and both.alt["unit"] == "cycles" and both.alt["total"] > 0
