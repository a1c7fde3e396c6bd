"""Static performance estimate: every block that runs, weighted by how often it runs.

For one function's assembly on one target:

1. `asmblocks.instrument` adds a counter to every basic block; the instrumented code is assembled with
   Debian's `llvm-mc` (llvm-22), linked with a generated C harness that calls the kernel once on the
   benchmark's inputs and prints the counters, and run (natively on x86, qemu-aarch64, qemu-hexagon).
   The counts are exact execution counts of each block of the *uninstrumented* code at that size.
2. Cost per block: on x86 and AArch64 the steady-state cycles per iteration that `llvm-mca` reports for
   the block's instructions (AArch64: `-mcpu=cortex-a76`, the core every contender is compiled for,
   and beside it a second core's model, `SECOND_CPU`, so agreement is visible; x86: the host's CPU);
   on Hexagon the number of VLIW packets and beside it `hvx_cycles`' dependency-aware cycle estimate
   (llvm-mca has no Hexagon model). A single-path innermost loop (every block of it ran equally
   often) is analysed as one region, so llvm-mca sees the whole loop body.
3. Estimate = sum over regions of count x cost. Nothing is dropped: every block with a non-zero count
   contributes; loops are reported with their share of the total.

Kernels are either ours (`void f(err, ptr/min/extent/stride..., scalars...)`, see `kernel.py`) or
Halide's (`int f(halide_buffer_t *..., scalars..., halide_buffer_t *out)`, built with `no_runtime`;
the harness supplies `halide_malloc`/`halide_free`; unresolved error handlers are left unresolved, as
they run only when an assertion fails).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import numpy as np

from benchmarks.harness.asmblocks import Block, Syntax, find_loops, instrument

LLVM_BIN = "/usr/lib/llvm-22/bin"
#: llvm-mca's core per ISA: the one we compile for (pitchfork.backend.machine.ARM64.cpu; Halide 21's ARM
#: IR is compiled for it too, halide21.py) ...
MCA_CPU = {"arm64": "cortex-a76"}
#: ... and a second core's model, reported beside it (the estimate's sensitivity to the model).
SECOND_CPU = {"arm64": "apple-m1"}
#: the second model a caller may ask for where the estimate has none of its own (`estimate(second=)`,
#: the worker's job key "second_mcpu"): x86's primary model is the host's core, the second the core
#: every contender is compiled for (pitchfork.backend.machine.X86_AVX2). The synthesis regression
#: checks (benchmarks/synth_bringup_static.py, synth/loo.py) withdraw a rule only when both agree.
SECOND_ON_REQUEST = {"x86-avx2": "haswell"}
MC_ARGS: dict[str, list[str]] = {
    "x86-avx2": ["-triple=x86_64-unknown-linux-gnu"],
    "arm64": ["-triple=aarch64-unknown-linux-gnu", "-mattr=+neon,+dotprod,+fullfp16,+i8mm"],
    "hvx128": ["-triple=hexagon-unknown-linux-musl", "-mcpu=hexagonv66", "-mattr=+hvxv66,+hvx-length128b"],
}
MCA_TRIPLE = {"x86-avx2": "x86_64-unknown-linux-gnu", "arm64": "aarch64-unknown-linux-gnu"}
MCA_ITERATIONS = 200


class StaticError(RuntimeError):
    """Building, running or analysing the instrumented program failed."""


def llvm_tool(name: str) -> str:
    path = os.path.join(LLVM_BIN, name)
    if os.path.exists(path):
        return path
    found = shutil.which(f"{name}-22") or shutil.which(name)
    if not found:
        raise StaticError(f"{name} not found: install Debian's llvm-22 (apt-get install llvm-22)")
    return found


def host_mcpu() -> str:
    """The host CPU name as LLVM knows it (llvm-mca's `-mcpu` for the x86 validation)."""
    import llvmlite.binding as llvm

    return llvm.get_host_cpu_name()


# ---- the C harness ------------------------------------------------------------------------------

@dataclass(frozen=True)
class CArg:
    ctype: str
    expr: str


@dataclass
class HarnessSpec:
    """What the generated C harness passes to the kernel: arguments, the input blob, output space."""

    function: str
    returns: str  # "void" or "int"
    args: list[CArg] = field(default_factory=list)
    decls: list[str] = field(default_factory=list)
    blob: bytearray = field(default_factory=bytearray)
    out_bytes: int = 0
    #: (offset in the output area, dtype, shape) of each output buffer, in argument order
    outputs: list[tuple[int, np.dtype, tuple[int, ...]]] = field(default_factory=list)

    def add_input(self, data: bytes) -> str:
        off = -(-len(self.blob) // 128) * 128
        self.blob.extend(b"\0" * (off - len(self.blob)))
        self.blob.extend(data)
        return f"((unsigned char *)pf_in + {off})"

    def add_output(self, nbytes: int, dtype: np.dtype = np.dtype(np.uint8),
                   shape: tuple[int, ...] | None = None) -> str:
        off = self.out_bytes
        self.out_bytes = off + -(-max(nbytes, 1) // 128) * 128 + 128
        self.outputs.append((off, np.dtype(dtype), shape if shape is not None else (nbytes // np.dtype(dtype).itemsize,)))
        return f"(pf_outmem + {off})"


_HALIDE_DECLS = r"""
struct halide_dimension_t { int min, extent, stride; unsigned flags; };
struct halide_type_t { unsigned char code, bits; unsigned short lanes; };
struct halide_buffer_t { unsigned long long device; const void *device_interface; unsigned char *host;
  unsigned long long flags; struct halide_type_t type; int dimensions; struct halide_dimension_t *dim;
  void *padding; };
"""


def our_kernel_spec(function: str, args: Sequence[Any]) -> HarnessSpec:
    """Harness spec for one of our kernels, from `kernel.kernel_args` values."""
    from pitchfork.backend.harness import Buffer

    spec = HarnessSpec(function, "void")
    for a in args:
        if isinstance(a, Buffer):
            arr = np.ascontiguousarray(a.array)
            data = arr.tobytes()
            expr = spec.add_output(len(data), arr.dtype, arr.shape) if a.is_output else spec.add_input(data)
            spec.args.append(CArg("void *", expr))
        else:
            spec.args.append(CArg("int" if a.bits == 32 else "long long", f"{a.signed_value}LL"))
    return spec


_HL_CODE = {"i": 0, "u": 1, "f": 2}


def halide_kernel_spec(function: str, values: Sequence[Any], params: Sequence[Any], out_dtype: np.dtype,
                       out_size: Sequence[int]) -> HarnessSpec:
    """Harness spec for Halide's `int function(halide_buffer_t *in.., scalars.., halide_buffer_t *out)`.
    `params` are the hl.ImageParam / hl.Param objects, `values` their values (numpy arrays / numbers)."""
    import halide as hl

    spec = HarnessSpec(function, "int", decls=[_HALIDE_DECLS])
    nbuf = 0

    def hbuf(expr: str, dtype: np.dtype, extents: Sequence[int], mins: Sequence[int] | None = None) -> str:
        nonlocal nbuf
        k = nbuf
        nbuf += 1
        dims, stride = [], 1
        for d, e in enumerate(extents):
            dims.append(f"{{{int(mins[d]) if mins else 0}, {int(e)}, {stride}, 0}}")
            stride *= int(e)
        code = _HL_CODE[dtype.kind]
        spec.decls.append(f"static struct halide_dimension_t pf_dim{k}[] = {{{', '.join(dims)}}};")
        spec.decls.append(f"static struct halide_buffer_t pf_hb{k} = {{0, 0, {expr}, 0, {{{code}, "
                          f"{dtype.itemsize * 8}, 1}}, {len(extents)}, pf_dim{k}, 0}};")
        return f"&pf_hb{k}"

    for p, v in zip(params, values):
        if isinstance(p, hl.ImageParam):
            arr = np.ascontiguousarray(v)
            mins = [v.dim(d).min() for d in range(v.dimensions())] if isinstance(v, hl.Buffer) else None
            spec.args.append(CArg("struct halide_buffer_t *",
                                  hbuf(spec.add_input(arr.tobytes()), arr.dtype, list(reversed(arr.shape)), mins)))
        else:
            t = p.type()
            if t.is_float():
                spec.args.append(CArg("float" if t.bits() == 32 else "double", repr(float(v))))
            else:
                ctype = {8: "char", 16: "short", 32: "int", 64: "long long"}[t.bits()]
                ctype = ("unsigned " if t.is_uint() or t.is_bool() else "signed ") + ctype
                spec.args.append(CArg(ctype, f"({ctype}){int(v)}LL"))
    nbytes = int(np.prod(out_size)) * np.dtype(out_dtype).itemsize
    out_expr = spec.add_output(nbytes, np.dtype(out_dtype), tuple(reversed([int(e) for e in out_size])))
    spec.args.append(CArg("struct halide_buffer_t *", hbuf(out_expr, np.dtype(out_dtype), out_size)))
    return spec


#: libm functions Halide 21's Hexagon code calls (LLVM has no Hexagon instruction for llvm.floor/ceil/
#: trunc.f32 and emits these calls; camera_pipe uses floorf). The bare-metal Hexagon harness has no
#: libm, so they are defined here, exactly (IEEE single, bit manipulation, no rounding mode used).
FREESTANDING_LIBM = r"""
static float pf_round_integral(float x, int mode) { /* mode: 0 floor, 1 ceil, 2 trunc */
  union { float f; unsigned u; } v = { x };
  int e = (int)((v.u >> 23) & 0xffu) - 127;
  unsigned neg = v.u >> 31;
  if (e >= 23) return x;                                /* integral, infinite or NaN */
  if (e < 0) {                                          /* |x| < 1 */
    if ((v.u & 0x7fffffffu) == 0) return x;             /* +-0 keeps its sign */
    if (mode == 0) return neg ? -1.0f : 0.0f;
    if (mode == 1) return neg ? -0.0f : 1.0f;
    return neg ? -0.0f : 0.0f;
  }
  unsigned m = 0x007fffffu >> e;
  if ((v.u & m) == 0) return x;                         /* already integral */
  if ((mode == 0 && neg) || (mode == 1 && !neg)) v.u += m + 1u;  /* away from zero, then truncate */
  v.u &= ~m;
  return v.f;
}
float floorf(float x) { return pf_round_integral(x, 0); }
float ceilf(float x) { return pf_round_integral(x, 1); }
float truncf(float x) { return pf_round_integral(x, 2); }
"""


def c_source(spec: HarnessSpec, n_counters: int, freestanding: bool, pool_bytes: int) -> str:
    from pitchfork.backend import harness

    params = ", ".join(a.ctype for a in spec.args) or "void"
    call = ", ".join(a.expr for a in spec.args)
    lines = ["typedef __SIZE_TYPE__ pf_size;", "extern const unsigned char pf_in[];",
             "extern unsigned int pf_cnt[];",
             f"static unsigned char pf_outmem[{max(spec.out_bytes, 128)}] __attribute__((aligned(128)));",
             harness._FREESTANDING if freestanding else harness._HOSTED,
             FREESTANDING_LIBM if freestanding else "", *spec.decls,
             f'extern {spec.returns} pf_kernel({params}) __asm__("{spec.function}");',
             f"static unsigned char pf_pool[{pool_bytes}] __attribute__((aligned(128)));",
             # A stack of 128-byte-aligned blocks: both Halide's code and ours free in reverse order
             # of allocation (scoped buffers), so freeing the newest block (and any freed blocks
             # under it) returns its space; a kernel that allocates per loop iteration reuses it.
             "static pf_size pf_used, pf_at[4096]; static unsigned char pf_dead[4096]; static unsigned pf_n;",
             "void *halide_malloc(void *uc, pf_size n) {",
             "  pf_size need = (n + 255) / 128 * 128;",
             "  if (pf_n == 4096 || need > sizeof(pf_pool) - pf_used) return 0;",
             "  pf_at[pf_n] = pf_used; pf_dead[pf_n++] = 0; pf_used += need;",
             "  return pf_pool + pf_at[pf_n - 1]; }",
             "void halide_free(void *uc, void *p) {",
             "  if (!p) return;",
             "  for (unsigned i = pf_n; i-- > 0;) if (pf_pool + pf_at[i] == (unsigned char *)p) { pf_dead[i] = 1; break; }",
             "  while (pf_n > 0 && pf_dead[pf_n - 1]) pf_used = pf_at[--pf_n]; }",
             "int qurt_hvx_lock(int m) { (void)m; return 0; }",
             "int qurt_hvx_unlock(void) { return 0; }",
             "static int pf_put(const void *q, pf_size n) {",
             "  const unsigned char *p = q;",
             "  while (n > 0) { long w = pf_sys_write(p, n); if (w <= 0) return 3; p += w; n -= (pf_size)w; }",
             "  return 0; }",
             "static int pf_main(void) {",
             "  int ret = 0;",
             f"  {'ret = ' if spec.returns == 'int' else ''}pf_kernel({call});",
             f"  return pf_put(&ret, 4) | pf_put(pf_cnt, {4 * n_counters}) | pf_put(pf_outmem, {spec.out_bytes});",
             "}"]
    return "\n".join(lines) + "\n"


# ---- building and running -----------------------------------------------------------------------

def _toolchain(isa: str) -> tuple[list[str], list[str]]:
    """(link command prefix, run prefix) for `isa`."""
    from pitchfork.backend.run import check_tools

    if isa == "x86-avx2":
        return ["gcc", "-O1", "-static", "-Wl,--unresolved-symbols=ignore-all"], []
    tc = check_tools(isa)
    assert tc is not None
    return [*tc.cc, "-Wl,--unresolved-symbols=ignore-all"], list(tc.run)


@dataclass
class CountedRun:
    """One instrumented run: the function's blocks, their execution counts, the kernel's return value
    (0 for void kernels) and the output buffers it wrote (in argument order)."""

    blocks: list[Block]
    counts: np.ndarray
    returned: int
    outputs: list[np.ndarray]


def block_counts(asm: str, function: str, isa: Syntax, spec: HarnessSpec, *, timeout: float = 900.0,
                 pool_bytes: int = 64 << 20) -> tuple[list[Block], np.ndarray]:
    """Run `function` of `asm` once under its target's harness; return its blocks and their counts."""
    run = counted_run(asm, function, isa, spec, timeout=timeout, pool_bytes=pool_bytes)
    return run.blocks, run.counts


def counted_run(asm: str, function: str, isa: Syntax, spec: HarnessSpec, *, timeout: float = 900.0,
                pool_bytes: int = 64 << 20) -> CountedRun:
    """Run `function` of `asm` once under its target's harness (see `CountedRun`)."""
    text, blocks = instrument(asm, function, isa)
    cc, run = _toolchain(isa)
    with tempfile.TemporaryDirectory(prefix=f"pf-bench-{isa}-") as d:
        s_path, o_path = os.path.join(d, "kernel.s"), os.path.join(d, "kernel.o")
        with open(s_path, "w") as f:
            f.write(text)
        mc = [llvm_tool("llvm-mc"), *MC_ARGS[isa], "-filetype=obj", s_path, "-o", o_path]
        p = subprocess.run(mc, capture_output=True, text=True)
        if p.returncode:
            raise StaticError(f"llvm-mc failed on the instrumented {isa} assembly:\n{p.stderr[-2000:]}")
        blob = os.path.join(d, "in.bin")
        with open(blob, "wb") as f:
            f.write(bytes(spec.blob) + b"\0" * 256)
        with open(os.path.join(d, "blob.s"), "w") as f:
            f.write(f'\t.section .rodata.pf_in,"a"\n\t.balign 128\n\t.globl pf_in\npf_in:\n\t.incbin "{blob}"\n')
        with open(os.path.join(d, "harness.c"), "w") as f:
            f.write(c_source(spec, len(blocks), isa == "hvx128", pool_bytes))
        exe = os.path.join(d, "run")
        build = [*cc, "harness.c", "blob.s", o_path, "-o", exe] + ([] if isa == "hvx128" else ["-lm"])
        p = subprocess.run(build, capture_output=True, text=True, cwd=d)
        if p.returncode:
            raise StaticError(f"linking the {isa} counting harness failed:\n$ {' '.join(build)}\n{p.stderr[-3000:]}")
        try:
            p2 = subprocess.run([*run, exe], capture_output=True, cwd=d, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise StaticError(f"{isa}: the counting run exceeded {timeout:.0f} s") from None
    n = 4 * len(blocks)
    if p2.returncode != 0 or len(p2.stdout) != 4 + n + spec.out_bytes:
        raise StaticError(f"{isa}: counting run failed (status {p2.returncode}, {len(p2.stdout)} bytes): "
                          f"{p2.stderr.decode(errors='replace')[-1000:]}")
    ret = int(np.frombuffer(p2.stdout[:4], dtype=np.int32)[0])
    counts = np.frombuffer(p2.stdout[4 : 4 + n], dtype=np.uint32).astype(np.int64)
    area = p2.stdout[4 + n :]
    outs = []
    for off, dt, shape in spec.outputs:
        size = int(np.prod(shape)) * dt.itemsize
        outs.append(np.frombuffer(area[off : off + size], dtype=dt).reshape(shape).copy())
    return CountedRun(blocks, counts, ret, outs)


# ---- costing ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Region:
    """Blocks costed together: an innermost single-path loop, or one block."""

    first: int
    last: int
    count: int  # executions of the region (of its first block)
    instructions: tuple[str, ...]
    packets: int
    cost: float = 0.0  # per execution (cycles or packets)
    loop: bool = False  # a single-path innermost loop (costed in its steady state)
    packet_list: tuple[tuple[str, ...], ...] = ()  # Hexagon: the packets, for hvx_cycles


def regions(blocks: list[Block], counts: np.ndarray) -> list[Region]:
    """Every block that ran, grouped: a single-path innermost loop becomes one region."""
    out: list[Region] = []
    covered: set[int] = set()
    for lp in find_loops(blocks):
        if not lp.innermost:
            continue
        cs = {int(counts[i]) for i in range(lp.first, lp.last + 1)}
        if len(cs) == 1 and cs != {0}:
            insts = tuple(x for i in range(lp.first, lp.last + 1) for x in blocks[i].instructions)
            pks = tuple(p for i in range(lp.first, lp.last + 1) for p in blocks[i].packets)
            out.append(Region(lp.first, lp.last, cs.pop(), insts, len(pks), loop=True, packet_list=pks))
            covered.update(range(lp.first, lp.last + 1))
    for b in blocks:
        if b.index not in covered and counts[b.index] > 0 and b.instructions:
            out.append(Region(b.index, b.index, int(counts[b.index]), b.instructions, len(b.packets),
                              packet_list=b.packets))
    return sorted(out, key=lambda r: r.first)


def _mca_text(insts: Sequence[str], isa: str, name: str) -> str:
    c = "#" if isa == "x86-avx2" else "//"
    return "\n".join([f"{c} LLVM-MCA-BEGIN {name}", *(f"\t{i}" for i in insts), f"{c} LLVM-MCA-END {name}", ""])


_MCA_REGION = re.compile(r"Code Region - (r\d+)\s+Iterations:\s+(\d+)\s+Instructions:\s+\d+\s+Total Cycles:\s+(\d+)")


def mca_cycles(bodies: Sequence[Sequence[str]], isa: str, mcpu: str) -> list[float | None]:
    """Steady-state cycles per iteration of each instruction sequence (None where llvm-mca fails)."""
    if not bodies:
        return []
    text = "".join(_mca_text(b, isa, f"r{k}") for k, b in enumerate(bodies))
    cmd = [llvm_tool("llvm-mca"), f"-mtriple={MCA_TRIPLE[isa]}", f"-mcpu={mcpu}",
           f"-iterations={MCA_ITERATIONS}", "-"]
    p = subprocess.run(cmd, input=text, capture_output=True, text=True)
    if p.returncode == 0:
        got = {m.group(1): int(m.group(3)) / int(m.group(2)) for m in _MCA_REGION.finditer(p.stdout)}
        if len(got) == len(bodies):
            return [got[f"r{k}"] for k in range(len(bodies))]
    if len(bodies) == 1:
        return [None]
    return [mca_cycles([b], isa, mcpu)[0] for b in bodies]  # isolate the region llvm-mca rejects


_MNEMONIC_CALL = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


def mnemonic(inst: str, isa: str) -> str:
    if isa != "hvx128":
        return inst.split(None, 1)[0]
    inst = re.sub(r"^if\s*\([^)]*\)\s*", "", inst)
    if "=" in inst and not re.match(r"^[^=]*[<>!]=", inst):
        lhs, rhs = inst.split("=", 1)
        m = _MNEMONIC_CALL.search(rhs)
        if m:
            return m.group(1)
        m = _MNEMONIC_CALL.search(lhs)
        return f"{m.group(1)}(st)" if m else "transfer"
    m = _MNEMONIC_CALL.search(inst)
    return m.group(1) if m else inst.split(None, 1)[0]


@dataclass
class Estimate:
    """The weighted estimate of one kernel: total, per loop, per region, dynamic instruction histogram."""

    unit: str  # "cycles" or "packets"
    total: float
    regions: list[dict[str, Any]]
    loops: list[dict[str, Any]]
    histogram: dict[str, int]
    mca_failed: int
    blocks: int
    blocks_run: int
    #: the second model's total beside `total`: {"model": "apple-m1" | "hvx_cycles", "unit", "total"}
    alt: dict[str, Any] = field(default_factory=dict)
    #: executions of instructions that name a vector register (`VECTOR_REGISTER`): 0 when the run took
    #: only scalar paths (hvx128 average_pool's 64 channels, fewer than a vector's 128 lanes), where no
    #: lowering rule's code ran (benchmarks/synth_bringup_static.py `suspects`)
    vector_executed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"unit": self.unit, "total": self.total, "loops": self.loops, "regions": self.regions[:40],
                "histogram": self.histogram, "mca_failed_regions": self.mca_failed, "blocks": self.blocks,
                "blocks_run": self.blocks_run, "alt": self.alt, "vector_executed": self.vector_executed}


#: an instruction naming a vector register (HVX V/Q, AArch64 V/Q, x86 xmm/ymm)
VECTOR_REGISTER = {"hvx128": re.compile(r"\b[vq]\d+\b"), "arm64": re.compile(r"\b[vq]\d+\b"),
                   "x86-avx2": re.compile(r"%[xy]mm\d+")}


def estimate(blocks: list[Block], counts: np.ndarray, isa: str, mcpu: str | None = None,
             second: str | None = None) -> Estimate:
    """Weighted cost of a run whose block counts are `counts` (see the module docstring). `second`:
    the llvm-mca core of the second model (`alt`) when the ISA has none by default (`SECOND_CPU`;
    the x86 regression check of benchmarks/synth_bringup_static.py asks for one)."""
    regs = regions(blocks, counts)
    failed = 0
    alt: dict[str, Any] = {}
    if isa == "hvx128":
        from benchmarks.harness.hvx_cycles import block_cycles

        costs: list[float] = [float(r.packets) for r in regs]
        unit = "packets"
        alt = {"model": "hvx_cycles", "unit": "cycles",
               "total": float(sum(r.count * block_cycles(r.packet_list, r.loop) for r in regs))}
    else:
        got = mca_cycles([r.instructions for r in regs], isa, mcpu or MCA_CPU.get(isa) or host_mcpu())
        costs = []
        for r, c in zip(regs, got):
            if c is None:  # llvm-mca cannot model it: count one cycle per instruction (reported)
                failed += 1
                c = float(len(r.instructions))
            costs.append(c)
        unit = "cycles"
        second = SECOND_CPU.get(isa) or second
        if second:
            got2 = mca_cycles([r.instructions for r in regs], isa, second)
            alt = {"model": second, "unit": "cycles",
                   "total": float(sum(r.count * (c if c is not None else float(len(r.instructions)))
                                      for r, c in zip(regs, got2)))}
    total = float(sum(r.count * c for r, c in zip(regs, costs)))
    reg_json = sorted(({"blocks": [r.first, r.last], "label": blocks[r.first].label, "count": r.count,
                        "cost_per_run": c, "weighted": r.count * c, "instructions": len(r.instructions)}
                       for r, c in zip(regs, costs)), key=lambda d: -d["weighted"])
    loops = []
    for lp in find_loops(blocks):
        if counts[lp.first] == 0:
            continue
        w = sum(r.count * c for r, c in zip(regs, costs) if lp.first <= r.first and r.last <= lp.last)
        insts = [x for i in range(lp.first, lp.last + 1) for x in blocks[i].instructions]
        loops.append({"header": lp.header, "blocks": [lp.first, lp.last], "innermost": lp.innermost,
                      "header_count": int(counts[lp.first]), "instructions": len(insts),
                      "weighted": w, "share": w / total if total else 0.0})
    hist: Counter[str] = Counter()
    vector = 0
    vreg = VECTOR_REGISTER.get(isa)
    for b in blocks:
        n = int(counts[b.index])
        if n:
            for i in b.instructions:
                hist[mnemonic(i, isa)] += n
                if vreg is not None and vreg.search(i):
                    vector += n
    return Estimate(unit, total, reg_json, loops, dict(hist.most_common(30)), failed, len(blocks),
                    int(np.count_nonzero(counts)), alt, vector)
