"""Bounds on the sizes a user can ask for, checked before any work is done.

A lane count is a promise to build vectors of that many elements: LLVM's instruction selection and
our emission grow with it (1024 lanes of u8 take ~4 s to compile; 16384 take a minute and 2 GB, and
100000 exhaust memory). No target here has registers wider than 128 bytes, and Halide schedules use
at most a few registers per vector, so MAX_LANES (8 HVX registers of u8) leaves room for every real
schedule while refusing runaways with a message instead of an out-of-memory kill.
"""

from __future__ import annotations

from pitchfork.errors import UsageError

MAX_LANES = 1024


def check_lanes(lanes: int, what: str = "lanes") -> int:
    """`lanes` if 1 <= lanes <= MAX_LANES, else UsageError naming `what`."""
    if isinstance(lanes, bool) or not isinstance(lanes, int):
        raise UsageError(f"{what} must be an integer, got {lanes!r}")
    if lanes < 1:
        raise UsageError(f"{what} must be positive, got {lanes}")
    if lanes > MAX_LANES:
        raise UsageError(f"{what} = {lanes} is more than PITCHFORK supports ({MAX_LANES})")
    return lanes
