"""A Func with Tuple values as the output (`CapturedStmt.output_buffers`): one buffer per element, as
Halide gives it. Called from Python it returns one array per element, equal to `realize`'s
Realization on x86 (JIT) and under qemu; its AOT entry point takes the element buffers in Halide's
order and names (the prototype of Halide's own `compile_to_header`), and a C program calling it gets
the same values."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.abi_driver import build_and_run
from pitchfork.backend.run import tools_available

x, y = hl.Var("x"), hl.Var("y")
W, H = 64, 6


def _minmax_diff(lanes: int, name: str = "minmax_diff") -> tuple[hl.Func, list]:
    a, b = hl.ImageParam(hl.Int(16), 2, "a"), hl.ImageParam(hl.Int(16), 2, "b")
    f = hl.Func(name)
    # three elements of two types: a min, a saturating difference, and a widened absolute difference
    f[x, y] = (hl.min(a[x, y], b[x, y]), hl.saturating_sub(a[x, y], b[x, y]), hl.u32(hl.absd(a[x, y], b[x, y])))
    f.vectorize(x, lanes)
    return f, [a, b]


def _inputs() -> list[np.ndarray]:
    rng = np.random.default_rng(29)
    vals = [rng.integers(-32768, 32768, (H, W), dtype=np.int16) for _ in range(2)]
    vals[0][0, :4], vals[1][0, :4] = (-32768, 32767, 0, -1), (32767, -32768, -1, 0)
    return vals


@pytest.mark.parametrize("target", ["x86-avx2", "arm64", "hvx128"])
def test_tuple_output_matches_realize(target: str) -> None:
    if target != "x86-avx2" and not tools_available(target):
        pytest.skip(f"no emulator/toolchain for {target}")
    f, params = _minmax_diff(64 if target == "hvx128" else 16)
    vals = _inputs()
    for p, v in zip(params, vals):
        p.set(hl.Buffer(v))
    want = [np.asarray(b) for b in f.realize([W, H])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, params, target=target, fallback=False)
    got = prog(*vals, check=True)
    assert isinstance(got, tuple) and len(got) == 3
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g, w)


def test_tuple_output_aot_prototype_and_values(tmp_path: Path) -> None:
    f, params = _minmax_diff(16, "tuple_aot")  # named once in the process: Halide's header keeps the name
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(f, params, target="x86-avx2", name="tuple_pf", fallback=False)
    ours = prog.header()
    hl.Pipeline(f).compile_to_header(str(tmp_path / "tuple_hl.h"), params, "tuple_hl",
                                     hl.Target("x86-64-linux-avx2"))
    theirs = (tmp_path / "tuple_hl.h").read_text()

    def proto(text: str, name: str) -> str:
        m = re.search(rf"int {name}\(([^)]*)\)", text)
        assert m, text
        return m.group(1)

    assert proto(ours, "tuple_pf") == proto(theirs, "tuple_hl")
    assert "_tuple_aot_0_buffer" in proto(ours, "tuple_pf")
    prog.object_file(tmp_path / "tuple_pf.o")
    (tmp_path / "tuple_pf.h").write_text(ours)
    vals = _inputs()
    (tmp_path / "in.bin").write_bytes(vals[0].tobytes() + vals[1].tobytes())
    out = build_and_run("x86-avx2", rf"""
#include <stdio.h>
#include <stdint.h>
#include "HalideRuntime.h"
#include "tuple_pf.h"
int main(void) {{
  static int16_t in[2][{H} * {W}], o0[{H} * {W}], o1[{H} * {W}];
  static uint32_t o2[{H} * {W}];
  FILE *f = fopen("in.bin", "rb"); if (fread(in, 1, sizeof in, f) != sizeof in) return 9; fclose(f);
  halide_dimension_t d[2] = {{{{0, {W}, 1, 0}}, {{0, {H}, {W}, 0}}}};
  halide_buffer_t a = {{0}}, b, r0, r1, r2;
  a.host = (uint8_t *)in[0]; a.type.code = halide_type_int; a.type.bits = 16; a.type.lanes = 1;
  a.dimensions = 2; a.dim = d;
  b = a; b.host = (uint8_t *)in[1]; r0 = a; r0.host = (uint8_t *)o0; r1 = a; r1.host = (uint8_t *)o1;
  r2 = a; r2.host = (uint8_t *)o2; r2.type.code = halide_type_uint; r2.type.bits = 32;
  int rc = tuple_pf(&a, &b, &r0, &r1, &r2);
  fwrite(o0, 1, sizeof o0, stdout); fwrite(o1, 1, sizeof o1, stdout); fwrite(o2, 1, sizeof o2, stdout);
  return rc;
}}
""", [tmp_path / "tuple_pf.o"], tmp_path)
    n = W * H
    got0 = np.frombuffer(out[:2 * n], dtype=np.int16).reshape(H, W)
    got1 = np.frombuffer(out[2 * n:4 * n], dtype=np.int16).reshape(H, W)
    got2 = np.frombuffer(out[4 * n:], dtype=np.uint32).reshape(H, W)
    a, b = (v.astype(np.int64) for v in vals)
    assert np.array_equal(got0, np.minimum(a, b))
    assert np.array_equal(got1, np.clip(a - b, -32768, 32767))
    assert np.array_equal(got2, np.abs(a - b))
