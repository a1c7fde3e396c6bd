"""Halide's Python apps (python_bindings/apps: blur, erode, local_laplacian, bilateral_grid,
interpolate) ported with their algorithms and upstream CPU / HVX schedules, as a public suite: every
app compiles with PITCHFORK on x86-avx2, arm64 and hvx128 and is checked against Halide's own realize
(tests/benchmarks/apps/), and `pitchfork bench --suite apps` times it against Halide 21 on x86
(benchmarks/harness/apps_suite.py).

Each app module defines `build(isa, **options) -> App`; `APPS` lists them by name.
"""

from __future__ import annotations

from benchmarks.apps import bilateral_grid, blur, erode, interpolate, local_laplacian
from benchmarks.apps.common import App

APPS = {m.NAME: m for m in (blur, erode, local_laplacian, bilateral_grid, interpolate)}

__all__ = ["APPS", "App"]
