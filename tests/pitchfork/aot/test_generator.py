"""Halide Python generators compiled by PITCHFORK unchanged: `compile_generator` and `pitchfork compile`.

The generators are examples/aot/sobel_generator.py (the paper's Sobel, scheduled with the target's
natural vector width; compiled with `parallel=false`, one thread) and `data/gen_params.py` (algorithm and schedule driven by
GeneratorParams, an InputScalar, and an input whose type is a GeneratorParam).
"""

from __future__ import annotations

import os
import re
import shutil
import sys
import warnings
from pathlib import Path

import halide as hl
import numpy as np
import pytest

from pitchfork.frontend.examples import sobel3x3_reference
from pitchfork.cli import main as cli_main
from pitchfork.backend.machine import _parse, _shared_machine, asm_instructions, get_target, main_vector_loop
from pitchfork.backend.run import tools_available
from pitchfork.api import PitchforkFallbackWarning
from pitchfork.codegen.loop_nest import Unsupported
from pitchfork.aot.abi import header_free_ir
from pitchfork.aot.generator import (
    GeneratorError,
    compile_generator,
    find_generator,
    header_free_outputs,
    instantiate,
    load_module,
)

DATA = Path(__file__).with_name("data")
SOBEL = Path(__file__).resolve().parents[3] / "examples" / "aot" / "sobel_generator.py"
SERIAL = {"parallel": "false"}  # its GeneratorParam: rows of tiles on one thread
PARAMS = DATA / "gen_params.py"
X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
ELF_MACHINE = {"x86-avx2": 62, "arm64": 183, "hvx128": 164}
NATURAL = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}
needs = {t: pytest.mark.skipif(not tools_available(t), reason=f"no qemu toolchain for {t}")
         for t in ("arm64", "hvx128")}
TARGETS = ["x86-avx2", pytest.param("arm64", marks=[needs["arm64"], pytest.mark.qemu]),
           pytest.param("hvx128", marks=[needs["hvx128"], pytest.mark.qemu])]

FLOAT_GEN = '''
import halide as hl

@hl.generator(name="brighten_f32")
class Brighten:
    input = hl.InputBuffer(hl.UInt(8), 2)
    output = hl.OutputBuffer(hl.UInt(8), 2)

    def generate(self):
        x, y = hl.vars("x y")
        self.output[x, y] = hl.u8(hl.min(hl.f32(self.input[x, y]) * 1.5, 255.0))
        self.output.vectorize(x, 8)
'''

# float16 arithmetic checked by require(): not compiled by PITCHFORK (float16 arithmetic is); its fallback
# reason names "require()" (the check holds: the value itself, v * 1.5)
FLOAT16_GEN = FLOAT_GEN.replace("brighten_f32", "brighten_f16").replace(
    "hl.u8(hl.min(hl.f32(self.input[x, y]) * 1.5, 255.0))",
    "hl.u8(hl.min(hl.require(v >= hl.cast(hl.Float(16), 0.0), v, v), hl.cast(hl.Float(16), 255.0)))").replace(
    "        self.output[x, y]", "        v = hl.cast(hl.Float(16), self.input[x, y]) * hl.cast(hl.Float(16), 1.5)\n"
    "        self.output[x, y]")

TWO_GENS = '''
import halide as hl

@hl.generator(name="{a}")
class First:
    input = hl.InputBuffer(hl.UInt(8), 1)
    output = hl.OutputBuffer(hl.UInt(8), 1)

    def generate(self):
        x = hl.Var("x")
        self.output[x] = self.input[x] + {k}

@hl.generator(name="{b}")
class Second:
    input = hl.InputBuffer(hl.UInt(8), 1)
    output = hl.OutputBuffer(hl.UInt(8), 1)

    def generate(self):
        x = hl.Var("x")
        self.output[x] = self.input[x] * 2
'''




def store_widths(prog) -> set[int]:
    """Lane counts of the dense vector stores to the generator's output in the captured statement
    (Halide renames a second Func `output` to `output$1`)."""
    store = re.compile(r"^\s*output(\$\d+)?\[ramp\(.*, 1, (\d+)\)\] = ")
    return {int(m.group(2)) for ln in prog.captured.text.splitlines() if (m := store.match(ln))}


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return np.random.default_rng(11).integers(0, 256, (12, 256), dtype=np.uint8)


# --------------------------------------------------------------------------------------------------
# compile_generator


@pytest.mark.parametrize("target", TARGETS)
def test_sobel_generator_end_to_end(target: str, image: np.ndarray) -> None:
    prog = compile_generator(SOBEL, "Sobel", target, params=SERIAL)
    assert not prog.is_fallback and prog.name == "sobel"
    assert np.array_equal(prog(image), sobel3x3_reference(image))
    # the generator asked for the target's natural vector size: the stored vectors have that width
    assert store_widths(prog) == {NATURAL[target]}
    assert sum(prog.stats.rules_fired.values()) > 0


def test_generator_lookup_forms() -> None:
    by_class = find_generator(SOBEL, "Sobel")
    assert find_generator(SOBEL, "sobel") is by_class  # the registered name
    assert find_generator(SOBEL) is by_class  # the only generator of the file
    assert find_generator(load_module(SOBEL), "Sobel") is by_class  # a module object
    assert find_generator(str(SOBEL), "Sobel") is by_class  # loaded once per file content
    prog = compile_generator(by_class, target="x86-avx2", params=SERIAL, name="sobel_cls")  # the class itself
    assert prog.name == "sobel_cls"


def test_instantiate_gives_pipeline_and_arguments() -> None:
    gp = instantiate(find_generator(PARAMS), "arm64", {"input.type": "uint8"})
    assert gp.name == "scaled_avg" and gp.outputs == ["output"]
    assert [type(a) for a in gp.arguments] == [hl.ImageParam, hl.Param]
    assert [a.name() for a in gp.arguments] == ["input", "gain"]
    assert isinstance(gp.pipeline, hl.Pipeline)


def _params_reference(params: dict, a: hl.Buffer, gain: int, size: list[int]) -> np.ndarray:
    gp = instantiate(find_generator(PARAMS), "x86-avx2", params)
    gp.arguments[0].set(a)
    gp.arguments[1].set(gain)
    return np.asarray(gp.pipeline.realize(size, X86)).copy()


PARAM_SETS = [
    {"input.type": "uint8"},
    {"input.type": "uint8", "lanes": "8", "shift": "3", "use_fpir": "true"},
    {"input.type": "uint8", "tail": "predicate", "shift": 0},
    {"input.type": "uint8", "tail": "shift", "use_fpir": "false", "shift": "7"},
]


@pytest.mark.parametrize("target", ["x86-avx2", pytest.param("arm64", marks=[needs["arm64"], pytest.mark.qemu])])
@pytest.mark.parametrize("params", PARAM_SETS, ids=lambda p: ",".join(f"{k}={v}" for k, v in p.items()))
def test_generator_params(target: str, params: dict) -> None:
    rng = np.random.default_rng(5)
    arr = rng.integers(0, 256, (5, 42), dtype=np.uint8)
    buf = hl.Buffer(arr)
    buf.set_min([-1, 0])  # the generator reads x - 1 .. x + 1
    size = [40, 5]  # odd for every vector width: tails run
    prog = compile_generator(PARAMS, None, target, params=params)
    got = prog(buf, 173, size=size)
    assert np.array_equal(got, _params_reference(params, buf, 173, size))


def test_generator_param_changes_vector_width() -> None:
    widths = {}
    for lanes in ("8", "32"):
        prog = compile_generator(PARAMS, "ScaledAverage", "arm64", params={"input.type": "uint8", "lanes": lanes})
        widths[lanes] = store_widths(prog)
    assert widths == {"8": {8}, "32": {32}}


def test_fpir_param_gives_same_values_and_passes_through() -> None:
    progs = {f: compile_generator(PARAMS, None, "x86-avx2", params={"input.type": "uint8", "use_fpir": f})
             for f in ("true", "false")}
    assert "rounding_halving_add(" in progs["true"].captured.text
    assert "rounding_halving_add(" not in progs["false"].captured.text
    arr = np.random.default_rng(9).integers(0, 256, (3, 66), dtype=np.uint8)
    buf = hl.Buffer(arr)
    buf.set_min([-1, 0])
    a, b = (progs[f](buf, 99, size=[64, 3]) for f in ("true", "false"))
    assert np.array_equal(a, b)


@pytest.mark.parametrize(("params", "match"), [
    ({"input.type": "uint8", "no_such_param": 1}, "no_such_param"),
    ({"input.type": "uint8", "use_fpir": "maybe"}, "bool"),
    ({"input.type": "uint8", "lanes": "many"}, "lanes|many|invalid"),
    ({}, "input"),  # the input's type is left to a GeneratorParam
])
def test_bad_generator_params(params: dict, match: str) -> None:
    with pytest.raises(GeneratorError, match=match):
        compile_generator(PARAMS, None, "x86-avx2", params=params)


def test_unknown_generator_and_file() -> None:
    with pytest.raises(GeneratorError, match=r"no generator 'Blur'.*Sobel"):
        find_generator(SOBEL, "Blur")
    with pytest.raises(GeneratorError, match="does not exist"):
        find_generator(DATA / "gen_missing.py")
    with pytest.raises(GeneratorError, match="no generator file or module"):
        find_generator("pitchfork_no_such_module_xyz")


def test_two_generators_need_a_name_and_reload_after_edit(tmp_path: Path) -> None:
    path = tmp_path / "gen_two.py"
    path.write_text(TWO_GENS.format(a="pf_first_a", b="pf_second_a", k=1))
    with pytest.raises(GeneratorError, match="2 generators"):
        find_generator(path)
    first = find_generator(path, "First")
    assert first._halide_registered_name == "pf_first_a"
    assert find_generator(path, "pf_second_a") is find_generator(path, "Second")
    # Edit the file (same registered names, new algorithm): reloading must not hit Halide's
    # "The Generator name ... is already in use".
    path.write_text(TWO_GENS.format(a="pf_first_a", b="pf_second_a", k=5))
    prog = compile_generator(path, "First", "x86-avx2")
    out = prog(np.arange(16, dtype=np.uint8))
    assert np.array_equal(out, np.arange(16, dtype=np.uint8) + 5)


def test_same_size_edit_within_one_second_reloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Python's source loader trusts a cached .pyc whose recorded mtime (whole seconds) and size match the
    # file; an edit of the same length in the same second must still run the new code (CI writes .pyc files).
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    path = tmp_path / "gen_pyc.py"
    path.write_text(TWO_GENS.format(a="pf_first_c", b="pf_second_c", k=1))
    find_generator(path, "First")
    before = path.stat()
    path.write_text(TWO_GENS.format(a="pf_first_c", b="pf_second_c", k=7))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    prog = compile_generator(path, "First", "x86-avx2")
    assert np.array_equal(prog(np.arange(16, dtype=np.uint8)), np.arange(16, dtype=np.uint8) + 7)
    assert not (tmp_path / "__pycache__").exists()  # nothing written beside the user's file


def test_syntax_error_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "gen_bad.py"
    path.write_text("import halide as hl\n\nx = (1 +\n")
    with pytest.raises(GeneratorError, match=r"gen_bad\.py:3:\d+: SyntaxError"):
        find_generator(path)


def test_float32_generator_compiles(tmp_path: Path) -> None:
    path = tmp_path / "gen_float.py"
    path.write_text(FLOAT_GEN)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PitchforkFallbackWarning)
        prog = compile_generator(path, None, "x86-avx2", fallback=False)
    a = np.arange(40, dtype=np.uint8).reshape(2, 20) * 6
    assert np.array_equal(prog(a), np.minimum(a.astype(np.float32) * 1.5, 255).astype(np.uint8))


def test_float16_generator_falls_back(tmp_path: Path) -> None:
    path = tmp_path / "gen_float16.py"
    path.write_text(FLOAT16_GEN)
    with pytest.warns(PitchforkFallbackWarning, match="require"):
        prog = compile_generator(path, None, "x86-avx2")
    a = np.arange(40, dtype=np.uint8).reshape(2, 20) * 6
    assert np.array_equal(prog(a), np.minimum(a.astype(np.float32) * 1.5, 255).astype(np.uint8))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(Unsupported):
            compile_generator(path, None, "x86-avx2", fallback=False)


# --------------------------------------------------------------------------------------------------
# Header-free IR


@pytest.mark.parametrize("target", ["x86-avx2", "arm64", "hvx128"])
def test_header_free_outputs_reproduce_assembly(target: str) -> None:
    prog = compile_generator(SOBEL, "Sobel", target, params=SERIAL)
    text, asm, obj = header_free_outputs(prog)
    for noise in ("attributes #", "source_filename", "; ModuleID", "!llvm", "#0", "; Function Attrs"):
        assert noise not in text
    assert not any(line.startswith("!") for line in text.splitlines())
    t = get_target(target)
    assert f'target triple = "{t.triple}"' in text and "target datalayout" in text
    assert "define void @sobel(ptr" in text and "%input.stride.1" in text
    # what llc -O3 does with the file: parse, no further optimisation, emit
    again = _shared_machine(target, 3).emit_assembly(_parse(text, t))
    assert asm_instructions(again, target=target) == asm_instructions(asm, target=target)
    assert obj[:4] == b"\x7fELF" and int.from_bytes(obj[18:20], "little") == ELF_MACHINE[target]
    # same instructions selected as the in-memory module (only scheduling ties may differ)
    n_mem = len(main_vector_loop(prog.assembly(), "sobel", target=target).instructions)
    n_file = len(main_vector_loop(asm, "sobel", target=target).instructions)
    assert abs(n_mem - n_file) <= 2


def test_header_free_ir_strips_only_noise() -> None:
    src = """; ModuleID = '<string>'
source_filename = "<string>"
target datalayout = "e-m:e"
target triple = "aarch64-unknown-linux-gnu"

; Function Attrs: nounwind
define void @f(ptr %p) local_unnamed_addr #0 {
entry:
  %v = tail call i32 asm "", "=r,0"(i32 16) #1
  br label %l, !llvm.loop !0
l:
  ret void
}

declare i32 @llvm.smax.i32(i32, i32) #2

attributes #0 = { nounwind }
attributes #1 = { nounwind }
!0 = distinct !{!0, !1}
!1 = !{!"llvm.loop.isvectorized", i32 1}
"""
    out = header_free_ir(src)
    assert out == """target datalayout = "e-m:e"
target triple = "aarch64-unknown-linux-gnu"

define void @f(ptr %p) local_unnamed_addr {
entry:
  %v = tail call i32 asm "", "=r,0"(i32 16)
  br label %l
l:
  ret void
}

declare i32 @llvm.smax.i32(i32, i32)
"""


# --------------------------------------------------------------------------------------------------
# pitchfork compile


@pytest.mark.parametrize("target", ["arm64", "hvx128"])
def test_cli_compile_sobel(target: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main(["compile", f"{SOBEL}:Sobel", "--target", target, "-o", str(tmp_path / "out"), "parallel=false"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    files = {p.name for p in (tmp_path / "out").iterdir()}
    assert files == {"sobel.o", "sobel.a", "sobel.h", "sobel.ll", "sobel.s"}
    assert f"sobel: {target}, PITCHFORK, isel=pitchfork" in out.out
    assert "rules fired:" in out.out and "selection" in out.out and "LLVM" in out.out
    assert "llc -O3 -mtriple=" in out.out
    assert out.err == ""
    obj = (tmp_path / "out" / "sobel.o").read_bytes()
    assert int.from_bytes(obj[18:20], "little") == ELF_MACHINE[target]
    ll = (tmp_path / "out" / "sobel.ll").read_text()
    # the Halide-ABI entry point and the kernel it calls (internal), pitchfork/aot/abi.py
    assert "attributes #" not in ll and "define i32 @sobel(ptr" in ll
    assert "define internal void @sobel.pitchfork_kernel(" in ll
    assert "int sobel(struct halide_buffer_t *_input_buffer, struct halide_buffer_t *_output_buffer);" in \
        (tmp_path / "out" / "sobel.h").read_text()
    asm = (tmp_path / "out" / "sobel.s").read_text()
    fig3 = {"arm64": "umlal", "hvx128": "vabsdiff"}[target]
    assert fig3 in "\n".join(main_vector_loop(asm, "sobel.pitchfork_kernel", target=target).instructions)


def test_cli_params_isel_name_rules(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main(["compile", str(PARAMS), "-t", "x86-avx2", "--isel", "llvm", "-p", "input.type=uint8",
                   "-p", "lanes=16", "--name", "avg16", "--emit", "ll,s", "-o", str(tmp_path), "--rules"])
    out = capsys.readouterr()
    assert rc == 0, out.err
    assert {p.name for p in tmp_path.iterdir()} == {"avg16.ll", "avg16.s"}
    assert "isel=llvm" in out.out and "rules fired: 0" in out.out
    rc = cli_main(["compile", f"{PARAMS}:scaled_avg", "-p", "input.type=uint8", "-o", str(tmp_path), "--rules"])
    out = capsys.readouterr()
    assert rc == 0 and "scaled_avg.o" in out.out
    assert any(line.startswith("    ") and line.split()[0].isdigit() for line in out.out.splitlines())


def test_cli_fallback_warns_and_writes_halide_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = tmp_path / "gen_float16.py"
    gen.write_text(FLOAT16_GEN)
    rc = cli_main(["compile", str(gen), "-o", str(tmp_path / "out")])
    out = capsys.readouterr()
    assert rc == 0
    assert "warning: PITCHFORK cannot compile brighten_f16" in out.err and "require()" in out.err
    assert "fallback reason:" in out.out
    assert {p.name for p in (tmp_path / "out").iterdir()} == {f"brighten_f16.{k}" for k in ("o", "a", "h", "ll", "s")}
    rc = cli_main(["compile", str(gen), "--no-fallback", "-o", str(tmp_path / "out2")])
    out = capsys.readouterr()
    assert rc == 3 and "require()" in out.err and not (tmp_path / "out2").exists()


@pytest.mark.parametrize(("argv", "code", "message"), [
    (["compile", "no_such_gen.py"], 4, "does not exist"),
    (["compile", f"{SOBEL}:Nope"], 6, "no generator 'Nope'"),
    (["compile", str(SOBEL), "-p", "lanes"], 2, "NAME=VALUE"),
    (["compile", str(SOBEL), "--emit", "o,bc"], 2, "cannot emit bc"),
])
def test_cli_errors(argv: list[str], code: int, message: str, tmp_path: Path,
                    capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli_main([*argv, "-o", str(tmp_path)])  # exit codes: docs/ERRORS.md
    assert rc == code and message in capsys.readouterr().err


def test_generator_file_runs_with_plain_halide(tmp_path: Path) -> None:
    """The example generator is an ordinary Halide generator: Halide's own generator driver builds it."""
    import subprocess
    import sys

    shutil.copy(SOBEL, tmp_path / "sobel_generator.py")
    r = subprocess.run([sys.executable, "sobel_generator.py", "-g", "sobel", "-o", ".", "-e", "object",
                        "target=arm-64-linux-no_runtime", "parallel=false"], check=False, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "sobel.o").exists()
