"""Compile-time check that every function a compiled kernel calls will exist where it runs.

LLVM lowers some IR to library calls of its own choosing (on Hexagon: float square root to
`__hexagon_fast2_sqrtf`, float division to `__hexagon_divsf3`, ...). The bare-metal Hexagon harness
(pitchfork/emit/harness.py) defines only a few C functions, so such a kernel would compile, then fail
to link at its first call. `undefined_symbols` reads the kernel's object file (the one
`pitchfork.compile` emits; `undefined_calls` reads assembly the same way) and names every symbol it
refers to that neither the module nor the harness defines; `pitchfork.compile` refuses the pipeline
with that name (a fallback to Halide at compile time, never an error at call time).

On x86 the kernel runs in this process (MCJIT, pitchfork/backend/run.py): RuntimeDyld resolves an
undefined symbol from the symbols the engine was given (Halide's runtime entry points,
halide_runtime.RUNTIME_SYMBOLS) or from the process's global scope (dlopen(NULL): the C library and
libm Python links). A symbol found in neither was bound to address 0, and the kernel crashed at its
first call: LLVM's own library helpers (compiler-rt / libgcc's `__truncdfhf2`, `__extendhfsf2`,
`__fixunsdfti`, ...) are in no library this process loads globally, so those are refused here too.
On arm64 the qemu harness links the object statically with the cross toolchain's libc, libm and
libgcc, which define every helper LLVM's AArch64 backend calls: not checked.
"""

from __future__ import annotations

import ctypes
import functools
import re

from pitchfork.backend import elf
from pitchfork.backend.halide_runtime import RUNTIME_SYMBOLS

#: what the Hexagon harness defines (pitchfork/emit/harness.py's C source)
HEXAGON_HARNESS = frozenset({
    "memcpy", "memmove", "memset", "malloc", "free", "__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes",
    "__hexagon_udivdi3", "__hexagon_umoddi3", "__hexagon_divdi3", "__hexagon_moddi3", "__hexagon_udivsi3",
    "__hexagon_umodsi3", "__hexagon_divsi3", "__hexagon_modsi3",
})
_CALL = re.compile(r"\b(?:call|jump)\s+([A-Za-z_.$][\w.$]*)")
_LABEL = re.compile(r"^([A-Za-z_.$][\w.$]*):", re.M)


def undefined_calls(asm: str, target: str) -> list[str]:
    """Symbols Hexagon assembly `asm` calls that nothing defines on the harness (only hvx128 emits
    assembly at compile time; other targets are checked from the object, `undefined_symbols`)."""
    if target != "hvx128":
        return []
    defined = set(_LABEL.findall(asm))
    called = {m for m in _CALL.findall(asm) if not m.startswith((".", "r")) and m != "r31"}
    return sorted(c for c in called if c not in defined and c not in HEXAGON_HARNESS)


@functools.cache
def _process_scope() -> ctypes.CDLL:
    """dlopen(NULL): the global scope the x86 JIT's symbol lookup searches (LLVM's
    DynamicLibrary::LoadLibraryPermanently(nullptr), which creating the engine does)."""
    return ctypes.CDLL(None)


def in_process(name: str) -> bool:
    """Whether the x86 JIT resolves `name`: one of Halide's runtime entry points it is given, or a
    symbol of the process's global scope."""
    if name in RUNTIME_SYMBOLS:
        return True
    try:
        getattr(_process_scope(), name)
    except AttributeError:
        return False
    return True


def undefined_symbols(obj: bytes, target: str) -> list[str]:
    """Symbols the object file `obj` refers to that nothing defines where `target`'s code runs: the
    Hexagon harness (hvx128) or the x86 JIT's process (`in_process`); arm64 is not checked (module
    docstring). The linker's view, so a data reference counts too."""
    if target == "hvx128":
        return [s for s in elf.undefined_symbols(obj) if s not in HEXAGON_HARNESS]
    if target == "x86-avx2":
        return [s for s in elf.undefined_symbols(obj) if not in_process(s)]
    return []


def missing_reason(missing: list[str], target: str) -> str:
    """The one-line fallback reason for a kernel that calls the symbols `missing` on `target`."""
    where = ("no C library on the Hexagon harness" if target == "hvx128"
             else "neither this process nor Halide's runtime defines them: the JIT would call address 0")
    return f"the kernel calls {', '.join(missing)}, which {target} code cannot call here ({where})"
