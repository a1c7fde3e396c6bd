"""examples/aot builds and runs from a copy, as a user would: `make` compiles the generator with
PITCHFORK and with Halide, links both into the C++ application and runs it (x86)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None or shutil.which("g++") is None, reason="needs make and g++")
def test_aot_example_builds_and_runs(tmp_path: Path) -> None:
    work = tmp_path / "aot"
    shutil.copytree(ROOT / "examples" / "aot", work)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    p = subprocess.run(["make", f"PYTHON={sys.executable}", "CALLS=2"], cwd=work, env=env, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "PITCHFORK and Halide outputs are identical" in p.stdout
    assert "wrong output type: error -3 (PITCHFORK), -3 (Halide)" in p.stdout
    assert {f.name for f in (work / "build").iterdir()} >= {"sobel_pitchfork.a", "sobel_pitchfork.h", "sobel_halide.a",
                                                         "app"}
