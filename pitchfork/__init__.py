"""PITCHFORK: lift integer vector code to FPIR and select fixed-point instructions per ISA.

`pitchfork.compile(func, args, target, isel)` compiles a Halide pipeline (see pitchfork/api.py);
`pitchfork.selection.lift`, `pitchfork.selection.lower` work on single FPIR terms.
"""

from __future__ import annotations

from typing import Any, Optional, Sequence


def compile(pipeline_or_func: Any, args: Any, target: str = "x86-avx2", isel: str = "pitchfork",
            name: str = "pipeline", fallback: bool = True, engine: str = "greedy",
            passes: Optional[Sequence[str]] = None, disable_passes: Sequence[str] = ()) -> Any:
    from pitchfork.api import compile as _compile

    return _compile(pipeline_or_func, args, target=target, isel=isel, name=name, fallback=fallback, engine=engine,
                    passes=passes, disable_passes=disable_passes)
