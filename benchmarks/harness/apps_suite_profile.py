"""`python -m benchmarks.harness.apps_suite_profile APP -o DIR`: one app of the suite, ahead of time, as
CPU time per stage of PITCHFORK's kernel and of Halide 21's (x86), a comparison that survives a loaded
machine where wall-clock ratios do not.

Both contenders are compiled ahead of time for Halide's x86 target (PITCHFORK: `pitchfork.aot`'s static
library, whose parallel loops call Halide's runtime; Halide: `compile_to_static_library`), and linked
into one C driver per contender (`DIR/<app>_pf`, `DIR/<app>_hl`) that reads the same inputs, calls the
pipeline through `halide_buffer_t`, and prints the best and mean time per call and a checksum of the
output. With `perf` available, each driver runs under `perf record -e cpu-clock` (software sampling:
no hardware counters needed) and the report gives the samples per function (a parallel loop's task is
a function of its own in both, so a stage's CPU time sits beside the same stage's) and the kernel's
share (page faults of fresh heap pages show there), and, with `--threads 2`, each thread's share of the
samples (how much of a call the runtime's worker thread took). The samples count CPU time, which other processes
on the machine do not add to; same number of calls for both. Everything is written to DIR (never to the
source tree). The outputs of the two drivers are compared within the app's tolerance.

With `--heap-offset N`, both drivers link the same `halide_malloc`/`halide_free` (SAME_HEAP_C), which
puts every heap block N bytes past a 4 KiB boundary: the stages then compare code alone, not where each
contender's allocator happened to put its blocks (ours: 128-byte aligned, 512 bytes of padding;
Halide 21's x86 runtime: 64-byte aligned). Session 16 found that placement moves a stage by up to ~10%:
bilateral_grid's histogram loop, the same 19 instructions in both, took 8-16% more CPU in our driver
than in Halide's with each allocator's own placement, and the same CPU (528 / 527 samples, mean of
N = 0, 1024, 2048, 3072) with SAME_HEAP_C; the slicing stage there: ours 2084, Halide's 2180.

What it found (session 13, load 7-15 on 2 cores): bilateral_grid's kernel share 21% against Halide's
15% (our compute_root grids were all freed at the end; codegen/alloc.py now frees where Halide does),
blur's border windows (codegen/memory.py), and parity in CPU time per stage for interpolate and
local_laplacian.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any, Sequence

from pitchfork.frontend.htypes import HType

#: halide_type_t code and C element type per (numpy kind, bits)
_C_TYPES = {("f", 32): ("halide_type_float", "float"), ("u", 8): ("halide_type_uint", "uint8_t"),
            ("u", 16): ("halide_type_uint", "uint16_t"), ("i", 16): ("halide_type_int", "int16_t"),
            ("u", 32): ("halide_type_uint", "uint32_t"), ("i", 32): ("halide_type_int", "int32_t")}


def _buffer_c(k: int, path: Path, shape: Sequence[int], strides: Sequence[int], kind: str, bits: int,
              read: bool) -> list[str]:
    """C lines declaring `halide_buffer_t b<k>` over a host array (read from `path` if `read`)."""
    code, ctype = _C_TYPES[(kind, bits)]
    n = 1
    for e in shape:
        n *= e
    lines = [f"  static halide_dimension_t d{k}[{len(shape)}]; {ctype} *h{k} = calloc({n}, sizeof({ctype}));"]
    if read:
        lines.append(f'  {{ FILE *f = fopen("{path}", "rb"); if (!f || fread(h{k}, sizeof({ctype}), {n}, f) != {n}) '
                     f'return 2; fclose(f); }}')
    for d, (e, s) in enumerate(zip(shape, strides)):
        lines.append(f"  d{k}[{d}].min = 0; d{k}[{d}].extent = {e}; d{k}[{d}].stride = {s}; d{k}[{d}].flags = 0;")
    lines.append(f"  halide_buffer_t b{k}; memset(&b{k}, 0, sizeof b{k}); b{k}.host = (uint8_t *)h{k}; "
                 f"b{k}.type.code = {code}; b{k}.type.bits = {bits}; b{k}.type.lanes = 1; "
                 f"b{k}.dimensions = {len(shape)}; b{k}.dim = d{k};")
    return lines


def driver_source(fn: str, app: Any, values: Sequence[Any], out_size: Sequence[int], out_dir: Path) -> str:
    """The C driver of one contender: inputs from `out_dir/in<k>.bin`, output to `out_dir/<fn>.out`."""
    import numpy as np

    setup: list[str] = []
    call: list[str] = []
    for k, v in enumerate(values):
        if isinstance(v, np.ndarray):
            v = np.ascontiguousarray(v)
            path = out_dir / f"in{k}.bin"
            v.tofile(path)
            setup += _buffer_c(k, path, v.shape[::-1], [s // v.itemsize for s in v.strides[::-1]],
                               v.dtype.kind, v.itemsize * 8, True)
            call.append(f"&b{k}")
        else:
            call.append(f"{float(v)!r}f" if isinstance(v, float) else str(int(v)))
    t = app.output.type()
    kind = "f" if t.is_float() else ("u" if t.is_uint() else "i")
    strides, s = [], 1
    for e in out_size:
        strides.append(s)
        s *= e
    setup += _buffer_c(len(values), out_dir / "unused", out_size, strides, kind, t.bits(), False)
    call.append(f"&b{len(values)}")
    args = ", ".join(call)
    return "\n".join([
        "#include <stdint.h>", "#include <stdio.h>", "#include <stdlib.h>", "#include <string.h>",
        "#include <time.h>", '#include "HalideRuntime.h"', f'#include "{fn}.h"',
        "static double now_ms(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); "
        "return t.tv_sec * 1e3 + t.tv_nsec / 1e6; }",
        "int main(int argc, char **argv) {", *setup,
        "  int calls = argc > 1 ? atoi(argv[1]) : 20;",
        f"  int r = {fn}({args});",
        '  if (r) { printf("error %d\\n", r); return 1; }',
        "  double best = 1e30, sum = 0;",
        f"  for (int i = 0; i < calls; ++i) {{ double t0 = now_ms(); {fn}({args}); double dt = now_ms() - t0; "
        "sum += dt; if (dt < best) best = dt; }",
        f'  {{ FILE *f = fopen("{out_dir / (fn + ".out")}", "wb"); '
        f"fwrite(h{len(values)}, b{len(values)}.type.bits / 8, {s}, f); fclose(f); }}",
        f'  printf("{fn}: best %.3f ms, mean %.3f ms over %d calls\\n", best, sum / calls, calls);',
        "  return 0;", "}", ""])


#: the heap of both drivers with --heap-offset: every block HEAP_OFFSET bytes past a 4 KiB boundary
#: (the malloc pointer in the word below it, as both runtimes' own allocators keep it)
SAME_HEAP_C = r"""
#include <stdint.h>
#include <stdlib.h>
void *halide_malloc(void *user_context, size_t n) {
  void *orig = malloc(n + 2 * 4096 + 16);
  if (!orig) return 0;
  uintptr_t p = (((uintptr_t)orig + 16 + 4095) & ~(uintptr_t)4095) + HEAP_OFFSET;
  ((void **)p)[-1] = orig;
  return (void *)p;
}
void halide_free(void *user_context, void *p) { if (p) free(((void **)p)[-1]); }
"""


def build(name: str, out_dir: Path, size: Sequence[int] | None = None,
          heap_offset: int | None = None) -> dict[str, Path]:
    """Compile `name` with both contenders and link their drivers; {'pf': exe, 'hl': exe}. With
    `heap_offset` (a multiple of 128 below 4096), both drivers get SAME_HEAP_C's allocator."""
    import halide as hl
    import numpy as np

    import pitchfork
    from benchmarks.apps import APPS
    from benchmarks.apps.common import HALIDE_TARGETS
    from pitchfork.aot.abi import write_library
    from benchmarks.harness.apps_suite_parlog import write_source
    from pitchfork.aot.abi_driver import HALIDE_INCLUDE

    if heap_offset is not None and not (0 <= heap_offset < 4096 and heap_offset % 128 == 0):
        raise ValueError(f"--heap-offset {heap_offset}: a multiple of 128 in [0, 4096) is needed")
    out_dir.mkdir(parents=True, exist_ok=True)
    target = HALIDE_TARGETS["x86-avx2"]
    app = APPS[name].build("x86-avx2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(app.output, list(app.args), target=target, name=f"{name}_pf", fallback=False)
    write_library(prog, out_dir)
    ref = APPS[name].build("x86-avx2")
    hl.Pipeline(ref.output).compile_to_static_library(str(out_dir / f"{name}_hl"), list(ref.args), f"{name}_hl",
                                                      hl.Target(target))
    size = list(size or app.timing_size)
    values = app.make_inputs(np.random.default_rng(1), size)
    out_size = app.output_size(size)
    parlog = write_source(out_dir)
    extra: list[str] = []
    if heap_offset is not None:
        heap = out_dir / "same_heap.c"
        heap.write_text(SAME_HEAP_C)
        extra = [f"-DHEAP_OFFSET={heap_offset}", str(heap)]
    exes = {}
    for who in ("pf", "hl"):
        fn = f"{name}_{who}"
        (out_dir / f"{fn}.c").write_text(driver_source(fn, app, values, out_size, out_dir))
        exe = exes[who] = out_dir / fn
        # non-PIE: the parallel-loop log's task addresses are then nm's (apps_suite_parlog); the handler
        # it links is inert unless PITCHFORK_PARLOG is set
        subprocess.run(["cc", "-O2", "-no-pie", f"-I{HALIDE_INCLUDE}", f"-I{out_dir}", str(out_dir / f"{fn}.c"),
                        str(parlog), *extra, str(out_dir / f"{fn}.a"), "-lpthread", "-ldl", "-lm", "-o", str(exe)],
                       check=True, capture_output=True)
    return exes


def profile(exe: Path, calls: int, threads: int) -> tuple[str, list[tuple[int, str]]]:
    """Run `exe` (under `perf record -e cpu-clock` when perf is there): (its output line, [(samples,
    function)] with the kernel's samples as one '[kernel]' entry)."""
    env = dict(os.environ, HL_NUM_THREADS=str(threads))
    if shutil.which("perf") is None:
        p = subprocess.run([str(exe), str(calls)], capture_output=True, text=True, env=env, check=True)
        return p.stdout.strip(), []
    data = exe.with_suffix(".perf")
    p = subprocess.run(["perf", "record", "-q", "-s", "-e", "cpu-clock", "-F", "2999", "-o", str(data), str(exe),
                        str(calls)], capture_output=True, text=True, env=env, check=True)
    rep = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "-n", "--sort", "dso,symbol"],
                         capture_output=True, text=True, check=True).stdout
    per: dict[str, int] = {}
    for line in rep.splitlines():
        f = line.split()
        if not f or f[0].startswith("#") or len(f) < 5 or not f[1].isdigit():
            continue
        while f and f[-1] == "-":  # perf's empty columns after the symbol
            f.pop()
        key = "[kernel]" if f[2] == "[kernel.kallsyms]" else " ".join(f[4:])
        per[key] = per.get(key, 0) + int(f[1])
    return p.stdout.strip(), sorted(((n, k) for k, n in per.items()), reverse=True)


def thread_shares(exe: Path) -> list[float]:
    """Each thread's share of the samples of `exe`'s last profile (`perf report --sort pid` lists
    threads), largest first; [] without perf data. With HL_NUM_THREADS=2, how evenly the runtime's
    worker took part: our blur (80 tasks of ~12 us) 76% / 24%, Halide 21's (~72 us) 54% / 46%."""
    data = exe.with_suffix(".perf")
    if shutil.which("perf") is None or not data.exists():
        return []
    rep = subprocess.run(["perf", "report", "-i", str(data), "--stdio", "-n", "--sort", "pid"],
                         capture_output=True, text=True, check=True).stdout
    counts = [int(f[1]) for f in (line.split() for line in rep.splitlines())
              if len(f) >= 3 and not f[0].startswith("#") and f[1].isdigit()]
    total = sum(counts) or 1
    return sorted((n / total for n in counts), reverse=True)


def outputs_agree(name: str, out_dir: Path) -> bool:
    """Whether the two drivers' outputs in `out_dir` agree within the app's tolerance, each read as
    the output's own element type (local_laplacian's is u16 with a tolerance of 2: read as float32,
    its pixel pairs made NaNs, and every run said DIFFER)."""
    import numpy as np

    from benchmarks.apps import APPS

    app = APPS[name].build("x86-avx2")
    t = app.output.type()
    dtype = HType.from_halide(t).np_dtype
    ours, theirs = (np.fromfile(out_dir / f"{name}_{w}.out", dtype).astype(np.float64) for w in ("pf", "hl"))
    return ours.shape == theirs.shape and bool(np.abs(ours - theirs).max() <= app.tolerance)


def main(argv: Sequence[str] | None = None) -> int:
    from benchmarks.apps import APPS

    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.apps_suite_profile",
                                 description="CPU time per stage of an app, PITCHFORK and Halide 21, AOT on x86")
    ap.add_argument("app", choices=sorted(APPS))
    ap.add_argument("-o", "--output-dir", required=True, help="where the libraries, drivers and profiles go")
    ap.add_argument("--size", help="input size WxH (default: the app's timing size)")
    ap.add_argument("--calls", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--top", type=int, default=12, help="functions listed per contender")
    ap.add_argument("--heap-offset", type=int, default=None, metavar="N",
                    help="both drivers place every heap block N bytes past a 4 KiB boundary (the same "
                         "allocator for both: compares code, not the allocators' placement)")
    ap.add_argument("--par-log", action="store_true",
                    help="instead of perf: each parallel loop's calls, tasks per call, task times and threads, "
                         "both contenders, and whether their parallel structures match (apps_suite_parlog)")
    a = ap.parse_args(argv)
    size = [int(s) for s in a.size.split("x")] if a.size else None
    out = Path(a.output_dir) / a.app
    try:
        exes = build(a.app, out, size, a.heap_offset)
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if a.par_log:
        return _par_log(a.app, out, exes, a.calls, a.threads)
    rows = {who: profile(exe, a.calls, a.threads) for who, exe in exes.items()}
    tol = APPS[a.app].build("x86-avx2").tolerance
    same = outputs_agree(a.app, out)
    print(f"outputs {'match' if same else 'DIFFER'} (tolerance {tol:g}); load: {os.getloadavg()}")
    for who, (line, samples) in rows.items():
        total = sum(n for n, _ in samples) or 1
        shares = thread_shares(exes[who])
        print(line + (f"; samples per thread: {' / '.join(f'{100 * x:.0f}%' for x in shares)}"
                      if len(shares) > 1 else ""))
        for n, fn in samples[:a.top]:
            print(f"  {n:7d} {100 * n / total:5.1f}%  {fn}")
    return 0 if same else 1


def _par_log(name: str, out: Path, exes: dict[str, Path], calls: int, threads: int) -> int:
    from benchmarks.apps import APPS
    from benchmarks.harness.apps_suite_parlog import compare, run, table

    runs = {who: run(exe, calls, threads) for who, exe in exes.items()}
    tol = APPS[name].build("x86-avx2").tolerance
    same = outputs_agree(name, out)
    print(f"outputs {'match' if same else 'DIFFER'} (tolerance {tol:g}); HL_NUM_THREADS={threads}; "
          f"load: {os.getloadavg()}")
    for who, (line, loops) in runs.items():
        print(line)
        print("\n".join(table(who, loops)))
    diffs = compare(runs["pf"][1], runs["hl"][1])
    print("parallel structure: " + ("the same loops, the same tasks per call" if not diffs else "; ".join(diffs)))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
