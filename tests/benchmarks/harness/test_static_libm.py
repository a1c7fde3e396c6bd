"""The floorf/ceilf/truncf the bare-metal Hexagon counting harness supplies to Halide 21's code
(`static.FREESTANDING_LIBM`) agree bit for bit with the host's libm: compiled here with the host C
compiler and run on special values plus a spread of random bit patterns."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from benchmarks.harness.static import FREESTANDING_LIBM

_MAIN = r"""
#include <math.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  unsigned u; long bad = 0, n = 0;
  while (scanf("%u", &u) == 1) {
    float x, a[3], b[3];
    memcpy(&x, &u, 4);
    a[0] = pf_floorf(x); b[0] = floorf(x);
    a[1] = pf_ceilf(x); b[1] = ceilf(x);
    a[2] = pf_truncf(x); b[2] = truncf(x);
    for (int k = 0; k < 3; ++k) {
      int both_nan = a[k] != a[k] && b[k] != b[k];
      if (!both_nan && memcmp(&a[k], &b[k], 4)) { if (bad < 5) printf("bad %u %d\n", u, k); ++bad; }
    }
    ++n;
  }
  printf("checked %ld bad %ld\n", n, bad);
  return bad != 0;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="no host C compiler")
def test_freestanding_rounding_matches_libm(tmp_path: Path) -> None:
    src = FREESTANDING_LIBM.replace("float floorf(", "float pf_floorf(").replace("float ceilf(", "float pf_ceilf(") \
        .replace("float truncf(", "float pf_truncf(")
    (tmp_path / "t.c").write_text(src + _MAIN)
    subprocess.run(["gcc", "-O1", "-fno-builtin", "t.c", "-o", "t", "-lm"], cwd=tmp_path, check=True)
    special = [0.0, -0.0, 0.5, -0.5, 1.0, -1.0, 1.5, -1.5, 2.5, -2.5, 0.99999994, -0.99999994, 8388607.5,
               -8388607.5, 8388608.0, 1e30, -1e30, 1e-40, -1e-40, float("inf"), float("-inf"), float("nan")]
    bits = np.concatenate([np.array(special, dtype=np.float32).view(np.uint32),
                           np.random.default_rng(0).integers(0, 2**32, 200_000, dtype=np.uint64).astype(np.uint32)])
    p = subprocess.run(["./t"], cwd=tmp_path, input=" ".join(map(str, bits.tolist())), capture_output=True, text=True)
    assert p.returncode == 0, p.stdout[-500:]
    assert f"checked {len(bits)} bad 0" in p.stdout
