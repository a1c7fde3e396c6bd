"""The generic calling convention for running kernels, and its C-harness form for the qemu targets.

Every kernel is `void f(arg0, arg1, ...)`; each argument is a `Buffer` (a pointer to a numpy array's
bytes, read-only input or in/out output) or a `Scalar` (an i32 or i64 integer). A `Call` names a
function and its arguments. `run.py` executes calls in-process (x86) or through a generated harness
under qemu (AArch64, Hexagon); this module builds that harness.

Memory invariants, the same on every target:

* every buffer base address is `128·k + misalign` (default misalign 0), so alignment claims up to 128
  bytes relative to the base hold, and `misalign` lets tests exercise unaligned loads;
* each output buffer is surrounded by guard bytes (`GUARD_BYTE`); a kernel that writes outside its
  output buffer is reported, not silently tolerated;
* inputs are read-only: under qemu they live in `.rodata` (a write faults), on x86 they are compared
  after the call. Identical inputs (same bytes and misalign) are stored once.

Harness layout: all input bytes form one blob and all output regions another; both are pulled into
the executable with `.incbin` from a small assembly file (a 4 MB C initialiser takes ~6 s to compile,
`.incbin` ~10 ms). A static table lists the calls (function pointer, signature id, pointer and scalar
arguments, output range). After each call the harness writes an 8-byte frame header (`PFOK` + call
index, little endian) and the call's output range to stdout, so a crash is attributed to the exact call.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import BinaryIO, Literal

import numpy as np

from pitchfork.backend.machine import FunctionSig

__all__ = ["ALIGN", "GUARD_BYTE", "Buffer", "Call", "Plan", "Scalar", "blob_asm", "c_source", "plan_calls"]

ALIGN = 128
GUARD = 128  # guard bytes before and (at least) after every output buffer
GUARD_BYTE = 0xA5
FRAME_MAGIC = b"PFOK"


@dataclass(frozen=True, slots=True, eq=False)
class Buffer:
    """A pointer argument. Inputs are read-only; outputs start with `array`'s contents (so accumulating
    kernels work) and come back as new arrays -- the given array is never modified."""

    array: np.ndarray
    is_output: bool = False
    misalign: int = 0

    def __post_init__(self) -> None:
        a = np.asarray(self.array)
        if a.dtype.hasobject or a.dtype.itemsize == 0:
            raise TypeError(f"buffer dtype {a.dtype} has no fixed byte layout")
        if not 0 <= self.misalign < ALIGN:
            raise ValueError(f"misalign must be in [0, {ALIGN}), got {self.misalign}")
        # A dense array keeps its layout (an interleaved image's strides are what the kernel is given);
        # any other is copied, densely in its own axis order.
        object.__setattr__(self, "array", dense(a))  # keeps 0-d shape

    @classmethod
    def input(cls, array: np.ndarray, misalign: int = 0) -> Buffer:
        return cls(array, False, misalign)

    @classmethod
    def output(cls, array: np.ndarray, misalign: int = 0) -> Buffer:
        return cls(array, True, misalign)

    @property
    def nbytes(self) -> int:
        return int(self.array.nbytes)


@dataclass(frozen=True, slots=True)
class Scalar:
    """An integer argument passed as i32 or i64. Values may be given signed or unsigned."""

    value: int
    bits: Literal[32, 64] = 32

    def __post_init__(self) -> None:
        if self.bits not in (32, 64):
            raise ValueError(f"scalar bits must be 32 or 64, got {self.bits}")
        if not -(1 << (self.bits - 1)) <= self.value < (1 << self.bits):
            raise ValueError(f"{self.value} does not fit in {self.bits} bits")

    @property
    def signed_value(self) -> int:
        v = self.value & ((1 << self.bits) - 1)
        return v - (1 << self.bits) if v >> (self.bits - 1) else v

    @property
    def llvm_type(self) -> str:
        return f"i{self.bits}"


Arg = Buffer | Scalar


@dataclass(frozen=True, slots=True)
class Call:
    """One kernel invocation: `function(*args)`. `args` may be given as any sequence."""

    function: str
    args: tuple[Arg, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))
        for a in self.args:
            if not isinstance(a, (Buffer, Scalar)):
                raise TypeError(f"call argument must be Buffer or Scalar, got {type(a).__name__}")

    @property
    def outputs(self) -> tuple[Buffer, ...]:
        return tuple(a for a in self.args if isinstance(a, Buffer) and a.is_output)


def check_signature(call: Call, sig: FunctionSig | None) -> None:
    """Raise `TypeError` unless `call`'s arguments match `sig` (ptr <-> Buffer, iN <-> Scalar(N))."""
    if sig is None:
        raise TypeError(
            f"no function {call.function!r} is defined in the module(s) (internal "
            "functions are removed by optimisation; give it external linkage)"
        )
    if sig.ret != "void":
        raise TypeError(f"{call.function} returns {sig.ret}; kernels must return void")
    if len(sig.params) != len(call.args):
        raise TypeError(f"{call.function} takes {len(sig.params)} arguments, call passes {len(call.args)}")
    for i, (p, a) in enumerate(zip(sig.params, call.args)):
        want = "ptr" if isinstance(a, Buffer) else a.llvm_type
        if p != want:
            raise TypeError(f"{call.function} argument {i} is {p}, call passes {want}")


# --------------------------------------------------------------------------------------------------
# Blob layout


@dataclass(frozen=True, slots=True)
class OutRegion:
    """One output buffer inside the output blob: [start, start+size) holds guard, data, guard."""

    start: int
    size: int
    data: int  # absolute offset of the data
    nbytes: int


@dataclass(frozen=True, slots=True)
class PlannedCall:
    function: str
    kinds: tuple[str, ...]  # 'p' | 'i32' | 'i64' per argument
    pointers: tuple[tuple[str, int] | None, ...]  # ('in' | 'out', offset) for buffers
    scalars: tuple[int, ...]  # signed values (0 for buffers)
    outputs: tuple[OutRegion, ...]
    out_begin: int
    out_end: int


@dataclass(frozen=True, slots=True)
class Plan:
    calls: tuple[PlannedCall, ...]
    in_chunks: tuple[tuple[int, Buffer], ...]  # (offset, buffer) written into the input blob
    in_size: int
    out_size: int
    source_calls: tuple[Call, ...]

    def write_blobs(self, in_file: BinaryIO, out_file: BinaryIO) -> None:
        buf = bytearray(self.in_size)
        for off, b in self.in_chunks:
            buf[off : off + b.nbytes] = raw_bytes(b.array).data
        in_file.write(buf)
        out = bytearray([GUARD_BYTE]) * self.out_size
        for pc, call in zip(self.calls, self.source_calls):
            for reg, b in zip(pc.outputs, call.outputs):
                out[reg.data : reg.data + reg.nbytes] = raw_bytes(b.array).data
        out_file.write(out)


def memory_order(a: np.ndarray) -> tuple[int, ...]:
    """The axes of `a` from the largest stride to the smallest (ties in axis order): the permutation
    that makes a dense array C-contiguous (the identity for a C-contiguous one)."""
    return tuple(sorted(range(a.ndim), key=lambda d: (-abs(a.strides[d]), d)))


def dense(a: np.ndarray) -> np.ndarray:
    """`a` itself if its elements fill one block of memory with positive strides in some axis order
    (C-contiguous, or a transposed view such as an interleaved image's (c, y, x) view), else a copy
    that does, in `a`'s own axis order."""
    if a.flags.c_contiguous or (min(a.strides, default=0) > 0 and np.transpose(a, memory_order(a)).flags.c_contiguous):
        return a
    return np.array(a, order="K", copy=True)


def raw_bytes(array: np.ndarray) -> np.ndarray:
    """The bytes of a dense array (see `dense`), in memory order, as a flat uint8 view (works for 0-d
    and empty arrays too)."""
    return np.transpose(array, memory_order(array)).reshape(-1).view(np.uint8)


def from_raw_bytes(raw: np.ndarray, like: np.ndarray) -> np.ndarray:
    """A new array shaped and laid out like the dense array `like`, holding `raw` (its bytes in memory
    order, as `raw_bytes` gives them)."""
    perm = memory_order(like)
    block = raw.view(like.dtype).reshape([like.shape[d] for d in perm])
    return np.transpose(block, np.argsort(perm))


def _round_up(x: int, a: int) -> int:
    return (x + a - 1) // a * a


def out_region_layout(nbytes: int, misalign: int) -> tuple[int, int]:
    """(region size, data offset within region) of a guarded output buffer; regions are 128-aligned."""
    data = GUARD + misalign
    return _round_up(data + nbytes, ALIGN) + GUARD, data


def plan_calls(calls: Sequence[Call]) -> Plan:
    in_chunks: list[tuple[int, Buffer]] = []
    seen: dict[tuple[bytes, int, int], int] = {}
    in_size = 0
    out_size = 0
    planned = []
    for call in calls:
        kinds: list[str] = []
        ptrs: list[tuple[str, int] | None] = []
        scal: list[int] = []
        outs: list[OutRegion] = []
        out_begin = out_size
        for a in call.args:
            if isinstance(a, Scalar):
                kinds.append(a.llvm_type)
                ptrs.append(None)
                scal.append(a.signed_value)
                continue
            kinds.append("p")
            scal.append(0)
            if a.is_output:
                size, data = out_region_layout(a.nbytes, a.misalign)
                outs.append(OutRegion(out_size, size, out_size + data, a.nbytes))
                ptrs.append(("out", out_size + data))
                out_size += size
            else:
                key = (
                    hashlib.blake2b(raw_bytes(a.array).data).digest(),
                    a.nbytes,
                    a.misalign,
                )
                if key not in seen:
                    seen[key] = _round_up(in_size, ALIGN) + a.misalign
                    in_chunks.append((seen[key], a))
                    in_size = seen[key] + a.nbytes
                ptrs.append(("in", seen[key]))
        planned.append(
            PlannedCall(
                call.function, tuple(kinds), tuple(ptrs), tuple(scal), tuple(outs), out_begin, out_size
            )
        )
    # Trailing slack so over-reads at the end of the last input stay inside the section.
    return Plan(
        tuple(planned),
        tuple(in_chunks),
        _round_up(in_size, ALIGN) + ALIGN,
        max(out_size, ALIGN),
        tuple(calls),
    )


# --------------------------------------------------------------------------------------------------
# Stdout framing


class FrameError(Exception):
    def __init__(self, completed: int, message: str) -> None:
        self.completed = completed
        super().__init__(message)


def parse_frames(plan: Plan, data: bytes) -> list[bytes]:
    """Split harness stdout into each call's output range. Raises `FrameError(completed)` when the
    output stops early (the harness died during call `completed`)."""
    pos = 0
    ranges = []
    for i, pc in enumerate(plan.calls):
        n = pc.out_end - pc.out_begin
        header = data[pos : pos + 8]
        if len(header) < 8 or len(data) < pos + 8 + n:
            raise FrameError(i, f"output stops after {i} of {len(plan.calls)} calls")
        if header != FRAME_MAGIC + struct.pack("<I", i):
            raise FrameError(i, f"bad frame header {header!r} for call {i}")
        ranges.append(data[pos + 8 : pos + 8 + n])
        pos += 8 + n
    if pos != len(data):
        raise FrameError(len(plan.calls), f"{len(data) - pos} unexpected trailing bytes on stdout")
    return ranges


# --------------------------------------------------------------------------------------------------
# C source

_C_TYPE = {"p": "void *", "i32": "int", "i64": "long long"}  # int/long long are 32/64-bit on both

_FREESTANDING = r"""
/* No libc on Hexagon: syscalls via trap0(#1), number in r6, arguments in r0-r2. */
static long pf_syscall(long nr, long a, long b, long c) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r6 __asm__("r6") = nr;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r6) : "memory");
  return r0;
}
static long pf_syscall6(long nr, long a, long b, long c, long d, long e, long f) {
  register long r0 __asm__("r0") = a;
  register long r1 __asm__("r1") = b;
  register long r2 __asm__("r2") = c;
  register long r3 __asm__("r3") = d;
  register long r4 __asm__("r4") = e;
  register long r5 __asm__("r5") = f;
  register long r6 __asm__("r6") = nr;
  __asm__ volatile("trap0(#1)" : "+r"(r0) : "r"(r1), "r"(r2), "r"(r3), "r"(r4), "r"(r5), "r"(r6) : "memory");
  return r0;
}
static long pf_sys_write(const void *p, pf_size n) { return pf_syscall(64, 1, (long)p, (long)n); }
__attribute__((noreturn)) static void pf_exit(int code) { pf_syscall(94, code, 0, 0); for (;;) {} }

/* Library routines LLVM may call from kernel code. Built with -ffreestanding (=> -fno-builtin) so
   these loops are not turned back into calls to themselves. */
void *memcpy(void *d, const void *s, pf_size n) {
  unsigned char *dd = d; const unsigned char *ss = s;
  while (n--) *dd++ = *ss++;
  return d;
}
void *memmove(void *d, const void *s, pf_size n) {
  unsigned char *dd = d; const unsigned char *ss = s;
  if (dd < ss) { while (n--) *dd++ = *ss++; }
  else { dd += n; ss += n; while (n--) *--dd = *--ss; }
  return d;
}
void *memset(void *d, int c, pf_size n) {
  unsigned char *dd = d;
  while (n--) *dd++ = (unsigned char)c;
  return d;
}
void *__hexagon_memcpy_likely_aligned_min32bytes_mult8bytes(void *d, const void *s, pf_size n) {
  return memcpy(d, s, n);
}
/* Integer division helpers (Hexagon has no divide instruction). */
static unsigned long long pf_udivmod(unsigned long long n, unsigned long long d, unsigned long long *r) {
  unsigned long long q = 0, rem = 0;
  for (int i = 63; i >= 0; --i) {
    rem = (rem << 1) | ((n >> i) & 1);
    if (rem >= d) { rem -= d; q |= 1ULL << i; }
  }
  *r = rem;
  return q;
}
static unsigned long long pf_uabs(long long x) { return x < 0 ? 0ULL - (unsigned long long)x : (unsigned long long)x; }
unsigned long long __hexagon_udivdi3(unsigned long long a, unsigned long long b) { unsigned long long r; return pf_udivmod(a, b, &r); }
unsigned long long __hexagon_umoddi3(unsigned long long a, unsigned long long b) { unsigned long long r; pf_udivmod(a, b, &r); return r; }
long long __hexagon_divdi3(long long a, long long b) {
  unsigned long long r, q = pf_udivmod(pf_uabs(a), pf_uabs(b), &r);
  return (long long)(((a < 0) != (b < 0)) ? 0ULL - q : q);
}
long long __hexagon_moddi3(long long a, long long b) {
  unsigned long long r;
  pf_udivmod(pf_uabs(a), pf_uabs(b), &r);
  return (long long)(a < 0 ? 0ULL - r : r);
}
unsigned __hexagon_udivsi3(unsigned a, unsigned b) { return (unsigned)__hexagon_udivdi3(a, b); }
unsigned __hexagon_umodsi3(unsigned a, unsigned b) { return (unsigned)__hexagon_umoddi3(a, b); }
int __hexagon_divsi3(int a, int b) { return (int)__hexagon_divdi3(a, b); }
int __hexagon_modsi3(int a, int b) { return (int)__hexagon_moddi3(a, b); }

/* malloc/free for the kernels' heap allocations (their weak halide_malloc/halide_free defaults call
   these; pitchfork/codegen/alloc.py): one anonymous mmap per block (Linux mmap2 = 222, munmap = 215),
   its length kept in a 16-byte header. Memory comes from the emulator's host, so large buffers do not
   touch the stack, and a failed mapping is a NULL result the kernel reports. */
__attribute__((weak)) void *malloc(pf_size n) {
  pf_size total = n + 16;
  if (total < n) return 0;
  long p = pf_syscall6(222, 0, (long)total, 3 /* READ|WRITE */, 0x22 /* PRIVATE|ANONYMOUS */, -1, 0);
  if ((unsigned long)p >= (unsigned long)-4095L) return 0;
  *(pf_size *)p = total;
  return (unsigned char *)p + 16;
}
__attribute__((weak)) void free(void *q) {
  if (!q) return;
  unsigned char *p = (unsigned char *)q - 16;
  pf_syscall(215, (long)p, (long)*(pf_size *)p, 0);
}

static int pf_main(void);
__attribute__((noreturn, used)) void _start(void) { pf_exit(pf_main()); }
"""

_HOSTED = r"""
extern long write(int, const void *, pf_size);
static long pf_sys_write(const void *p, pf_size n) { return write(1, p, n); }
static int pf_main(void);
int main(void) { return pf_main(); }
"""


def _c_int(v: int) -> str:
    return "(-9223372036854775807LL - 1)" if v == -(1 << 63) else f"{v}LL"


def c_source(plan: Plan, freestanding: bool) -> str:
    """The harness C file for `plan` (hosted for AArch64/glibc, freestanding for Hexagon)."""
    fn_ids: dict[str, int] = {}
    sig_ids: dict[tuple[str, ...], int] = {}
    fn_kinds: dict[str, tuple[str, ...]] = {}
    for pc in plan.calls:
        fn_ids.setdefault(pc.function, len(fn_ids))
        sig_ids.setdefault(pc.kinds, len(sig_ids))
        if fn_kinds.setdefault(pc.function, pc.kinds) != pc.kinds:
            raise TypeError(f"calls to {pc.function} use different argument kinds")
    nargs = max([len(pc.kinds) for pc in plan.calls] + [1])

    def params(kinds: tuple[str, ...]) -> str:
        return ", ".join(_C_TYPE[k] for k in kinds) or "void"

    out = [
        "/* Generated by pitchfork.backend.harness -- do not edit. */",
        "typedef unsigned char pf_u8;",
        "typedef __SIZE_TYPE__ pf_size;",
        "extern const pf_u8 pf_in[];",
        "extern pf_u8 pf_out[];",
    ]
    out.append(_FREESTANDING if freestanding else _HOSTED)
    for name, i in fn_ids.items():
        cname = name.replace("\\", "\\\\").replace('"', '\\"')
        out.append(f'extern void pf_fn{i}({params(fn_kinds[name])}) __asm__("{cname}");')
    for kinds, i in sig_ids.items():
        out.append(f"typedef void (*pf_sig{i})({params(kinds)});")
    out.append(
        f"typedef struct {{ unsigned sig; void (*fn)(void); const pf_u8 *p[{nargs}]; long long s[{nargs}];"
        " pf_size out_begin, out_end; } pf_call;"
    )
    out.append("static const pf_call pf_calls[] = {")
    for pc in plan.calls:
        padded = list(pc.pointers) + [None] * (nargs - len(pc.pointers))
        ptrs = ", ".join("0" if p is None else f"pf_{p[0]} + {p[1]}" for p in padded)
        scal = ", ".join(_c_int(v) for v in list(pc.scalars) + [0] * (nargs - len(pc.scalars)))
        out.append(
            f"  {{{sig_ids[pc.kinds]}, (void (*)(void))pf_fn{fn_ids[pc.function]}, {{{ptrs}}}, "
            f"{{{scal}}}, {pc.out_begin}, {pc.out_end}}},"
        )
    if not plan.calls:
        out.append("  {0, 0, {0}, {0}, 0, 0},")
    out.append("};")
    out.append(f"#define PF_NCALLS {len(plan.calls)}u")
    out.append(r"""
static void pf_put(const void *p, pf_size n) {
  const pf_u8 *q = p;
  while (n > 0) {
    long w = pf_sys_write(q, n);
    if (w <= 0) return;
    q += w; n -= (pf_size)w;
  }
}
static int pf_main(void) {
  for (unsigned i = 0; i < PF_NCALLS; ++i) {
    const pf_call *c = &pf_calls[i];
    switch (c->sig) {""")
    for kinds, i in sig_ids.items():
        args = ", ".join(
            f"(void *)c->p[{j}]" if k == "p" else f"({_C_TYPE[k]})c->s[{j}]" for j, k in enumerate(kinds)
        )
        out.append(f"      case {i}: ((pf_sig{i})c->fn)({args}); break;")
    out.append(r"""      default: return 2;
    }
    pf_u8 frame[8] = {'P', 'F', 'O', 'K', (pf_u8)i, (pf_u8)(i >> 8), (pf_u8)(i >> 16), (pf_u8)(i >> 24)};
    pf_put(frame, 8);
    pf_put(pf_out + c->out_begin, c->out_end - c->out_begin);
  }
  return 0;
}
""")
    return "\n".join(out)


def blob_asm(in_path: str, out_path: str) -> str:
    """Assembly that defines `pf_in` (read-only) and `pf_out` (writable) from the two blob files."""
    return (
        '\t.section .rodata.pf_in,"a"\n\t.balign 128\n\t.globl pf_in\npf_in:\n'
        f'\t.incbin "{in_path}"\n'
        '\t.section .data.pf_out,"aw"\n\t.balign 128\n\t.globl pf_out\npf_out:\n'
        f'\t.incbin "{out_path}"\n'
    )
