"""The compile-time link check (pitchfork/backend/link_check.py): from the object file and from assembly."""

from __future__ import annotations

from pitchfork.backend.link_check import in_process, missing_reason, undefined_calls, undefined_symbols
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


#: a conversion LLVM lowers to compiler-rt's __truncdfhf2 on x86 (f16c converts from float only)
TRUNC_DF_HF_IR = """
define void @pf_trunc(ptr %a, ptr %b) {
  %x = load double, ptr %a
  %h = fptrunc double %x to half
  store half %h, ptr %b
  ret void
}
"""


def test_x86_names_what_the_jit_cannot_resolve() -> None:
    ir = CALLS_IR.replace("i32 7", "i64 7").replace("ptr, i32)", "ptr, i64)")
    # memcpy: the process's C library, which the JIT resolves; pf_missing: nothing defines it
    assert undefined_symbols(compile_module(ir, "x86-avx2").object_bytes(), "x86-avx2") == ["pf_missing"]
    # a library helper of LLVM's own choosing, in no library this process loads globally
    obj = compile_module(TRUNC_DF_HF_IR, "x86-avx2").object_bytes()
    assert undefined_symbols(obj, "x86-avx2") == ["__truncdfhf2"]
    assert "__truncdfhf2" in missing_reason(["__truncdfhf2"], "x86-avx2")


def test_in_process_resolves_the_c_library_and_halides_runtime_entry_points() -> None:
    assert in_process("memcpy") and in_process("sinf") and in_process("halide_do_par_for")
    assert not in_process("__truncdfhf2") and not in_process("pf_missing")


def test_arm64_is_not_checked() -> None:
    # the qemu harness links libc, libm and libgcc statically (link_check's docstring)
    ir = CALLS_IR.replace("i32 7", "i64 7").replace("ptr, i32)", "ptr, i64)")
    assert undefined_symbols(compile_module(ir, "arm64").object_bytes(), "arm64") == []
