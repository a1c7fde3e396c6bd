"""Run compiled kernels bit-exactly on x86 (in-process MCJIT), AArch64 (qemu-aarch64) and Hexagon HVX
(qemu-hexagon), with one calling convention: `void f(Buffer | Scalar, ...)` (see `harness.py`).

`run_calls(modules, target, calls)` runs every call in order and returns, per call, the final contents
of its output buffers as new numpy arrays (the caller's arrays are never modified). All calls of one
`run_calls` share one build: on x86 one JIT engine, under qemu one generated harness, one link and one
emulator run, so thousands of small kernels cost about as much as one.

Invariants and contract:

* Buffers are 128-byte aligned plus their `misalign` on every target; anything the IR claims beyond
  that (an `align N` larger than the true alignment of the address it loads from) is the IR producer's
  bug. On x86 it faults, on Hexagon it silently loads the wrong data (ISA_INTRINSICS §4.3.5), so
  producers must emit `align 1` (or the proven alignment) for loads and stores at arbitrary offsets.
* Writes outside an output buffer (guard bytes) and writes to input buffers are reported as `RunError`.
* x86 code runs in process from the module's object file (`CompiledModule.object_bytes()`, compiled
  for the explicit `haswell` CPU, never the host CPU, and loaded by MCJIT's linker): the machine code
  of `assembly()` and of the `.o`, compiled once; the host must support AVX2.
* Under qemu the kernel's object file is the one `CompiledModule.object_bytes()` returns.
* Missing tools raise `ToolMissing` naming the Debian/Ubuntu package; temporary files live in a
  `tempfile` directory that is always removed.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import signal
import subprocess
import tempfile
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import llvmlite.binding as llvm
import numpy as np

from pitchfork.backend import harness
from pitchfork.backend.halide_runtime import jit_symbols, runtime_object, uses_runtime
from pitchfork.backend.harness import ALIGN, GUARD_BYTE, Buffer, Call, Scalar, check_signature
from pitchfork.backend.machine import (
    CompiledModule,
    FunctionSig,
    Target,
    compile_module,
    get_target,
    target_machine,
)

__all__ = [
    "Buffer",
    "Call",
    "RunError",
    "Scalar",
    "ToolMissing",
    "Toolchain",
    "check_tools",
    "run_calls",
    "tools_available",
]

ModuleLike = CompiledModule | str


class RunError(RuntimeError):
    """Building or running the harness failed, or a kernel broke the memory contract."""


class ToolMissing(RunError):
    """An external tool needed to run code for a target is not installed."""

    def __init__(self, tool: str, package: str) -> None:
        self.tool = tool
        self.package = package
        super().__init__(f"{tool} not found; install it with `apt-get install {package}`")


# --------------------------------------------------------------------------------------------------
# Tools


@dataclass(frozen=True, slots=True)
class Toolchain:
    cc: list[str]  # compile + link command prefix (sources, objects and -o appended)
    run: list[str]  # emulator command prefix (the executable appended)


def _which(names: Sequence[str], package: str) -> str:
    for n in names:
        path = shutil.which(n)
        if path:
            return path
    raise ToolMissing(names[0], package)


def check_tools(target: Target | str) -> Toolchain | None:
    """The toolchain used to run code for `target` (None for in-process x86); raises `ToolMissing`."""
    t = get_target(target)
    if t.name == "x86-avx2":
        return None
    if t.name == "arm64":
        gcc = _which(["aarch64-linux-gnu-gcc"], "gcc-aarch64-linux-gnu")
        qemu = _which(["qemu-aarch64", "qemu-aarch64-static"], "qemu-user")
        if not os.path.exists("/usr/aarch64-linux-gnu/lib/libc.a"):
            raise ToolMissing("/usr/aarch64-linux-gnu/lib/libc.a", "libc6-dev-arm64-cross")
        # Static linking: no dynamic loader to emulate (faster) and no -L sysroot needed by qemu.
        return Toolchain([gcc, "-O1", "-static"], [qemu])
    clang = _which(["clang", *(f"clang-{v}" for v in range(22, 13, -1))], "clang")
    lld = _which(["ld.lld", *(f"ld.lld-{v}" for v in range(22, 13, -1))], "lld")
    qemu = _which(["qemu-hexagon", "qemu-hexagon-static"], "qemu-user")
    # No Hexagon libc or crt files exist here: -nostdlib (the harness has its own _start and syscalls),
    # -static (a dynamic binary would need /lib/ld-musl-hexagon.so.1), lld (no Hexagon binutils).
    # -ffreestanding keeps clang from turning the harness's memcpy loop into a call to memcpy. The
    # harness has no HVX code, so -mhvx is not needed; -mcpu only keeps the ELF flags uniform (v66).
    cc = [clang, f"--target={t.triple}", f"-mcpu={t.cpu}", "-O2", "-ffreestanding", "-nostdlib"]
    cc += ["-static", "-fuse-ld=lld", f"--ld-path={lld}"]
    return Toolchain(cc, [qemu])


def tools_available(target: Target | str) -> bool:
    try:
        check_tools(target)
    except ToolMissing:
        return False
    return True


# --------------------------------------------------------------------------------------------------
# Entry point


def _as_modules(module_or_ir: ModuleLike | Sequence[ModuleLike], target: Target) -> list[CompiledModule]:
    items = [module_or_ir] if isinstance(module_or_ir, (str, CompiledModule)) else list(module_or_ir)
    mods = []
    for m in items:
        cm = compile_module(m, target) if isinstance(m, str) else m
        if cm.target.name != target.name:  # (feature variants of one ISA run alike: the CPU runs them all)
            raise ValueError(f"module compiled for {cm.target.name}, asked to run on {target.name}")
        mods.append(cm)
    return mods


def _signatures(mods: Sequence[CompiledModule]) -> dict[str, FunctionSig]:
    sigs: dict[str, FunctionSig] = {}
    for m in mods:
        for name, sig in m.signatures.items():
            if name in sigs:
                raise ValueError(f"function {name!r} is defined in more than one module")
            sigs[name] = sig
    return sigs


def run_calls(
    module_or_ir: ModuleLike | Sequence[ModuleLike],
    target: Target | str,
    calls: Sequence[Call],
    *,
    timeout: float = 300.0,
) -> list[list[np.ndarray]]:
    """Run `calls` in order on `target`; return each call's output buffers (in argument order).

    `module_or_ir` is one or several modules (`CompiledModule` or IR text, compiled at -O3); their
    function names must be distinct. `timeout` bounds the emulator run (seconds).
    """
    t = get_target(target)
    mods = _as_modules(module_or_ir, t)
    sigs = _signatures(mods)
    for c in calls:
        check_signature(c, sigs.get(c.function))
    if not calls:
        return []
    if t.name == "x86-avx2":
        return _run_jit(mods, calls)
    return _run_qemu(mods, t, calls, timeout)


# --------------------------------------------------------------------------------------------------
# x86: MCJIT in process


class _Jit:
    """One MCJIT engine holding all modules of a run (kept alive by a small cache)."""

    def __init__(self, mods: Sequence[CompiledModule]) -> None:
        if any(uses_runtime(m.optimized_ir) for m in mods):  # parallel loops: Halide's thread pool
            for name, addr in jit_symbols().items():
                llvm.add_symbol(name, addr)
        tm = target_machine(mods[0].target, mods[0].opt, jit=True)
        # The engine compiles nothing itself: it loads each module's object file (the code of
        # `.s` and `.o`, emitted once per module and cached on it), linked by RuntimeDyld.
        empty = llvm.parse_assembly("")
        empty.triple = mods[0].target.triple
        empty.data_layout = str(tm.target_data)
        self.engine = llvm.create_mcjit_compiler(empty, tm)
        for m in mods:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(m.object_bytes()))
        self.engine.finalize_object()
        self._fns: dict[str, Callable[..., None]] = {}

    def function(self, name: str, kinds: tuple[str, ...]) -> Callable[..., None]:
        if name not in self._fns:
            addr = self.engine.get_function_address(name)
            if not addr:
                raise RunError(f"JIT: no address for {name}")
            ctypes_of = {"p": ctypes.c_void_p, "i32": ctypes.c_int32, "i64": ctypes.c_int64}
            self._fns[name] = ctypes.CFUNCTYPE(None, *(ctypes_of[k] for k in kinds))(addr)
        return self._fns[name]


_JIT_CACHE: OrderedDict[tuple[str, ...], _Jit] = OrderedDict()
_JIT_CACHE_SIZE = 32


def _jit(mods: Sequence[CompiledModule]) -> _Jit:
    key = tuple(m.key for m in mods)
    if key in _JIT_CACHE:
        _JIT_CACHE.move_to_end(key)
        return _JIT_CACHE[key]
    if not llvm.get_host_cpu_features().get("avx2", False):
        raise RunError("the host CPU has no AVX2; x86-avx2 kernels cannot run in process")
    jit = _Jit(mods)
    _JIT_CACHE[key] = jit
    if len(_JIT_CACHE) > _JIT_CACHE_SIZE:
        _JIT_CACHE.popitem(last=False)
    return jit


def _aligned_bytes(n: int) -> np.ndarray:
    raw = np.empty(n + ALIGN, dtype=np.uint8)
    off = (-raw.ctypes.data) % ALIGN
    return raw[off : off + n]


def _run_jit(mods: Sequence[CompiledModule], calls: Sequence[Call]) -> list[list[np.ndarray]]:
    jit = _jit(mods)
    results = []
    for i, call in enumerate(calls):
        kinds = tuple("p" if isinstance(a, Buffer) else a.llvm_type for a in call.args)
        values: list[int] = []
        inputs: list[tuple[np.ndarray, np.ndarray]] = []  # (region, original bytes)
        outputs: list[tuple[np.ndarray, int, Buffer]] = []  # (region, data offset, buffer)
        for a in call.args:
            if isinstance(a, Scalar):
                values.append(a.signed_value)
                continue
            src = harness.raw_bytes(a.array)
            if a.is_output:
                size, data = harness.out_region_layout(a.nbytes, a.misalign)
                region = _aligned_bytes(size)
                region.fill(GUARD_BYTE)
                region[data : data + a.nbytes] = src
                outputs.append((region, data, a))
            else:
                data = a.misalign
                region = _aligned_bytes(data + a.nbytes + ALIGN)
                region.fill(0)
                region[data : data + a.nbytes] = src
                inputs.append((region, region.copy()))
            values.append(region.ctypes.data + data)
        jit.function(call.function, kinds)(*values)
        for region, original in inputs:
            if not np.array_equal(region, original):
                raise RunError(f"call {i} ({call.function}) wrote to an input buffer")
        results.append([_take_output(i, call.function, region, data, b) for region, data, b in outputs])
    return results


def _take_output(i: int, fn: str, region: np.ndarray | bytes, data: int, b: Buffer) -> np.ndarray:
    r = np.frombuffer(region, dtype=np.uint8) if isinstance(region, bytes) else region
    if np.any(r[:data] != GUARD_BYTE) or np.any(r[data + b.nbytes :] != GUARD_BYTE):
        raise RunError(f"call {i} ({fn}) wrote outside an output buffer of {b.nbytes} bytes")
    return harness.from_raw_bytes(r[data : data + b.nbytes].copy(), b.array)


# --------------------------------------------------------------------------------------------------
# AArch64 / Hexagon: generated harness under qemu


def _run_qemu(
    mods: Sequence[CompiledModule], target: Target, calls: Sequence[Call], timeout: float
) -> list[list[np.ndarray]]:
    tools = check_tools(target)
    assert tools is not None
    plan = harness.plan_calls(calls)
    with tempfile.TemporaryDirectory(prefix=f"pitchfork-{target.name}-") as d:
        objs = []
        for k, m in enumerate(mods):
            path = os.path.join(d, f"kernel{k}.o")
            with open(path, "wb") as f:
                f.write(m.object_bytes())
            objs.append(path)
        in_path, out_path = os.path.join(d, "in.bin"), os.path.join(d, "out.bin")
        with open(in_path, "wb") as fi, open(out_path, "wb") as fo:
            plan.write_blobs(fi, fo)
        c_path, s_path, exe = (os.path.join(d, n) for n in ("harness.c", "blobs.s", "run"))
        with open(c_path, "w") as f:
            f.write(harness.c_source(plan, freestanding=target.name == "hvx128"))
        with open(s_path, "w") as f:
            f.write(harness.blob_asm(in_path, out_path))
        build = [*tools.cc, c_path, s_path, *objs, "-o", exe]
        if any(uses_runtime(m.optimized_ir) for m in mods):  # parallel loops: Halide's runtime, threads
            build[-2:-2] = [str(runtime_object(target.name)), "-lpthread"]
        if target.name != "hvx128":  # float math Halide leaves to libm (tanf, atan2f, ...), as a Halide
            build.append("-lm")      # AOT object is linked; the freestanding Hexagon harness has none
        p = subprocess.run(build, check=False, capture_output=True, text=True, cwd=d)
        if p.returncode != 0:
            raise RunError(f"building the {target.name} harness failed:\n$ {' '.join(build)}\n{p.stderr}")
        try:
            p2 = subprocess.run([*tools.run, exe], check=False, capture_output=True, cwd=d, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise RunError(f"{target.name}: the qemu run exceeded {timeout} s") from None
    stderr = p2.stderr.decode(errors="replace").strip()
    try:
        frames = harness.parse_frames(plan, p2.stdout)
    except harness.FrameError as e:
        k = e.completed
        where = f"during call {k} ({calls[k].function})" if k < len(calls) else "after the last call"
        raise RunError(
            f"{target.name}: harness failed {where}: {_status(p2.returncode)}; {e}\n{stderr}"
        ) from None
    if p2.returncode != 0:
        raise RunError(f"{target.name}: harness {_status(p2.returncode)}\n{stderr}")
    results = []
    for i, (pc, call, frame) in enumerate(zip(plan.calls, calls, frames)):
        outs = []
        for reg, b in zip(pc.outputs, call.outputs):
            lo = reg.start - pc.out_begin
            outs.append(_take_output(i, call.function, frame[lo : lo + reg.size], reg.data - reg.start, b))
        results.append(outs)
    return results


def _status(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"
