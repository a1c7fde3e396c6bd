"""Where an x86 kernel spends its time, ours beside Halide 21's: a native sampling profile per loop.

The static estimate (static.py) costs each block with llvm-mca, which does not model store-to-load
forwarding or branch prediction; camera_pipe's tone-curve gathers as lane loops through the stack
were estimated cheaper than Halide 21's inline gathers and ran 0.70x of its speed. This tool measures
instead: each contender's assembly (ours from `pitchfork.compile`, Halide 21's from
`compile_to_assembly`) is linked into the same native C harness the counted run uses (same inputs,
the same bump allocator behind `halide_malloc`), the kernel is called `reps` times, and `perf record
-e cpu-clock` samples the process. The assembler keeps the `.LBB` labels as symbols, so each sample
is attributed to the nearest label above it: a loop's samples are under its header's label (with the
straight-line code that follows its back edge up to the next label). `[kernel]` are samples in the
operating system (page faults). The contenders run alternately in `rounds` runs whose samples are
summed; the totals still carry the shared machine's noise (compare shares of loops, or repeat).

    python3 -m benchmarks.harness.profile camera_pipe --reps 100          # timing size
    python3 -m benchmarks.harness.profile sobel3x3 --quick --reps 300

x86 only (the host runs the kernels); needs `perf` with cpu-clock sampling permitted. The outputs of
both runs are checked against the numpy reference, so a profile is of kernels that compute the right
answer. Labels differ between the two kernels: match loops by their instructions (the `.s` files are
kept in the work directory).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import warnings
from dataclasses import dataclass
from typing import Sequence

import numpy as np

ISA = "x86-avx2"


@dataclass(frozen=True)
class Profile:
    """Samples per label of one contender's run (`total` includes `[kernel]` and other symbols)."""

    variant: str
    samples: dict[str, int]
    total: int
    asm_path: str

    def top(self, n: int) -> list[tuple[str, int]]:
        return sorted(self.samples.items(), key=lambda kv: -kv[1])[:n]


def perf_available() -> str | None:
    """None if `perf record -e cpu-clock` works here, else why not."""
    if shutil.which("perf") is None:
        return "no perf binary"
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-o", os.path.join(d, "p.data"), "true"],
                           capture_output=True, text=True)
    return None if p.returncode == 0 else f"perf record failed: {p.stderr.strip()[:200]}"


def _build(asm: str, spec: object, tag: str, reps: int, d: str) -> str:
    """Link `asm` with a harness calling its kernel `reps` times; return the executable's path."""
    from benchmarks.harness import static

    s_path, o_path = os.path.join(d, f"{tag}.s"), os.path.join(d, f"{tag}.o")
    with open(s_path, "w") as f:
        f.write(asm)
    subprocess.run([static.llvm_tool("llvm-mc"), *static.MC_ARGS[ISA], "-filetype=obj", "-save-temp-labels",
                    s_path, "-o", o_path], check=True, capture_output=True)
    blob = os.path.join(d, f"{tag}.bin")
    with open(blob, "wb") as f:
        f.write(bytes(spec.blob) + b"\0" * 256)  # type: ignore[attr-defined]
    with open(os.path.join(d, f"{tag}_blob.s"), "w") as f:
        f.write(f'\t.section .rodata.pf_in,"a"\n\t.balign 128\n\t.globl pf_in\npf_in:\n\t.incbin "{blob}"\n')
    src = static.c_source(spec, 1, False, 256 << 20)  # type: ignore[arg-type]
    src = src.replace("extern unsigned int pf_cnt[];", "unsigned int pf_cnt[1];")  # no counters
    src, n = re.subn(r"^(  (?:ret = )?pf_kernel\()", rf"  for (int pf_r = 0; pf_r < {reps}; pf_r++) \1", src,
                     flags=re.M)
    assert n == 1, "the harness's kernel call was not found"
    with open(os.path.join(d, f"{tag}.c"), "w") as f:
        f.write(src)
    exe = os.path.join(d, tag)
    subprocess.run(["gcc", "-O1", "-static", "-Wl,--unresolved-symbols=ignore-all", "-Wl,-z,noexecstack",
                    f"{tag}.c", f"{tag}_blob.s", f"{tag}.o", "-o", exe, "-lm"], check=True, cwd=d, capture_output=True)
    return exe


def _run(exe: str, spec: object, reference: np.ndarray) -> None:
    """One call must succeed and write the reference. The harness writes the kernel's return value,
    the (one, unused) counter and the output area to stdout; the outputs are in argument order: our
    kernels' error slot, then the image; Halide's image alone."""
    p = subprocess.run([exe], capture_output=True, check=True)
    area = p.stdout[8:]
    outs = [np.frombuffer(area[off: off + int(np.prod(shape)) * dt.itemsize], dtype=dt).reshape(shape)
            for off, dt, shape in spec.outputs]  # type: ignore[attr-defined]
    failed = int(np.frombuffer(p.stdout[:4], dtype=np.int32)[0]) or any(int(o.ravel()[0]) for o in outs[:-1])
    if failed or not np.array_equal(outs[-1], reference):
        raise RuntimeError(f"{os.path.basename(exe)}: the profiled kernel failed or its output differs from "
                           "the numpy reference")


def _sample(exe: str, d: str, freq: int) -> dict[str, int]:
    data = exe + ".data"
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F", str(freq), "-o", data, exe], cwd=d,
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = subprocess.run(["perf", "script", "-i", data, "-F", "ip,sym"], cwd=d, capture_output=True, text=True,
                         check=True).stdout
    counts: collections.Counter[str] = collections.Counter()
    for line in out.splitlines():
        parts = line.split()
        if parts:
            counts["[kernel]" if parts[0].startswith("ffff") else (parts[1] if len(parts) > 1 else "?")] += 1
    return dict(counts)


def profile(name: str, reps: int, quick: bool = False, workdir: str | None = None,
            freq: int = 4000, rounds: int = 4) -> list[Profile]:
    """Profiles of our kernel (isel pitchfork) and Halide 21's for benchmark `name`, first parameter set:
    `reps` kernel calls each, in `rounds` alternating runs."""
    import pitchfork
    from benchmarks import registry
    from benchmarks.common import expected
    from benchmarks.harness import halide21, static
    from benchmarks.harness.kernel import kernel_args

    why = perf_available()
    if why:
        raise RuntimeError(why)
    bench = registry.get(name)
    pset = bench.param_sets[0]
    size = list(bench.quick_size if quick else bench.timing_size)
    values = bench.make_inputs(np.random.default_rng(1), size, pset)
    osz = bench.output_size(size, pset)
    reference = np.asarray(expected(bench, values, pset, ISA))
    out, args = bench.build(ISA, pset)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        prog = pitchfork.compile(out, args, target=ISA, name=f"{name}_ours", fallback=False)
    ha = halide21.halide_assembly(bench, pset, ISA, f"{name}_h21")
    d = workdir or tempfile.mkdtemp(prefix=f"pf-profile-{name}-")
    os.makedirs(d, exist_ok=True)
    contenders = {
        "pitchfork": (prog.assembly(), static.our_kernel_spec(prog.name, kernel_args(prog, values, osz))),
        "halide21": (ha.asm, static.halide_kernel_spec(ha.function, values, ha.args, ha.out_dtype, osz)),
    }
    exes = {}
    for tag, (asm, spec) in contenders.items():
        _run(_build(asm, spec, f"{tag}_check", 1, d), spec, reference)
        exes[tag] = _build(asm, spec, tag, max(1, reps // rounds), d)
    # Alternate the contenders round by round (order flipped every round), summing the samples: on the
    # shared machine one run of each, one after the other, differed by 30% in total from load drift.
    counts: dict[str, collections.Counter[str]] = {t: collections.Counter() for t in exes}
    order = list(exes)
    for r in range(rounds):
        for tag in (order if r % 2 == 0 else order[::-1]):
            counts[tag].update(_sample(exes[tag], d, freq))
    return [Profile(t, dict(c), sum(c.values()), os.path.join(d, f"{t}.s")) for t, c in counts.items()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.harness.profile", description=__doc__.splitlines()[0])
    ap.add_argument("bench")
    ap.add_argument("--reps", type=int, default=50, help="kernel calls per profiled run (default 50)")
    ap.add_argument("--quick", action="store_true", help="the benchmark's quick size (default: timing size)")
    ap.add_argument("--rounds", type=int, default=4, help="alternating runs the calls are split into (default 4)")
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--workdir", help="keep the .s files and binaries here (default: a new temporary directory)")
    a = ap.parse_args(argv)
    try:
        profiles = profile(a.bench, a.reps, a.quick, a.workdir, rounds=a.rounds)
    except (RuntimeError, KeyError, subprocess.CalledProcessError) as e:
        print(f"profile: {e}", file=sys.stderr)
        return 1
    base = profiles[-1].total or 1
    for p in profiles:
        print(f"{p.variant}: {p.total} samples ({p.total / base:.3f}x Halide 21's), assembly {p.asm_path}")
        for label, n in p.top(a.top):
            print(f"  {label:32s} {n:7d} {100 * n / max(p.total, 1):5.1f}%")
    return 0


if __name__ == "__main__":
    sys.exit(main())
