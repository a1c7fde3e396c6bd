"""Allocations placed as Halide places them (pitchfork/codegen/alloc.py): stack up to Halide's
16 KiB, `halide_malloc`/`halide_free` beyond, on every target, with every heap block freed on every
exit path. Run on x86 (JIT and an AOT object linked by gcc) and hvx128 (qemu-hexagon, where a large
stack allocation overflows the emulator's stack)."""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from pathlib import Path

import halide as hl
import numpy as np
import pytest

import pitchfork
from pitchfork.backend.halide_runtime import runtime_object
from pitchfork.backend.run import check_tools, tools_available
from pitchfork.frontend import examples as ex
from pitchfork.aot.abi_driver import HALIDE_INCLUDE
from pitchfork.codegen.base import ALLOC_ALIGN, HEAP_ALIGN, STACK_LIMIT
from pitchfork.frontend.capture import TARGET_ALIASES

X86 = hl.Target("x86-64-linux-avx-avx2-fma-sse41")
_CALLS_MALLOC = re.compile(r"call [^\n]*@halide_malloc\(")


def row_stage(width: int) -> tuple[hl.Func, list[hl.ImageParam]]:
    """`f` computed per row of `g`, whose x extent is fixed at `width`: one constant-size allocation
    of width + 1 bytes inside the y loop."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    f, g = hl.Func("f"), hl.Func("g")
    f[x, y] = inp[x, y] + 1
    g[x, y] = f[x, y] * 2 + f[x + 1, y]
    g.bound(x, 0, width)
    f.compute_at(g, y)
    return g, [inp]


def _halide_uses_heap(func: hl.Func, args: list, target: str) -> bool:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "h.ll"
        func.compile_to_llvm_assembly(str(path), args, "h", hl.Target(target))
        return bool(_CALLS_MALLOC.search(path.read_text()))


@pytest.mark.parametrize("bytes_", [STACK_LIMIT, STACK_LIMIT + 1])
def test_stack_or_heap_as_halide_decides(bytes_: int) -> None:
    """16384 bytes stay on the stack, 16385 go to halide_malloc: the same choice as Halide 21's own
    code for the same schedule; bit-exact either way."""
    func, args = row_stage(bytes_ - 1)
    prog = pitchfork.compile(func, args, target="x86-avx2", fallback=False)
    ours = bool(_CALLS_MALLOC.search(prog.llvm_ir()))
    assert ours == _halide_uses_heap(func, args, "x86-64-linux-avx2-no_runtime") == (bytes_ > STACK_LIMIT)
    img = np.random.default_rng(1).integers(0, 256, (3, bytes_), dtype=np.uint8)
    args[0].set(hl.Buffer(img))
    want = np.asarray(func.realize([bytes_ - 1, 3], X86)).copy()
    assert np.array_equal(prog(img, size=[bytes_ - 1, 3]), want)
    assert np.array_equal(prog(img, size=[bytes_ - 1, 3], check=True), want)


@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("hvx128"), reason="no qemu toolchain for hvx128")
def test_hvx_allocation_larger_than_the_stack() -> None:
    """A compute_root u16 image of 9.4 MB (more than qemu-hexagon's 8 MB stack; on the stack it dies
    with SIGSEGV) goes to halide_malloc, which the bare-metal harness serves by mmap: bit-exact."""
    w, h = 2304, 2048
    func, args = ex.box_sum_reduction(128)
    prog = pitchfork.compile(func, args, target="hvx128", fallback=False)
    text = prog.llvm_ir()
    assert _CALLS_MALLOC.search(text) and re.search(r"call [^\n]*@halide_free\(", text)
    img = np.random.default_rng(8).integers(0, 256, (h + 8, w + 2), dtype=np.uint8)
    args[0].set(hl.Buffer(img))
    want = np.asarray(func.realize([w, h], X86)).copy()
    assert np.array_equal(prog(img, size=[w, h], check=True), want)


# ---- the AOT object: Halide's weak runtime entry points, overridden by the application ----------

def _c_driver(pipeline: str, halo_rows: int, mul: int, div: int) -> str:
    """A C driver for a u8 -> u8 pipeline `pipeline(in, out)` over a 4608 x 8 output whose input has
    `halo_rows` more rows and 2 more columns, filled with `i * mul + i / div`. Built with -DOVERRIDE it
    replaces Halide's weak halide_malloc/halide_free with counting ones (argv[1]: the call that fails,
    -1 for none) and prints `rc mallocs frees peak-live`; without, it prints `rc`. The output bytes go
    to stderr."""
    return r"""
#include <stdio.h>
#include <stdlib.h>
#include "HalideRuntime.h"
#include "PIPE.h"
#ifdef OVERRIDE
static int n_malloc, n_free, live, peak, fail_at = -1;
void *halide_malloc(void *uc, size_t n) {
  if (n_malloc++ == fail_at) return NULL;
  if (++live > peak) peak = live;
  return aligned_alloc(128, (n + 127) / 128 * 128);  /* more than x86's contract (HEAP_ALIGN: 64) */
}
void halide_free(void *uc, void *p) { if (p) { n_free++; live--; free(p); } }
#endif
int main(int argc, char **argv) {
  enum { W = 4608, H = 8 };
  static unsigned char in[(H + HALO) * (W + 2)], out[H * W];
  for (int i = 0; i < (int)sizeof in; i++) in[i] = (unsigned char)(i * MUL + i / DIV);
  halide_dimension_t di[2] = {{0, W + 2, 1, 0}, {0, H + HALO, W + 2, 0}}, dout[2] = {{0, W, 1, 0}, {0, H, W, 0}};
  halide_buffer_t a = {0}, b = {0};
  a.host = in; a.type.code = halide_type_uint; a.type.bits = 8; a.type.lanes = 1; a.dimensions = 2; a.dim = di;
  b = a; b.host = out; b.dim = dout;
#ifdef OVERRIDE
  fail_at = atoi(argv[1]);
  int rc = PIPE(&a, &b);
  printf("%d %d %d %d\n", rc, n_malloc, n_free, peak);
#else
  int rc = PIPE(&a, &b);
  printf("%d\n", rc);
#endif
  fwrite(out, 1, sizeof out, stderr);
  return 0;
}
""".replace("PIPE", pipeline).replace("HALO", str(halo_rows)).replace("MUL", str(mul)).replace("DIV", str(div))


@pytest.fixture(scope="module")
def aot(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, np.ndarray]:
    d = tmp_path_factory.mktemp("alloc_aot")
    func, args = ex.box_sum_reduction(16)
    prog = pitchfork.compile(func, args, target="x86-avx2", name="boxsum", fallback=False)
    prog.object_file(d / "boxsum.o")
    (d / "boxsum.h").write_text(prog.header())
    (d / "main.c").write_text(_c_driver("boxsum", 8, 7, 13))
    w, h = 4608, 8
    img = (np.arange((h + 8) * (w + 2)) * 7 + np.arange((h + 8) * (w + 2)) // 13).astype(np.uint8).reshape(h + 8, w + 2)
    args[0].set(hl.Buffer(img))
    want = np.asarray(func.realize([w, h], X86)).copy()
    return d, want


def _build(d: Path, override: bool) -> Path:
    exe = d / ("override" if override else "default")
    cmd = ["gcc", f"-I{HALIDE_INCLUDE}", f"-I{d}", *(["-DOVERRIDE"] if override else []), str(d / "main.c"),
           str(d / "boxsum.o"), "-o", str(exe)]
    subprocess.run(cmd, check=True, capture_output=True)
    return exe


def test_aot_default_heap(aot: tuple[Path, np.ndarray]) -> None:
    """Without an application halide_malloc, the object's weak default (over libc malloc) serves both
    heap buffers (a 74 KB u16 image and an 18 KB u32 row): bit-exact."""
    d, want = aot
    p = subprocess.run([str(_build(d, False))], capture_output=True, cwd=d)
    assert p.stdout.decode().split() == ["0"]
    assert np.array_equal(np.frombuffer(p.stderr, np.uint8).reshape(want.shape), want)


@pytest.mark.parametrize("fail_at", [-1, 0, 1])
def test_aot_overridden_heap_freed_on_every_exit(aot: tuple[Path, np.ndarray], fail_at: int) -> None:
    """The application's own halide_malloc/halide_free replace the weak defaults. Every block handed
    out is freed once, also when a later allocation fails: that call returns Halide's out_of_memory
    code (-11) and frees the block already taken."""
    d, want = aot
    exe = d / "override"
    if not exe.exists():
        _build(d, True)
    p = subprocess.run([str(exe), str(fail_at)], capture_output=True, cwd=d)
    rc, n_malloc, n_free, _ = map(int, p.stdout.decode().split()[:4])
    if fail_at < 0:
        assert (rc, n_malloc, n_free) == (0, 2, 2)
        out = np.frombuffer(p.stderr[-want.size:], np.uint8).reshape(want.shape)
        assert np.array_equal(out, want)
    else:
        assert rc == -11 and b"halide_malloc returned NULL" in p.stderr
        assert n_malloc == fail_at + 1 and n_free == fail_at


# ---- heap buffers freed where Halide frees them (early frees) ----------------------------------

def root_chain() -> tuple[hl.Func, list[hl.ImageParam]]:
    """out <- c <- b <- a, each compute_root and each larger than the stack limit (36 KB): Halide
    frees a once b is computed and b once c is (EarlyFree), so two are live at a time."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "inp")
    a, b, c, out = hl.Func("a"), hl.Func("b"), hl.Func("c"), hl.Func("chain")
    a[x, y] = inp[x, y] + 1
    b[x, y] = a[x, y] * 2 + a[x + 1, y]
    c[x, y] = b[x, y] + b[x, y + 1]
    out[x, y] = c[x, y] ^ hl.u8(5)
    for f in (a, b, c):
        f.compute_root().vectorize(x, 32)
    out.vectorize(x, 32)
    return out, [inp]


@pytest.mark.parametrize("fail_at", [-1, 2])
def test_heap_buffers_freed_at_halides_early_frees(tmp_path: Path, fail_at: int) -> None:
    """A compute_root chain holds two heap buffers at a time, not three: each is freed at the `free`
    Halide's statement places after its last use (AllocMixin._s_Free), once, also when a later
    allocation fails (that call frees the two live blocks and returns out_of_memory)."""
    func, args = root_chain()
    prog = pitchfork.compile(func, args, target="x86-avx2", name="chain", fallback=False)
    prog.object_file(tmp_path / "chain.o")
    (tmp_path / "chain.h").write_text(prog.header())
    (tmp_path / "main.c").write_text(_c_driver("chain", 2, 5, 11))
    exe = tmp_path / "chain"
    subprocess.run(["gcc", f"-I{HALIDE_INCLUDE}", f"-I{tmp_path}", "-DOVERRIDE", str(tmp_path / "main.c"), str(tmp_path / "chain.o"),
                    "-o", str(exe)], check=True, capture_output=True)
    p = subprocess.run([str(exe), str(fail_at)], capture_output=True, cwd=tmp_path)
    rc, n_malloc, n_free, peak = map(int, p.stdout.decode().split()[:4])
    if fail_at < 0:
        assert (rc, n_malloc, n_free, peak) == (0, 3, 3, 2)
        w, h = 4608, 8
        img = (np.arange((h + 2) * (w + 2)) * 5 + np.arange((h + 2) * (w + 2)) // 11).astype(np.uint8)
        args[0].set(hl.Buffer(img.reshape(h + 2, w + 2)))
        want = np.asarray(func.realize([w, h], X86))
        assert np.array_equal(np.frombuffer(p.stderr[-want.size:], np.uint8).reshape(want.shape), want)
    else:
        assert rc == -11 and (n_malloc, n_free) == (3, 2)


# ---- allocations hoisted out of the loop that opens with them (codegen_alloc.hoist_allocations) ----

@pytest.mark.qemu
@pytest.mark.skipif(not tools_available("arm64"), reason="no qemu toolchain for arm64")
def test_loop_invariant_heap_allocation_hoisted_out_of_its_loop() -> None:
    """arm64: `f.compute_at(g, y)` on the heap (a row wider than the stack limit): its size does not
    depend on y, so it is allocated once before the y loop rather than once per row (no call inside
    the loop, across which LLVM spilled every vector it had hoisted); bit-exact under qemu-aarch64.
    On x86 it stays in the loop, as Halide places it."""
    width, rows = STACK_LIMIT + 64, 5
    func, args = row_stage(width)
    x86 = pitchfork.compile(func, args, target="x86-avx2", fallback=False).module.source_ir
    x86_calls = [m.start() for m in re.finditer(r"call [^\n]*@\"?halide_malloc\"?\(", x86)]
    x86_loop = re.search(r"^\"?for_g[$\w]*\.s0\.y[.\w]*\"?:", x86, re.M)
    assert len(x86_calls) == 1 and x86_loop is not None and x86_calls[0] > x86_loop.start()
    prog = pitchfork.compile(func, args, target="arm64", fallback=False)
    src = prog.module.source_ir
    calls = [m.start() for m in re.finditer(r"call [^\n]*@\"?halide_malloc\"?\(", src)]
    loop = re.search(r"^\"?for_g[$\w]*\.s0\.y[.\w]*\"?:", src, re.M)  # g, or g$1 once a g exists
    assert len(calls) == 1 and loop is not None and calls[0] < loop.start()
    img = np.random.default_rng(3).integers(0, 256, (rows, width + 1), dtype=np.uint8)
    args[0].set(hl.Buffer(img))
    want = np.asarray(func.realize([width, rows], X86)).copy()
    assert np.array_equal(prog(img, size=[width, rows]), want)


def test_hoisted_allocation_only_when_the_loop_runs_and_never_when_sized_by_it() -> None:
    """The hoisted allocation is conditional on the loop running; one whose size reads the loop
    variable stays inside."""
    from pitchfork.frontend import ir as H
    from pitchfork.codegen.alloc import hoist_allocations
    from pitchfork.frontend.htypes import BOOL, INT32, UInt

    y, n = H.Variable("y", INT32), H.Variable("n", INT32)
    free = H.Block((H.Evaluate(H.IntImm(0, INT32)), H.Free("a")))
    fixed = H.Allocate("a", UInt(8), (n,), free, memory_type="Heap")
    hoisted = hoist_allocations(H.For("y", H.IntImm(0, INT32), n, "serial", fixed))
    assert isinstance(hoisted, H.Allocate) and isinstance(hoisted.body, H.For) and hoisted.body.body == free
    assert hoisted.condition == H.BinOp(">", n, H.IntImm(0, INT32), BOOL)
    by_row = H.Allocate("a", UInt(8), (H.BinOp("+", n, y, INT32),), free, memory_type="Heap")
    assert hoist_allocations(H.For("y", H.IntImm(0, INT32), n, "serial", by_row)) is None


# ---- what a kernel assumes of a heap block: the linked runtime's halide_malloc alignment ---------

#: A C driver that takes 64 blocks of assorted sizes from whatever `halide_malloc` is linked, frees
#: them and prints the alignment all of them share (the lowest address bit set in any).
_MALLOC_PROBE = r"""
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
void *halide_malloc(void *user_context, size_t n);
void halide_free(void *user_context, void *p);
int main(void) {
  enum { N = 64 };
  void *block[N];
  uintptr_t bits = 0;
  for (int i = 0; i < N; i++) { block[i] = halide_malloc(NULL, 1 + 37 * i); bits |= (uintptr_t)block[i]; }
  for (int i = 0; i < N; i++) halide_free(NULL, block[i]);
  printf("%lu\n", (unsigned long)(bits & -bits));
  return 0;
}
"""


#: the same probe on bare-metal Hexagon: the qemu harness's freestanding prelude (_start, syscalls,
#: malloc/free over mmap) and a hand-written decimal print
_MALLOC_PROBE_HVX = r"""
void *halide_malloc(void *user_context, pf_size n);
void halide_free(void *user_context, void *p);
static int pf_main(void) {
  enum { N = 64 };
  void *block[N];
  unsigned long bits = 0;
  for (int i = 0; i < N; i++) { block[i] = halide_malloc(0, 1 + 37 * i); bits |= (unsigned long)block[i]; }
  for (int i = 0; i < N; i++) halide_free(0, block[i]);
  unsigned long a = bits & -bits;
  char digits[24], out[24];
  int n = 0, k = 0;
  do { digits[n++] = (char)('0' + a % 10); a /= 10; } while (a);
  while (n) out[k++] = digits[--n];
  out[k++] = '\n';
  pf_sys_write(out, k);
  return 0;
}
"""


def _shared_alignment(isa: str, tmp_path: Path, objects: list[str], libs: list[str]) -> int:
    """The alignment every block of the probe's 64 `halide_malloc` calls had, with `objects` linked."""
    from pitchfork.backend.harness import _FREESTANDING

    tools = check_tools(isa)
    cc, run = (["gcc"], []) if tools is None else (tools.cc, tools.run)
    source = (f"typedef __SIZE_TYPE__ pf_size;\n{_FREESTANDING}{_MALLOC_PROBE_HVX}" if isa == "hvx128"
              else _MALLOC_PROBE)
    (tmp_path / "probe.c").write_text(source)
    exe = tmp_path / "probe"
    gc = ["-Wl,--gc-sections"] if isa == "hvx128" else []  # only what halide_malloc/free need of the runtime
    subprocess.run([*cc, *gc, str(tmp_path / "probe.c"), *objects, *libs, "-o", str(exe)], check=True,
                   capture_output=True)
    return int(subprocess.run([*run, str(exe)], check=True, capture_output=True).stdout)


def _halide_runtime(isa: str, tmp_path: Path) -> Path:
    """Halide 21's runtime object for `isa` (hvx128: `hexagon-32-noos-hvx-hvx_128-...`, which
    pitchfork/backend/halide_runtime.py does not build: no threads run there)."""
    if isa != "hvx128":
        return runtime_object(isa)
    path = tmp_path / "halide_runtime_hvx128.o"
    code = "import sys, halide as hl; hl.compile_standalone_runtime(sys.argv[1], hl.Target(sys.argv[2]))"
    subprocess.run([sys.executable, "-c", code, str(path), TARGET_ALIASES["hvx128"]], check=True, capture_output=True)
    return path


def _qemu(isa: str) -> pytest.MarkDecorator:
    return pytest.mark.skipif(not tools_available(isa), reason=f"no qemu toolchain for {isa}")


_HEAP_ISAS = [pytest.param("x86-avx2"), pytest.param("arm64", marks=[pytest.mark.qemu, _qemu("arm64")]),
              pytest.param("hvx128", marks=[pytest.mark.qemu, _qemu("hvx128")])]


@pytest.mark.parametrize("isa", _HEAP_ISAS)
def test_heap_alignment_is_halide_runtimes(isa: str, tmp_path: Path) -> None:
    """HEAP_ALIGN[isa] is exactly the alignment of Halide 21's own runtime `halide_malloc` for the
    target (64 on x86, 32 on arm64, 128 on Hexagon), which a program linking Halide's runtime beside
    our object may get instead of our WEAK default: run on Halide's runtime object alone (x86 natively,
    arm64 under qemu-aarch64, Hexagon bare-metal under qemu-hexagon). A claim of 128 (ALLOC_ALIGN, the
    claim before session 17) fails here on x86 and arm64."""
    libs = {"x86-avx2": ["-lpthread", "-ldl"], "arm64": ["-lpthread"], "hvx128": []}[isa]
    got = _shared_alignment(isa, tmp_path, [str(_halide_runtime(isa, tmp_path))], libs)
    assert got == HEAP_ALIGN[isa]


@pytest.mark.parametrize("isa", _HEAP_ISAS)
def test_our_default_heap_gives_at_least_the_claim(isa: str, tmp_path: Path) -> None:
    """Our object's WEAK default `halide_malloc` (the only definition when no runtime is linked)
    aligns every block to ALLOC_ALIGN, a multiple of the claim."""
    func, args = ex.box_sum_reduction(16)
    prog = pitchfork.compile(func, args, target=isa, name="boxsum", fallback=False)
    prog.object_file(tmp_path / "boxsum.o")
    got = _shared_alignment(isa, tmp_path, [str(tmp_path / "boxsum.o")], [])
    assert got % ALLOC_ALIGN == 0 and ALLOC_ALIGN % HEAP_ALIGN[isa] == 0


def heap_rows() -> tuple[hl.Func, list[hl.ImageParam]]:
    """A compute_root u16 stage of 1024-element rows (on the heap) read in 64-lane vectors: Halide's
    statement states each read's index as aligned(64, 0), 128 bytes, more than x86's and arm64's
    `halide_malloc` guarantee."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(16), 2, "inp")
    f, g = hl.Func("f"), hl.Func("g")
    f[x, y] = inp[x, y] * 3
    g[x, y] = f[x, y] + f[x, y + 1]
    g.bound(x, 0, 1024)
    f.compute_root().vectorize(x, 64)
    g.vectorize(x, 64)
    return g, [inp]


@pytest.mark.parametrize("isa", ["x86-avx2", "arm64", "hvx128"])
def test_heap_accesses_claim_no_more_than_halide_malloc_gives(isa: str) -> None:
    """No load or store of the kernel claims more alignment than HEAP_ALIGN[isa] (the only blocks
    here are heap blocks and the scalars' slots), and the aligned(64, 0) facts reach it exactly; on
    x86 (JIT, our default halide_malloc) the result is bit-exact."""
    func, args = heap_rows()
    prog = pitchfork.compile(func, args, target=isa, fallback=False)
    text = prog.llvm_ir()
    assert _CALLS_MALLOC.search(text)
    aligns = {int(a) for a in re.findall(r"(?:load|store) [^\n]*, align (\d+)", text)}
    assert max(aligns) == HEAP_ALIGN[isa]
    if isa == "x86-avx2":
        img = np.random.default_rng(5).integers(0, 1 << 14, (9, 1024), dtype=np.uint16)
        args[0].set(hl.Buffer(img))
        want = np.asarray(func.realize([1024, 8], X86)).copy()
        assert np.array_equal(prog(img, size=[1024, 8]), want)


# ---- large heap blocks in transparent huge pages ---------------------------------------------------

#: A C driver that takes one block of each size in argv from the linked `halide_malloc` and prints, per
#: block, whether the mapping holding it is advised for transparent huge pages ("hg" among the VmFlags
#: of /proc/self/smaps: madvise(MADV_HUGEPAGE) was called on it).
_HUGE_PROBE = r"""
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
void *halide_malloc(void *user_context, size_t n);
void halide_free(void *user_context, void *p);
static int advised(uintptr_t p) {
  FILE *f = fopen("/proc/self/smaps", "r");
  char line[512];
  int inside = 0, hg = -1;
  while (fgets(line, sizeof line, f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) inside = lo <= p && p < hi;
    else if (inside && strncmp(line, "VmFlags:", 8) == 0) hg = strstr(line, " hg") != NULL;
  }
  fclose(f);
  return hg;
}
int main(int argc, char **argv) {
  for (int i = 1; i < argc; i++) {
    size_t n = strtoull(argv[i], 0, 0);
    void *p = halide_malloc(NULL, n);
    memset(p, 1, n);
    printf("%d\n", advised((uintptr_t)p + n / 2));
    halide_free(NULL, p);
  }
  return 0;
}
"""


@pytest.mark.skipif(not Path("/sys/kernel/mm/transparent_hugepage").exists(),
                    reason="kernel without transparent huge pages (madvise(MADV_HUGEPAGE) fails there)")
def test_default_heap_advises_huge_pages_for_large_blocks(tmp_path: Path) -> None:
    """Our WEAK default `halide_malloc` (x86, linked alone into a C program) advises blocks of
    HUGE_ADVICE_BYTES or more for transparent huge pages, as numpy does its arrays of 4 MiB or more,
    and leaves smaller blocks alone."""
    from pitchfork.codegen.alloc import HUGE_ADVICE_BYTES

    func, args = ex.box_sum_reduction(16)
    prog = pitchfork.compile(func, args, target="x86-avx2", name="boxsum", fallback=False)
    prog.object_file(tmp_path / "boxsum.o")
    (tmp_path / "probe.c").write_text(_HUGE_PROBE)
    exe = tmp_path / "probe"
    subprocess.run(["gcc", str(tmp_path / "probe.c"), str(tmp_path / "boxsum.o"), "-o", str(exe)], check=True,
                   capture_output=True)
    sizes = [HUGE_ADVICE_BYTES, 3 * HUGE_ADVICE_BYTES + 12345, HUGE_ADVICE_BYTES - 1, 1 << 20]
    got = subprocess.run([str(exe), *map(str, sizes)], check=True, capture_output=True, text=True).stdout.split()
    assert got == ["1", "1", "0", "0"]
