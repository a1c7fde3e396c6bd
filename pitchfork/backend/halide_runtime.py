"""Halide's own runtime, for kernels that call into it (parallel loops and async producers: `halide_do_par_for`,
`halide_do_parallel_tasks`, semaphores, the mutex arrays of atomic() updates).

The runtime is Halide's: `halide.compile_standalone_runtime(path, target)` writes the runtime object
for a target (thread pool, `halide_error`, `halide_malloc`, ... all WEAK symbols, as in every runtime
Halide links). This module builds it once per process, in a temporary directory (never the source
tree), in a child interpreter (so an in-process capture's HL_DEBUG_CODEGEN log is not disturbed):

* `runtime_object(isa)`: the object for `x86-64-linux` / `arm-64-linux` (the qemu-aarch64 harness
  links it, with -lpthread, into its static test binary: pitchfork/backend/run.py);
* `jit_symbols()`: the x86 runtime linked into a shared library with the system C compiler, loaded
  with RTLD_LOCAL (its symbols do not become the process's: Halide's own JIT keeps its own runtime),
  and the addresses of the entry points our kernels call, which the MCJIT engine is given
  (`llvm.add_symbol`) before it links a kernel that calls them;
* `set_num_threads(n)`: the x86 runtime's `halide_set_num_threads` (HL_NUM_THREADS is read when its
  thread pool starts; this changes it later in the same process, as Halide's own function does).

Our kernels' WEAK `halide_malloc`/`halide_free` (codegen_alloc.py) and `halide_error` (abi_runtime.py)
sit beside the runtime's WEAK definitions without a clash: the linker keeps one definition per
symbol, and both allocators keep the `malloc` pointer in the word below the block, so either pair
frees what either allocated.
"""

from __future__ import annotations

import atexit
import ctypes
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

#: the runtime entry points generated code calls (declared by pitchfork/codegen/parallel.py)
RUNTIME_SYMBOLS: tuple[str, ...] = ("halide_do_par_for", "halide_do_parallel_tasks", "halide_semaphore_init",
                                    "halide_semaphore_release", "halide_mutex_array_create",
                                    "halide_mutex_array_destroy", "halide_mutex_array_lock",
                                    "halide_mutex_array_unlock")
#: the Halide target each ISA's runtime is compiled for (the runtime depends on arch and OS only)
RUNTIME_TARGETS: dict[str, str] = {"x86-avx2": "x86-64-linux", "arm64": "arm-64-linux"}

_LOCK = threading.Lock()
_dir: Path | None = None
_objects: dict[str, Path] = {}
_jit_lib: ctypes.CDLL | None = None


class HalideRuntimeError(RuntimeError):
    """Halide's runtime could not be built or loaded."""


def _workdir() -> Path:
    global _dir
    if _dir is None:
        _dir = Path(tempfile.mkdtemp(prefix="pitchfork-halide-runtime-"))
        atexit.register(shutil.rmtree, _dir, True)
    return _dir


def uses_runtime(llvm_ir: str) -> bool:
    """Whether a module's IR calls into Halide's runtime (and so needs it linked)."""
    return any(f"@{name}(" in llvm_ir for name in RUNTIME_SYMBOLS)


def runtime_object(isa: str) -> Path:
    """Halide 21's runtime object for `isa` ("x86-avx2" or "arm64"), built once per process."""
    with _LOCK:
        got = _objects.get(isa)
        if got is not None:
            return got
        if isa not in RUNTIME_TARGETS:
            raise HalideRuntimeError(f"no Halide runtime with threads for {isa}")
        path = _workdir() / f"halide_runtime_{isa}.o"
        code = ("import sys, halide as hl; hl.compile_standalone_runtime(sys.argv[1], hl.Target(sys.argv[2]))")
        env = {k: v for k, v in os.environ.items() if k != "HL_DEBUG_CODEGEN"}
        p = subprocess.run([sys.executable, "-c", code, str(path), RUNTIME_TARGETS[isa]], env=env,
                           capture_output=True, text=True, check=False)
        if p.returncode != 0 or not path.exists():
            raise HalideRuntimeError(f"halide.compile_standalone_runtime for {RUNTIME_TARGETS[isa]} failed: "
                                f"{p.stderr.strip()[-300:]}")
        _objects[isa] = path
        return path


def _jit_library() -> ctypes.CDLL:
    global _jit_lib
    if _jit_lib is None:
        obj = runtime_object("x86-avx2")
        cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
        if cc is None:
            raise HalideRuntimeError("no C compiler (cc) to link Halide's runtime for the JIT; install gcc")
        so = obj.with_suffix(".so")
        p = subprocess.run([cc, "-shared", "-o", str(so), str(obj), "-lpthread", "-ldl"],
                           capture_output=True, text=True, check=False)
        if p.returncode != 0:
            raise HalideRuntimeError(f"linking Halide's runtime failed: {p.stderr.strip()[-300:]}")
        _jit_lib = ctypes.CDLL(str(so), mode=os.RTLD_LOCAL | os.RTLD_NOW)
    return _jit_lib


def jit_symbols() -> dict[str, int]:
    """Addresses of RUNTIME_SYMBOLS in the x86 runtime loaded into this process."""
    lib = _jit_library()
    return {name: ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0 for name in RUNTIME_SYMBOLS}


def set_num_threads(n: int) -> int:
    """`halide_set_num_threads(n)` of the x86 JIT's runtime; returns the previous setting."""
    lib = _jit_library()
    return int(lib.halide_set_num_threads(ctypes.c_int(n)))


def get_num_threads() -> int:
    """`halide_get_num_threads()` of the x86 JIT's runtime (0 before its thread pool starts)."""
    return int(_jit_library().halide_get_num_threads())
