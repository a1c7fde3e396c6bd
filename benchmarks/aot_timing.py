"""Time PITCHFORK's and Halide 21's ahead-of-time libraries of the same pipeline in one C process (x86).

    python3 -m benchmarks.aot_timing sobel3x3 softmax l2norm [--quick] [--out DIR]

For each benchmark: its x86 pipeline is compiled twice, by `pitchfork.compile` (the `.a` of
pitchfork/aot/abi.py: Halide's calling convention) and by Halide's `compile_to_static_library`;
one C driver (pitchfork/aot/abi_driver.py) links both, first checks that they return 0 and write
the same bytes on the same buffers (random input bytes; the benchmark's own scalar parameters), then
calls each `repeat` times per round, the two interleaved, 7 rounds, and reports the best round's time
per call. No Python in the timed loop; single-threaded (neither schedule is parallel). A timing
program, not a test: the numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import registry
from benchmarks.common import HALIDE_TARGETS
from pitchfork.aot.abi_driver import Buf, Case, build_and_run, driver_source, parse_results

TARGET = "x86-avx2"


def _type_code(t: Any) -> int:
    code = {"int": 0, "uint": 1, "float": 2}[t.code]
    return code | t.bits << 8 | 1 << 16


def _dense(extents: list[int], type_code: int) -> Buf:
    dims, stride = [], 1
    for e in extents:
        dims.append((0, e, stride))
        stride *= e
    return Buf(tuple(dims), type=type_code, alloc=stride * ((type_code >> 8) & 0xFF) // 8)


def build(name: str, quick: bool, out: Path) -> tuple[Case, list[Path], list[str], list[str]]:
    """Both libraries of benchmark `name` and the driver case (its argument buffers and scalars)."""
    import halide as hl

    import pitchfork
    from pitchfork.aot.abi import abi_arguments, write_library

    bm = registry.get(name)
    pset = bm.param_sets[0]
    size = bm.quick_size if quick else bm.timing_size
    values = bm.make_inputs(np.random.default_rng(0), size, pset)
    f, args = bm.build(TARGET, pset)
    prog = pitchfork.compile(f, args, target=TARGET, name=f"{name}_pf", fallback=False)
    ours = write_library(prog, out)["a"]
    f2, args2 = bm.build(TARGET, pset)
    hl.Pipeline(f2).compile_to_static_library(str(out / f"{name}_hl"), list(args2), f"{name}_hl",
                                              hl.Target(HALIDE_TARGETS[TARGET]))
    abi = abi_arguments(prog.captured)
    case_args: list[Buf | int] = []
    scalar_types = []
    for a, v in zip(abi, values):
        if a.kind == "scalar":
            case_args.append(int(v))
            scalar_types.append(a.c_type)
        else:
            case_args.append(_dense(list(reversed(np.asarray(v).shape)), _type_code(a.type)))
    for a in abi[len(values):]:
        case_args.append(_dense(list(bm.output_size(size, pset)), _type_code(a.type)))
    return Case(name, tuple(case_args)), [ours, out / f"{name}_hl.a"], [f"{name}_pf", f"{name}_hl"], scalar_types


def time_benchmark(name: str, quick: bool, out: Path) -> tuple[float, float]:
    """(PITCHFORK, Halide) seconds per call."""
    case, libs, fns, scalar_types = build(name, quick, out)
    check = parse_results(build_and_run(TARGET, driver_source([case], fns, scalar_types, False), libs, out),
                          [case], 2)[0]
    if any(r.rc != 0 for r in check):
        raise RuntimeError(f"{name}: calls failed: {[(r.rc, r.message) for r in check]}")
    if check[0].outputs != check[1].outputs:
        raise RuntimeError(f"{name}: PITCHFORK's and Halide's libraries wrote different bytes")
    elems = max(b.alloc for b in case.args if isinstance(b, Buf))
    repeat = max(1, 100_000_000 // max(elems, 1))
    text = build_and_run(TARGET, driver_source([case], fns, scalar_types, False, repeat=repeat), libs, out)
    ns = [int(x) for x in text.decode().split()[2:4]]
    return ns[0] * 1e-9, ns[1] * 1e-9


def markdown(rows: list[tuple[str, str, float, float]], command: str, note: str) -> str:
    """The RESULTS_AOT.md section (benchmarks/harness/report.py appends it to RESULTS.md)."""
    out = ["## Ahead-of-time libraries: PITCHFORK vs Halide 21, x86-avx2, one C process", "",
           f"`{command}` (benchmarks/aot_timing.py, pitchfork/aot/abi.py): each benchmark's x86 pipeline",
           "compiled by `pitchfork.compile` (its `.a`: Halide's calling convention) and by Halide's",
           "`compile_to_static_library`, linked into one C driver that first checks both return 0 and write",
           "identical bytes, then times each: the benchmark's timing size, first parameter set, random input",
           "bytes, one thread, the two libraries interleaved, best of 7 rounds; no Python in the timed loop.",
           note, "", "| benchmark | size | PITCHFORK ms | Halide ms | Halide / PITCHFORK |", "|---|---|---:|---:|---:|"]
    for name, size, pf, hl_t in rows:
        out.append(f"| {name} | {size} | {pf * 1e3:.1f} | {hl_t * 1e3:.1f} | {hl_t / pf:.2f} |")
    out += ["", "(> 1: PITCHFORK's library is faster.)", ""]
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="*", help="benchmarks (default: every available one)")
    ap.add_argument("--quick", action="store_true", help="the benchmarks' small sizes")
    ap.add_argument("--out", help="keep the libraries and drivers here")
    ap.add_argument("--write", metavar="MD", help="write the results table (e.g. benchmarks/RESULTS_AOT.md)")
    ap.add_argument("--note", default="", help="a line about the machine for --write")
    args = ap.parse_args(argv)
    names = args.names or list(registry.available())
    rows: list[tuple[str, str, float, float]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.out or tmp)
        out.mkdir(parents=True, exist_ok=True)
        print(f"{'benchmark':16s} {'PITCHFORK ms':>13s} {'Halide ms':>10s} {'Halide/PITCHFORK':>17s}")
        for name in names:
            try:
                pf, hl_t = time_benchmark(name, args.quick, out)
            except Exception as e:  # noqa: BLE001 - report and go on with the next benchmark
                print(f"{name:16s} failed: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
                continue
            print(f"{name:16s} {pf * 1e3:13.3f} {hl_t * 1e3:10.3f} {hl_t / pf:17.2f}", flush=True)
            bm = registry.get(name)
            size = "×".join(map(str, bm.quick_size if args.quick else bm.timing_size))
            rows.append((name, size, pf, hl_t))
    if args.write:
        command = "python3 -m benchmarks.aot_timing " + " ".join(names) + (" --quick" if args.quick else "")
        Path(args.write).write_text(markdown(rows, command, args.note))
    return 0


if __name__ == "__main__":
    sys.exit(main())
