"""A C driver for Halide-ABI libraries: builds `halide_buffer_t`s as an application would, calls one or
two libraries with the same generator signature (PITCHFORK's and Halide's own), and reports, per call,
the return code, the message given to `halide_error`, the whole output allocation (so writes outside
the buffer's window show) and every buffer's shape afterwards (bounds queries rewrite it).

Runs on x86 (host gcc), AArch64 (aarch64-linux-gnu-gcc -static + qemu-aarch64) and Hexagon (the
project's clang/lld toolchain, freestanding, + qemu-hexagon). Used by tests/pitchfork/aot/test_abi.py,
by examples/aot and, with `repeat`, as the timing program (benchmarks/aot_timing.py: x86, best of 7
rounds, nanoseconds per call).
"""

from __future__ import annotations

import os
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Sequence

from pitchfork.backend import harness
from pitchfork.backend.run import check_tools

HALIDE_INCLUDE = Path(__import__("halide").__file__).parent / "include"
TYPE_CODES = {"uint8": 1 | 8 << 8 | 1 << 16, "int8": 0 | 8 << 8 | 1 << 16, "uint16": 1 | 16 << 8 | 1 << 16,
              "int16": 0 | 16 << 8 | 1 << 16, "int32": 0 | 32 << 8 | 1 << 16, "uint32": 1 | 32 << 8 | 1 << 16,
              "float32": 2 | 32 << 8 | 1 << 16, "uint8x4": 1 | 8 << 8 | 4 << 16}


@dataclass(frozen=True)
class Buf:
    """A buffer argument: `dims` (min, extent, stride) per dimension, element type name, its host at
    byte `offset` into an allocation of `alloc` bytes; `host=False` passes a null host pointer,
    `null=True` passes a null halide_buffer_t pointer."""

    dims: tuple[tuple[int, int, int], ...]
    type: str | int = "uint8"  # a name of TYPE_CODES or a halide_type_t as 32 bits
    alloc: int = 0
    offset: int = 0
    host: bool = True
    null: bool = False
    device: int = 0
    flags: int = 0


@dataclass(frozen=True)
class Case:
    name: str
    #: in the entry point's order; ints are scalar params, a str is a C expression of the scalar's type
    #: (`PF_F16(0x3c00)`: the _Float16 of those bits, for a float16 Halide passes as `half`)
    args: tuple[Buf | int | str, ...]


@dataclass
class Result:
    rc: int
    message: str
    outputs: list[bytes] = field(default_factory=list)  # every buffer's allocation after the call
    shapes: list[tuple[int, ...]] = field(default_factory=list)


def _c_prelude(freestanding: bool) -> str:
    head = ["typedef unsigned char pf_u8;", "typedef __SIZE_TYPE__ pf_size;",
            "#define PF_F16(bits) (((union { unsigned short u; _Float16 h; }){ .u = (bits) }).h)"]
    if freestanding:
        head += ["typedef unsigned char uint8_t; typedef signed char int8_t; typedef unsigned short uint16_t;",
                 "typedef short int16_t; typedef unsigned int uint32_t; typedef int int32_t;",
                 "typedef unsigned long long uint64_t; typedef long long int64_t; typedef _Bool bool;",
                 "typedef struct halide_dimension_t { int32_t min, extent, stride; uint32_t flags; } "
                 "halide_dimension_t;",
                 "struct halide_type_t { uint8_t code, bits; uint16_t lanes; };",
                 "typedef struct halide_buffer_t { uint64_t device; const void *device_interface; uint8_t *host;",
                 "  uint64_t flags; struct halide_type_t type; int32_t dimensions; halide_dimension_t *dim;",
                 "  void *padding; } halide_buffer_t;",
                 harness._FREESTANDING]
    else:
        head += ['#include "HalideRuntime.h"', harness._HOSTED]
    return "\n".join(head)


def driver_source(cases: Sequence[Case], functions: Sequence[str], scalar_types: Sequence[str],
                  freestanding: bool, repeat: int = 0, handler: bool = True, argv: bool = False) -> str:
    """C source calling each of `functions` (same signature; scalar params of C types `scalar_types`,
    in order) on every case. With `repeat` > 0 the program instead times `repeat` calls of each
    case per function and prints nanoseconds per call (hosted only). `handler=False` leaves
    `halide_error` to the libraries' weak defaults (messages then go to stderr, not the report).
    `argv=True` calls each function through its `name_argv(void **)` entry instead (buffers as
    `halide_buffer_t *`, scalars as pointers to a variable of their C type)."""
    out = [_c_prelude(freestanding)]
    # Full prototypes: unprototyped, a float argument would be promoted to double (the callee reads garbage)
    kinds = [("struct halide_buffer_t *" if isinstance(a, Buf) else None) for a in cases[0].args] if cases else []
    it = iter(scalar_types)
    params = ", ".join(k if k is not None else next(it) for k in kinds) or "void"
    if argv:
        out.append("\n".join(f"extern int {f}_argv(void **);" for f in functions))
    else:
        out.append("\n".join(f"extern int {f}({params});" for f in functions))
    out.append("static char pf_msg[4096]; static unsigned pf_msg_len;")
    if handler:
        out.append(r"""void halide_error(void *uc, const char *msg) {
  (void)uc; pf_msg_len = 0;
  while (msg[pf_msg_len] && pf_msg_len < sizeof pf_msg) { pf_msg[pf_msg_len] = msg[pf_msg_len]; pf_msg_len++; }
}""")
    out.append(r"""
static void put(const void *p, pf_size n) {
  const pf_u8 *q = p;
  while (n > 0) { long w = pf_sys_write(q, n); if (w <= 0) return; q += w; n -= (pf_size)w; }
}
static void put_u32(unsigned v) { put(&v, 4); }
static unsigned pf_seed;
static void fill(pf_u8 *p, pf_size n, unsigned seed) {
  pf_seed = seed;
  for (pf_size i = 0; i < n; ++i) { pf_seed = pf_seed * 1103515245u + 12345u; p[i] = (pf_u8)(pf_seed >> 16); }
}
""")
    body: list[str] = []
    for ci, case in enumerate(cases):
        bufs = [(i, a) for i, a in enumerate(case.args) if isinstance(a, Buf)]
        for i, a in bufs:
            if a.alloc:
                out.append(f"static pf_u8 c{ci}_mem{i}[{a.alloc}] __attribute__((aligned(128)));")
            dims = ", ".join(f"{{{m}, {e}, {s}, 0}}" for m, e, s in a.dims) or "{0, 0, 0, 0}"
            out.append(f"static halide_dimension_t c{ci}_dim{i}[{max(len(a.dims), 1)}];")
            out.append(f"static const halide_dimension_t c{ci}_dim{i}_init[{max(len(a.dims), 1)}] = {{{dims}}};")
            out.append(f"static halide_buffer_t c{ci}_buf{i};")
        out.append(f"static void c{ci}_setup(unsigned seed) {{")
        for i, a in bufs:
            t = TYPE_CODES[a.type] if isinstance(a.type, str) else a.type
            out.append(f"  for (int d = 0; d < {max(len(a.dims), 1)}; ++d) c{ci}_dim{i}[d] = c{ci}_dim{i}_init[d];")
            if a.alloc:
                out.append(f"  fill(c{ci}_mem{i}, {a.alloc}, seed + {i});")
            host = f"c{ci}_mem{i} + {a.offset}" if a.host and a.alloc else "0"
            out.append(f"  c{ci}_buf{i}.device = {a.device}ULL; c{ci}_buf{i}.device_interface = 0;")
            out.append(f"  c{ci}_buf{i}.host = {host}; c{ci}_buf{i}.flags = {a.flags}ULL;")
            out.append(f"  c{ci}_buf{i}.type.code = {t & 0xFF}; c{ci}_buf{i}.type.bits = {(t >> 8) & 0xFF}; "
                       f"c{ci}_buf{i}.type.lanes = {t >> 16};")
            out.append(f"  c{ci}_buf{i}.dimensions = {len(a.dims)}; c{ci}_buf{i}.dim = c{ci}_dim{i}; "
                       f"c{ci}_buf{i}.padding = 0;")
        out.append("}")
        call_args, pointers, scalars = [], [], iter(scalar_types)
        out.append(f"static int c{ci}_call(int f) {{")
        for i, a in enumerate(case.args):
            if isinstance(a, Buf):
                call_args.append("0" if a.null else f"&c{ci}_buf{i}")
                pointers.append(call_args[-1])
            else:
                ctype = next(scalars)
                call_args.append(f"({ctype}){a}")
                if argv:  # name_argv takes a pointer to the scalar's value
                    out.append(f"  static {ctype} s{i}; s{i} = {call_args[-1]};")
                    pointers.append(f"&s{i}")
        if argv:
            out.append(f"  void *args[{max(len(pointers), 1)}] = {{{', '.join(pointers) or '0'}}};")
        for fi, f in enumerate(functions):
            out.append(f"  if (f == {fi}) return {f}_argv(args);" if argv
                       else f"  if (f == {fi}) return {f}({', '.join(call_args)});")
        out.append("  return 1; }")
        out.append(f"static void c{ci}_report(int rc) {{")
        out.append("  put_u32((unsigned)rc); put_u32(pf_msg_len); put(pf_msg, pf_msg_len);")
        for i, a in bufs:
            out.append(f"  put_u32({a.alloc}); put(c{ci}_mem{i}, {a.alloc});" if a.alloc else "  put_u32(0);")
            out.append(f"  put_u32((unsigned)c{ci}_buf{i}.dimensions); put_u32(c{ci}_buf{i}.host != 0);")
            out.append(f"  for (int d = 0; d < c{ci}_buf{i}.dimensions && d < 4; ++d) {{ "
                       f"put_u32((unsigned)c{ci}_dim{i}[d].min); put_u32((unsigned)c{ci}_dim{i}[d].extent); "
                       f"put_u32((unsigned)c{ci}_dim{i}[d].stride); }}")
        out.append("}")
        if repeat:  # best of 7 rounds of `repeat` calls per function, the functions interleaved
            body.append(f"  for (int f = 0; f < {len(functions)}; ++f) {{ c{ci}_setup(1); c{ci}_call(f);"
                        " pf_times[f] = -1; }")
            body.append(f"  for (int round = 0; round < 7; ++round) for (int f = 0; f < {len(functions)}; ++f) {{"
                        f" long long t0 = pf_now(); for (int r = 0; r < {repeat}; ++r) c{ci}_call(f);"
                        f" long long t = (pf_now() - t0) / {repeat};"
                        " if (pf_times[f] < 0 || t < pf_times[f]) pf_times[f] = t; }")
            body.append(f"  print_times({ci});")
        else:
            body.append(f"  for (int f = 0; f < {len(functions)}; ++f) {{ c{ci}_setup(7); pf_msg_len = 0;"
                        f" c{ci}_report(c{ci}_call(f)); }}")
    if repeat:
        out.append(r"""
#include <time.h>
#include <stdio.h>
static long long pf_times[8];
static long long pf_now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1000000000LL + ts.tv_nsec; }
""")
        out.append("static void print_times(int c) { printf(\"case %d\", c); for (int f = 0; f < "
                   f"{len(functions)}; ++f) printf(\" %lld\", pf_times[f]); printf(\"\\n\"); fflush(stdout); }}")
    out.append("static int pf_main(void) {")
    out += body
    out.append("  return 0;\n}")
    return "\n".join(out) + "\n"


def parse_results(data: bytes, cases: Sequence[Case], n_functions: int) -> list[list[Result]]:
    """Per case, per function: what the driver reported."""
    pos = 0

    def u32() -> int:
        nonlocal pos
        v = struct.unpack_from("<I", data, pos)[0]
        pos += 4
        return v

    def raw(n: int) -> bytes:
        nonlocal pos
        v = data[pos : pos + n]
        if len(v) != n:
            raise ValueError(f"driver output stops at byte {pos}")
        pos += n
        return v

    results = []
    for case in cases:
        per = []
        for _ in range(n_functions):
            rc = u32()
            rc = rc - (1 << 32) if rc >= 1 << 31 else rc
            r = Result(rc, raw(u32()).decode(errors="replace"))
            for a in case.args:
                if isinstance(a, Buf):
                    r.outputs.append(raw(u32()))
                    dims, has_host = u32(), u32()
                    shape = [dims, has_host]
                    for _ in range(min(dims, 4)):
                        shape += [u32(), u32(), u32()]
                    r.shapes.append(tuple(shape))
            per.append(r)
        results.append(per)
    if pos != len(data):
        raise ValueError(f"{len(data) - pos} unexpected trailing bytes")
    return results


def build_and_run(target: str, source: str, libs: Sequence[Path], workdir: Path,
                  timeout: float = 300.0) -> bytes:
    """Compile the driver for `target`, link `libs`, run it (natively or under qemu); its stdout."""
    return run_driver(target, source, libs, workdir, timeout).stdout


def run_driver(target: str, source: str, libs: Sequence[Path], workdir: Path,
               timeout: float = 300.0) -> subprocess.CompletedProcess:
    """`build_and_run`, returning the finished process (stdout bytes, stderr bytes)."""
    src = workdir / "driver.c"
    src.write_text(source)
    exe = workdir / "driver"
    tools = check_tools(target)
    if tools is None:  # x86: the host compiler
        cmd = ["gcc", "-O2", f"-I{HALIDE_INCLUDE}", str(src), *map(str, libs), "-lpthread", "-ldl", "-lm",
               "-o", str(exe)]
        run: list[str] = [str(exe)]
    else:
        extra = [f"-I{HALIDE_INCLUDE}"] if target == "arm64" else []
        cmd = [*tools.cc, *extra, str(src), *map(str, libs)]
        if target == "arm64":
            cmd += ["-lpthread", "-ldl", "-lm"]
        cmd += ["-o", str(exe)]
        run = [*tools.run, str(exe)]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=workdir)
    if p.returncode != 0:
        raise RuntimeError(f"building the driver failed:\n$ {' '.join(cmd)}\n{p.stderr[-3000:]}")
    p2 = subprocess.run(run, capture_output=True, cwd=workdir, timeout=timeout)
    if p2.returncode != 0:
        raise RuntimeError(f"driver exited with {p2.returncode}: {p2.stderr.decode(errors='replace')[-2000:]}")
    return p2


def halide_library(gen_file: str, cls: str, target: str, name: str, out_dir: Path,
                   params: Optional[dict] = None) -> Path:
    """Halide 21's own `compile_to_static_library` of a generator (function `name`); the `.a` path."""
    from pitchfork.frontend.capture import halide_target
    from pitchfork.aot.generator import find_generator, instantiate

    gp = instantiate(find_generator(gen_file, cls), target, params)
    prefix = out_dir / name
    gp.pipeline.compile_to_static_library(str(prefix), gp.arguments, name, halide_target(target))
    return prefix.with_suffix(".a")


def env_ok() -> bool:
    return os.path.isdir(HALIDE_INCLUDE)
