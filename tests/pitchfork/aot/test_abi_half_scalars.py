"""float16 / bfloat16 scalar Params in PITCHFORK's ahead-of-time entry point (pitchfork/aot/abi.py).

Halide 21 passes such a Param per target (CodeGen_LLVM / CodeGen_ARM::upgrade_type_for_argument_passing):
a float16 as `half` on arm-64-linux-arm_fp16 and as its bits in an `i16` elsewhere, a bfloat16 as an
`i16` everywhere. The tests read that from Halide's own LLVM assembly for the same pipeline, then link
our library (written by Halide's generator command line, `pitchfork compile -g ... -e
static_library,c_header target=...`) beside Halide's own `compile_to_static_library` output in one C
driver (pitchfork/aot/abi_driver.py: x86 natively, arm64 under qemu-aarch64), which calls both with
the same buffers and scalar bits, directly and through `name_argv`: the outputs must be bit-exact.
The input is uint16 bits masked to finite values below 2 in magnitude (the fast-math flags make NaN
and infinities poison), so the driver's pseudo-random bytes are valid inputs.

float16 on arm64 without arm_fp16 is Halide's emulation (its Param as an i16 there). float16 and bfloat16
vectors on hvx128 (which Halide 21 refuses) compile by Halide's generator command line, lane by lane."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.aot.abi import aot_ir
from pitchfork.aot.abi_driver import (HALIDE_INCLUDE, Buf, Case, build_and_run, driver_source, halide_library,
                                      parse_results)
from pitchfork.backend.run import tools_available
from pitchfork.cli import main as cli_main

X86, ARM_FP16, ARM = "x86-64-linux-avx2", "arm-64-linux-arm_fp16", "arm-64-linux"
HVX = "hexagon-32-noos-hvx-hvx_128"
CTOR = {"float16": "Float", "bfloat16": "BFloat"}
QEMU = pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")

GEN = '''
import halide as hl

@hl.generator(name="scale_{t}")
class Scale:
    input = hl.InputBuffer(hl.UInt(16), 1)
    s = hl.InputScalar(hl.{ctor}(16))
    output = hl.OutputBuffer(hl.UInt(16), 1)

    def generate(self):
        x = hl.Var("x")
        v = hl.reinterpret(hl.{ctor}(16), self.input[x] & 0xBBFF)  # finite, |v| < 2
        s = self.s
        self.output[x] = hl.reinterpret(hl.UInt(16), hl.select(v > s, v * s, v - s))
        self.output.vectorize(x, 8)
'''
#: scalar bits per type: 1, 0.1, -5, -0, the smallest subnormal, 1.5
SCALARS = {"float16": [0x3C00, 0x2E66, 0xC500, 0x8000, 0x0001, 0x3E00],
           "bfloat16": [0x3F80, 0x3DCD, 0xC0A0, 0x8000, 0x0001, 0x3FC0]}
W = 203  # a vector body and a tail


def _generator(t: str, tmp_path: Path) -> Path:
    gen = tmp_path / f"gen_{t}.py"
    gen.write_text(GEN.format(t=t, ctor=CTOR[t]))
    return gen


def _scalar_decl(ll: str, fn: str) -> str:
    """The LLVM type of the entry point's second argument (the scalar) in its `define` line."""
    m = re.search(rf"^define [^@\n]*@{fn}\(ptr [^,]*, (\w+) ", ll, re.M)
    assert m is not None, f"no entry point {fn} in the module"
    return m.group(1)


@pytest.mark.parametrize(("t", "target", "want"), [("float16", X86, "i16"), ("float16", ARM_FP16, "half"),
                                                   ("bfloat16", X86, "i16"), ("bfloat16", ARM, "i16")])
def test_signature_is_halides(t: str, target: str, want: str, tmp_path: Path) -> None:
    """Our entry point declares the scalar as Halide 21's own module for the target does."""
    inp, s = hl.ImageParam(hl.UInt(16), 1, "input"), hl.Param(getattr(hl, CTOR[t])(16), "s")
    x = hl.Var("x")
    f = hl.Func(f"sig_{t}")
    v = hl.reinterpret(getattr(hl, CTOR[t])(16), inp[x] & 0xBBFF)
    f[x] = hl.reinterpret(hl.UInt(16), v * s)
    f.vectorize(x, 8)
    f.compile_to_llvm_assembly(str(tmp_path / "halide.ll"), [inp, s], "theirs", hl.Target(target))
    assert _scalar_decl((tmp_path / "halide.ll").read_text(), "theirs") == want
    prog = pitchfork.compile(f, [inp, s], target=target, name="ours", fallback=False)
    assert _scalar_decl(aot_ir(prog), "ours") == want
    assert f"{'_Float16' if want == 'half' else 'uint16_t'} _s" in prog.header()


def _cli_library(t: str, target: str, gen: Path, out: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """Our library for the generator, by Halide's generator command line: no fallback, no warning."""
    fn = f"scale_{t}_pf"
    rc = cli_main(["compile", str(gen), "-g", f"scale_{t}", "-o", str(out), "-e", "static_library,c_header",
                   "-f", fn, f"target={target}"])
    err = capsys.readouterr().err
    assert rc == 0 and "warning" not in err, err
    assert {p.name for p in out.iterdir()} == {f"{fn}.a", f"{fn}.h"}
    return out / f"{fn}.a"


def _same_as_halides(t: str, as_half: bool, isa: str, ours: Path, theirs: Path, workdir: Path) -> None:
    """One C driver calls `ours` and `theirs` (same signature) directly and through `name_argv` on every
    scalar of SCALARS[t] and a bad call: same codes, messages and output bytes everywhere."""
    ctype = "_Float16" if as_half else "uint16_t"
    buf = Buf(((0, W, 1),), type="uint16", alloc=2 * W)
    cases = [Case(f"s_{bits:04x}", (buf, f"PF_F16({bits:#x})" if as_half else bits, buf))
             for bits in SCALARS[t]]
    cases.append(Case("bad_type", (Buf(((0, W, 1),), type="uint8", alloc=W), cases[0].args[1], buf)))
    fns = [ours.stem, theirs.stem]
    results = []
    for argv in (False, True):
        d = workdir / f"driver_{argv}"
        d.mkdir()
        src = driver_source(cases, fns, [ctype], freestanding=False, argv=argv)
        results.append(parse_results(build_and_run(isa, src, [ours, theirs], d), cases, 2))
    outputs = set()
    for case, (direct_ours, direct_theirs), (argv_ours, argv_theirs) in zip(cases, *results):
        rs = [direct_ours, direct_theirs, argv_ours, argv_theirs]
        assert len({(r.rc, r.message) for r in rs}) == 1, (case.name, [(r.rc, r.message) for r in rs])
        assert len({tuple(r.outputs) for r in rs}) == 1, f"{case.name}: outputs differ"
        if case.name == "bad_type":
            assert direct_ours.rc == -3 and "Input buffer input has type uint16" in direct_ours.message
            continue
        assert direct_ours.rc == 0, direct_ours.message
        out = np.frombuffer(direct_ours.outputs[-1], np.uint16)
        assert len(set(out.tolist())) > 2  # varied (v - s is -s for most small v in bfloat16)
        outputs.add(out.tobytes())
    assert len(outputs) == len(SCALARS[t])  # every scalar value changed the result: it was read


@pytest.mark.parametrize(("t", "target"), [
    ("float16", X86), ("bfloat16", X86),
    pytest.param("float16", ARM_FP16, marks=[QEMU, pytest.mark.qemu]),
    pytest.param("bfloat16", ARM, marks=[QEMU, pytest.mark.qemu]),
    pytest.param("float16", ARM, marks=[QEMU, pytest.mark.qemu]),  # Halide's float16 emulation
])
def test_cli_library_bit_exact_beside_halides(t: str, target: str, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    gen = _generator(t, tmp_path)
    ours = _cli_library(t, target, gen, tmp_path / "ours", capsys)
    as_half = t == "float16" and target == ARM_FP16
    assert f"{'_Float16' if as_half else 'uint16_t'} _s," in ours.with_suffix(".h").read_text()
    theirs = halide_library(str(gen), f"scale_{t}", target, f"scale_{t}_hl", tmp_path)
    _same_as_halides(t, as_half, "x86-avx2" if target == X86 else "arm64", ours, theirs, tmp_path)


@pytest.mark.parametrize("target", [X86, pytest.param(ARM_FP16, marks=[QEMU, pytest.mark.qemu])])
def test_api_object_file_bit_exact_beside_halides(target: str, tmp_path: Path) -> None:
    """`pitchfork.compile(...).object_file()` (no generator) builds the entry point for a float16
    Param too (it raised AbiError naming the Param before)."""
    inp, s = hl.ImageParam(hl.UInt(16), 1, "input"), hl.Param(hl.Float(16), "s")
    x = hl.Var("x")
    f = hl.Func("output")
    v = hl.reinterpret(hl.Float(16), inp[x] & 0xBBFF)
    f[x] = hl.reinterpret(hl.UInt(16), hl.select(v > s, v * s, v - s))
    f.vectorize(x, 8)
    prog = pitchfork.compile(f, [inp, s], target=target, name="api_half_pf", fallback=False)
    ours = prog.object_file(tmp_path / "api_half_pf.o")
    f.compile_to_static_library(str(tmp_path / "api_half_hl"), [inp, s], "api_half_hl", hl.Target(target))
    _same_as_halides("float16", target == ARM_FP16, "x86-avx2" if target == X86 else "arm64", ours,
                     tmp_path / "api_half_hl.a", tmp_path)


def test_metadata_describes_the_scalar_as_halides(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`name_metadata()` gives the float16 / bfloat16 scalar Halide's type (code 2 / 4, 16 bits)."""
    libs, lines = [], ['#include <stdio.h>', '#include "HalideRuntime.h"']
    for t in CTOR:
        gen = _generator(t, tmp_path)
        libs += [_cli_library(t, X86, gen, tmp_path / f"ours_{t}", capsys),
                 halide_library(str(gen), f"scale_{t}", X86, f"scale_{t}_hl", tmp_path)]
    lines += [f"extern const struct halide_filter_metadata_t *{lib.stem}_metadata(void);" for lib in libs]
    lines.append("int main(void) {")
    for lib in libs:
        lines.append(f"  {{ const struct halide_filter_metadata_t *m = {lib.stem}_metadata();"
                     " for (int i = 0; i < m->num_arguments; ++i) { const struct halide_filter_argument_t *a ="
                     " &m->arguments[i]; printf(\"%s %d %d %d %d %d;\", a->name, a->kind, a->dimensions,"
                     " a->type.code, a->type.bits, a->type.lanes); } printf(\"\\n\"); }")
    lines.append("  return 0; }")
    (tmp_path / "meta.c").write_text("\n".join(lines) + "\n")
    exe = tmp_path / "meta"
    subprocess.run(["gcc", f"-I{HALIDE_INCLUDE}", str(tmp_path / "meta.c"), *map(str, libs), "-lpthread", "-ldl",
                    "-o", str(exe)], check=True)
    rows = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.splitlines()
    # (Halide's library, built in this process, names its output Func `output$n`)
    assert rows[0] == re.sub(r"\$\d+", "", rows[1]) and rows[2] == re.sub(r"\$\d+", "", rows[3])
    assert "s 0 0 2 16 1;" in rows[0] and "s 0 0 4 16 1;" in rows[2]


@pytest.mark.parametrize("t", ["float16", "bfloat16"])
def test_hvx_vectors_compile_by_halides_command_line(t: str, tmp_path: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """float16 / bfloat16 vectors on HVX (the generator vectorizes; Halide 21 emulates their scalars
    there but refuses their vectors itself): compiled lane by lane as Halide's scalar emulation, no
    fallback, no warning (bit-exact against Halide's own Hexagon code:
    tests/pitchfork/codegen/test_floats_half_emulated.py)."""
    lib = _cli_library(t, HVX, _generator(t, tmp_path), tmp_path / "ours", capsys)
    assert "uint16_t _s," in lib.with_suffix(".h").read_text()
