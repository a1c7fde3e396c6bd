"""Target machines: compile LLVM IR for x86-64 AVX2, AArch64 Neon and Hexagon HVX 128B, and read the assembly.

This is the bottom of the emit layer. It owns:

* `Target`: the three fixed target descriptions (triple, CPU, features, relocation model, vector width).
  They follow ISA_INTRINSICS §4.1 exactly, and the CPUs are always explicit (never the host CPU, so an
  "AVX2" result cannot silently use AVX-512 encodings).
* `compile_module`: parse, set triple and data layout, verify, optimise with the new pass manager
  (O3 without loop unrolling/vectorization/interleaving, as Halide),
  emit the object file once (and the assembly, from the same optimised text with the same options,
  only when asked for: one LLVM emission per output, never a second of the same). Invariant: a
  `CompiledModule` never contains a call to an unknown `llvm.*` symbol -- LLVM accepts misspelt
  intrinsic names as external functions (§4.3.1), so the object's undefined symbols (or the assembly,
  where it was emitted first) are checked and `IntrinsicError` is raised instead.
* the hvx128 post-O3 choices that need the assembly (register-pair forms kept only where they cost
  no packet, pitchfork/backend/hvx_pairs.py), read with pitchfork/backend/asm.py.

Reading assembly (instructions, functions, loops, the main vector loop) is pitchfork/backend/asm.py,
which calls no LLVM; its names are re-exported here for callers written before the split.

llvmlite is initialised once, on first use. `llvm.initialize()` must not be called (it raises in 0.50).
Code that LLVM cannot select aborts the whole process (§4.3.3); pass `isolate=True` to `compile_module`
to compile in a forked child and get a `CompileError` instead.
"""

from __future__ import annotations

import contextlib
import faulthandler
import functools
import hashlib
import os
import pickle
import re
import signal
import tempfile
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Callable, Literal, Optional

import llvmlite.binding as llvm

from pitchfork.backend.asm import (  # re-exported: see the module docstring
    Loop,
    asm_instructions,
    find_loops,
    function_region,
    inner_loop,
    inner_loop_instructions,
    main_vector_loop,
)
from pitchfork.backend.elf import undefined_symbols

__all__ = [
    "TARGETS",
    "CompileError",
    "CompiledModule",
    "FunctionSig",
    "IntrinsicError",
    "Loop",
    "Target",
    "asm_instructions",
    "compile_module",
    "find_loops",
    "get_target",
    "inner_loop",
    "inner_loop_instructions",
    "main_vector_loop",
    "target_machine",
]

TargetName = Literal["x86-avx2", "arm64", "hvx128"]


@dataclass(frozen=True, slots=True)
class Target:
    """One code-generation target. `vector_bits` is the width of one native vector register;
    `pointer_bits` the width of an address (the data layout's pointer size)."""

    name: TargetName
    triple: str
    cpu: str
    features: str
    reloc: str
    vector_bits: int
    pointer_bits: int = 64

    def natural_lanes(self, elem_bits: int) -> int:
        """Lanes of `elem_bits`-bit elements that fill one native vector register."""
        if elem_bits <= 0 or self.vector_bits % elem_bits:
            raise ValueError(f"element width {elem_bits} does not divide {self.vector_bits}")
        return self.vector_bits // elem_bits

    @property
    def vector_bytes(self) -> int:
        return self.vector_bits // 8

    @property
    def is_vliw(self) -> bool:
        """True when the assembly groups instructions into `{ ... }` packets (Hexagon)."""
        return self.name == "hvx128"


X86_AVX2 = Target("x86-avx2", "x86_64-unknown-linux-gnu", "haswell", "+avx2", "pic", 256)
ARM64 = Target("arm64", "aarch64-unknown-linux-gnu", "cortex-a76", "+neon,+dotprod", "pic", 128)
HVX128 = Target(
    "hvx128", "hexagon-unknown-linux-musl", "hexagonv66", "+hvxv66,+hvx-length128b", "static", 1024, 32
)
TARGETS: dict[str, Target] = {t.name: t for t in (X86_AVX2, ARM64, HVX128)}


def get_target(target: Target | str) -> Target:
    """The `Target` called `target` (a `Target` is returned unchanged)."""
    if isinstance(target, Target):
        return target
    try:
        return TARGETS[target]
    except KeyError:
        raise ValueError(f"unknown target {target!r}; expected one of {sorted(TARGETS)}") from None


# --------------------------------------------------------------------------------------------------
# llvmlite setup


@functools.cache
def _init_llvm() -> None:
    llvm.initialize_all_targets()
    llvm.initialize_all_asmprinters()
    llvm.initialize_native_target()  # MCJIT (run.py) needs the host target registered
    llvm.initialize_native_asmprinter()
    # Process-wide options only the Hexagon backend reads: set once, from the one list every contender
    # is compiled with (`backend_options`, where each is explained), so the two cannot drift apart.
    # (`-hvc-va` is set again per emission: `_set_align_vectors`.)
    for option in backend_options(HVX128):
        llvm.set_option("pitchfork", option)


@functools.cache
def llvm_assertions_enabled() -> bool:
    """Whether the LLVM llvmlite runs on was built with assertions, which abort the whole process where a
    release LLVM carries on (e.g. isel=llvm on depthwise_conv hvx128 with `no_asserts`: the Hexagon
    IfConverter asks for the register class of a reversed vector pair). A static llvmlite (the PyPI
    wheel: assertions on) records it at build time. A build linked to a shared libLLVM (scripts/install.sh's,
    against Debian's release libLLVM-22) says "unknown"; that library exports
    `llvm::DisableABIBreakingChecks` or `llvm::EnableABIBreakingChecks`, which LLVM's build ties to
    assertions by default (LLVM_ABI_BREAKING_CHECKS=WITH_ASSERTS): the latter, or neither, counts as
    assertions on."""
    state = llvm.config.llvm_assertions_state
    if state != "unknown":
        return state == "on"
    lib = llvm.ffi.lib._lib  # dlsym on llvmlite's handle also searches the libLLVM it links
    return not hasattr(lib, "_ZN4llvm24DisableABIBreakingChecksE")


#: HVX: LLVM's HexagonVectorCombine AlignVectors (`-hvc-va`: groups of unaligned vector loads rewritten
#: as aligned loads + byte shuffles). A compiler option, not instruction selection, so it is the same
#: for every contender: both isels and Halide 21's IR through llc (benchmarks/harness/halide21.py). The
#: setting is the one measured better for the contenders: off (benchmarks/align_vectors.json, made by
#: benchmarks/harness/align_vectors.py: weighted packets off/on, geomean over the 16 benchmarks, 0.90 for
#: PITCHFORK, 0.91 for LLVM alone, 0.90 for Halide 21; no benchmark of any contender is more than 3%
#: worse off, the stencils gain most, e.g. blur3x3 0.52 for all three). RESULTS.md, "Compiler options".
HVX_ALIGN_VECTORS: bool = False


def backend_options(target: Target | str) -> tuple[str, ...]:
    """The LLVM backend (llc) options beyond LLVM's defaults that every contender's code for `target`
    is compiled with: `compile_module` for both isels (set process-wide in `_init_llvm` and per
    emission), and the llc run of Halide 21's Hexagon IR. One value, so the contenders cannot differ
    (tests/pitchfork/emit/test_equal_options.py). The qemu workaround flags of `emission_flags` are
    not here: they follow the IR (64-bit-lane vectors), not the contender, and the harness counts
    LLVM's default packets for every contender."""
    t = get_target(target)
    if t.name != "hvx128":
        return ()
    # -hexagon-small-data-threshold=0: no GP-relative small data. Otherwise 64-bit constants (CONST64,
    # e.g. a vshuff control) go to .sdata and are read with R_HEX_GPREL16_* relocations, which Debian's
    # ld.lld 14 rejects ("unknown relocation (12)").
    # -hvc-vi=false: LLVM 22's HVX idiom recognition (HexagonVectorCombine, fixed-point multiplies)
    # miscompiles saturating/rounding multiply-shift patterns, e.g. u16(min(u32(a) * u32(b) >> 1,
    # 65535)) loses its clamp and (i32(a) * i32(b) >> 15) clamped to i16 is wrong at a = b = -32768
    # (tests/pitchfork/targets/test_hvx.py runs them). Only this pass is turned off.
    # -slot1-store-slot0-load=false: no store and load of possibly the same address in one
    # `:mem_noshuf` packet (LLVM's HexagonPacketizer pairs a slot-1 store with a slot-0 load that may
    # alias it on v65+). Such a packet ran wrong under qemu-hexagon 7.2: `{ r15 = convert_uw2sf(r4);
    # memw(r29+#1152) = r15; r12 = memw(r29+#1152) } :mem_noshuf` (a spill and its reload) in
    # local_laplacian's scalar float code, found with -dfa-instr-limit (the 10036th packetised
    # instruction turned the output wrong, off by up to 49278), and the seed-12 i64 packet of
    # test_hvx_i64_packets.py has the same form. Whether qemu or LLVM is at fault is undecided; either
    # way the pair is split into two packets (local_laplacian: 6075 -> 6077 packets; the 16 benchmarks:
    # packets in loops the same but matmul's 6468 -> 6467, whole kernels +0..3).
    # tests/pitchfork/backend/test_hvx_mem_noshuf.py.
    # -hvc-va: HVX_ALIGN_VECTORS.
    # All are set process-wide by _init_llvm (-hvc-va also per emission).
    return ("-hexagon-small-data-threshold=0", "-hvc-vi=false", "-slot1-store-slot0-load=false",
            f"-hvc-va={'true' if HVX_ALIGN_VECTORS else 'false'}")


def target_machine(target: Target | str, opt: int = 3, *, jit: bool = False) -> llvm.TargetMachine:
    """A fresh TargetMachine. JIT machines use the JIT code model; an ExecutionEngine takes ownership."""
    _init_llvm()
    t = get_target(target)
    if not 0 <= opt <= 3:
        raise ValueError(f"opt level must be 0..3, got {opt}")
    return llvm.Target.from_triple(t.triple).create_target_machine(
        cpu=t.cpu,
        features=t.features,
        opt=opt,
        reloc="default" if jit else t.reloc,
        codemodel="jitdefault" if jit else "default",
        jit=jit,
    )


@functools.cache
def _shared_machine(target: Target | str, opt: int) -> llvm.TargetMachine:
    """One TargetMachine per target (a `Target`, or the name of one of TARGETS) and opt level."""
    return target_machine(target, opt)


# --------------------------------------------------------------------------------------------------
# Compilation


class CompileError(Exception):
    """The IR did not parse, did not verify, or LLVM failed to compile it."""


class IntrinsicError(CompileError):
    """The assembly still calls `llvm.*` symbols: the IR names intrinsics that LLVM does not know."""

    def __init__(self, target: str, symbols: list[str]) -> None:
        self.target = target
        self.symbols = symbols
        super().__init__(
            f"{target}: calls to unknown intrinsics survive in the assembly (misspelt name or wrong "
            f"type suffix?): {', '.join(symbols)}"
        )

    def __reduce__(self) -> tuple[type, tuple[str, list[str]]]:  # picklable across isolate=True
        return (IntrinsicError, (self.target, self.symbols))


@dataclass(frozen=True, slots=True)
class FunctionSig:
    """Parameter and return types (LLVM spelling, e.g. 'ptr', 'i32') of a function defined in a module."""

    name: str
    params: tuple[str, ...]
    ret: str


@dataclass(frozen=True, slots=True, eq=False)
class CompiledModule:
    """An optimised module for one target: its IR text, its object file, and (lazily) its assembly.

    Both come from one LLVM emission each, from the optimised IR *text* with the same backend options,
    so they are one code. `compile_module` emits the object (what the x86 JIT, the qemu runs and the
    compile-time checks use); the assembly is emitted the first time someone asks for it (the harness's
    static estimates, `.s` outputs, tests), never twice. On hvx128 a module whose register-pair forms
    were weighed against their split (pitchfork/backend/hvx_pairs.py) has its assembly already and
    emits the object when first asked for it instead."""

    target: Target
    opt: int
    source_ir: str
    optimized_ir: str
    signatures: dict[str, FunctionSig]
    align_vectors: bool = True  # hvx128: HexagonVectorCombine's AlignVectors on (see compile_module)
    _cache: dict[str, bytes | str] = field(default_factory=dict, repr=False)

    def llvm_ir(self) -> str:
        return self.optimized_ir

    def assembly(self) -> str:
        """The assembly, emitted from the optimised IR text on first use, with the backend options the
        object was emitted with (so it is the code of `object_bytes()`)."""
        asm = self._emission("asm")
        assert isinstance(asm, str)
        return asm

    @property
    def asm(self) -> str:
        """`assembly()` (the attribute name of the assembly before it was emitted lazily)."""
        return self.assembly()

    def object_bytes(self) -> bytes:
        """ELF object code, emitted from the optimised IR text with the backend options `assembly()`
        is emitted with, so it is the same code."""
        obj = self._emission("obj")
        assert isinstance(obj, bytes)
        return obj

    def _emission(self, kind: Literal["asm", "obj"]) -> bytes | str:
        """The assembly or object of the optimised IR, emitted once, on first use, and cached."""
        out = self._cache.get(kind)
        if out is None:
            out = self._cache[kind] = _emit(self.optimized_ir, self.target, self.opt, self.align_vectors, kind)
        return out

    @property
    def key(self) -> str:
        """Content hash identifying this module (target + optimised IR)."""
        key = self._cache.get("key")
        if not isinstance(key, str):
            t = self.target
            text = f"{t.name}\0{t.cpu}\0{t.features}\0{self.opt}\0{self.optimized_ir}"
            key = self._cache["key"] = hashlib.sha1(text.encode()).hexdigest()
        return key

    def emitted(self, kind: Literal["asm", "obj"]) -> bool:
        """Whether the assembly ("asm") or object ("obj") has been emitted already (emits nothing)."""
        return kind in self._cache

    def function_asm(self, function: str) -> str:
        return function_region(self.assembly(), function)

    def llvm_default_assembly(self) -> str:
        """The assembly with LLVM's default backend options: on hvx128, VLIW packets and new-value
        jumps even in a module on 64-bit-lane vectors (see `_emission_options`); otherwise `assembly()`.
        For the benchmark harness's LLVM-alone baseline, whose figure must not carry PITCHFORK's
        workaround for qemu-hexagon (it counts packets; its counted run still checks the output)."""
        if not emission_flags(self.target, self.optimized_ir):
            return self.assembly()
        mod = _parse(self.optimized_ir, self.target)  # (the options are at LLVM's defaults here)
        _set_align_vectors(self.align_vectors)
        return _shared_machine(self.target, self.opt).emit_assembly(mod)


#: A vector of two or more 64-bit lanes. HVX has no 64-bit lanes, so the Hexagon backend scalarises
#: it into register pairs with many predicated moves. (`<1 x i64>` is not counted: the Halide codegen's
#: scalar `abs` of an i64 index uses it in every benchmark, and it is one register pair anyway.)
_I64_VECTOR = re.compile(r"<(?:[2-9]|\d\d+) x i64>")


def has_i64_vectors(ir_text: str) -> bool:
    """True if the (optimised) IR computes on vectors of two or more 64-bit lanes."""
    return _I64_VECTOR.search(ir_text) is not None


@contextlib.contextmanager
def _emission_options(target: Target, optimized_ir: str) -> Iterator[None]:
    """hvx128: emit a module with 64-bit-lane vectors without VLIW packets and without new-value jumps.

    Why: the scalarised i64 code of such modules ran wrong under qemu-hexagon 7.2 in difftest cases
    (tests/pitchfork/backend/test_hvx_i64_packets.py), each traced with `-dfa-instr-limit` to ONE
    packet whose instructions are all legal together (a compare writing p0 beside a move predicated on
    the old p0 and a new-value store of a register written in the packet; a store and a load of one
    stack slot under `:mem_noshuf`; a predicate transfer beside a `.new` use and a `memd` overwriting
    its source). Each packet runs right alone in a hand-written program, and splitting it in any
    ISA-equivalent way makes the kernel right, so qemu 7.2 mis-executes some packet contexts (or LLVM
    22 builds packets the hardware forbids); either way a user must not get the answer. One instruction
    a packet is the same program under both readings. New-value compare-jumps (`if (cmp.gt(r16.new,
    #-1)) jump`) need their producer in the same packet, so they are turned off too: otherwise the
    unpacketised assembly does not reassemble (benchmarks/harness instruments and reassembles it).
    Such modules are also emitted with `-rdf-opt=false` (Hexagon's post-RA RDF copy propagation):
    in difftest seed 1703 it made `rounding_shr(d_u64, 40)` at 48 lanes read, for lane 2, a register
    pair holding lane 47's value in one half and nothing written in the other; wrong in the assembly
    itself, with and without packets, on LLVM 22.1.0 and 22.1.8 (tests/pitchfork/backend/test_hvx_i64_packets.py).
    Only modules on 64-bit-lane vectors pay (HVX has no such lanes: that code is scalar already);
    every other module's code is unchanged. The options are process-wide, so they are set before
    every emission of a module (assembly and object) and put back to LLVM's defaults after it, so an
    emission elsewhere (tests, `llvm_default_assembly`) never inherits them.
    """
    flags = emission_flags(target, optimized_ir)
    for flag in flags:
        llvm.set_option("pitchfork", flag if "=" in flag else f"{flag}=true")
    # Float code on hvx128 is scalar (pitchfork/codegen/hvx_floats.py), with long loop bodies (a
    # 32-lane float loop is 32 scalar copies): the MachinePipeliner's window scheduler, which runs on
    # every loop the swing scheduler did not pipeline, took most of the backend's time on them
    # (bilateral_grid: 4.2 of 9.5 s user time; interpolate: minutes) for no packet the apps' loops
    # need. Integer modules keep LLVM's default.
    window_off = bool(scheduler_options(target, optimized_ir))
    if window_off:
        llvm.set_option("pitchfork", "-window-sched=off")
    try:
        yield
    finally:
        for flag in flags:
            name = flag.split("=", 1)[0]
            llvm.set_option("pitchfork", f"{name}={_FLAG_DEFAULTS[name]}" if "=" in flag else f"{flag}=false")
        if window_off:
            llvm.set_option("pitchfork", "-window-sched=on")


_FLOAT_ARITH = re.compile(r"= (?:fadd|fsub|fmul|fdiv) ")

#: LLVM's defaults for the options `_optimizer_options` changes (restored after each O3 run)
_UNSWITCH_DEFAULTS = ("-enable-unswitch-cost-multiplier=true", "-unswitch-threshold=50")


def optimizer_options(target: Target | str, ir_text: str) -> tuple[str, ...]:
    """The `opt` options beyond the defaults that `compile_module` optimises `ir_text` with (for
    reproducing): hvx128 float code without non-trivial loop unswitching.

    Why: Hexagon's cost model prices float vector ops, shuffles and inserts at the saturated maximum
    (HVX v66 has no float vectors), so a loop holding one costs INT64_MAX, and SimpleLoopUnswitch's
    price for duplicating it (the loop's cost minus its branch's subtree: MAX - MAX = 0) is below any
    threshold: every loop-invariant branch of such a nest was unswitched, each doubling the nest
    (hvx_floats.py emits float arithmetic lane by lane, but InstCombine re-forms float shuffles from
    the lanes: interpolate's 32-lane deinterleaves kept 91 unswitches, and its upstream 10 levels did
    not compile in 25 minutes). With the threshold at 0 no candidate is cheap enough (a cost is never
    negative); the cost multiplier is turned off with it because it asserts to lie in 1..threshold.
    Trivial unswitching is unchanged, and integer modules keep LLVM's defaults."""
    t = get_target(target)
    if t.name == "hvx128" and has_scalar_float_code(ir_text):
        return ("-enable-unswitch-cost-multiplier=false", "-unswitch-threshold=0")
    return ()


@contextlib.contextmanager
def _optimizer_options(target: Target, ir_text: str) -> Iterator[None]:
    """`optimizer_options` set (process-wide) for one O3 run, LLVM's defaults put back after it."""
    flags = optimizer_options(target, ir_text)
    for flag in flags:
        llvm.set_option("pitchfork", flag)
    try:
        yield
    finally:
        if flags:
            for flag in _UNSWITCH_DEFAULTS:
                llvm.set_option("pitchfork", flag)


def has_scalar_float_code(ir_text: str) -> bool:
    """Whether a module computes in floats (hvx128 float code is scalar: hvx_floats.py)."""
    return _FLOAT_ARITH.search(ir_text) is not None


def scheduler_options(target: Target | str, ir_text: str) -> tuple[str, ...]:
    """The non-boolean llc options `_emission_options` sets for `ir_text` (for reproducing with llc):
    hvx128 float code without the window scheduler."""
    t = get_target(target)
    return ("-window-sched=off",) if t.name == "hvx128" and has_scalar_float_code(ir_text) else ()


def emission_flags(target: Target | str, ir_text: str) -> tuple[str, ...]:
    """The llc flags beyond the defaults that `compile_module` emits `ir_text` with (for reproducing):
    boolean options that `_emission_options` turns on for the emission and off after it, and
    `-name=value` settings it puts back to `_FLAG_DEFAULTS[name]` after it."""
    t = get_target(target)
    if t.name == "hvx128" and has_i64_vectors(ir_text):
        return ("-disable-packetizer", "-disable-nvjump", "-rdf-opt=false")
    return ()


#: LLVM's default of each non-boolean-flag option `emission_flags` may set (`-name=value`), restored
#: after the emission. `-rdf-opt` is Hexagon's post-RA RDF copy propagation and dead-code elimination.
_FLAG_DEFAULTS: dict[str, str] = {"-rdf-opt": "true"}


def emission_options(target: Target | str, ir_text: str) -> contextlib.AbstractContextManager[None]:
    """A context in which the process-wide backend options are those `compile_module` emits `ir_text`
    with (wrap an emission with a `target_machine` of one's own in it, e.g. for AOT outputs)."""
    return _emission_options(get_target(target), ir_text)


def _parse(ir_text: str, target: Target) -> llvm.ModuleRef:
    _init_llvm()
    try:
        mod = llvm.parse_assembly(ir_text)
    except RuntimeError as e:
        raise CompileError(f"LLVM IR does not parse: {e}") from None
    mod.triple = target.triple
    mod.data_layout = str(_shared_machine(target, 3).target_data)
    return mod


_LLVM_SYMBOL = re.compile(r"(?<![\w.$])llvm\.[A-Za-z0-9_.]+")


def _unknown_intrinsic_calls(asm: str) -> list[str]:
    if "llvm." not in asm:  # in every match of _LLVM_SYMBOL: the usual answer without a pass over each line
        return []
    found: set[str] = set()
    for line in asm.splitlines():
        s = line.strip()
        if not s or s.startswith((".", "#", "//", ";")):
            continue
        found.update(m.rstrip(".") for m in _LLVM_SYMBOL.findall(s))
    return sorted(found)


def _signatures(mod: llvm.ModuleRef) -> dict[str, FunctionSig]:
    sigs: dict[str, FunctionSig] = {}
    for f in mod.functions:
        # Weak definitions are runtime defaults (halide_malloc/halide_free, pitchfork/codegen/
        # alloc.py) that several modules of one run may each carry, not kernels to call.
        if f.is_declaration or f.linkage == llvm.Linkage.weak_any:
            continue
        fty = f.global_value_type
        sigs[f.name] = FunctionSig(
            f.name, tuple(str(a.type) for a in f.arguments), str(fty.get_function_return())
        )
    return sigs


def _set_align_vectors(on: bool) -> None:
    """hvx128: the backend reads this option when its IR passes run, so it is set per emission."""
    llvm.set_option("pitchfork", f"-hvc-va={'true' if on else 'false'}")


def _compile(ir_text: str, target: Target, opt: int, align_vectors: bool = True,
             i64_halves: bool = True, pairs: bool = True,
             trace: Optional[Callable[[str, str], None]] = None, timings: Optional[dict[str, float]] = None,
             ) -> tuple[str, dict[str, bytes | str], dict[str, FunctionSig]]:
    """(optimised IR text, what was emitted from it: {"obj": ...} or, for a module whose HVX pair
    forms were weighed, {"asm": ...}, the defined functions' signatures)."""
    t0 = time.perf_counter()
    mod = _parse(ir_text, target)
    _timed(timings, "llvm_parse", t0)
    t0 = time.perf_counter()
    try:
        mod.verify()
    except RuntimeError as e:
        raise CompileError(f"LLVM IR does not verify: {e}") from None
    _timed(timings, "llvm_verify", t0)
    tm = _shared_machine(target, opt)
    t0 = time.perf_counter()
    if opt > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt)
        # As Halide's own backend does by default (no `enable_llvm_loop_opt`): the code is already
        # vectorized and unrolled as scheduled, so LLVM's loop vectorizer, interleaver and unroller
        # only duplicate loop bodies (e.g. border loops unrolled x2).
        pto.loop_unrolling = False
        pto.loop_vectorization = False
        pto.loop_interleaving = False
        # SLP: Halide 21's CodeGen_LLVM::optimize_module turns it on for every target (its loop
        # vectorizer, interleaver and unroller only with the enable_llvm_loop_opt feature), and runs
        # the same O3 pipeline on a CodeGenOptLevel::Aggressive TargetMachine (as opt=3 here). Ours is
        # on for arm64 only (6195a7c: fully_connected's stride-4 accumulators; without SLP its
        # innermost loops are 322 instructions instead of 203, the other 15 benchmarks' assembly is
        # the same, and O3 took ~15% less, session 19 at load 4), so on x86 and hvx128 LLVM
        # does less than in Halide's compile. Halide also registers the TargetMachine's own pass
        # callbacks (registerPassBuilderCallbacks) and sets ForgetAllSCEVInLoopUnroll; llvmlite's
        # pass builder exposes neither.
        pto.slp_vectorization = target.name == "arm64"
        pb = llvm.create_pass_builder(tm, pto)
        with _optimizer_options(target, ir_text):
            pb.getModulePassManager().run(mod, pb)
    _timed(timings, "llvm_O3", t0)
    t0 = time.perf_counter()
    text = str(mod)
    _timed(timings, "llvm_print", t0)
    t0 = time.perf_counter()
    if trace is not None:
        trace(f"O{opt}", text)
    if target.name == "hvx128":
        from pitchfork.backend.hvx_fixups import (has_i128_mulh, has_predicate_select, has_wide_lane_predicate_trunc,
                                               has_wide_predicate_ext, optimizer_i128_line, rewrite_i128_mulhs,
                                               rewrite_predicate_selects, rewrite_wide_lane_predicate_truncs,
                                               rewrite_wide_predicate_exts)
        from pitchfork.backend.hvx_i64 import has_i64_products, rewrite_i64_products
        from pitchfork.backend.hvx_shuffles import has_repeated_word_shuffle, rewrite_repeated_word_shuffles

        # The backend passes of pitchfork.passes.pipeline, in its order (the first four are required).
        if has_predicate_select(text):  # InstCombine's predicate selects: Hexagon cannot select them
            text = _traced(trace, "hvx_predicate_selects", rewrite_predicate_selects(text))
        if has_wide_predicate_ext(text):  # multi-register predicate extensions: SelectQ2V asserts
            text = _traced(trace, "hvx_wide_predicate_exts", rewrite_wide_predicate_exts(text))
        if has_wide_lane_predicate_trunc(text):  # trunc to i1 of 16/32-bit lanes: tests every byte
            text = _traced(trace, "hvx_wide_lane_predicate_truncs", rewrite_wide_lane_predicate_truncs(text))
        if has_i128_mulh(text):  # AggressiveInstCombine's <N x i128> high multiply: ran wrong (seed 21)
            text = _traced(trace, "hvx_i128_mulh", rewrite_i128_mulhs(text))
        if i64_halves and has_i64_products(text):  # foldMulHigh's 32x32->64-bit products: scalarised
            text = _traced(trace, "hvx_i64_halves", rewrite_i64_products(text))
        if has_repeated_word_shuffle(text):  # 8/16-bit shuffles with repeated words: built wrong
            text = _traced(trace, "hvx_repeated_word_shuffles", rewrite_repeated_word_shuffles(text))
        bad_line = optimizer_i128_line(ir_text, text)
        if bad_line is not None:
            raise CompileError(f"hvx128: unsupported: the optimiser made vectors of i128 lanes, "
                               f"which the Hexagon backend scalarises into code known to run wrong: {bad_line[:160]}")
    _timed(timings, "llvm_fixups", t0)
    # The backend always starts from the optimised text, never from the module the pass pipeline
    # left in memory: every other consumer (object_bytes, the x86 JIT, the AOT entry) parses that
    # text, and the backend's IR passes (loop strength reduction above all) break ties by use-list
    # order, which printing and parsing does not keep. Emitting from the in-memory module gave
    # assembly that differed from the object code (gaussian5x5 arm64: hot loop 97 instructions in
    # .s, 95 in .o). Codegen's own IR changes (LSR's rewrites) stay out of `text` for the same reason.
    t0 = time.perf_counter()
    mod = _parse(text, target)
    _timed(timings, "llvm_parse_optimized", t0)
    emitted: dict[str, bytes | str] = {}
    if target.name == "hvx128" and pairs:
        from pitchfork.backend.hvx_pairs import has_pair_forms, keep_pairs, split_pairs

        if has_pair_forms(text):  # register-pair forms: kept only where they cost no packet
            # The choice reads packets, so both alternatives are emitted as assembly; the chosen
            # one's object is emitted when first asked for.
            t0 = time.perf_counter()
            asm = _emit_module(mod, text, target, opt, align_vectors, "asm")
            split_text = split_pairs(text)
            split_mod = _parse(split_text, target)
            split_asm = _emit_module(split_mod, split_text, target, opt, align_vectors, "asm")
            _timed(timings, "llvm_emit_assembly", t0)
            packets = [len(lp.packets) for lp in find_loops(asm, target=target.name)]
            split_packets = [len(lp.packets) for lp in find_loops(split_asm, target=target.name)]
            if not keep_pairs(packets, split_packets):
                text, mod, asm = _traced(trace, "hvx_pairs", split_text), split_mod, split_asm
            emitted["asm"] = asm
            bad = _unknown_intrinsic_calls(asm)
            if bad:
                raise IntrinsicError(target.name, bad)
            return text, emitted, _signatures(mod)
    # One emission: the object (what runs, and what the checks below read); the assembly is emitted
    # from the same text when asked for (CompiledModule.assembly).
    t0 = time.perf_counter()
    obj = emitted["obj"] = _emit_module(mod, text, target, opt, align_vectors, "obj")
    _timed(timings, "llvm_emit_object", t0)
    bad = sorted(n for n in undefined_symbols(obj) if _LLVM_SYMBOL.fullmatch(n))
    if bad:
        raise IntrinsicError(target.name, bad)
    return text, emitted, _signatures(mod)


def _emit_module(mod: llvm.ModuleRef, text: str, target: Target, opt: int, align_vectors: bool,
                 kind: Literal["asm", "obj"]) -> bytes | str:
    """Emit `mod` (parsed from `text`) as assembly or object code with the backend options every
    emission of `text` uses (AlignVectors, the i64-vector qemu workaround)."""
    if target.name == "hvx128":
        _set_align_vectors(align_vectors)
    tm = _shared_machine(target, opt)
    with _emission_options(target, text):
        return tm.emit_assembly(mod) if kind == "asm" else tm.emit_object(mod)


def _emit(text: str, target: Target, opt: int, align_vectors: bool, kind: Literal["asm", "obj"]) -> bytes | str:
    """`text` (optimised IR) parsed and emitted: what `compile_module` emitted, or would have."""
    return _emit_module(_parse(text, target), text, target, opt, align_vectors, kind)


def _timed(timings: Optional[dict[str, float]], phase: str, t0: float) -> None:
    """Add the seconds since `t0` to `timings[phase]` (when timings are asked for)."""
    if timings is not None:
        timings[phase] = timings.get(phase, 0.0) + time.perf_counter() - t0


def _traced(trace: Optional[Callable[[str, str], None]], stage: str, text: str) -> str:
    """`text`, reported to `trace` as the IR after backend pass `stage` (PITCHFORK_DEBUG=2)."""
    if trace is not None:
        trace(stage, text)
    return text


def compile_module(
    ir_text: str, target: Target | str, opt: int = 3, *, isolate: bool = False,
    align_vectors: bool | None = None, i64_halves: bool = True, pairs: bool = True,
    trace: Optional[Callable[[str, str], None]] = None, timings: Optional[dict[str, float]] = None,
) -> CompiledModule:
    """Verify, optimise (new pass manager, `-O<opt>`) and compile `ir_text` for `target`.

    Any triple / data layout in the text is replaced by the target's. With `isolate=True` the work runs
    in a forked child so that an LLVM abort ("Cannot select ...") becomes a `CompileError`.
    `align_vectors` (hvx128; default `HVX_ALIGN_VECTORS`, what `pitchfork.compile` uses for both isels)
    turns the AlignVectors part of LLVM's HexagonVectorCombine on or off for this module: it rewrites groups of unaligned HVX loads (a stencil's x-2 .. x+2) into aligned
    loads combined by byte shuffles, which the backend lowers with predicate selects (vcmp.eq,
    vmux, vand) which may cost more than the plain unaligned loads (vmemu) it replaces.
    `i64_halves=False` (hvx128) leaves the 64-bit-lane code O3 makes of 32 x 32 -> 64-bit products as
    LLVM compiles it (scalarised) instead of computing it on 32-bit halves (`pitchfork.backend.hvx_i64`):
    the benchmark harness's LLVM-alone contender, whose figure must not carry PITCHFORK's selection.
    `pairs=False` (hvx128) keeps register-pair forms without trying the split alternative
    (`pitchfork.backend.hvx_pairs`). These three are the optional backend passes of
    pitchfork.passes.pipeline; `trace(stage, ir_text)`, if given (not with `isolate`), sees the IR
    after O3 and after each backend pass that rewrote it. `timings`, if given (with `isolate`, as the
    child measured them), gets the seconds of each LLVM phase added under its name (llvm_parse,
    llvm_verify, llvm_O3, llvm_print, llvm_fixups, llvm_parse_optimized, llvm_emit_object or
    llvm_emit_assembly).
    """
    t = get_target(target)
    if not 0 <= opt <= 3:
        raise ValueError(f"opt level must be 0..3, got {opt}")
    if align_vectors is None:
        align_vectors = HVX_ALIGN_VECTORS
    if isolate:
        opt_ir, emitted, sigs = _compile_isolated(ir_text, t, opt, align_vectors, i64_halves, pairs, timings)
    else:
        opt_ir, emitted, sigs = _compile(ir_text, t, opt, align_vectors, i64_halves, pairs, trace, timings)
    return CompiledModule(t, opt, ir_text, opt_ir, sigs, align_vectors, dict(emitted))


def _compile_isolated(ir_text: str, target: Target, opt: int, align_vectors: bool = True,
                      i64_halves: bool = True, pairs: bool = True, timings: Optional[dict[str, float]] = None,
                      ) -> tuple[str, dict[str, bytes | str], dict[str, FunctionSig]]:
    """`_compile` in a forked child: its result, or its CompileError, comes back pickled (with the
    child's phase timings, added to `timings`); an abort becomes a CompileError with LLVM's message."""
    _init_llvm()
    rfd, wfd = os.pipe()
    with tempfile.TemporaryFile() as err:
        pid = os.fork()
        if pid == 0:  # child: never returns
            code = 0
            try:
                os.close(rfd)
                os.dup2(err.fileno(), 2)
                faulthandler.disable()  # an expected abort must not dump tracebacks to the terminal
                spent: dict[str, float] = {}
                try:
                    payload: object = ("ok", (_compile(ir_text, target, opt, align_vectors, i64_halves, pairs,
                                                       None, spent), spent))
                except CompileError as e:
                    payload = ("err", e)
                with os.fdopen(wfd, "wb") as w:
                    pickle.dump(payload, w)
            except BaseException:  # noqa: BLE001 - report through stderr and the exit status
                traceback.print_exc()
                code = 1
            os._exit(code)
        os.close(wfd)
        with os.fdopen(rfd, "rb") as r:
            data = r.read()
        _, status = os.waitpid(pid, 0)
        err.seek(0)
        stderr = err.read().decode(errors="replace").strip()
    if data:
        kind, value = pickle.loads(data)
        if kind == "err":
            raise value
        result, spent = value
        if timings is not None:
            for phase, secs in spent.items():
                timings[phase] = timings.get(phase, 0.0) + secs
        return result
    if os.WIFSIGNALED(status):
        how = f"killed by {signal.Signals(os.WTERMSIG(status)).name}"
    else:
        how = f"exit status {os.waitstatus_to_exitcode(status)}"
    raise CompileError(f"LLVM crashed compiling for {target.name} ({how}):\n{stderr}")
