"""hvx128 code never holds a store and a load of possibly the same address in one `:mem_noshuf` packet
(pitchfork.backend.machine, `-slot1-store-slot0-load=false`).

Why: such a packet ran wrong under qemu-hexagon 7.2. With the interior fast path of border windows
(codegen/memory.py `_clamped_gather`), LICM hoisted local_laplacian's c-invariant float loads, the
scalar float code spilled, and `-dfa-instr-limit` bisection put the wrong output (off by up to 49278
on 1945 of 12288 pixels, `test_apps[local_laplacian-hvx128]`) on ONE packet, a spill and its reload:
`{ r15 = convert_uw2sf(r4); r24 = sfsub(r24,r8); memw(r29+#1152) = r15; r12 = memw(r29+#1152) }
:mem_noshuf`. That test fails with the option at LLVM's default and passes without such packets; the
seed-12 i64 packet of test_hvx_i64_packets.py has the same form. Whether qemu 7.2 or LLVM 22 is at
fault is undecided (under `:mem_noshuf` the load must see the store)."""

from __future__ import annotations

import llvmlite.binding as llvm

from pitchfork.backend.machine import _init_llvm, backend_options, compile_module

#: a store and a load through pointers that may alias: LLVM's Hexagon packetizer (v65+) puts them in
#: one packet under `:mem_noshuf` by default
_STORE_THEN_LOAD = """
define i32 @f(ptr %p, ptr %q, i32 %v, i32 %w) {
  store i32 %v, ptr %p, align 4
  %x = load i32, ptr %q, align 4
  %y = mul i32 %x, %w
  ret i32 %y
}
"""


def test_a_store_and_a_possibly_aliasing_load_are_in_two_packets() -> None:
    asm = compile_module(_STORE_THEN_LOAD, "hvx128").function_asm("f")
    assert "memw(r0+#0) = r2" in asm and "mem_noshuf" not in asm
    store_packet = next(chunk for chunk in asm.split("{")[1:] if "memw(r0+#0) = r2" in chunk)
    assert "= memw(r1+#0)" not in store_packet.split("}")[0]


def test_llvm_default_would_pair_them() -> None:
    """The probe above would see the packet: at LLVM's default the pair shares one."""
    _init_llvm()
    llvm.set_option("pitchfork", "-slot1-store-slot0-load=true")
    try:
        asm = compile_module(_STORE_THEN_LOAD, "hvx128").function_asm("f")
    finally:
        llvm.set_option("pitchfork", "-slot1-store-slot0-load=false")
    assert ":mem_noshuf" in asm


def test_every_contender_gets_the_option() -> None:
    """One option set for both isels and Halide 21's llc run (test_equal_options.py)."""
    assert "-slot1-store-slot0-load=false" in backend_options("hvx128")
    assert backend_options("x86-avx2") == ()
