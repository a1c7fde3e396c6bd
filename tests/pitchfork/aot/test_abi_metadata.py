"""`name_metadata()` of PITCHFORK's ahead-of-time output (pitchfork/aot/abi.py) carries what Halide 21's
`halide_filter_metadata_t` carries for the same pipeline: besides names, kinds, dimensions and types,
a scalar Param's `scalar_def` / `scalar_min` / `scalar_max` / `scalar_estimate` (null where not set) and
every buffer's `buffer_estimates` (a (min, extent) pointer pair per dimension, null where not set).

One C driver links our object beside Halide's own `compile_to_static_library` output and prints every
field of both metadata structs (each scalar value as its 8 bytes); the two printouts must be equal
but for the function name. x86 natively, arm-64-linux-arm_fp16 under qemu-aarch64 (float16 Params
there are compiled by PITCHFORK, not emulated)."""

from __future__ import annotations

import re
from pathlib import Path

import halide as hl
import pytest

import pitchfork
from pitchfork.aot.abi import codegen_target_string
from pitchfork.aot.abi_driver import halide_library, run_driver
from pitchfork.backend.run import tools_available
from pitchfork.cli import main as cli_main

X86, ARM_FP16 = "x86-64-linux-avx2", "arm-64-linux-arm_fp16"
QEMU = pytest.mark.skipif(not tools_available("arm64"), reason="no toolchain for arm64")

#: prints every field of `name`_metadata(), the function name replaced by "NAME"
PRINT = r'''
static void print_value(const char *what, const struct halide_scalar_value_t *v) {
  if (!v) { printf(" %s=null", what); return; }
  const unsigned char *p = (const unsigned char *)v;
  printf(" %s=", what);
  for (int i = 0; i < 8; ++i) printf("%02x", p[i]);
}
static void print_metadata(const struct halide_filter_metadata_t *m) {
  printf("version %d arguments %d target %s\n", m->version, m->num_arguments, m->target);
  for (int i = 0; i < m->num_arguments; ++i) {
    const struct halide_filter_argument_t *a = &m->arguments[i];
    printf("%s kind %d dims %d type %d %d %d", a->name, a->kind, a->dimensions, a->type.code, a->type.bits,
           a->type.lanes);
    print_value("def", a->scalar_def); print_value("min", a->scalar_min);
    print_value("max", a->scalar_max); print_value("estimate", a->scalar_estimate);
    if (!a->buffer_estimates) printf(" buffer_estimates=null");
    else for (int d = 0; d < 2 * a->dimensions; ++d) {
      if (a->buffer_estimates[d]) printf(" %s%d=%lld", d % 2 ? "extent" : "min", d / 2,
                                         (long long)*a->buffer_estimates[d]);
      else printf(" %s%d=null", d % 2 ? "extent" : "min", d / 2);
    }
    printf("\n");
  }
  printf("----\n");
}
'''


def _pipeline(estimates: bool) -> tuple[hl.Func, list]:
    """int8/int32/uint8/uint16/float32/float16 Params and two input buffers; with `estimates`, ranges,
    defaults and estimates on most of them (some left unset) and buffer estimates on some dimensions."""
    x, y = hl.Var("x"), hl.Var("y")
    inp, in2 = hl.ImageParam(hl.UInt(8), 2, "inp"), hl.ImageParam(hl.UInt(8), 1, "in2")
    p8, p32 = hl.Param(hl.Int(8), "p8"), hl.Param(hl.Int(32), "p32")
    pu8, pu16 = hl.Param(hl.UInt(8), "pu8"), hl.Param(hl.UInt(16), "pu16")
    pf, ph, ph2 = hl.Param(hl.Float(32), "pf"), hl.Param(hl.Float(16), "ph"), hl.Param(hl.Float(16), "ph2")
    f = hl.Func("meta_out")
    ints = hl.cast(hl.Int(32), inp[x, y]) + in2[x] + p8 + p32 + pu8 + pu16
    f[x, y] = hl.cast(hl.UInt(8), hl.clamp(hl.cast(hl.Float(32), ints) * pf
                                           + hl.cast(hl.Float(32), ph) + hl.cast(hl.Float(32), ph2), 0.0, 255.0))
    if estimates:
        # (as casts: with bare int8 bounds Halide's own compile_to_c, which reads the exact float
        # constants, raises 'Error:' with no text; compile_to_static_library accepts both)
        p8.set_range(hl.cast(hl.Int(8), -100), hl.cast(hl.Int(8), 100))
        p32.set_range(-7, 10)
        p32.set_estimate(3)
        p32.parameter().set_default_value(hl.Expr(5))  # what a generator's InputScalar default sets
        pu16.set_estimate(40000)
        pf.set_range(-2.5, 3.5)
        pf.set_estimate(0.75)
        ph.set_range(hl.cast(hl.Float(16), -1.5), hl.cast(hl.Float(16), 2.25))
        ph.parameter().set_estimate(hl.cast(hl.Float(16), 0.5))  # Param.set_estimate has no float16
        inp.dim(0).set_estimate(0, 64)
        inp.dim(1).set_estimate(-3, 17)
        f.set_estimate(x, 0, 64)
    return f, [inp, in2, p8, p32, pu8, pu16, pf, ph, ph2]


def _same_rows(target: str, ours: Path, theirs: Path, workdir: Path) -> dict[str, str]:
    """Prints our and Halide's metadata from one C driver (each library's function is named as its
    file), asserts the printouts are equal, and returns Halide's rows by argument name. (Halide's
    library, built in this process, names a Func `f$n`; ours, as the generator's, `f`.)"""
    src = "\n".join(['#include <stdio.h>', '#include "HalideRuntime.h"',
                     f"extern const struct halide_filter_metadata_t *{ours.stem}_metadata(void);",
                     f"extern const struct halide_filter_metadata_t *{theirs.stem}_metadata(void);", PRINT,
                     f"int main(void) {{ print_metadata({ours.stem}_metadata());"
                     f" print_metadata({theirs.stem}_metadata()); return 0; }}", ""])
    out = run_driver("x86-avx2" if target == X86 else "arm64", src, [ours, theirs], workdir)
    ours_text, theirs_text, rest = out.stdout.decode().split("----\n")
    assert rest == ""
    theirs_text = re.sub(r"\$\d+", "", theirs_text)
    assert ours_text == theirs_text
    if target == X86:  # Halide's x86 code generator completes the target with the features avx2 implies
        assert theirs_text.split("\n")[0].endswith(" target x86-64-linux-avx-avx2-f16c-fma-sse41")
    return {r.split()[0]: r for r in theirs_text.splitlines()[1:]}


def _compiled_rows(f: hl.Func, args: list, target: str, tmp_path: Path) -> dict[str, str]:
    """`_same_rows` for `pitchfork.compile(f, args).object_file()` beside Halide's
    `compile_to_static_library` of the same Func."""
    prog = pitchfork.compile(f, args, target=target, name="meta_pf", fallback=False)
    ours = prog.object_file(tmp_path / "meta_pf.o")
    f.compile_to_static_library(str(tmp_path / "meta_hl"), args, "meta_hl", hl.Target(target))
    return _same_rows(target, ours, tmp_path / "meta_hl.a", tmp_path)


@pytest.mark.parametrize("estimates", [True, False])
@pytest.mark.parametrize("target", [X86, pytest.param(ARM_FP16, marks=[QEMU, pytest.mark.qemu])])
def test_metadata_is_halides(target: str, estimates: bool, tmp_path: Path) -> None:
    """Every field of our metadata equals Halide's, with and without ranges / defaults / estimates."""
    rows = _compiled_rows(*_pipeline(estimates), target, tmp_path)
    assert len(rows) == 10  # nine arguments and the output
    if not estimates:  # nothing set: every pointer null, buffers' arrays of nulls as Halide writes them
        assert all("def=null min=null max=null estimate=null" in r for r in rows.values())
        assert "min0=null extent0=null min1=null extent1=null" in rows["inp"]
        return
    # what the comparison covers, read from Halide's side (little-endian bytes of the value)
    assert "def=null min=9c00000000000000 max=6400000000000000 estimate=null" in rows["p8"]
    assert "def=0500000000000000 min=f9ffffff00000000 max=0a00000000000000 estimate=0300000000000000" in rows["p32"]
    assert "def=null min=null max=null estimate=null" in rows["pu8"]
    assert "estimate=409c000000000000" in rows["pu16"]
    assert "min=000020c000000000 max=0000604000000000 estimate=0000403f00000000" in rows["pf"]
    assert "min=00be000000000000 max=8040000000000000 estimate=0038000000000000" in rows["ph"]
    assert "def=null min=null max=null estimate=null buffer_estimates=null" in rows["ph2"]
    assert "min0=0 extent0=64 min1=-3 extent1=17" in rows["inp"]
    assert "min0=null extent0=null" in rows["in2"]
    assert "min0=0 extent0=64 min1=null extent1=null" in rows["meta_out"]


GEN = '''
import halide as hl

@hl.generator(name="meta_gen")
class MetaGen:
    input = hl.InputBuffer(hl.UInt(8), 2)
    k = hl.InputScalar(hl.Int(32))
    w = hl.InputScalar(hl.Float(32))
    output = hl.OutputBuffer(hl.UInt(8), 2)

    def generate(self):
        x, y = hl.Var("x"), hl.Var("y")
        v = hl.cast(hl.Float(32), self.input[x, y] + self.k) * self.w
        self.output[x, y] = hl.cast(hl.UInt(8), hl.clamp(v, 0.0, 255.0))
        self.input.set_estimates([(0, 64), (-2, 32)])  # as Halide's apps give their autoschedulers
        self.k.set_estimate(3)
        self.w.set_estimate(0.5)
        self.output.set_estimates([(0, 64), (0, 32)])
        self.output.vectorize(x, 8)
'''


def test_generator_estimates_through_the_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A generator's set_estimate(s) (Halide's apps' way of feeding the autoschedulers) reach our
    library built by Halide's generator command line as they reach Halide's own."""
    gen = tmp_path / "gen_meta.py"
    gen.write_text(GEN)
    rc = cli_main(["compile", str(gen), "-g", "meta_gen", "-o", str(tmp_path / "ours"), "-e",
                   "static_library,c_header", "-f", "meta_gen_pf", f"target={X86}"])
    err = capsys.readouterr().err
    assert rc == 0 and "warning" not in err, err
    theirs = halide_library(str(gen), "meta_gen", X86, "meta_gen_hl", tmp_path)
    rows = _same_rows(X86, tmp_path / "ours" / "meta_gen_pf.a", theirs, tmp_path)
    assert "min0=0 extent0=64 min1=-2 extent1=32" in rows["input"]
    assert "def=null min=null max=null estimate=0300000000000000" in rows["k"]
    assert "estimate=0000003f00000000" in rows["w"]
    assert "min0=0 extent0=64 min1=0 extent1=32" in rows["output"]


def test_wide_and_bool_params_tuple_output(tmp_path: Path) -> None:
    """uint64 (top bit set) / int64 (negative) / bool Params and a Tuple output's two buffers, on x86."""
    x = hl.Var("x")
    inp = hl.ImageParam(hl.UInt(8), 1, "inp")
    pu64, pi64, pb = hl.Param(hl.UInt(64), "pu64"), hl.Param(hl.Int(64), "pi64"), hl.Param(hl.Bool(), "pb")
    pu64.set_estimate(0xFFFF_FFFF_FFFF_FFF0)
    pi64.set_range(-(1 << 40), 1 << 41)
    pb.set_estimate(True)
    t = hl.Func("meta_tuple")
    v = hl.cast(hl.UInt(64), inp[x]) + pu64 + hl.cast(hl.UInt(64), pi64)
    t[x] = (hl.cast(hl.UInt(8), v), hl.select(pb, inp[x], hl.cast(hl.UInt(8), 1)))
    t.set_estimate(x, 4, 100)
    rows = _compiled_rows(t, [inp, pu64, pi64, pb], X86, tmp_path)
    assert "estimate=f0ffffffffffffff" in rows["pu64"]
    assert "min=0000000000ffffff max=0000000000020000" in rows["pi64"]
    assert "estimate=0100000000000000" in rows["pb"]
    assert "min0=4 extent0=100" in rows["meta_tuple.0"] and "min0=4 extent0=100" in rows["meta_tuple.1"]


@pytest.mark.parametrize("target", ["hexagon-32-noos-hvx-hvx_128", "hexagon-32-noos-hvx-hvx_128-hvx_v66",
                                    "arm-64-linux-arm_dot_prod", "x86-64-linux-sse41", "x86-64-linux-avx2-fma"])
def test_target_string_is_halides(target: str, tmp_path: Path) -> None:
    """The metadata's target string, read from Halide's own LLVM assembly for the target (hvx128
    included, where the metadata driver is not run): x86 completed with implied features, others as given."""
    x, inp, f = hl.Var("x"), hl.ImageParam(hl.UInt(8), 1, "inp"), hl.Func("f")
    f[x] = inp[x] + 1
    f.compile_to_llvm_assembly(str(tmp_path / "f.ll"), [inp], "f", hl.Target(target))
    ll = (tmp_path / "f.ll").read_text()
    m = re.search(r"@f_metadata_storage = private constant %struct.halide_filter_metadata_t "
                  r"\{ i32 1, i32 \d+, ptr @[\w.]+, ptr (@[\w.]+)", ll)
    assert m is not None
    s = re.search(re.escape(m.group(1)) + r' = private constant \[\d+ x i8\] c"([^"\\]*)', ll)
    assert s is not None and s.group(1) == codegen_target_string(target)
