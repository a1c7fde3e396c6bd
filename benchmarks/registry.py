"""The 16 SPEC benchmarks by name: `get(name)` imports `benchmarks.<name>` and returns its `BENCHMARK`.

`NAMES` is the SPEC's order. A module that does not exist yet (or fails to import) is reported by
`get` with a clear error; `available()` lists the ones that import.
"""

from __future__ import annotations

import importlib

from benchmarks.common import Benchmark

NAMES: tuple[str, ...] = (
    "add", "mul", "average_pool", "fully_connected", "conv3x3a16", "conv3x3a32", "depthwise_conv",
    "l2norm", "softmax", "matmul", "camera_pipe", "blur3x3", "gaussian3x3", "gaussian5x5",
    "gaussian7x7", "sobel3x3",
)


class UnknownBenchmark(KeyError):
    pass


def get(name: str) -> Benchmark:
    if name not in NAMES:
        raise UnknownBenchmark(f"unknown benchmark {name!r} (known: {', '.join(NAMES)})")
    module = importlib.import_module(f"benchmarks.{name}")
    return module.BENCHMARK


def available() -> list[str]:
    out = []
    for n in NAMES:
        try:
            get(n)
        except ImportError:
            continue
        out.append(n)
    return out
