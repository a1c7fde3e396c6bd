"""Differential testing of whole pipelines: random small Halide pipelines under random schedules,
compiled by `pitchfork.compile` and RUN on every ISA, compared bit for bit with Halide's own `realize`.

`random_case(seed, k)` writes the k-th pipeline of a seed as Python source (what runs is exactly the
source a report prints), deterministic in (seed, k) and independent of how many cases are drawn:

- element type T: u8, i8, u16, i16, u32 or i32; the output f(x) or f(x, y) has type T;
- leaves: loads from a 1-D input `a[kx*(x/d) + ky*y + c]` (kx 1, 2, 3, 4: dense and strided; -1:
  reversed; 0: a broadcast along x; d 2 or 4: upsampling; ky a row step: 0, small steps whose 2-D vector
  loads overlap (the LLVM 22 Hexagon build-vector bug's shape), or the width), from a 2-D input
  `b[kx*x + c, y + e]` or transposed `b[y + e, kx*x + c]`, lookups (gathers) in a 256-entry table
  `c[u8(leaf)]` or `c[(x*x + 3*y) % 256]`, ramps `cast(T, x + k*y)`, constants, and
  (in a third of the pipelines) reads `g[kx*x + c, y + e]` of a producer stage g, inlined, computed at
  root or inside one of f's loops, vectorized on its own;
- ops: wrapping add and sub, min / max, select of a comparison, widening multiply + shift, rounding
  average, absd, shifts by constants, casts through another type, saturating casts, a halving in f32;
- schedules: vectorize x (4 .. 128 lanes), y (x serial inside), both with y fastest (reorder) or x
  fastest (tile), split and tile with unrolling, fuse(x, y), tail strategies (RoundUp, GuardWithIf,
  ShiftInwards, Predicate), `bound`.
Inputs are random (a quarter of 8/16-bit values are edge values); 32-bit signed values stay within
+-4096 and 32-bit ops multiply by constants only, so no int32 arithmetic overflows (Halide leaves signed
32-bit overflow undefined: the two compilers could then both be right). Input sizes are computed from
the loads' index ranges, so that Halide's realize accepts the buffers.

A fallback (pitchfork.compile handed the pipeline to Halide) is counted with its reason; an error
(compile or run raised) and a mismatch are findings. Output that differs from Halide's realize but
equals the realize of the same Func without its schedule is counted apart: Halide's own schedule
changed the values there (its vectorized u32 `(a + 1) >> 1` is a rounding shift that does not wrap,
its scalar code wraps), and ours are the language's. Output as tests/pitchfork/difftest.py's:

    python -m tests.pitchfork.difftest_schedules --target hvx128 --isel pitchfork --count 300 --seed 1
    python -m tests.pitchfork.difftest --schedules --target arm64 --count 500 --seed 2   # the same
    python -m tests.pitchfork.difftest_schedules --seed 1 --case 17 --show   # one case's source

CI: tests/pitchfork/test_difftest_schedules.py (a few cases per ISA).
"""

from __future__ import annotations

import argparse
import random
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Sequence

import numpy as np

TARGETS = ("x86-avx2", "arm64", "hvx128")
ISELS = ("pitchfork", "llvm")
# name -> (signed, bits, Halide type text, widened type name)
TYPES: dict[str, tuple[bool, int, str, str]] = {
    "u8": (False, 8, "hl.UInt(8)", "u16"), "i8": (True, 8, "hl.Int(8)", "i16"),
    "u16": (False, 16, "hl.UInt(16)", "u32"), "i16": (True, 16, "hl.Int(16)", "i32"),
    "u32": (False, 32, "hl.UInt(32)", ""), "i32": (True, 32, "hl.Int(32)", "")}
_WIDTHS = (4, 8, 16, 32, 64, 128)
_TAILS = ("", "", "hl.TailStrategy.GuardWithIf", "hl.TailStrategy.ShiftInwards", "hl.TailStrategy.RoundUp",
          "hl.TailStrategy.Predicate")
_G_MARGIN = (128, 16)  # a producer's region may be rounded up to its vector width (x) / tile (y)


@dataclass(frozen=True)
class Case:
    """One pipeline: `source` defines `f`, `params` (ImageParams, in order), `size` (output extents)
    and `shapes` (each input's numpy shape); `inputs` draws the input arrays."""
    seed: int
    index: int
    type_name: str
    source: str
    shapes: tuple[tuple[int, ...], ...]

    def build(self, scheduled: bool = True) -> dict[str, Any]:
        """The source executed: its namespace (f, params, size, ...); `scheduled=False` leaves out the
        schedule (every stage inlined into f, computed one element at a time)."""
        import halide as hl

        lines = [ln for ln in self.source.splitlines() if scheduled or not ln.startswith(("f.", "g."))]
        ns: dict[str, Any] = {"hl": hl}
        exec(compile("\n".join(lines), f"<schedule case {self.seed}/{self.index}>", "exec"), ns)  # noqa: S102
        return ns

    def inputs(self) -> list[np.ndarray]:
        signed, bits, _, _ = TYPES[self.type_name]
        dt = np.dtype(f"{'i' if signed else 'u'}{bits // 8}")
        rng = np.random.default_rng([self.seed, self.index])
        out = []
        for shape in self.shapes:
            if bits == 32 and signed:
                a = rng.integers(-4096, 4097, shape)
            else:
                info = np.iinfo(dt)
                a = rng.integers(info.min, int(info.max) + 1, shape, dtype=np.int64)
                edges = np.array([info.min, info.max, 0, 1, -1 if signed else info.max - 1])
                pick = rng.random(shape) < (0.25 if bits < 32 else 0.05)
                a[pick] = edges[rng.integers(0, len(edges), int(pick.sum()))]
            out.append(a.astype(dt))
        return out


@dataclass(frozen=True)
class _Load:
    """A load's index per buffer dimension, `kx*(X/div) + ky*Y + c` over its stage's (X, Y)."""
    buffer: str
    stage: str
    dims: tuple[tuple[int, int, int, int], ...]


def _index_text(kx: int, div: int, ky: int, c: int, dims: int, base: str) -> str:
    """The index as source; its constant `c` plus the buffer dimension's base as a token (@A0@c@) that
    `random_case` replaces once the base is known."""
    xs = "x" if div == 1 else f"(x / {div})"
    terms = [("" if kx == 1 else "-" if kx == -1 else f"{kx}*") + xs] if kx else []
    if ky and dims == 2:
        terms.append("y" if ky == 1 else f"{ky}*y")
    return " + ".join(terms + [f"@{base}@{c}@"])


def _offset(after_terms: bool, value: int) -> str:
    """An index's constant as source: ` + 5`, ` - 5` or nothing after other terms, `5` alone."""
    if not after_terms:
        return str(value)
    return f" + {value}" if value > 0 else f" - {-value}" if value < 0 else ""


class _Gen:
    """Draws one case (see the module docstring); `rng` decides everything."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.t = rng.choice(list(TYPES))
        self.signed, self.bits, _, self.wide = TYPES[self.t]
        self.dims = rng.choice((1, 2, 2))
        self.loads: list[_Load] = []
        self.has_g = False
        self.uses_lut = False
        self.width_hint = 64

    # ---- expressions ------------------------------------------------------------------------
    def leaf(self, stage: str) -> str:
        r, rng = self.rng.random(), self.rng
        if stage == "f" and self.has_g and r < 0.35:
            kx, c, e = rng.choice((1, 1, 2, -1)), rng.randint(-2, 2), rng.randint(-1, 1) if self.dims == 2 else 0
            self.loads.append(_Load("g", stage, ((kx, 1, 0, c), (0, 1, 1, e))[:self.dims]))
            xs = ("" if kx == 1 else "-" if kx == -1 else f"{kx}*") + "x"
            # (hl.Expr: a Func reference would make hl.select pick its Tuple overload)
            return f"hl.Expr(g[{xs}{_offset(True, c)}" + (f", y{_offset(True, e)}])" if self.dims == 2 else "])")
        if r < 0.55:
            kx = rng.choice((1, 1, 1, 2, 3, 4, -1, 0))
            div = rng.choice((1,) * 8 + (2, 4)) if kx > 0 else 1
            ky = rng.choice((0, 1, 2, 3, 4, 5, 7, 8, 16, self.width_hint)) if self.dims == 2 else 0
            c = rng.randrange(4)
            self.loads.append(_Load("a", stage, ((kx, div, ky, c),)))
            return f"a[{_index_text(kx, div, ky, c, self.dims, 'A0')}]"
        if r < 0.75:
            kx, c, e = rng.choice((1, 1, 2, -1)), rng.randrange(4), rng.randrange(3)
            d0, d1 = (kx, 1, 0, c), (0, 1, int(self.dims == 2), e)
            if self.dims == 2 and rng.random() < 0.3:  # transposed
                self.loads.append(_Load("b", stage, (d1, d0)))
                return f"b[{_index_text(0, 1, 1, e, 2, 'B0')}, {_index_text(kx, 1, 0, c, 2, 'B1')}]"
            self.loads.append(_Load("b", stage, (d0, d1)))
            return f"b[{_index_text(kx, 1, 0, c, 2, 'B0')}, {_index_text(0, 1, d1[2], e, 2, 'B1')}]"
        if r < 0.8:  # a lookup: a gather from the 256-entry table c, its index a load or a ramp's square
            self.uses_lut = True
            if rng.random() < 0.6:
                return f"c[hl.cast(hl.Int(32), hl.cast(hl.UInt(8), {self.leaf(stage)}))]"
            return f"c[(x * x{' + 3*y' if self.dims == 2 else ''}) % 256]"
        if r < 0.88:
            k = rng.choice((0, 1, 3)) if self.dims == 2 else 0
            return f"hl.cast(T, x + {'' if k == 1 else f'{k}*'}y)" if k else "hl.cast(T, x)"
        lo, hi = (-(1 << (self.bits - 1)), (1 << (self.bits - 1)) - 1) if self.signed else (0, (1 << self.bits) - 1)
        if self.bits == 32:
            lo, hi = max(lo, -4096), min(hi, 4096)
        return f"hl.cast(T, {rng.choice((0, 1, 3, lo, hi, rng.randint(lo, hi)))})"

    def expr(self, depth: int, stage: str) -> str:
        rng = self.rng
        if depth == 0 or rng.random() < 0.25:
            return self.leaf(stage)
        op = rng.choice(("add", "add", "sub", "minmax", "select", "mulshr", "mulshr", "avg", "absd", "shift",
                         "cast", "satcast", "float"))

        def sub() -> str:
            return self.expr(depth - 1, stage)
        if op == "add":
            return f"({sub()} + {sub()})"
        if op == "sub":
            return f"({sub()} - {sub()})"
        if op == "minmax":
            return f"hl.{rng.choice(('min', 'max'))}({sub()}, {sub()})"
        if op == "select":
            return f"hl.select({sub()} {rng.choice(('<', '>', '==', '<='))} {sub()}, {sub()}, {self.leaf(stage)})"
        if op == "absd":
            return f"hl.cast(T, hl.absd({sub()}, {sub()}))"
        if op == "shift":
            k = rng.randint(1, min(self.bits - 1, 4 if self.t == "i32" else 31))
            return f"({sub()} {rng.choice(('>>', '<<')) if self.t != 'i32' or k <= 3 else '>>'} {k})"
        if op == "float":  # exact in f32 (a halving); hvx128 computes float code lane by lane
            return f"hl.cast(T, hl.cast(hl.Float(32), {sub()}) * 0.5)"
        if op == "cast":
            return f"hl.cast(T, hl.cast({TYPES[rng.choice(list(TYPES))][2]}, {sub()}))"
        if self.bits == 32:  # mulshr / avg / satcast without a 64-bit type: constants and shifts in T
            if op == "mulshr":
                return f"(({sub()} * hl.cast(T, {rng.randint(2, 15)})) >> {rng.randint(0, 6)})"
            return f"(({sub()} + {sub()} + 1) >> 1)"
        if op == "mulshr":
            return f"hl.cast(T, (hl.cast(W, {sub()}) * hl.cast(W, {sub()})) >> {rng.randint(0, self.bits)})"
        if op == "avg":
            return f"hl.cast(T, (hl.cast(W, {sub()}) + hl.cast(W, {sub()}) + 1) >> 1)"
        return f"hl.saturating_cast(T, hl.cast(W, {sub()}) {rng.choice(('+', '-'))} hl.cast(W, {sub()}))"

    # ---- schedules ----------------------------------------------------------------------------
    def widths(self, max_bytes: int) -> list[int]:
        return [w for w in _WIDTHS if w * self.bits // 8 <= max_bytes]

    def schedule(self) -> tuple[list[str], list[str], int, int]:
        """f's schedule lines, the loop variables g can be computed at, and the output size (W, H)."""
        rng = self.rng
        tail = rng.choice(_TAILS)
        ta = f", {tail}" if tail else ""
        exact = tail.endswith("RoundUp")

        def extent(factor: int, most: int) -> int:  # a multiple of factor, or not (then >= factor)
            n = factor * rng.randint(1, max(1, most // factor))
            return n if exact or rng.random() < 0.6 else min(n + rng.randint(1, factor), max(most, factor + 1))
        xs = rng.choice(self.widths(256))
        if self.dims == 1:
            if rng.random() < 0.5:
                return [f"f.vectorize(x, {xs}{ta})"], [], extent(xs, 512), 1
            u = rng.choice((2, 3, 4))
            return ([f"f.split(x, xo, xi, {xs * u}{ta}).split(xi, xi, xv, {xs}).vectorize(xv).unroll(xi)"],
                    ["xo"], extent(xs * u, 512), 1)
        kind = rng.choice(("vec_x", "yx", "yx_fz", "tile_x", "tile_xy", "vec_y", "fuse"))
        ys = rng.choice((2, 3, 4, 5, 8))
        two = [w for w in self.widths(512 // ys) if w <= 64]
        if kind == "vec_x":
            if rng.random() < 0.5:
                return [f"f.vectorize(x, {xs}{ta})"], ["y"], extent(xs, 256), rng.randint(1, 8)
            return ([f"f.vectorize(x, {xs}{ta}).split(y, yo, yi, 2).unroll(yi)"], ["yo"], extent(xs, 256),
                    2 * rng.randint(1, 4))
        if kind in ("yx", "yx_fz"):  # y fastest: a load with a row step becomes a shuffle of one load
            xs = rng.choice(two)
            if kind == "yx_fz":
                return [f"f.reorder(y, x).vectorize(y, {ys}).vectorize(x, {xs})"], [], extent(xs, 256), \
                    ys * rng.randint(1, 2)
            return ([f"f.reorder(y, x).split(y, yo, yi, {ys}{ta}).split(x, xo, xi, {xs}{ta})"
                     f".reorder(yi, xi, yo, xo).vectorize(yi).vectorize(xi)"], ["yo", "xo"],
                    extent(xs, 256), extent(ys, 12))
        if kind == "tile_x":
            u = rng.choice((1, 2))
            return ([f"f.tile(x, y, xo, yo, xi, yi, {xs * u}, {ys}{ta}).vectorize(xi, {xs}).unroll(yi)"],
                    ["xo", "yo"], extent(xs * u, 256), extent(ys, 12))
        if kind == "tile_xy":  # x fastest, ys rows in one vector
            xs = rng.choice(two)
            return ([f"f.tile(x, y, xo, yo, xi, yi, {xs}, {ys}{ta}).vectorize(xi).vectorize(yi)"], ["xo", "yo"],
                    extent(xs, 256), extent(ys, 12))
        if kind == "vec_y":
            return [f"f.split(y, yo, yi, {ys}{ta}).reorder(yi, x, yo).vectorize(yi)"], ["x", "yo"], \
                rng.randint(1, 40), extent(ys, 24)
        w, h = rng.choice((8, 16, 24, 40, 64)), rng.randint(1, 6)
        v = rng.choice([k for k in self.widths(256) if k <= w * h])
        return [f"f.bound(x, 0, {w}).fuse(x, y, xy).vectorize(xy, {v})"], [], w, h


def _range(load: _Load, boxes: dict[str, tuple[tuple[int, int], tuple[int, int]]]) -> list[tuple[int, int]]:
    """The [min, max] of each dimension's index of `load` over its stage's box (monotone: corners)."""
    (x0, x1), (y0, y1) = boxes[load.stage]
    out = []
    for kx, div, ky, c in load.dims:
        vals = [kx * (x // div) + ky * y + c for x in (x0, x1) for y in (y0, y1)]
        out.append((min(vals), max(vals)))
    return out


def random_case(seed: int, index: int) -> Case:
    """The `index`-th case of `seed` (see the module docstring)."""
    rng = random.Random(seed * 1_000_003 + index)
    gen = _Gen(rng)
    lines, outer, w, h = gen.schedule()
    gen.width_hint = w
    gen.has_g = rng.random() < 0.33
    g_expr = gen.expr(rng.randint(1, 2), "g") if gen.has_g else ""
    f_expr = gen.expr(rng.randint(1, 3), "f")
    # what f reads of g, grown by g's rounding, is g's box; inputs are sized over both stages' loads
    boxes = {"f": ((0, w - 1), (0, h - 1))}
    g_loads = [ld for ld in gen.loads if ld.buffer == "g"]
    if gen.has_g and not g_loads:
        g_loads = [_Load("g", "f", ((1, 1, 0, 0), (0, 1, 1, 0))[:gen.dims])]
        f_expr = f"({f_expr} + hl.Expr(g[x" + (", y]))" if gen.dims == 2 else "]))")
    if gen.has_g:
        ranges = [_range(ld, boxes) for ld in g_loads]
        gx = (min(r[0][0] for r in ranges) - _G_MARGIN[0], max(r[0][1] for r in ranges) + _G_MARGIN[0])
        gy = ((min(r[1][0] for r in ranges) - _G_MARGIN[1], max(r[1][1] for r in ranges) + _G_MARGIN[1])
              if gen.dims == 2 else (0, 0))
        boxes["g"] = (gx, gy)
    src = [f"T = {TYPES[gen.t][2]}"] + ([f"W = {TYPES[gen.wide][2]}"] if gen.wide else [])
    src.append('x, y, xo, yo, xi, yi, xv, xy = (hl.Var(n) for n in ("x", "y", "xo", "yo", "xi", "yi", "xv", "xy"))')
    shapes: list[tuple[int, ...]] = []
    params: list[str] = []
    text = (g_expr + "\n" + f_expr)
    for buf, ndim in (("a", 1), ("b", 2)):
        ranges = [_range(ld, boxes) for ld in gen.loads if ld.buffer == buf]
        if not ranges:
            continue
        extents = []
        for d in range(ndim):
            lo, hi = min(r[d][0] for r in ranges), max(r[d][1] for r in ranges)
            token = re.compile(f"( \\+ )?@{buf.upper()}{d}@(-?\\d+)@")
            text = token.sub(lambda m: _offset(m[1] is not None, int(m[2]) - lo), text)
            extents.append(hi - lo + 1)
        src.append(f'{buf} = hl.ImageParam(T, {ndim}, "{buf}")')
        params.append(buf)
        shapes.append(tuple(reversed(extents)))  # numpy's axes are Halide's reversed
    if gen.uses_lut:
        src.append('c = hl.ImageParam(T, 1, "c")')
        params.append("c")
        shapes.append((256,))
    g_text, f_text = text.split("\n")
    args = "x, y" if gen.dims == 2 else "x"
    if gen.has_g:
        src += [f'g = hl.Func("g{index}")', f"g[{args}] = {g_text}"]
    src += [f'f = hl.Func("f{index}")', f"f[{args}] = {f_text}"]
    if rng.random() < 0.4 and "bound(x" not in lines[0]:
        src.append(f"f.bound(x, 0, {w})")
    if gen.dims == 2 and rng.random() < 0.3:
        src.append(f"f.bound(y, 0, {h})")
    src += lines
    if gen.has_g:
        where = rng.choice(["inline", "root", "root"] + [f"at {v}" for v in outer])
        if where != "inline":
            at = "compute_root()" if where == "root" else f"compute_at(f, {where[3:]})"
            vec = f".vectorize(x, {rng.choice(gen.widths(256))})" if rng.random() < 0.7 else ""
            src.append(f"g.{at}{vec}")
    src += [f"params = [{', '.join(params)}]", f"size = [{w}, {h}]" if gen.dims == 2 else f"size = [{w}]"]
    return Case(seed, index, gen.t, "\n".join(src) + "\n", tuple(shapes))


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Result:
    """What one (target, isel) run found."""
    target: str
    isel: str
    ran: int = 0
    mismatches: list[str] = field(default_factory=list)  # reports
    errors: list[str] = field(default_factory=list)  # compile / run failures: findings
    fallbacks: Counter[str] = field(default_factory=Counter)  # reason -> cases
    invalid: Counter[str] = field(default_factory=Counter)  # Halide's realize refused the case itself
    # ours differ from Halide's scheduled realize but equal its unscheduled one (Halide's schedule changed
    # the values: not a finding of ours)
    halide_disagrees: int = 0
    seconds: float = 0.0


def _first_line(e: BaseException) -> str:
    """The exception's type and first informative line (Halide's errors start with a bare `Error:`)."""
    lines = [ln.strip() for ln in str(e).strip().splitlines() if ln.strip() not in ("", "Error:")]
    return f"{type(e).__name__}: {lines[0][:240] if lines else ''}"


def _reason(text: str) -> str:
    """A fallback or refusal reason without its positions and temporaries, so that like reasons count
    together."""
    return re.sub(r"\bt\d+\b", "tN", re.sub(r"line \d+, column \d+: |\s*\(statement line \d+\)", "", text))


def _header(case: Case, target: str, isel: str) -> str:
    return (f"case {case.seed}/{case.index} ({case.type_name}) on {target} isel={isel}; rerun: python -m "
            f"tests.pitchfork.difftest_schedules --target {target} --isel {isel} --seed {case.seed} "
            f"--case {case.index}\n" + "".join(f"    {ln}\n" for ln in case.source.splitlines()))


def run_case(case: Case, results: dict[tuple[str, str], Result],
             report: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> None:
    """Realize the case with Halide, then compile and run it for every (target, isel) of `results`."""
    import halide as hl

    import pitchfork

    ns = case.build()
    arrays = case.inputs()
    for p, arr in zip(ns["params"], arrays):
        p.set(hl.Buffer(arr))
    try:
        want = np.asarray(ns["f"].realize(ns["size"]))
    except Exception as e:  # noqa: BLE001 - the generator's fault (bounds): counted, never compared
        for r in results.values():
            r.invalid[f"{_first_line(e)} (case {case.index})"] += 1
        return
    for (target, isel), r in results.items():
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                prog = pitchfork.compile(ns["f"], ns["params"], target=target, isel=isel, name=f"case{case.index}")
            if prog.module is None:
                r.fallbacks[_reason(prog.fallback_reason.splitlines()[0][:240]) if prog.fallback_reason else "?"] += 1
                continue
            got = np.asarray(prog(*arrays, size=ns["size"], check=True))
        except Exception as e:  # noqa: BLE001 - an error is a finding
            r.errors.append(_header(case, target, isel) + f"  ERROR {_first_line(e)}")
            report(r.errors[-1])
            continue
        finally:
            r.seconds += time.perf_counter() - t0
        r.ran += 1
        if got.shape != want.shape or not np.array_equal(got, want):
            if got.shape == want.shape and np.array_equal(got, _unscheduled(case, arrays)):
                # Halide's schedule changed the values (its vectorizer computes u32 `(a + 1) >> 1` as a
                # rounding shift, which does not wrap): ours are the language's, as Halide's scalar code
                r.halide_disagrees += 1
                continue
            bad = np.argwhere(got != want) if got.shape == want.shape else np.zeros((0, want.ndim), int)
            where = [tuple(int(v) for v in reversed(b)) for b in bad[:6]]  # Halide's (x, y) order
            r.mismatches.append(_header(case, target, isel) + f"  MISMATCH in {len(bad)} of {want.size} lanes "
                                f"(shape {got.shape} vs {want.shape}); first at (x, y) {where}: got "
                                f"{[int(got[tuple(b)]) for b in bad[:6]]}, want {[int(want[tuple(b)]) for b in bad[:6]]}")
            report(r.mismatches[-1])


def _unscheduled(case: Case, arrays: list[np.ndarray]) -> np.ndarray:
    """Halide's realize of the case without its schedule (the reference when the scheduled one differs)."""
    import halide as hl

    ns = case.build(scheduled=False)
    for p, arr in zip(ns["params"], arrays):
        p.set(hl.Buffer(arr))
    return np.asarray(ns["f"].realize(ns["size"]))


def summary(r: Result) -> str:
    lines = [f"{r.target:9s} isel={r.isel:9s} ran {r.ran:6d} pipelines, {len(r.mismatches)} mismatches, "
             f"{len(r.errors)} errors, {sum(r.fallbacks.values())} fallbacks, {sum(r.invalid.values())} invalid, "
             f"{r.seconds:.1f} s" + (f", {r.halide_disagrees} where Halide's schedule changed its own values (ours "
                                     "are its unscheduled values)" if r.halide_disagrees else "")]
    lines += [f"    fallback x{n}: {why}" for why, n in r.fallbacks.most_common()]
    lines += [f"    invalid x{n}: {why}" for why, n in r.invalid.most_common()]
    return "\n".join(lines)


def run(seed: int, indices: Sequence[int], targets: Sequence[str], isels: Sequence[str],
        report: Callable[[str], None] = lambda s: print(s, file=sys.stderr, flush=True)) -> list[Result]:
    """Every case of `indices` on every (target, isel); one Result per pair."""
    from pitchfork.backend.run import ToolMissing, check_tools

    results: dict[tuple[str, str], Result] = {}
    for t in targets:
        try:
            check_tools(t)
        except ToolMissing as e:
            print(f"{t}: SKIPPED: {e}", flush=True)
            continue
        results.update({(t, i): Result(t, i) for i in isels})
    for k in indices:
        run_case(random_case(seed, k), results, report)
    return list(results.values())


def main(argv: Optional[Sequence[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=100, help="pipelines (each on every target and isel)")
    p.add_argument("--target", action="append", choices=TARGETS, help="repeatable (default: all)")
    p.add_argument("--isel", action="append", choices=ISELS, help="repeatable (default: both)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=0, help="first case index")
    p.add_argument("--case", type=int, action="append", help="run just these case indices (repeatable)")
    p.add_argument("--show", action="store_true", help="print the cases' sources, run nothing")
    args = p.parse_args(argv)
    indices = args.case or list(range(args.start, args.start + args.count))
    if args.show:
        for k in indices:
            c = random_case(args.seed, k)
            print(f"# case {args.seed}/{k} ({c.type_name}), input shapes {list(c.shapes)}\n{c.source}")
        return 0
    results = run(args.seed, indices, args.target or TARGETS, args.isel or ISELS)
    for r in results:
        print(summary(r), flush=True)
    return int(any(r.mismatches or r.errors for r in results))


if __name__ == "__main__":
    sys.exit(main())
