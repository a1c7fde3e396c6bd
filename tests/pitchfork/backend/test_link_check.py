"""The compile-time link check (pitchfork/backend/link_check.py): from the object file and from assembly."""

from __future__ import annotations

from pitchfork.backend.link_check import undefined_calls, undefined_symbols
from pitchfork.backend.machine import compile_module

CALLS_IR = """
declare void @pf_missing(ptr)
declare ptr @memcpy(ptr, ptr, i32)
define void @pf_calls(ptr %p, ptr %q) {
  call void @pf_missing(ptr %p)
  call ptr @memcpy(ptr %p, ptr %q, i32 7)
  ret void
}
"""


def test_object_and_assembly_name_the_same_missing_call() -> None:
    m = compile_module(CALLS_IR, "hvx128")
    assert undefined_symbols(m.object_bytes(), "hvx128") == ["pf_missing"]  # memcpy: the harness has it
    assert undefined_calls(m.assembly(), "hvx128") == ["pf_missing"]


def test_only_hvx_is_checked() -> None:
    ir = CALLS_IR.replace("i32 7", "i64 7").replace("ptr, i32)", "ptr, i64)")
    for target in ("x86-avx2", "arm64"):
        assert undefined_symbols(compile_module(ir, target).object_bytes(), target) == []
