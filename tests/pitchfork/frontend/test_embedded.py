"""Buffers embedded in a pipeline (pitchfork/frontend/embedded.py): their contents read from Halide's
C output are the numpy arrays the pipeline was built with, and pipelines reading them (a u8 lookup
table, 2-D i16 weights, a float table) compile with no fallback and equal `realize` on x86 (JIT)
and under qemu on arm64 and hvx128; the AOT prototype does not take them as arguments, as Halide's."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.run import tools_available
from pitchfork.frontend.capture import capture_stmt
from pitchfork.frontend.embedded import EmbeddedBufferError, from_c_source, halide_c_source, referenced_buffers

x = hl.Var("x")
LUT = (np.arange(256) * 7 % 251).astype(np.uint8)
WEIGHTS = (np.arange(12, dtype=np.int16).reshape(3, 4) * 1000 - 5000).astype(np.int16)
FTABLE = np.linspace(-1.5, 2.5, 16, dtype=np.float32)


def _pipeline(tag: str, lanes: int) -> tuple[hl.Func, list]:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    lut, w = hl.Buffer(LUT, f"lut_{tag}"), hl.Buffer(WEIGHTS, f"weights_{tag}")
    f = hl.Func(f"embedded_{tag}")
    wv = w[hl.i32(a[x]) % 4, hl.i32(a[x]) % 3]
    f[x] = hl.i16(lut[hl.i32(a[x])]) * 3 + hl.saturating_cast(hl.Int(16), hl.i32(wv) * 5)
    f.vectorize(x, lanes)
    return f, [a]


def test_contents_are_the_arrays_the_pipeline_was_built_with() -> None:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    lut, w, ft = hl.Buffer(LUT, "lut_c"), hl.Buffer(WEIGHTS, "weights_c"), hl.Buffer(FTABLE, "ftable_c")
    f = hl.Func("embedded_c")
    f[x] = hl.f32(lut[hl.i32(a[x])]) + hl.f32(w[hl.i32(a[x]) % 4, 1]) + ft[hl.i32(a[x]) % 16]
    src = halide_c_source(hl.Pipeline(f), [a], "x86-64-linux-avx2")
    got = {e.name: e for e in from_c_source(src, ["lut_c", "weights_c", "ftable_c"])}
    assert got["lut_c"].data[:256] == LUT.tobytes() and got["lut_c"].dims == ((0, 256, 1),)
    assert str(got["lut_c"].type) == "uint8"
    assert got["weights_c"].data[:24] == WEIGHTS.tobytes() and got["weights_c"].dims == ((0, 4, 1), (0, 3, 4))
    assert str(got["weights_c"].type) == "int16"
    assert got["ftable_c"].data[:64] == FTABLE.tobytes() and str(got["ftable_c"].type) == "float32"
    assert from_c_source(src, ["no_such"]) == ()  # not embedded: left to codegen to name
    half = src.replace("_lut_c_buffer_ = {", "_lut_c_buffer_unused = {")
    with pytest.raises(EmbeddedBufferError, match="lut_c"):  # data without its buffer: refused
        from_c_source(half, ["lut_c"])


def test_the_statement_names_them_and_capture_reads_them() -> None:
    f, args = _pipeline("cap", 16)
    cap = capture_stmt(f, args, "x86-avx2")
    assert referenced_buffers(cap.text, ["a", f.name()]) == [e.name for e in cap.embedded]
    assert sorted(e.name for e in cap.embedded) == ["lut_cap", "weights_cap"]


@pytest.mark.parametrize("target", ["x86-avx2", "arm64", "hvx128"])
def test_pipeline_reading_embedded_buffers_matches_realize(target: str) -> None:
    if target != "x86-avx2" and not tools_available(target):
        pytest.skip(f"no emulator/toolchain for {target}")
    f, args = _pipeline(target.replace("-", "_"), 64 if target == "hvx128" else 16)
    v = np.random.default_rng(4).integers(0, 256, 512, dtype=np.uint8)
    args[0].set(hl.Buffer(v))
    want = np.asarray(f.realize([512]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, args, target=target, fallback=False)
    assert np.array_equal(prog(v, check=True), want)


def test_float_table_and_aot_prototype(tmp_path: Path) -> None:
    a = hl.ImageParam(hl.UInt(8), 1, "a")
    ft = hl.Buffer(FTABLE, "ftable_aot")
    f = hl.Func("embedded_aot")
    f[x] = ft[hl.i32(a[x]) % 16] * 2.0
    f.vectorize(x, 8)
    v = np.random.default_rng(5).integers(0, 256, 64, dtype=np.uint8)
    a.set(hl.Buffer(v))
    want = np.asarray(f.realize([64]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, [a], target="x86-avx2", name="emb_pf", fallback=False)
    assert np.array_equal(prog(v, check=True), want)
    hl.Pipeline(f).compile_to_header(str(tmp_path / "emb_hl.h"), [a], "emb_hl", hl.Target("x86-64-linux-avx2"))
    proto = lambda text, n: re.search(rf"int {n}\(([^)]*)\)", text).group(1)  # noqa: E731
    # (the output's parameter is named after the Func: `embedded_aot`, or `embedded_aot__1` in a process
    # where Halide had already handed out that name; the suite once ran it so in one worker)
    same_names = lambda p: re.sub(r"embedded_aot(__\d+)?_buffer", "out_buffer", p)  # noqa: E731
    ours, halides = proto(prog.header(), "emb_pf"), proto((tmp_path / "emb_hl.h").read_text(), "emb_hl")
    assert same_names(ours) == same_names(halides) and "ftable" not in ours
