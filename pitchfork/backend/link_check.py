"""Compile-time check that every function a compiled kernel calls will exist where it runs.

LLVM lowers some IR to library calls of its own choosing (on Hexagon: float square root to
`__hexagon_fast2_sqrtf`, float division to `__hexagon_divsf3`, ...). The bare-metal Hexagon harness
(pitchfork/emit/harness.py) defines only a few C functions, so such a kernel would compile, then fail
to link at its first call. `undefined_symbols` reads the kernel's object file (the one
`pitchfork.compile` emits; `undefined_calls` reads assembly the same way) and names every symbol it
refers to that neither the module nor the harness defines; `pitchfork.compile` refuses the pipeline
with that name (a fallback to Halide at compile time, never an error at call time).
"""

from __future__ import annotations

import re

from pitchfork.backend import elf

#: what the Hexagon harness defines (pitchfork/emit/harness.py's C source)
HEXAGON_HARNESS = frozenset({
    "memcpy", "memmove", "memset", "malloc", "free", "__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes",
    "__hexagon_udivdi3", "__hexagon_umoddi3", "__hexagon_divdi3", "__hexagon_moddi3", "__hexagon_udivsi3",
    "__hexagon_umodsi3", "__hexagon_divsi3", "__hexagon_modsi3",
})
_CALL = re.compile(r"\b(?:call|jump)\s+([A-Za-z_.$][\w.$]*)")
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):", re.M)


def undefined_calls(asm: str, target: str) -> list[str]:
    """Symbols `asm` calls that nothing defines on `target`'s harness (only hvx128 is checked: on x86
    the JIT resolves the process's C library, on arm64 the harness links libc and libm)."""
    if target != "hvx128":
        return []
    defined = set(_LABEL.findall(asm))
    called = {m for m in _CALL.findall(asm) if not m.startswith((".", "r")) and m != "r31"}
    return sorted(c for c in called if c not in defined and c not in HEXAGON_HARNESS)


def undefined_symbols(obj: bytes, target: str) -> list[str]:
    """Symbols the object file `obj` refers to that nothing defines on `target`'s harness (only
    hvx128 is checked, as in `undefined_calls`): the linker's view, so a data reference counts too."""
    if target != "hvx128":
        return []
    return [s for s in elf.undefined_symbols(obj) if s not in HEXAGON_HARNESS]
