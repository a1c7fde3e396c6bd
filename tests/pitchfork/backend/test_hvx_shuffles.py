"""pitchfork/backend/hvx_shuffles.py: HVX shuffles whose 32-bit words repeat.

LLVM 22 builds such a shuffle from a splat of the most frequent word made at the lane width, so the
lanes of a repeated word ran wrong. The repro is a Halide pipeline vectorized over two dimensions (its
load `a[x + 5*y]` becomes one dense load and a shuffle whose windows overlap): before the rewrite 64 of
384 u16 lanes (and 48 of 1,024 u8 lanes of a stride-3 variant, 48 of 768 in a three-register result)
differed from Halide's realize under qemu-hexagon, with isel=pitchfork and isel=llvm alike; a u32
`a[x + 4*y]` over x (32) and y (2), 128 of 2,048 lanes (found by a random schedule run).
"""

from __future__ import annotations

import numpy as np
import pytest

from pitchfork.backend.hvx_shuffles import _groups, has_repeated_word_shuffle, rewrite_repeated_word_shuffles
from pitchfork.backend.run import tools_available

M24 = [0, 5, 10, 1, 6, 11, 2, 7, 12, 3, 8, 13, 4, 9, 14, 5, 10, 15, 6, 11, 16, 7, 12, 17]


def _shuffle_ir(mask: list[int], ty: str = "i16", n: int = 64) -> str:
    lanes = ", ".join(f"i32 {i}" for i in mask)
    return (f"define <{len(mask)} x {ty}> @f(<{n} x {ty}> %v) {{\n"
            f"  %s = shufflevector <{n} x {ty}> %v, <{n} x {ty}> poison, <{len(mask)} x i32> <{lanes}>\n"
            f"  ret <{len(mask)} x {ty}> %s\n}}\n")


def test_groups_put_each_repeat_of_a_word_in_its_own_group() -> None:
    # the word (6, 11) at lanes 4-5 and 18-19 (the lanes that ran wrong); every other word once
    groups = _groups(list(M24), 2)
    assert groups is not None
    assert [i for i, g in enumerate(groups) if g] == [18, 19]
    assert _groups([0, 1, 2, 3], 2) is None  # distinct words
    assert _groups([3] * 8, 2) is None  # a splat: lowered as one, not built
    assert _groups([0, 1, 0, 1], 4) is None  # one 8-bit word: no repeat
    assert _groups([0, 1, 2, 3, 0, 1, 2, 3], 4) is not None
    assert _groups([0, 4, 1, 5, 2, 6, 3, 7, 4, 8], 1) is not None  # 32-bit lanes: lane 4 twice


def test_rewrite_touches_only_shuffles_with_repeated_words() -> None:
    plain = _shuffle_ir(list(range(0, 48, 2)))
    assert not has_repeated_word_shuffle(plain)
    assert rewrite_repeated_word_shuffles(plain) == plain
    # a splat widened with lanes of an undefined constant (as the emitters pad): nothing is built
    undef_pad = ("define <128 x i8> @g(<64 x i8> %v) {\n  %s = shufflevector <64 x i8> %v, <64 x i8> <i8 undef"
                 + ", i8 poison" * 63 + ">, <128 x i32> <" + ", ".join(f"i32 {min(i, 64)}" for i in range(128))
                 + ">\n  ret <128 x i8> %s\n}\n")
    assert not has_repeated_word_shuffle(undef_pad)
    text = _shuffle_ir(M24)
    assert has_repeated_word_shuffle(text)
    out = rewrite_repeated_word_shuffles(text)
    assert "@llvm.hexagon.V6.vor.128B" in out and "declare <32 x i32> @llvm.hexagon.V6.vor.128B" in out
    assert not has_repeated_word_shuffle(out)  # no group has a repeated word left


@pytest.mark.parametrize("mask,ty,n", [(M24, "i16", 64), (M24 * 8, "i16", 64), (M24 * 4 + [1, 2, 3, 4], "i8", 128),
                                       ([i // 2 + 4 * (i % 2) for i in range(64)], "i32", 36)])
def test_rewritten_module_computes_the_same_lanes(mask: list[int], ty: str, n: int) -> None:
    """The rewritten shuffle JIT-compiled for the host, with the Hexagon intrinsic replaced by a plain
    `or` of its operands (what vor computes), gives the original shuffle's lanes (one and several
    128-byte registers, 16- and 8-bit lanes)."""
    import ctypes

    import llvmlite.binding as llvm

    text = rewrite_repeated_word_shuffles(_shuffle_ir(mask, ty, n))
    text = text.replace("declare <32 x i32> @llvm.hexagon.V6.vor.128B(<32 x i32>, <32 x i32>)\n", "")
    text += ("define internal <32 x i32> @vor(<32 x i32> %a, <32 x i32> %b) {\n"
             "  %r = or <32 x i32> %a, %b\n  ret <32 x i32> %r\n}\n")
    text = text.replace("@llvm.hexagon.V6.vor.128B", "@vor")
    bits = {"i8": 8, "i16": 16, "i32": 32}[ty]
    m = len(mask)
    wrapper = (f"define void @run(ptr %in, ptr %out) {{\n  %v = load <{n} x {ty}>, ptr %in\n"
               f"  %r = call <{m} x {ty}> @f(<{n} x {ty}> %v)\n  store <{m} x {ty}> %r, ptr %out\n  ret void\n}}\n")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text + wrapper)
    mod.verify()
    tm = llvm.Target.from_default_triple().create_target_machine()
    with llvm.create_mcjit_compiler(mod, tm) as ee:
        ee.finalize_object()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(ee.get_function_address("run"))
        dt = {8: np.uint8, 16: np.uint16, 32: np.uint32}[bits]
        src = (np.arange(n) * 37 + 11).astype(dt)
        out = np.zeros(m, dt)
        fn(src.ctypes.data, out.ctypes.data)
    assert np.array_equal(out, src[np.array(mask)])


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
@pytest.mark.parametrize("bits,xs,ys,stride,w,h", [(16, 8, 3, 5, 64, 6), (8, 16, 8, 3, 64, 16), (16, 64, 3, 7, 128, 6),
                                                  (32, 32, 2, 4, 256, 8)])
def test_two_dimensional_vector_load_runs_bit_exactly(bits: int, xs: int, ys: int, stride: int, w: int, h: int) -> None:
    import halide as hl

    import pitchfork

    t = hl.UInt(bits)
    a = hl.ImageParam(t, 1, "a")
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("f")
    f[x, y] = a[x + stride * y] + hl.cast(t, 1)
    f.bound(x, 0, w).bound(y, 0, h)
    f.reorder(y, x).vectorize(y, ys).vectorize(x, xs)
    buf = (np.arange(1, 1025) * 7).astype({8: np.uint8, 16: np.uint16, 32: np.uint32}[bits])
    a.set(hl.Buffer(buf))
    want = np.asarray(f.realize([w, h]))
    for isel in ("pitchfork", "llvm"):
        prog = pitchfork.compile(f, [a], target="hvx128", isel=isel)
        assert prog.module is not None, "fell back"
        got = np.asarray(prog(buf, size=[w, h], check=True))
        assert np.array_equal(got, want), f"{isel}: {int((got != want).sum())} lanes differ"


# ---- insertelement chains: the same build without a shuffle ------------------------------------------
# lane k of the chain = scalar PATTERN[k] of 8 (the word (s0, s1) four times among distinct ones)
PATTERN = [0, 1, 2, 3, 0, 1, 4, 5, 0, 1, 6, 7, 0, 1, 2, 4] + [(i * 3 + j) % 8 for i in range(56) for j in (0, 5)]


def _chain_ir(ty: str, n: int, name: str = "run") -> str:
    """`name(ptr in, ptr out)`: 8 scalars loaded from `in`, inserted lane by lane as PATTERN says."""
    lines = [f"define void @{name}(ptr noalias %in, ptr noalias %out) {{"]
    for i in range(8):
        lines += [f"  %p{i} = getelementptr {ty}, ptr %in, i32 {i}", f"  %s{i} = load {ty}, ptr %p{i}"]
    prev = "poison"
    for k in range(n):
        lines.append(f"  %v{k} = insertelement <{n} x {ty}> {prev}, {ty} %s{PATTERN[k]}, i32 {k}")
        prev = f"%v{k}"
    lines += [f"  store <{n} x {ty}> {prev}, ptr %out", "  ret void", "}"]
    return "\n".join(lines) + "\n"


def test_chain_groups_split_repeated_words_only() -> None:
    from pitchfork.backend.hvx_shuffles import _chain_groups

    groups = _chain_groups(["%a", "%b", "%c", "%d", "%a", "%b"], 2)
    assert groups == [0, 0, 0, 0, 1, 1]
    assert _chain_groups(["%a", "%a", "%a", "%a"], 2) is None  # one value per word: its splat is right
    assert _chain_groups(["%a", None, "%a", None], 2) == [0, 0, 1, 1]  # partly undefined words split too
    assert _chain_groups([None, None, None, None], 2) is None
    assert _chain_groups(["1", "2", "1", "2", "%x", "%y"], 2) == [0, 0, 1, 1, 0, 0]  # constants too


@pytest.mark.parametrize("ty,n", [("i16", 64), ("i16", 32), ("i8", 128), ("i8", 64), ("half", 64)])
def test_rewritten_chain_computes_the_same_lanes(ty: str, n: int) -> None:
    """The rewritten chain, JIT-compiled for the host with vor as `or` (as above), stores the lanes."""
    import ctypes

    import llvmlite.binding as llvm

    text = _chain_ir(ty, n)
    assert has_repeated_word_shuffle(text)
    text = rewrite_repeated_word_shuffles(text)
    assert "@llvm.hexagon.V6.vor.128B" in text
    text = text.replace("declare <32 x i32> @llvm.hexagon.V6.vor.128B(<32 x i32>, <32 x i32>)\n", "")
    text += ("define internal <32 x i32> @vor(<32 x i32> %a, <32 x i32> %b) {\n"
             "  %r = or <32 x i32> %a, %b\n  ret <32 x i32> %r\n}\n")
    text = text.replace("@llvm.hexagon.V6.vor.128B", "@vor")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    dt = {"i8": np.uint8, "i16": np.uint16, "half": np.uint16}[ty]
    with llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine()) as ee:
        ee.finalize_object()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(ee.get_function_address("run"))
        src = (np.arange(8) * 4099 + 17).astype(dt)
        out = np.zeros(n, dt)
        fn(src.ctypes.data, out.ctypes.data)
    assert out.tolist() == src[np.array(PATTERN[:n])].tolist()


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
@pytest.mark.parametrize("ty,n", [("i16", 64), ("i16", 32), ("i8", 128)])
def test_chain_runs_bit_exactly_on_hvx(ty: str, n: int) -> None:
    """Without the rewrite: i16 x 64 and i16 x 32 wrong in lanes 1, 5, 9, 13 (the splat's low halfword
    where s1 belongs), i8 x 128 in 14 lanes, under qemu-hexagon."""
    from pitchfork.backend.harness import Buffer, Call
    from pitchfork.backend.machine import compile_module
    from pitchfork.backend.run import run_calls

    dt = {"i8": np.uint8, "i16": np.uint16}[ty]
    src = (np.arange(8) * 4099 + 17).astype(dt)
    mod = compile_module(_chain_ir(ty, n), "hvx128")
    out = run_calls([mod], "hvx128", [Call("run", [Buffer.input(src), Buffer.output(np.zeros(n, dt))])])[0][0]
    assert out.tolist() == src[np.array(PATTERN[:n])].tolist()


def _predicate_chain_ir(n: int) -> str:
    """`run(ptr in, ptr out)`: lane k of a <n x i1> = (in[PATTERN[k]] > 100), built lane by lane, selects
    k + 1 or 0 (i16 lanes)."""
    lines = ["define void @run(ptr noalias %in, ptr noalias %out) {"]
    for i in range(8):
        lines += [f"  %p{i} = getelementptr i32, ptr %in, i32 {i}", f"  %s{i} = load i32, ptr %p{i}",
                  f"  %c{i} = icmp sgt i32 %s{i}, 100"]
    prev = "poison"
    for k in range(n):
        lines.append(f"  %m{k} = insertelement <{n} x i1> {prev}, i1 %c{PATTERN[k] % 2}, i32 {k}")
        prev = f"%m{k}"
    ramp = ", ".join(f"i16 {k + 1}" for k in range(n))
    lines += [f"  %r = select <{n} x i1> {prev}, <{n} x i16> <{ramp}>, <{n} x i16> zeroinitializer",
              f"  store <{n} x i16> %r, ptr %out", "  ret void", "}"]
    return "\n".join(lines) + "\n"


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
@pytest.mark.parametrize("n", [48, 64, 96])
def test_predicate_chain_runs_bit_exactly_on_hvx(n: int) -> None:
    """A <n x i1> chain is built as bytes, 2 per lane up to 64 lanes, 4 above: the repeated lanes (c0, c1)
    made a byte splat of the wrong width (without the rewrite 15 of 48, 19 of 64, 27 of 96 lanes wrong,
    lanes 1, 3, 5, ...)."""
    from pitchfork.backend.harness import Buffer, Call
    from pitchfork.backend.machine import compile_module
    from pitchfork.backend.run import run_calls

    text = _predicate_chain_ir(n)
    assert has_repeated_word_shuffle(text)
    src = np.array([200, 0, 300, 5, 150, 1, 400, 2], dtype=np.int32)  # c0 true, c1 false
    mod = compile_module(text, "hvx128")
    out = run_calls([mod], "hvx128", [Call("run", [Buffer.input(src), Buffer.output(np.zeros(n, np.uint16))])])[0][0]
    want = [k + 1 if src[PATTERN[k] % 2] > 100 else 0 for k in range(n)]
    assert out.tolist() == want


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
@pytest.mark.parametrize("what,ys,xs,size", [("convert", 4, 8, [64, 8]), ("compare", 3, 16, [96, 12])])
def test_float_lanes_of_a_two_dimensional_load_run_bit_exactly(what: str, ys: int, xs: int, size: list[int]) -> None:
    """hvx128's float code (pitchfork/codegen/hvx_floats.py) computes lane by lane and inserts the lanes
    one by one; a 2-D vector load's repeated lanes repeat the chain's words. Before chains were rewritten:
    u16(f32(a[x + 3*y]) * 0.5) over y (4) and x (8), 32 of 512 lanes wrong; before predicate chains were:
    a 48-lane float compare feeding an integer select, 36 of 1,152."""
    import halide as hl

    import pitchfork

    t = hl.UInt(16)
    a = hl.ImageParam(t, 1, "a")
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("f")
    half = hl.cast(hl.Float(32), a[x + 3 * y]) * 0.5
    f[x, y] = hl.cast(t, half) if what == "convert" else hl.select(half > 60.0, a[x + 1], hl.cast(t, 7))
    f.reorder(y, x).vectorize(y, ys).vectorize(x, xs)
    buf = (np.arange(1, 301) * 7919 % 251).astype(np.uint16)
    a.set(hl.Buffer(buf))
    want = np.asarray(f.realize(size))
    for isel in ("pitchfork", "llvm"):
        prog = pitchfork.compile(f, [a], target="hvx128", isel=isel)
        assert prog.module is not None, prog.fallback_reason
        got = np.asarray(prog(buf, size=size, check=True))
        assert np.array_equal(got, want), f"{isel}: {int((got != want).sum())} lanes differ"


# ---- splats of 64-bit lanes --------------------------------------------------------------------------
@pytest.mark.parametrize("lanes", [2, 16, 32, 64])
def test_rewritten_splat64_computes_the_same_lanes(lanes: int) -> None:
    """The two-word-splat form of an i64 splat, JIT-compiled for the host with vsplatw as a plain splat."""
    import ctypes

    import llvmlite.binding as llvm

    from pitchfork.backend.hvx_shuffles import _SPLATW

    text = ("define void @run(ptr %in, ptr %out) {\n  %v = load <2 x i64>, ptr %in\n"
            f"  %s = shufflevector <2 x i64> %v, <2 x i64> poison, <{lanes} x i32> <"
            + ", ".join("i32 1" for _ in range(lanes)) + ">\n"
            f"  store <{lanes} x i64> %s, ptr %out\n  ret void\n}}\n")
    assert has_repeated_word_shuffle(text)
    text = rewrite_repeated_word_shuffles(text)
    assert f"@{_SPLATW}" in text
    text = text.replace(f"declare <32 x i32> @{_SPLATW}(i32)\n", "")
    text += ("define internal <32 x i32> @splatw(i32 %x) {\n  %a = insertelement <32 x i32> poison, i32 %x, i32 0\n"
             "  %s = shufflevector <32 x i32> %a, <32 x i32> poison, <32 x i32> zeroinitializer\n"
             "  ret <32 x i32> %s\n}\n")
    text = text.replace(f"@{_SPLATW}", "@splatw")
    llvm.initialize_native_target()
    llvm.initialize_native_asmprinter()
    mod = llvm.parse_assembly(text)
    mod.verify()
    with llvm.create_mcjit_compiler(mod, llvm.Target.from_default_triple().create_target_machine()) as ee:
        ee.finalize_object()
        fn = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)(ee.get_function_address("run"))
        src = np.array([0x1111222233334444, 0x0123456789ABCDEF], dtype=np.uint64)
        out = np.zeros(lanes, np.uint64)
        fn(src.ctypes.data, out.ctypes.data)
    assert out.tolist() == [int(src[1])] * lanes


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="qemu-hexagon / clang / lld missing")
def test_repeated_group_of_four_halfwords_runs_bit_exactly() -> None:
    """codegen's `_repeat` splats a 4-lane i16 group (sext of a[y], y vectorized by 4 innermost) as one
    i64; LLVM 22 built the splat bitcast to i16 lanes with the wrong-width splat: the second lane of every
    group wrong (192 of 768 lanes, both isels; found by the schedule fuzzer, seed 33 case 82)."""
    import halide as hl

    import pitchfork

    t, w = hl.Int(8), hl.Int(16)
    a = hl.ImageParam(t, 1, "a")
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("f")
    f[x, y] = hl.cast(t, hl.cast(w, a[y]) >> 1)
    f.reorder(y, x).vectorize(y, 4).vectorize(x, 32)
    buf = (np.arange(1, 601) * 7919 % 251 - 120).astype(np.int8)
    a.set(hl.Buffer(buf))
    want = np.asarray(f.realize([96, 8]))
    for isel in ("pitchfork", "llvm"):
        prog = pitchfork.compile(f, [a], target="hvx128", isel=isel)
        assert prog.module is not None, prog.fallback_reason
        got = np.asarray(prog(buf, size=[96, 8], check=True))
        assert np.array_equal(got, want), f"{isel}: {int((got != want).sum())} lanes differ"
