"""The symbol table of an ELF relocatable object, read without LLVM or binutils.

`pitchfork.backend.machine` emits one object file per module at compile time and produces assembly
only when asked for it; the compile-time checks that used to read the assembly (a call to an
`llvm.*` symbol LLVM did not know, a call the Hexagon harness cannot link) read the object's
undefined symbols instead. Only what those checks need is here: the names of the symbols of the
`.symtab` section, each with whether the object defines it. ELF32 (Hexagon) and ELF64 (x86-64,
AArch64), little-endian, as every target of pitchfork.backend.machine emits.

Invariant: `symbols(obj)` lists every named symbol-table entry of the object in table order; a
symbol is undefined exactly when its section index is SHN_UNDEF (0), as `nm` prints `U`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

__all__ = ["ElfError", "Symbol", "symbols", "undefined_symbols"]

_SHT_SYMTAB = 2
_SHN_UNDEF = 0


class ElfError(ValueError):
    """The bytes are not a little-endian ELF object this reader understands."""


@dataclass(frozen=True, slots=True)
class Symbol:
    """One named entry of the symbol table: `defined` is False for SHN_UNDEF (a reference the linker
    must resolve elsewhere); `binding` is ELF's STB_* value (0 local, 1 global, 2 weak)."""

    name: str
    defined: bool
    binding: int


def symbols(obj: bytes) -> list[Symbol]:
    """Every named symbol of `obj`'s `.symtab`, in table order."""
    if obj[:4] != b"\x7fELF":
        raise ElfError("not an ELF file")
    cls, data = obj[4], obj[5]
    if data != 1:
        raise ElfError("not a little-endian ELF file")
    if cls == 1:  # ELF32
        shoff, = struct.unpack_from("<I", obj, 0x20)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x2E)
        sh_fmt, sym_fmt = "<IIIIIIIIII", "<IIIBBH"
    elif cls == 2:  # ELF64
        shoff, = struct.unpack_from("<Q", obj, 0x28)
        shentsize, shnum = struct.unpack_from("<HH", obj, 0x3A)
        sh_fmt, sym_fmt = "<IIQQQQIIQQ", "<IBBHQQ"
    else:
        raise ElfError(f"unknown ELF class {cls}")
    sections = [struct.unpack_from(sh_fmt, obj, shoff + i * shentsize) for i in range(shnum)]
    out: list[Symbol] = []
    for sh in sections:
        if sh[1] != _SHT_SYMTAB:
            continue
        offset, size, link, entsize = sh[4], sh[5], sh[6], sh[9]
        strtab_off = sections[link][4]
        for k in range(size // entsize):
            fields = struct.unpack_from(sym_fmt, obj, offset + k * entsize)
            if cls == 1:
                name_off, info, shndx = fields[0], fields[3], fields[5]
            else:
                name_off, info, shndx = fields[0], fields[1], fields[3]
            if not name_off:
                continue
            end = obj.index(b"\0", strtab_off + name_off)
            out.append(Symbol(obj[strtab_off + name_off:end].decode(), shndx != _SHN_UNDEF, info >> 4))
    return out


def undefined_symbols(obj: bytes) -> list[str]:
    """The names `obj` refers to without defining them (sorted, each once)."""
    return sorted({s.name for s in symbols(obj) if not s.defined})
