"""Issue 10's harness columns (benchmarks/harness/lean.py): the hot vector loop found from per-block
counts, its vector instructions, the verdicts and the report section, on small known assembly and
rows; and the public-call timing against a real compiled kernel."""

from __future__ import annotations

import numpy as np
from test_asmblocks import ARM, HEX, X86

from benchmarks.harness import lean, static
from benchmarks.harness.asmblocks import split_blocks


def test_vector_ops_leave_out_data_movement() -> None:
    x86 = ["vmovdqu (%rsi), %ymm0", "vpaddw %ymm1, %ymm0, %ymm0", "vpbroadcastw %xmm2, %ymm3",
           "vpmaddubsw (%rdi,%rcx), %ymm4, %ymm5", "addq $32, %rcx", "vmovdqa %ymm0, (%rdx)"]
    assert lean.vector_ops(x86, "x86-avx2") == ["vpaddw", "vpmaddubsw"]
    arm = ["ldr q0, [x1, x8]", "uabd v0.16b, v0.16b, v1.16b", "dup v3.8h, w2", "add x8, x8, #16",
           "str q0, [x0]"]
    assert lean.vector_ops(arm, "arm64") == ["uabd"]
    hexa = ["v0 = vmem(r1+#0)", "v1.ub = vabsdiff(v0.ub,v2.ub)", "vmem(r0++#1) = v1.new", "r1 = add(r1,#128)",
            "v3 = vsplat(r4)", "v5:4.uh = vzxt(v0.ub)"]
    assert lean.vector_ops(hexa, "hvx128") == ["vabsdiff", "vzxt"]


def test_hot_loop_is_the_heaviest_innermost_vector_loop() -> None:
    for text, isa, ops in ((X86, "x86-avx2", ["vpaddw"]), (ARM, "arm64", ["bic", "uabd"]),
                           (HEX, "hvx128", ["vabsdiff"])):
        blocks = split_blocks(text, "f", isa)
        counts = np.ones(len(blocks), dtype=np.int64) * 3
        est = static.estimate(blocks, counts, isa, "haswell" if isa == "x86-avx2" else None)
        got = lean.hot_loop(blocks, counts, est, isa)
        assert got is not None and got["vector_ops"] == ops and got["instructions"] > 0


def _row(bench: str, isa: str, variant: str, insts: int, ops: list[str], ms: float) -> dict:
    r = {"bench": bench, "isa": isa, "variant": variant, "status": "ok",
         "hot_loop": {"header": ".L", "instructions": insts, "share": 0.9, "iterations": 10, "vector_ops": ops}}
    if isa == "x86-avx2":
        r["time"] = {"median_ms": ms}
        if variant == "pitchfork":
            r["prog_time"] = {"median_ms": ms * 1.02}
            r["prog_over_kernel"] = 1.02
    return r


def test_verdicts_and_section() -> None:
    rows = [_row("a", "x86-avx2", "pitchfork", 30, ["vpaddw"], 1.0), _row("a", "x86-avx2", "halide21", 30, ["vpaddw"], 0.97),
            _row("b", "x86-avx2", "pitchfork", 45, ["vpaddw"], 1.3), _row("b", "x86-avx2", "halide21", 30, ["vpaddw"], 1.0),
            _row("c", "x86-avx2", "pitchfork", 20, ["vpmaddwd"], 0.5), _row("c", "x86-avx2", "halide21", 30, ["vpmullw"], 1.0)]
    data = {"meta": {"benchmarks": ["a", "b", "c"], "isas": ["x86-avx2"]}, "rows": rows}
    v = {x["bench"]: x for x in lean.verdicts(data)}
    assert (v["a"]["same_ops"], v["a"]["loop_ok"], v["a"]["time_ok"]) == (True, True, True)
    assert (v["b"]["same_ops"], v["b"]["loop_ok"], v["b"]["time_ok"]) == (True, False, False)
    assert v["c"]["same_ops"] is False and v["c"]["only_ours"] == ["vpmaddwd"] and v["c"]["only_halide"] == ["vpmullw"]
    text = "\n".join(lean.markdown_section(data, None))
    assert "| c | x86-avx2 | 20 | 30 | no (+vpmaddwd, −vpmullw) |" in text
    assert "(2 of 3 benchmark x ISA pairs with both hot loops): our loop no longer than Halide's in 1" in text


def test_time_public_call_beside_the_kernel() -> None:
    from benchmarks.harness.kernel import direct_kernel
    import pitchfork
    from pitchfork.frontend.examples import sobel3x3

    f, args = sobel3x3(32)
    prog = pitchfork.compile(f, args, target="x86-avx2", fallback=False)
    img = np.random.default_rng(2).integers(0, 256, (20, 130), dtype=np.uint8)
    k = direct_kernel(prog, [img], [128, 16])
    k.run()
    rows: dict = {"pitchfork": {}}
    lean.time_public_call({"pitchfork": prog}, {"pitchfork": k}, [img], [128, 16], 3, rows)
    r = rows["pitchfork"]
    assert r["prog_time"]["reps"] == 5 and r["prog_over_kernel"] > 0 and "prog_error" not in r
    assert len(r["prog_time"]["samples_ms"]) == len(r["kernel_time_beside_prog"]["samples_ms"]) == 5
    # The bare kernel wrote prog's own recycled output array: the next call still returns that array,
    # right, and it is the only array prog allocated since the check.
    address = prog._spare_outputs[0].ctypes.data
    again = prog(img, size=[128, 16])
    assert again.ctypes.data == address and np.array_equal(again, k.outputs[0])
