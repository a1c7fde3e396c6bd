"""The ELF symbol-table reader (pitchfork/backend/elf.py) against llvm-nm, on objects of all three targets."""

from __future__ import annotations

import subprocess
import tempfile

import pytest

from benchmarks.harness.static import llvm_tool
from pitchfork.backend import elf
from pitchfork.backend.machine import compile_module

from .kernels import avg_add_ir

TARGET_NAMES = ["x86-avx2", "arm64", "hvx128"]

# A kernel calling a function it does not define (and defining a weak one), so that both kinds occur.
CALLS_IR = """
declare void @pf_external(ptr)
define weak void @pf_weak(ptr %p) {
  store i8 1, ptr %p
  ret void
}
define void @pf_calls(ptr %p) {
  call void @pf_external(ptr %p)
  call void @pf_weak(ptr %p)
  ret void
}
"""


def _nm(obj: bytes, *flags: str) -> set[str]:
    with tempfile.NamedTemporaryFile(suffix=".o") as f:
        f.write(obj)
        f.flush()
        out = subprocess.run([llvm_tool("llvm-nm"), "-P", *flags, f.name], capture_output=True, text=True, check=True)
    return {line.split()[0] for line in out.stdout.splitlines() if line.strip()}


@pytest.mark.parametrize("target", TARGET_NAMES)
@pytest.mark.parametrize("ir", ["avg", "calls"])
def test_symbols_match_llvm_nm(target: str, ir: str) -> None:
    obj = compile_module(avg_add_ir(target) if ir == "avg" else CALLS_IR, target).object_bytes()
    syms = elf.symbols(obj)
    assert {s.name for s in syms if not s.defined} == _nm(obj, "--undefined-only")
    assert set(elf.undefined_symbols(obj)) == _nm(obj, "--undefined-only")
    assert {s.name for s in syms if s.defined and s.binding in (1, 2)} == _nm(obj, "-g", "--defined-only")
    if ir == "calls":
        assert elf.undefined_symbols(obj) == ["pf_external"]
        assert {s.name: s.binding for s in syms}["pf_weak"] == 2


def test_not_elf() -> None:
    with pytest.raises(elf.ElfError):
        elf.symbols(b"not an object file")
    with pytest.raises(elf.ElfError):
        elf.symbols(b"\x7fELF\x02\x02" + bytes(58))  # big-endian
