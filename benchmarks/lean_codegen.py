"""Side-by-side figures for issue 10 (lean generated code), x86-avx2 only, in one process:

* steady-state vector loop length (instructions, `pitchfork.backend.machine.main_vector_loop`) of our
  code and of Halide 21's own assembly for the same schedule;
* run time of `prog(img)` (the public call), the kernel alone (`prog.prepare(...)`, no Python
  marshalling), and Halide's `realize` (JIT, same target), best of N.

    PYTHONPATH=. python3 -m benchmarks.lean_codegen [--size 2048 2048] [--repeat 7] [--write]

`--write` also measures the tree before the issue-10 code generation (`--before`, default
BEFORE_REV: the parent of commit 9c2279c, which brought noalias/nsw/alignment and the zero-copy call)
in a temporary `git worktree`, in a subprocess that imports that tree's `pitchfork`, and writes both
sets of rows to benchmarks/lean_codegen.json; the harness report (benchmarks/harness/lean.py) turns
that file into the before/after table of RESULTS.md.

The pipelines: sobel3x3 (the benchmark module), blur3x3 (pitchfork.frontend.examples) and a
conv3x3a16-like 3x3 u8 * i8 mask convolution (SPEC section 6's CPU schedule), defined below.
Times depend on machine load: compare columns of one run, not runs.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import halide as hl
import numpy as np

from benchmarks.common import HALIDE_TARGETS
from pitchfork.backend.asm import main_vector_loop
from pitchfork import api
from pitchfork.frontend.examples import SOBEL_LANES, blur3x3, sobel3x3


#: the tree before issue 10's code generation (the parent of commit 9c2279c)
BEFORE_REV = "9c2279c^"
ROOT = Path(__file__).resolve().parent.parent


def conv3x3a16(lanes: int = 32) -> tuple[hl.Func, list[Any]]:
    """SPEC section 6 (CPU schedule): u8 image (repeat_edge) * i8 3x3 mask, i16 wrapping sum, >> 4,
    clamped to u8; out vectorized by `lanes`, everything inlined."""
    x, y = hl.Var("x"), hl.Var("y")
    inp = hl.ImageParam(hl.UInt(8), 2, "input")
    mask = hl.ImageParam(hl.Int(8), 2, "mask")
    e = hl.BoundaryConditions.repeat_edge(inp)
    acc = hl.i16(0)
    for i in range(3):
        for j in range(3):
            acc = acc + hl.i16(e[x + j - 1, y + i - 1]) * hl.i16(mask[j, i])
    out = hl.Func("conv3x3a16")
    out[x, y] = hl.u8(hl.clamp(acc >> 4, 0, 255))
    out.vectorize(x, lanes)
    return out, [inp, mask]


def _inputs(name: str, w: int, h: int, rng: np.random.Generator) -> list[np.ndarray]:
    if name == "blur3x3":
        return [rng.integers(0, 1 << 16, (h + 2, w + 2), dtype=np.uint16)]
    if name == "conv3x3a16":
        return [rng.integers(0, 256, (h, w), dtype=np.uint8), rng.integers(-128, 128, (3, 3), dtype=np.int8)]
    return [rng.integers(0, 256, (h, w), dtype=np.uint8)]


BUILDERS: dict[str, Callable[[], tuple[hl.Func, list[Any]]]] = {
    "sobel3x3": lambda: sobel3x3(SOBEL_LANES["x86-avx2"]),
    "blur3x3": lambda: blur3x3(16),
    "conv3x3a16": lambda: conv3x3a16(32),
}


def halide_loop(func: hl.Func, args: list[Any]) -> int:
    with tempfile.TemporaryDirectory() as d:
        f = Path(d) / "h.s"
        hl.Pipeline(func).compile_to_assembly(str(f), args, "h", hl.Target(HALIDE_TARGETS["x86-avx2"]))
        return len(main_vector_loop(f.read_text(), "h", target="x86-avx2").instructions)


def best(fn: Callable[[], Any], repeat: int) -> float:
    fn()
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return min(ts)


def measure(name: str, w: int, h: int, repeat: int) -> dict[str, Any]:
    rng = np.random.default_rng(1)
    func, args = BUILDERS[name]()
    prog = api.compile(func, args, target="x86-avx2", fallback=False)
    ours = len(main_vector_loop(prog.assembly(), target="x86-avx2").instructions)
    theirs = halide_loop(func, args)
    values = _inputs(name, w, h, rng)
    size = [w, h]
    out = prog(*values, size=size)
    row: dict[str, Any] = {"name": name, "loop_ours": ours, "loop_halide": theirs}
    row["prog_ms"] = 1e3 * best(lambda: prog(*values, size=size), repeat)
    if hasattr(prog, "prepare"):
        call = prog.prepare(*values, size=size)
        row["kernel_ms"] = 1e3 * best(call, repeat)
        assert np.array_equal(call.outputs[0], out)
    # Halide's own JIT for the same target, same inputs
    bufs = []
    for a, v in zip(args, values):
        b = hl.Buffer(v)
        bufs.append((v, b))
        a.set(b)
    target = hl.Target(HALIDE_TARGETS["x86-avx2"])
    pipe = hl.Pipeline(func)
    pipe.compile_jit(target)
    hout = hl.Buffer(hl.UInt(out.dtype.itemsize * 8), size)
    pipe.realize(hout, target)
    assert np.array_equal(np.asarray(hout), out), f"{name}: ours differs from Halide"
    row["halide_ms"] = 1e3 * best(lambda: pipe.realize(hout, target), repeat)
    return row


def _git(*args: str) -> str:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()


def measure_at(rev: str, names: list[str], w: int, h: int, repeat: int) -> list[dict[str, Any]]:
    """`measure` run by the code of git revision `rev` (its pitchfork, this file's pipelines)."""
    with tempfile.TemporaryDirectory(prefix="pf-lean-before-") as d:
        tree = os.path.join(d, "tree")
        _git("worktree", "add", "--detach", tree, rev)
        try:
            env = {**os.environ, "PYTHONPATH": tree}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--json", "--size", str(w), str(h),
                   "--repeat", str(repeat), *names]
            p = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(f"measuring {rev} failed:\n{p.stderr[-2000:]}")
            return json.loads(p.stdout.strip().splitlines()[-1])
        finally:
            _git("worktree", "remove", "--force", tree)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--size", type=int, nargs=2, default=[2048, 2048])
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--json", action="store_true", help="print the rows as one JSON line (for --write)")
    p.add_argument("--write", action="store_true", help="also measure --before; write benchmarks/lean_codegen.json")
    p.add_argument("--before", default=BEFORE_REV, help=f"the revision --write compares with ({BEFORE_REV})")
    p.add_argument("names", nargs="*", default=list(BUILDERS))
    a = p.parse_args(argv)
    w, h = a.size
    rows = [measure(n, w, h, a.repeat) for n in a.names]
    if a.json:
        print(json.dumps(rows))
        return
    print(f"x86-avx2, {w}x{h}, best of {a.repeat}")
    print(f"{'pipeline':12} {'loop ours':>9} {'loop HL21':>9} {'prog ms':>9} {'kernel ms':>9} {'HL21 ms':>9}")
    for r in rows:
        k = f"{r['kernel_ms']:9.2f}" if "kernel_ms" in r else f"{'-':>9}"
        print(f"{r['name']:12} {r['loop_ours']:9d} {r['loop_halide']:9d} {r['prog_ms']:9.2f} {k} {r['halide_ms']:9.2f}")
    if a.write:
        before = measure_at(a.before, a.names, w, h, a.repeat)
        cmd = "python3 -m benchmarks.lean_codegen --write" + (f" --size {w} {h}" if [w, h] != [2048, 2048] else "") \
            + (f" --repeat {a.repeat}" if a.repeat != 7 else "")
        out = {"command": cmd, "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
               "size": [w, h], "repeat": a.repeat, "load_average": os.getloadavg()[0],
               "before": {"git": _git("rev-parse", "--short", a.before), "rows": before},
               "after": {"git": _git("rev-parse", "--short", "HEAD"), "rows": rows}}
        path = ROOT / "benchmarks" / "lean_codegen.json"
        path.write_text(json.dumps(out, indent=1) + "\n")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
