"""`pitchfork.compile` end to end on the paper's Sobel filter (Figure 2a, SPEC §17), and every error path.

* Sobel with the paper's schedule (inline; tile V×4, vectorize xi, unroll yi; V = 32 on x86, 16 on ARM,
  128 on HVX) compiles with isel=pitchfork and isel=llvm for all three ISAs;
* on x86 the JIT output is bit-exact against Halide's own realize() and against numpy; under qemu the
  AArch64 and Hexagon outputs are the same;
* the lifted FPIR of the store's value (the inner expression) is Figure 2c;
* the Figure 3 instructions are in the steady-state vector loop;
* errors: a float pipeline falls back with PitchforkFallbackWarning naming the construct and still
  gives Halide's answer; fallback=False raises; inputs of the wrong dtype / dimensions / number raise
  TypeError; a failed Halide assertion (RoundUp output not a multiple of the tile) raises RuntimeError.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

import halide as hl
import numpy as np
import pytest

import pitchfork
from fpir import parse
from fpir.term import Term, var
from fpir.printer import to_text
from pitchfork.frontend.examples import sobel3x3_reference
from pitchfork.backend.machine import main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.frontend import ir as hir
from pitchfork.api import CompiledPipeline, PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import LoopNestCodegen, Unsupported
from pitchfork.frontend.examples import sobel3x3

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
ISAS = ("x86-avx2", "arm64", "hvx128")
ISELS = ("pitchfork", "llvm")
#: The paper's vector widths (u8 lanes) for the Sobel schedule.
LANES = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}
W, H = 256, 16  # a multiple of every tile (V x 4) and of HVX's row-stride constraint

#: Figure 2c of the paper: the Sobel inner expression lifted to FPIR.
SOBEL_2C = ("saturating_cast<u8>(absd(widening_add(a_u8, c_u8) + widening_shl(b_u8, x(1)), "
            "widening_add(d_u8, f_u8) + widening_shl(e_u8, x(1))) + absd(widening_add(g_u8, i_u8) + "
            "widening_shl(h_u8, x(1)), widening_add(j_u8, l_u8) + widening_shl(k_u8, x(1))))")

#: Figure 3: instructions PITCHFORK selects for Sobel, per ISA (mnemonic prefixes in the steady-state loop).
FIGURE3 = {"arm64": ("umlal", "uabd", "uqxtn"), "x86-avx2": ("vpackuswb",), "hvx128": ("vabsdiff",)}

needs_qemu = {t: pytest.mark.skipif(not tools_available(t), reason=f"no qemu toolchain for {t}")
              for t in ("arm64", "hvx128")}




@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(2023).integers(0, 256, (H, W), dtype=np.uint8)


@pytest.fixture(scope="module")
def halide_output(image: np.ndarray) -> np.ndarray:
    out, (inp,) = sobel3x3(LANES["x86-avx2"])
    inp.set(hl.Buffer(image))
    return np.asarray(out.realize([W, H], X86)).copy()


@pytest.fixture(scope="module")
def sobel() -> Callable[[str, str], CompiledPipeline]:
    """Compiled Sobel per (target, isel), compiled once per module."""
    cache: dict[tuple[str, str], CompiledPipeline] = {}

    def get(target: str, isel: str) -> CompiledPipeline:
        if (target, isel) not in cache:
            out, args = sobel3x3(LANES[target])
            with warnings.catch_warnings():
                warnings.simplefilter("error", PitchforkFallbackWarning)
                cache[target, isel] = pitchfork.compile(out, args, target=target, isel=isel, name="sobel")
        return cache[target, isel]

    return get


# --------------------------------------------------------------------------------------------------
# Sobel, end to end


def test_numpy_reference_matches_halide(image: np.ndarray, halide_output: np.ndarray) -> None:
    assert np.array_equal(sobel3x3_reference(image), halide_output)


@pytest.mark.parametrize("target", ISAS)
@pytest.mark.parametrize("isel", ISELS)
def test_sobel_compiles_for_every_isa(sobel, target: str, isel: str) -> None:
    prog = sobel(target, isel)
    assert not prog.is_fallback and prog.isel == isel and prog.target == target
    asm = prog.assembly()
    assert "sobel:" in asm
    loop = main_vector_loop(asm, "sobel", target=target)
    assert len(loop.instructions) > 10
    st = prog.stats
    assert st.vector_expressions > 0 and st.llvm_seconds > 0 and st.capture_seconds > 0
    # the phase splits (benchmarks/compile_time.py): every phase ran, and they add up to no more than the whole
    assert set(st.codegen_phases) == {"parse", "loop_passes", "ir_build", "ir_print", "ir_free"}
    assert 0 <= sum(st.codegen_phases.values()) <= st.codegen_seconds
    assert {"llvm_parse", "llvm_O3"} <= set(st.llvm_phases) and 0 < sum(st.llvm_phases.values()) <= st.llvm_seconds
    if isel == "pitchfork":
        assert sum(st.rules_fired.values()) > 0
    else:
        assert st.rules_fired == {}
    ir_text = prog.llvm_ir()
    assert "define void @sobel(" in ir_text


@pytest.mark.parametrize("isel", ISELS)
def test_sobel_x86_jit_bit_exact(sobel, image: np.ndarray, halide_output: np.ndarray, isel: str) -> None:
    result = sobel("x86-avx2", isel)(image, check=True)
    assert result.dtype == np.uint8 and result.shape == (H, W)
    assert np.array_equal(sobel("x86-avx2", isel)(image), result)  # zero-copy call, same answer
    assert np.array_equal(result, halide_output)
    assert np.array_equal(result, sobel3x3_reference(image))


@pytest.mark.qemu
@pytest.mark.parametrize("target", [pytest.param(t, marks=needs_qemu[t]) for t in ("arm64", "hvx128")])
@pytest.mark.parametrize("isel", ISELS)
def test_sobel_qemu_matches_x86(sobel, image: np.ndarray, halide_output: np.ndarray, target: str,
                                isel: str) -> None:
    assert np.array_equal(sobel(target, isel)(image), halide_output)


def test_sobel_accepts_halide_buffer(sobel, image: np.ndarray, halide_output: np.ndarray) -> None:
    buf = hl.Buffer(image)
    assert np.array_equal(sobel("x86-avx2", "pitchfork")(buf, size=[W, H]), halide_output)


def test_sobel_size_smaller_than_input(sobel, image: np.ndarray, halide_output: np.ndarray) -> None:
    """The output may be smaller than the input (a multiple of the tile): the top-left corner."""
    out, (inp,) = sobel3x3(32)
    inp.set(hl.Buffer(image))
    want = np.asarray(out.realize([128, 8], X86))
    got = sobel("x86-avx2", "pitchfork")(image, size=[128, 8])
    assert got.shape == (8, 128) and np.array_equal(got, want)


def _canonical(term: Term) -> str:
    """The term's text with each variable *occurrence* renamed v0, v1, ... in pre-order, so that two
    terms compare by structure (Halide's CSE shares the corner loads Figure 2 writes twice)."""
    counter = iter(range(10_000))

    def go(t: Term) -> Term:
        if t.op == "var":
            return var(f"v{next(counter)}", t.type)
        if not t.args:
            return t
        from fpir.term import intern

        return intern(t.op, t.type, tuple(go(a) for a in t.args), t.attrs)

    return to_text(go(term))


def store_selections(prog: CompiledPipeline, isel: str = "pitchfork") -> list:
    """(Store node, Selection) of every unpredicated vector store to the output, in codegen order."""
    cap = prog.captured
    assert cap is not None
    cg = LoopNestCodegen(cap, cap.parse(), prog.target, isel, prog.name)
    cg.build()
    outs = {o.name for o in cap.outputs}
    return [(n, s) for n, s in cg.selections
            if isinstance(n, hir.Store) and n.buffer in outs and n.predicate is None]


@pytest.mark.parametrize("target", ISAS)
def test_sobel_lifts_to_figure_2c(sobel, target: str) -> None:
    stores = store_selections(sobel(target, "pitchfork"))
    assert stores, "no vector store to the output"
    want = _canonical(parse(SOBEL_2C))
    for node, sel in stores:
        assert node.value.type.lanes == LANES[target]
        assert _canonical(sel.fpir) == want, to_text(sel.fpir)
    # Halide's CSE shares the four corner pixels between Gx and Gy: 8 distinct loads, 12 leaves.
    leaves = {v.name for v in stores[0][1].fpir.variables()}
    assert len(leaves) == 8


def _mnemonics(target: str, instructions: tuple[str, ...]) -> set[str]:
    if target == "hvx128":  # "v1:0.uh = vmpy(v2.ub,r0.b)" -> "vmpy"
        return {i.split("=", 1)[-1].strip().split("(")[0] for i in instructions}
    return {i.split()[0] for i in instructions}


@pytest.mark.parametrize("target", ISAS)
def test_sobel_figure3_instructions_in_steady_state_loop(sobel, target: str) -> None:
    loops = {isel: main_vector_loop(sobel(target, isel).assembly(), "sobel", target=target) for isel in ISELS}
    names = _mnemonics(target, loops["pitchfork"].instructions)
    for want in FIGURE3[target]:
        assert any(n.startswith(want) for n in names), (want, sorted(names))
    # PITCHFORK's loop is not longer than LLVM's alone (the README's demo prints the difference)
    assert len(loops["pitchfork"].instructions) <= len(loops["llvm"].instructions)


@pytest.mark.parametrize("target", ("arm64", "hvx128"))
def test_sobel_pitchfork_loop_shorter_than_llvm(sobel, target: str) -> None:
    n = {isel: len(main_vector_loop(sobel(target, isel).assembly(), "sobel", target=target).instructions)
         for isel in ISELS}
    assert n["pitchfork"] < n["llvm"], n


def test_sobel_object_file(sobel, tmp_path) -> None:
    p = sobel("arm64", "pitchfork").object_file(tmp_path / "sub" / "sobel.o")
    data = p.read_bytes()
    assert data[:4] == b"\x7fELF" and int.from_bytes(data[18:20], "little") == 183  # EM_AARCH64
    assert b"sobel" in data


# --------------------------------------------------------------------------------------------------
# Error paths


def float_pipeline(bits: int = 16) -> tuple[hl.Func, list[hl.ImageParam]]:
    """u8 pixels halved in float16, checked by require() (a runtime check PITCHFORK does not compile: the
    canonical unsupported construct of these tests; its value is the half), or halved in float32
    (compiled)."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    out = hl.Func(f"halve_f{bits}")
    t = hl.Float(bits)
    # (a Python float would make the product float32: the half is cast to the type)
    h = hl.cast(t, inp[x, y]) * hl.cast(t, 0.5)
    out[x, y] = hl.u8(hl.require(h >= hl.cast(t, 0.0), h, h) if bits == 16 else h)  # h, exactly
    out.vectorize(x, 8)
    return out, [inp]


@pytest.mark.parametrize("target", ("x86-avx2", "arm64"))
def test_float16_pipeline_falls_back_with_warning(target: str) -> None:
    out, args = float_pipeline()
    with pytest.warns(PitchforkFallbackWarning, match=r"require\(\) .* is not compiled by PITCHFORK"):
        prog = pitchfork.compile(out, args, target=target, name="halve_f16")
    assert prog.is_fallback and "require()" in prog.fallback_reason
    a = np.random.default_rng(1).integers(0, 256, (6, 21), dtype=np.uint8)
    assert np.array_equal(prog(a), (a.astype(np.float32) * 0.5).astype(np.uint8))
    assert "halve_f16" in prog.assembly()  # Halide's own compile for the target


@pytest.mark.parametrize("target", ("x86-avx2", "arm64"))
def test_float32_pipeline_compiles(target: str) -> None:
    out, args = float_pipeline(32)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prog = pitchfork.compile(out, args, target=target, name="halve_f32")
    assert not prog.is_fallback
    a = np.random.default_rng(1).integers(0, 256, (6, 21), dtype=np.uint8)
    assert np.array_equal(prog(a), (a.astype(np.float32) * 0.5).astype(np.uint8))


def test_fallback_false_raises() -> None:
    out, args = float_pipeline()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Unsupported, match="require"):
            pitchfork.compile(out, args, target="x86-avx2", fallback=False)


def test_compile_leaves_the_cyclic_collector_as_it_found_it() -> None:
    """compile pauses Python's cyclic collector while it runs (api.compile): on or off before, the
    same after, on success and on a fallback; the fallback warning names the caller's line."""
    import gc

    out, args = float_pipeline(32)
    assert gc.isenabled()
    pitchfork.compile(out, args, target="x86-avx2", name="halve_f32")
    assert gc.isenabled()
    gc.disable()
    try:
        pitchfork.compile(out, args, target="x86-avx2", name="halve_f32")
        assert not gc.isenabled()
    finally:
        gc.enable()
    out, args = float_pipeline()
    with pytest.warns(PitchforkFallbackWarning) as caught:
        pitchfork.compile(out, args, target="x86-avx2")
    assert gc.isenabled()
    assert caught[0].filename == __file__


def test_fallback_checks_inputs() -> None:
    out, args = float_pipeline()
    with pytest.warns(PitchforkFallbackWarning):
        prog = pitchfork.compile(out, args, target="x86-avx2")
    with pytest.raises(TypeError, match="uint8"):
        prog(np.zeros((4, 4), np.int16))
    with pytest.raises(TypeError, match="dimensions"):
        prog(np.zeros(4, np.uint8))


def test_wrong_dtype_raises_type_error(sobel) -> None:
    with pytest.raises(TypeError, match="input input must be uint8, got uint16"):
        sobel("x86-avx2", "pitchfork")(np.zeros((H, W), np.uint16))


def test_wrong_dimensions_raise_type_error(sobel) -> None:
    with pytest.raises(TypeError, match="2 dimensions, got 3"):
        sobel("x86-avx2", "pitchfork")(np.zeros((2, H, W), np.uint8))


def test_wrong_input_count_raises_type_error(sobel, image: np.ndarray) -> None:
    with pytest.raises(TypeError, match="takes 1 inputs"):
        sobel("x86-avx2", "pitchfork")(image, image)


def test_wrong_size_rank_raises_type_error(sobel, image: np.ndarray) -> None:
    with pytest.raises(TypeError, match="size must give 2 extents"):
        sobel("x86-avx2", "pitchfork")(image, size=[W])


@pytest.mark.parametrize("target", ("x86-avx2", pytest.param("arm64", marks=needs_qemu["arm64"])))
def test_roundup_output_grown_as_realize(sobel, target: str) -> None:
    """RoundUp tiles need the output extent to be a multiple of the tile: an output the call allocates
    is grown to what Halide's bounds query asks for and the requested window returned, as
    `Func.realize` does (aot/output_bounds.py); the edge-clamped input makes any width computable."""
    img = np.random.default_rng(3).integers(0, 256, (H, 100), dtype=np.uint8)
    got = sobel(target, "pitchfork")(img)
    assert got.shape == (H, 100)
    assert np.array_equal(got, sobel3x3_reference(img))


@pytest.mark.parametrize("target", ("x86-avx2", pytest.param("arm64", marks=needs_qemu["arm64"])))
def test_roundup_assertion_raises_runtime_error(sobel, target: str) -> None:
    """A caller's own output array is not grown: Halide's assertion fails and is reported with its
    text, no crash and no partial result."""
    img = np.zeros((H, 100), np.uint8)
    v = LANES[target]
    with pytest.raises(RuntimeError, match=rf"Halide assertion #\d+ failed: \(\(sobel(\$\d+)?\.extent\.0 \+ {v - 1}\) % {v}\)"):
        sobel(target, "pitchfork")(img, out=np.zeros((H, 100), np.uint8))


def test_roundup_assertion_text_names_the_output(sobel) -> None:
    img = np.zeros((H, 100), np.uint8)
    with pytest.raises(RuntimeError) as e:
        sobel("x86-avx2", "pitchfork")(img, out=np.zeros((H, 100), np.uint8))
    assert "Output buffer sobel" in str(e.value)


def test_bad_isel_raises() -> None:
    out, args = sobel3x3(16)
    with pytest.raises(ValueError, match="isel"):
        pitchfork.compile(out, args, target="arm64", isel="gcc")
