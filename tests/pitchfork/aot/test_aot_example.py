"""examples/aot as a user runs it: the Sobel generator (with a parallel schedule) compiled by
`pitchfork compile` with Halide's own generator command line (`-g sobel -f sobel_pitchfork -o DIR -e
static_library,c_header target=...`) and by Halide's `hl.main()` with the same words, both libraries
linked into the example's C driver (main.c), which checks the outputs are identical and a bad call
gets the same error code. AArch64 under qemu-aarch64 (Halide target string with arm_dot_prod) and
x86 on the host. Our library carries Halide's runtime for the parallel loop beside Halide's own."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pitchfork.backend.run import tools_available

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "examples" / "aot"


def _make(tmp_path: Path, *settings: str) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "aot"
    shutil.copytree(EXAMPLE, work, ignore=shutil.ignore_patterns("build"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "HL_NUM_THREADS": "2"}
    return subprocess.run(["make", "-s", "BUILD=build", "CALLS=1", *settings], cwd=work, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _check(p: subprocess.CompletedProcess[str], lib: Path) -> None:
    assert p.returncode == 0, p.stdout + p.stderr
    assert "PITCHFORK and Halide outputs are identical" in p.stdout, p.stdout
    assert "wrong output type: error -3 (PITCHFORK), -3 (Halide)" in p.stdout, p.stdout
    members = subprocess.run(["ar", "t", str(lib)], capture_output=True, text=True, check=True).stdout.split()
    assert members == ["sobel_pitchfork.o", "halide_runtime.o"]  # the parallel loop's runtime


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64") or shutil.which("make") is None,
                    reason="needs make, aarch64 gcc + qemu-aarch64")
def test_halide_command_line_arm_dot_prod_links_beside_halide(tmp_path: Path) -> None:
    p = _make(tmp_path, "HL_TARGET=arm-64-linux-arm_dot_prod", "CC=aarch64-linux-gnu-gcc", "LDFLAGS=-static",
              "RUN=qemu-aarch64")
    _check(p, tmp_path / "aot" / "build" / "sobel_pitchfork.a")


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("cc") is None, reason="needs make and cc")
def test_halide_command_line_x86_links_beside_halide(tmp_path: Path) -> None:
    p = _make(tmp_path, "HL_TARGET=x86-64-linux-avx2-fma-sse41")
    _check(p, tmp_path / "aot" / "build" / "sobel_pitchfork.a")


@pytest.mark.skipif(shutil.which("cc") is None, reason="needs cc")
def test_no_runtime_and_a_standalone_runtime(tmp_path: Path) -> None:
    """`target=...-no_runtime` leaves Halide's runtime out of our library (as out of Halide's), and
    `pitchfork compile -r NAME` writes it, as Halide's -r does: the three link into the example."""
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    target = "target=x86-64-linux-avx2-fma-sse41-no_runtime"
    gen = str(EXAMPLE / "sobel_generator.py")
    for cmd in ([sys.executable, "-m", "pitchfork", "compile", gen, "-g", "sobel", "-f", "sobel_pitchfork", "-o",
                 str(tmp_path), "-e", "static_library,c_header", target],
                [sys.executable, gen, "-g", "sobel", "-f", "sobel_halide", "-o", str(tmp_path), "-e",
                 "static_library,c_header", target],
                [sys.executable, "-m", "pitchfork", "compile", "-r", "halide_rt", "-o", str(tmp_path), target]):
        p = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False, timeout=600)
        assert p.returncode == 0, p.stderr
    members = subprocess.run(["ar", "t", str(tmp_path / "sobel_pitchfork.a")], capture_output=True, text=True,
                             check=True).stdout.split()
    assert members == ["sobel_pitchfork.o"]
    import halide

    include = Path(halide.__file__).parent / "include"
    app = tmp_path / "app"
    p = subprocess.run(["cc", "-std=gnu11", "-O1", f"-I{include}", f"-I{tmp_path}", str(EXAMPLE / "main.c"),
                        str(tmp_path / "sobel_pitchfork.a"), str(tmp_path / "sobel_halide.a"),
                        str(tmp_path / "halide_rt.a"), "-lpthread", "-ldl", "-lm", "-o", str(app)],
                       capture_output=True, text=True, check=False)
    assert p.returncode == 0, p.stderr
    run = subprocess.run([str(app), "1"], capture_output=True, text=True, check=False, timeout=120)
    assert run.returncode == 0 and "outputs are identical" in run.stdout, run.stdout + run.stderr
