"""PITCHFORK: lift integer vector code to FPIR and select fixed-point instructions per ISA.

`pitchfork.compile(func, args, target, isel)` compiles a Halide pipeline (see pitchfork/api.py);
`pitchfork.selection.lift`, `pitchfork.selection.lower` work on single FPIR terms.
"""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    # `pitchfork.compile` is pitchfork.api.compile itself, imported on first use: importing the package
    # (as every `pitchfork` command does) must not load Halide and LLVM.
    if name == "compile":
        from pitchfork.api import compile

        return compile
    raise AttributeError(f"module 'pitchfork' has no attribute {name!r}")
