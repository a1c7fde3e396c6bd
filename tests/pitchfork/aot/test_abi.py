"""PITCHFORK's AOT libraries as drop-ins for Halide's: the same C driver calls ours and Halide 21's own
`compile_to_static_library` output of the same generator, on Halide-style buffers (nonzero mins,
padded strides, cropped views, bounds queries) and bad calls, on x86 (host gcc), AArch64
(aarch64-linux-gnu-gcc + qemu-aarch64) and Hexagon (clang/lld + qemu-hexagon).

Both libraries are built in fresh processes (the `pitchfork compile` CLI, and Halide's generator
compile), as a user would, so Func names (and with them Halide's messages) are the generator's own.
Hexagon: Halide's own Hexagon library needs its Hexagon runtime (QuRT / the offload host), which
cannot link into a bare-metal qemu-hexagon program, so our Hexagon results are compared with
Halide's x86 library run on the same cases (same bytes, codes and messages).
"""

from __future__ import annotations

import os
import subprocess
import sys
from functools import cache
from pathlib import Path

import pytest

from pitchfork.backend.run import tools_available
from pitchfork.aot.abi import header_text, static_library
from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results, run_driver

ROOT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).with_name("data")
SOBEL = str(ROOT / "examples" / "aot" / "sobel_generator.py")
PARAMS = str(DATA / "gen_params.py")
FLOATS = str(DATA / "gen_float.py")
ENV = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(Path(__file__).parent),
                                                     os.environ.get("PYTHONPATH", "")])}

W = 256  # a multiple of every target's Sobel tile width (32, 16, 128)
SOBEL_CASES = [
    Case("plain", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8), Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("mins_padded_strides", (Buf(((-3, 300, 1), (5, 12, 320)), alloc=320 * 12),
                                 Buf(((10, 128, 1), (7, 4, 200)), alloc=200 * 4))),
    Case("cropped_views", (Buf(((17, 200, 1), (2, 9, 400)), alloc=400 * 20, offset=400 * 3 + 11),
                           Buf(((5, 128, 1), (1, 4, 300)), alloc=300 * 8, offset=300 * 2 + 40))),
    Case("bad_type", (Buf(((0, W, 1), (0, 8, W)), type="uint16", alloc=2 * W * 8),
                      Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("bad_type_vector", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8),
                             Buf(((0, W, 1), (0, 8, W)), type="uint8x4", alloc=4 * W * 8))),
    Case("bad_dimensions", (Buf(((0, W, 1), (0, 8, W), (0, 1, W * 8)), alloc=W * 8),
                            Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("output_not_a_tile_multiple", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8),
                                        Buf(((0, 100, 1), (0, 8, 100)), alloc=W * 8))),
    Case("bad_stride", (Buf(((0, W, 2), (0, 8, 2 * W)), alloc=2 * W * 8), Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("null_host", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8, host=False, device=1),
                       Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("null_buffer", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8, null=True),
                         Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("device_dirty", (Buf(((0, W, 1), (0, 8, W)), alloc=W * 8, flags=2), Buf(((0, W, 1), (0, 8, W)), alloc=W * 8))),
    Case("bounds_query", (Buf(((0, 0, 0), (0, 0, 0)), alloc=16, host=False),
                          Buf(((3, 128, 1), (2, 8, 128)), alloc=128 * 8))),
]
# scaled_avg(input, gain: uint8, output): reads input x-1 .. x+1, GuardWithIf tail (any width)
SCALED_CASES = [
    Case("plain", (Buf(((-1, 202, 1), (0, 3, 202)), alloc=202 * 3), 37, Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("gain_0", (Buf(((-1, 202, 1), (0, 3, 202)), alloc=202 * 3), 0, Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("gain_255", (Buf(((-1, 202, 1), (0, 3, 202)), alloc=202 * 3), 255,
                      Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("mins_padded_cropped", (Buf(((40, 150, 1), (-7, 5, 256)), alloc=256 * 9, offset=256 * 2 + 3), 91,
                                 Buf(((41, 131, 1), (-6, 3, 160)), alloc=160 * 5, offset=160 + 7))),
    Case("input_too_small_before", (Buf(((0, 202, 1), (0, 3, 202)), alloc=202 * 3), 5,
                                    Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("input_too_small_beyond", (Buf(((-1, 150, 1), (0, 3, 150)), alloc=150 * 3), 5,
                                    Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("bad_type", (Buf(((-1, 202, 1), (0, 3, 202)), type="int8", alloc=202 * 3), 5,
                      Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("bad_output_type", (Buf(((-1, 202, 1), (0, 3, 202)), alloc=202 * 3), 5,
                             Buf(((0, 200, 1), (0, 3, 200)), type="int32", alloc=2400))),
    Case("null_host_output", (Buf(((-1, 202, 1), (0, 3, 202)), alloc=202 * 3), 5,
                              Buf(((0, 200, 1), (0, 3, 200)), alloc=600, host=False, device=3))),
    Case("bounds_query_input", (Buf(((0, 0, 0), (0, 0, 0)), alloc=16, host=False), 5,
                                Buf(((9, 70, 1), (4, 3, 70)), alloc=210))),
]
# float_gain(input, gain: float, offset: double, output)
FLOAT_CASES = [
    Case("plain", (Buf(((0, 200, 1), (0, 3, 200)), alloc=600), 1.5, -3.25, Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("negative_gain", (Buf(((0, 200, 1), (0, 3, 200)), alloc=600), -0.75, 300.5,
                           Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("tiny_values", (Buf(((0, 200, 1), (0, 3, 200)), alloc=600), 1e-30, 1e-300,
                         Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
    Case("mins_padded_cropped", (Buf(((40, 150, 1), (-7, 5, 256)), alloc=256 * 9, offset=256 * 2 + 3), 0.3, 17.125,
                                 Buf(((41, 131, 1), (-6, 3, 160)), alloc=160 * 5, offset=160 + 7))),
    Case("bad_type", (Buf(((0, 200, 1), (0, 3, 200)), type="int8", alloc=600), 1.0, 0.0,
                      Buf(((0, 200, 1), (0, 3, 200)), alloc=600))),
]
GENERATORS = {  # name -> (file, class, GeneratorParams, C types of scalar params, cases)
    "sobel": (SOBEL, "Sobel", {"parallel": "false"}, [], SOBEL_CASES),
    "scaled_avg": (PARAMS, "scaled_avg", {"input.type": "uint8"}, ["uint8_t"], SCALED_CASES),
    "float_gain": (FLOATS, "float_gain", {}, ["float", "double"], FLOAT_CASES),
}


def _run(cmd: list[str]) -> None:
    p = subprocess.run(cmd, capture_output=True, text=True, env=ENV, cwd=ROOT)
    assert p.returncode == 0, f"$ {' '.join(cmd)}\n{p.stdout}\n{p.stderr}"


@cache
def pitchfork_library(gen: str, target: str, out: Path) -> Path:
    path, cls, params, _, _ = GENERATORS[gen]
    name = f"{gen}_pf_{target.replace('-', '_')}"
    cmd = [sys.executable, "-m", "pitchfork", "compile", f"{path}:{cls}", "--target", target, "--name", name,
           "--no-fallback", "-o", str(out)]
    for k, v in params.items():
        cmd += ["-p", f"{k}={v}"]
    _run(cmd)
    return out / f"{name}.a"


@cache
def halide_library(gen: str, target: str, out: Path) -> Path:
    path, cls, params, _, _ = GENERATORS[gen]
    name = f"{gen}_hl_{target.replace('-', '_')}"
    code = ("from pathlib import Path; from pitchfork.aot.abi_driver import halide_library; "
            f"halide_library({path!r}, {cls!r}, {target!r}, {name!r}, Path({str(out)!r}), {params!r})")
    _run([sys.executable, "-c", code])
    return out / f"{name}.a"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("abi")


def _run_driver(gen: str, target: str, libs: list[Path], fns: list[str], wd: Path) -> list[list]:
    _, _, _, scalar_types, cases = GENERATORS[gen]
    d = wd / f"{gen}_{target}_{'_'.join(fns)}"
    d.mkdir(exist_ok=True)
    src = driver_source(cases, fns, scalar_types, freestanding=target == "hvx128")
    return parse_results(build_and_run(target, src, libs, d), cases, len(fns))


def _check_same(gen: str, ours: list, theirs: list) -> None:
    cases = GENERATORS[gen][4]
    for case, a, b in zip(cases, ours, theirs):
        assert (a.rc, a.message) == (b.rc, b.message), case.name
        assert a.outputs == b.outputs, f"{case.name}: output allocations differ"
        assert a.shapes == b.shapes, f"{case.name}: buffer shapes after the call differ"


def _expectations(gen: str, results: list) -> None:
    """What Halide's error codes are for the bad calls (HalideRuntime.h halide_error_code_t), so the
    comparison cannot pass by both libraries failing the same wrong way."""
    by = {c.name: r for c, r in zip(GENERATORS[gen][4], results)}
    want = {"bad_type": -3, "bad_type_vector": -3, "bad_output_type": -3, "bad_dimensions": -43,
            "output_not_a_tile_multiple": -4, "input_too_small_before": -4, "input_too_small_beyond": -4,
            "bad_stride": -8, "null_host": -34, "null_host_output": -34, "null_buffer": -12, "device_dirty": -44,
            "plain": 0, "bounds_query": 0, "bounds_query_input": 0}
    for name, r in by.items():
        if name in want:
            assert r.rc == want[name], (name, r.rc, r.message)
        assert (r.rc == 0) == (r.message == ""), (name, r.message)
    if "bad_type" in by:
        assert "has type uint8 but type of the buffer passed in is" in by["bad_type"].message
    if "input_too_small_before" in by:
        assert "which is before the min (0) in dimension 0" in by["input_too_small_before"].message
    # the computation happened: outputs changed and only inside the window
    plain = by["plain"]
    assert plain.outputs[-1] != bytes(len(plain.outputs[-1]))


@pytest.mark.parametrize("target", ["x86-avx2", "arm64"])
@pytest.mark.parametrize("gen", list(GENERATORS))
def test_same_as_halide_library(gen: str, target: str, workdir: Path) -> None:
    if not tools_available(target):
        pytest.skip(f"no toolchain for {target}")
    ours = pitchfork_library(gen, target, workdir)
    theirs = halide_library(gen, target, workdir)
    fns = [ours.stem, theirs.stem]
    a, b = zip(*(tuple(r) for r in _run_driver(gen, target, [ours, theirs], fns, workdir)))
    _expectations(gen, list(a))
    _check_same(gen, list(a), list(b))


@pytest.mark.parametrize("gen", list(GENERATORS))
def test_hexagon_same_as_halide_x86_library(gen: str, workdir: Path) -> None:
    if not tools_available("hvx128"):
        pytest.skip("no Hexagon toolchain")
    ours = pitchfork_library(gen, "hvx128", workdir)
    theirs = halide_library(gen, "x86-avx2", workdir)
    a = [r[0] for r in _run_driver(gen, "hvx128", [ours], [ours.stem], workdir)]
    b = [r[0] for r in _run_driver(gen, "x86-avx2", [theirs], [theirs.stem], workdir)]
    _expectations(gen, a)
    _check_same(gen, a, b)


def test_header_declares_what_halide_declares(workdir: Path) -> None:
    """The prototype in our header is Halide's (compile_to_static_library writes a .h too)."""
    for gen in GENERATORS:
        ours = pitchfork_library(gen, "x86-avx2", workdir).with_suffix(".h").read_text()
        theirs = halide_library(gen, "x86-avx2", workdir).with_suffix(".h").read_text()

        def decls(text: str, name: str) -> list[str]:
            return [line.replace(name, "NAME") for line in text.splitlines()
                    if line.startswith(f"int {name}")]

        assert decls(ours, f"{gen}_pf_x86_avx2") == decls(theirs, f"{gen}_hl_x86_avx2")
        assert len(decls(ours, f"{gen}_pf_x86_avx2")) == 2  # name and name_argv
        meta = [line for line in ours.splitlines() if "_metadata()" in line]
        assert meta == [f"const struct halide_filter_metadata_t *{gen}_pf_x86_avx2_metadata();"]
        assert meta[0].replace("_pf_", "_hl_") in theirs


def test_metadata_and_argv_match_halide(workdir: Path) -> None:
    """name_metadata() describes the arguments as Halide's does; name_argv() calls the entry point."""
    from pitchfork.aot.abi_driver import HALIDE_INCLUDE

    libs = [pitchfork_library("scaled_avg", "x86-avx2", workdir), halide_library("scaled_avg", "x86-avx2", workdir)]
    src = workdir / "metadata.c"
    lines = ['#include <stdio.h>', '#include "HalideRuntime.h"']
    for lib in libs:
        lines += [f"extern const struct halide_filter_metadata_t *{lib.stem}_metadata(void);",
                  f"extern int {lib.stem}_argv(void **);"]
    lines.append("static void show(const struct halide_filter_metadata_t *m) {")
    lines.append('  printf("v%d n%d %s\\n", m->version, m->num_arguments, m->target);')
    lines.append("  for (int i = 0; i < m->num_arguments; ++i) { const struct halide_filter_argument_t *a = "
                 "&m->arguments[i]; printf(\"%s %d %d %d %d %d\\n\", a->name, a->kind, a->dimensions, "
                 "a->type.code, a->type.bits, a->type.lanes); } }")
    lines.append("int main(void) { halide_dimension_t d[2] = {{0, 8, 1, 0}, {0, 2, 8, 0}}; uint8_t g = 3, mem[64];")
    lines.append("  halide_buffer_t in = {0}; in.type.code = 2; in.type.bits = 32; in.type.lanes = 1;"
                 " in.dimensions = 2; in.dim = d; in.host = mem; halide_buffer_t out = in; void *args[3] = {&in, &g, &out};")
    for lib in libs:
        lines.append(f'  show({lib.stem}_metadata()); printf("argv %d\\n", {lib.stem}_argv(args));')
    lines.append("  return 0; }")
    src.write_text("\n".join(lines) + "\n")
    exe = workdir / "metadata"
    subprocess.run(["gcc", f"-I{HALIDE_INCLUDE}", str(src), *map(str, libs), "-lpthread", "-ldl", "-o", str(exe)],
                   check=True)
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split("argv")
    ours, theirs = out[0], out[1].split("\n", 1)[1]
    assert ours.split("\n", 1)[1] == theirs.split("\n", 1)[1]  # per argument: name kind dims type
    assert ours.startswith("v1 n3 x86-64-linux")
    assert "argv -3" in "argv" + out[1] and "argv -3" in "argv" + out[2]  # float32 input: bad_type


def test_default_halide_error_prints(workdir: Path) -> None:
    """Without an application halide_error, the weak default writes the message to stderr and the call
    still returns the error code (x86 and Hexagon defaults; no Halide runtime linked)."""
    lib = pitchfork_library("sobel", "x86-avx2", workdir)
    src = workdir / "default_error.c"
    src.write_text(f'#include "{lib.with_suffix(".h")}"\n#include "HalideRuntime.h"\n'
                   "int main(void) {\n  unsigned char in[64], out[64];\n"
                   "  halide_dimension_t d[2] = {{0, 8, 1, 0}, {0, 8, 8, 0}};\n"
                   "  halide_buffer_t a = {0}, b = {0};\n"
                   "  a.host = in; a.type.code = halide_type_int; a.type.bits = 8; a.type.lanes = 1;\n"
                   "  a.dimensions = 2; a.dim = d; b = a; b.host = out; b.type.code = halide_type_uint;\n"
                   f"  return -{lib.stem}(&a, &b);\n}}\n")
    from pitchfork.aot.abi_driver import HALIDE_INCLUDE

    exe = workdir / "default_error"
    subprocess.run(["gcc", f"-I{HALIDE_INCLUDE}", str(src), str(lib), "-o", str(exe)], check=True)
    p = subprocess.run([str(exe)], capture_output=True, text=True)
    assert p.returncode == 3  # halide_error_code_bad_type
    # Halide's default handler prints the same line, then aborts; ours returns the code
    assert p.stderr == "Error: Input buffer input has type uint8 but type of the buffer passed in is int8\n"


def test_hexagon_default_halide_error_prints(workdir: Path) -> None:
    """The weak default on Hexagon (no libc: the Linux write system call) under qemu-hexagon."""
    if not tools_available("hvx128"):
        pytest.skip("no Hexagon toolchain")
    lib = pitchfork_library("sobel", "hvx128", workdir)
    cases = [c for c in SOBEL_CASES if c.name in ("bad_type", "plain")]
    d = workdir / "hexagon_default_error"
    d.mkdir(exist_ok=True)
    p = run_driver("hvx128", driver_source(cases, [lib.stem], [], True, handler=False), [lib], d)
    results = parse_results(p.stdout, cases, 1)
    assert [r[0].rc for r in results] == [0, -3]
    assert p.stderr.decode() == "Error: Input buffer input has type uint8 but type of the buffer passed in is uint16\n"


def test_static_library_index_and_header_text() -> None:
    a = static_library([("x.o", b"\x7fELF1"), ("y.o", b"ab")], {"f": 0, "g": 1, "halide_error": 0})
    assert a.startswith(b"!<arch>\n/               ")
    n = int.from_bytes(a[68:72], "big")
    offsets = [int.from_bytes(a[72 + 4 * i: 76 + 4 * i], "big") for i in range(n)]
    assert n == 3 and a[offsets[0]:offsets[0] + 4] == b"x.o/" and a[offsets[1]:offsets[1] + 4] == b"y.o/"
    from pitchfork.aot.abi import AbiArg
    from pitchfork.frontend.htypes import HType

    h = header_text("f", [AbiArg("input", "input_buffer", HType("uint", 8), 2), AbiArg("k", "scalar", HType("int", 16), 0),
                          AbiArg("f$2", "output_buffer", HType("uint", 8), 2)])
    assert "int f(struct halide_buffer_t *_input_buffer, int16_t _k, struct halide_buffer_t *_f_buffer);" in h


def test_compile_api_object_file_and_header(tmp_path: Path) -> None:
    """`pitchfork.compile(...)` (no generator): `.object_file()` holds the Halide-ABI entry point that
    `.header()` declares; a C program calls it on a window with nonzero mins (numpy reference)."""
    import numpy as np

    import pitchfork
    from pitchfork.aot.abi_driver import HALIDE_INCLUDE
    from pitchfork.frontend.examples import sobel3x3, sobel3x3_reference

    f, args = sobel3x3(32)
    prog = pitchfork.compile(f, args, target="x86-avx2", name="sobel_api", fallback=False)
    prog.object_file(tmp_path / "sobel_api.o")
    (tmp_path / "sobel_api.h").write_text(prog.header())
    img = np.random.default_rng(3).integers(0, 256, (12, 70), dtype=np.uint8)
    (tmp_path / "in.bin").write_bytes(img.tobytes())
    (tmp_path / "main.c").write_text(r"""
#include <stdio.h>
#include "HalideRuntime.h"
#include "sobel_api.h"
int main(void) {
  static unsigned char in[12 * 70], out[8 * 64];
  FILE *f = fopen("in.bin", "rb"); if (fread(in, 1, sizeof in, f) != sizeof in) return 9; fclose(f);
  halide_dimension_t di[2] = {{-5, 70, 1, 0}, {100, 12, 70, 0}}, dout[2] = {{-2, 64, 1, 0}, {102, 8, 64, 0}};
  halide_buffer_t a = {0}, b = {0};
  a.host = in; a.type.code = halide_type_uint; a.type.bits = 8; a.type.lanes = 1; a.dimensions = 2; a.dim = di;
  b = a; b.host = out; b.dim = dout;
  int rc = sobel_api(&a, &b);
  fwrite(out, 1, sizeof out, stdout);
  return rc;
}
""")
    exe = tmp_path / "main"
    subprocess.run(["gcc", f"-I{HALIDE_INCLUDE}", f"-I{tmp_path}", str(tmp_path / "main.c"),
                    str(tmp_path / "sobel_api.o"), "-o", str(exe)], check=True)
    p = subprocess.run([str(exe)], capture_output=True, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    got = np.frombuffer(p.stdout, dtype=np.uint8).reshape(8, 64)
    # output (x, y) in [-2, 62) x [102, 110) of an input covering [-5, 65) x [100, 112), edges repeated
    assert np.array_equal(got, sobel3x3_reference(img)[2:10, 3:67])


def _rq_in(**k) -> Buf:  # int16 input, 100 x 3, dense
    return Buf(((0, 100, 1), (0, 3, 100)), **{"type": "int16", "alloc": 640, **k})


def _rq_out(**k) -> Buf:  # int8 output, 100 x 3
    return Buf(((0, 100, 1), (0, 3, 100)), **{"type": 0 | 8 << 8 | 1 << 16, "alloc": 300, **k})


REQUANT_CASES = [  # (inp, mult: int32 in [-1000, 1000], shift: uint8 in [1, 15], output)
    Case("plain", (_rq_in(), 77, 4, _rq_out())),
    Case("mult_too_large", (_rq_in(), 5000, 4, _rq_out())),
    Case("mult_too_small", (_rq_in(), -5000, 4, _rq_out())),
    Case("shift_too_small", (_rq_in(), 7, 0, _rq_out())),
    Case("both_params_bad", (_rq_in(), -5000, 99, _rq_out())),
    Case("min_constraint", (Buf(((3, 100, 1), (0, 3, 100)), type="int16", alloc=640), 7, 2, _rq_out())),
    Case("unaligned_host", (_rq_in(offset=2), 7, 2, _rq_out())),
    Case("unaligned_and_bad_param", (_rq_in(offset=2), 5000, 2, _rq_out())),
    Case("unaligned_and_bad_type", (_rq_in(offset=2, type="uint16"), 7, 2, _rq_out())),
    Case("unaligned_and_null_output_host", (_rq_in(offset=2), 7, 4, _rq_out(host=False, device=1))),
    Case("bad_param_and_dirty_output", (_rq_in(), 5000, 4, _rq_out(flags=2))),
    Case("negative_extent", (_rq_in(), 7, 2, Buf(((0, -4, 1), (0, 3, 100)), type=0 | 8 << 8 | 1 << 16, alloc=300))),
    Case("bounds_query_output", (_rq_in(), 7, 2, _rq_out(host=False))),
]


def test_param_ranges_and_host_alignment_same_as_halide(workdir: Path) -> None:
    """Param.set_range and ImageParam.set_host_alignment checks (which Halide's serialization drops and
    the capture restores): same codes, messages and order of checks as Halide's library (x86)."""
    script = str(DATA / "requant_pipeline.py")
    for who in ("pitchfork", "halide"):
        _run([sys.executable, script, who, str(workdir), f"requant_{who}"])
    libs = [workdir / "requant_pitchfork.a", workdir / "requant_halide.a"]
    d = workdir / "requant"
    d.mkdir(exist_ok=True)
    src = driver_source(REQUANT_CASES, ["requant_pitchfork", "requant_halide"], ["int32_t", "uint8_t"], False)
    results = parse_results(build_and_run("x86-avx2", src, libs, d), REQUANT_CASES, 2)
    codes = {c.name: r[0].rc for c, r in zip(REQUANT_CASES, results)}
    assert codes == {"plain": 0, "mult_too_large": -10, "mult_too_small": -9, "shift_too_small": -9,
                     "both_params_bad": -10, "min_constraint": -4, "unaligned_host": -24,
                     "unaligned_and_bad_param": -24, "unaligned_and_bad_type": -3,
                     "unaligned_and_null_output_host": -24, "bad_param_and_dirty_output": -44,
                     "negative_extent": -28, "bounds_query_output": 0}
    for case, (ours, theirs) in zip(REQUANT_CASES, results):
        assert (ours.rc, ours.message, ours.outputs, ours.shapes) == \
            (theirs.rc, theirs.message, theirs.outputs, theirs.shapes), case.name
