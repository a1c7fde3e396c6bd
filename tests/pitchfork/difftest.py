"""Differential testing of instruction selection: random expressions, compiled and RUN on every ISA.

For each random well-typed expression (FPIR ops, primitive integer ops, casts, shifts by constants and
by variables, div/mod, select/compare, and the integer idioms the lifting rules turn into FPIR, over
u8 .. i64), `pitchfork.selection.lower.select_instructions` lowers it for a target with isel=pitchfork or
isel=llvm; the result becomes an element-wise kernel (pitchfork.codegen.kernel); the kernels of a batch
share one module, one compilation and one execution (x86: in-process JIT; AArch64 / Hexagon: one
qemu run through pitchfork.backend.run.run_calls). Inputs mix random values, edge values (min, max, 0,
-1, 1, min+1, max-1) and small values (so variable shift amounts hit 0, negative and >= bits), and
the lane count varies (native/2, native, 2*native, 3*native) so splitting into registers and
padding are exercised. Every output lane must equal `fpir.interp.evaluate` of the ORIGINAL
expression bit for bit; a mismatch reports the expression, the lowered term, the inputs of the first
failing lanes and both outputs. Two variables of one name at two types (`c_u8`, `c_i32`) are two
inputs: inputs, the interpreter and the kernel's arguments are keyed by name, so such a term runs with
the clashing names made distinct (`pitchfork.codegen.kernel.distinct_variables`); reports show it as given.

    python -m tests.pitchfork.difftest --count 20000 --target arm64 [--isel llvm] [--seed 7]

Terms may carry flags (`add.nsw`, Halide's no-overflow rule; `random_overflow_terms` makes terms as the
Halide frontend does, with the i32/i64 averaging and rounding-shift spellings mixed in): their inputs
are redrawn, lane by lane, until every flagged node's fact holds (`fpir.interp.facts_hold`), and only
lanes where the facts hold are compared (a lane no redraw could fix is reported in `Result.masked`).

    python -m tests.pitchfork.difftest --overflow --count 500 --target x86-avx2

`--uniform` makes variables uniform leaves (broadcasts, fed one value in every lane), which the
instructions reading one count for all lanes (x86 vpsraw & co.) are selected for.

    python -m tests.pitchfork.difftest --uniform --count 500 --target x86-avx2

`--reductions` draws terms under the lane-combining `vector_reduce_<op>_x<f>` ops (`random_reductions`:
half of them the shapes udot/sdot, vrmpy, vdmpy, pmaddwd/pmaddubsw, psadbw and the pair sums take):

    python -m tests.pitchfork.difftest --reductions --count 300 --target arm64 --max-bits 32

`--families` draws issue 11's lifting-family spellings (tests/pitchfork/selection/test_lift_families.py) and the
HVX instruction forms it added (`HVX_TEMPLATES`), their variables replaced by random terms:

    python -m tests.pitchfork.difftest --families --count 300 --target hvx128 --max-bits 32

`--schedules` runs tests/pitchfork/difftest_schedules.py instead (its options): random small Halide pipelines
under random schedules (strided, 2-D, broadcast, reversed loads; 2-D vectors, tiles, tails), compiled by
pitchfork.compile and compared with Halide's realize:

    python -m tests.pitchfork.difftest --schedules --target hvx128 --count 300 --seed 1

`--save PATH` writes every mismatch and error as a reproducer (one JSON object per line: target, isel,
lane count, expression text); `--replay PATH` reruns just those, each alone:

    python -m tests.pitchfork.difftest --target hvx128 --count 200 --seed 12 --save /tmp/f.jsonl
    python -m tests.pitchfork.difftest --replay /tmp/f.jsonl

Library use (tests/pitchfork/test_differential.py, the per-ISA tests): the generators in
tests/pitchfork/difftest_terms.py (`random_terms`, `random_overflow_terms`, `random_family_terms`, ...) and
`run_batch` here.
"""

from __future__ import annotations

import argparse
import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

import numpy as np

from fpir.interp import evaluate, facts_hold
from fpir.z3enc import has_flags
from fpir.term import Term
from fpir.printer import to_text
from fpir.types import ScalarType, u1
from tests.pitchfork.difftest_terms import (_with_uniform, edge_values, random_family_terms, random_overflow_terms,
                                            random_reductions, random_terms, with_uniform_leaves)

TARGETS = ("x86-avx2", "arm64", "hvx128")
ISELS = ("pitchfork", "llvm")

# ---------------------------------------------------------------------------------------------
# Inputs


def respecting_facts(term: Term, env: dict[str, np.ndarray], rng: np.random.Generator,
                     tries: int = 12) -> np.ndarray:
    """Redraw the inputs of lanes where a flag's fact fails (in place); the final per-lane mask."""
    ok = np.broadcast_to(facts_hold(term, env), next(iter(env.values())).shape).copy() if env else np.ones(0, bool)
    for attempt in range(tries):
        bad = np.nonzero(~ok)[0]
        if not len(bad):
            break
        for name, a in env.items():
            t = next(v.type for v in term.variables() if v.name == name)
            fresh = input_values(rng, t, len(bad))
            if attempt % 2:  # every other round: small values, which rarely overflow
                fresh = (fresh.astype(object) % 7).astype(a.dtype) if t.bits > 1 else fresh
            a[bad] = fresh
        ok = np.broadcast_to(facts_hold(term, env), ok.shape).copy()
    return ok


def input_values(rng: np.random.Generator, t: ScalarType, n: int) -> np.ndarray:
    """n values of type t: a third edge values, a third small values, a third uniform."""
    if t == u1:
        return rng.integers(0, 2, n).astype(np.bool_)
    kinds = rng.integers(0, 3, n)
    edges = np.array(edge_values(t), dtype=object)
    out = np.empty(n, dtype=object)
    e = edges[rng.integers(0, len(edges), n)]
    small = rng.integers(-3, t.bits + 3, n)
    hi = rng.integers(0, 1 << 62, n) * 4 + rng.integers(0, 4, n)  # 64 random bits
    for i in range(n):
        if kinds[i] == 0:
            out[i] = int(e[i])
        elif kinds[i] == 1:
            out[i] = t.wrap(int(small[i]))
        else:
            out[i] = t.wrap(int(hi[i]))
    return out.astype(t.np_dtype)


# ---------------------------------------------------------------------------------------------
# Running


@dataclass
class Case:
    term: Term  # what runs: `source` with variables that share a name at two types given two names
    lanes: int
    n: int
    final: Optional[Term] = None
    error: str = ""
    mask: Optional[np.ndarray] = None  # lanes whose inputs respect the flags' facts (None: all)
    source: Optional[Term] = None  # the expression as given (reports and reproducers show it)

    @property
    def shown(self) -> Term:
        return self.term if self.source is None else self.source


@dataclass
class Mismatch:
    target: str
    isel: str
    term: Term
    lowered: Term
    lanes: int
    inputs: dict[str, list[int]]
    expected: list[int]
    got: list[int]
    lowered_ok: bool = True  # the lowered term itself (numpy) gives the expected values

    def report(self) -> str:
        where = ("the machine code differs from the lowered term's meaning (instruction emitter or LLVM)"
                 if self.lowered_ok else "the lowered term itself is wrong (a lowering rule)")
        lines = [f"MISMATCH on {self.target} (isel={self.isel}, lanes={self.lanes}): {where}",
                 f"  expression: {to_text(self.term)}",
                 f"  lowered:    {to_text(self.lowered)}"]
        for name, vals in sorted(self.inputs.items()):
            lines.append(f"  {name} = {vals}")
        lines.append(f"  expected (fpir.interp): {self.expected}")
        lines.append(f"  got (machine):          {self.got}")
        return "\n".join(lines)


@dataclass
class Result:
    target: str
    isel: str
    ran: int = 0
    mismatches: list[Mismatch] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # selection / compile / run failures (bugs too)
    skipped: str = ""  # a whole-target skip reason (tools missing, known link problem)
    seconds: float = 0.0
    masked: int = 0  # lanes not compared: no redraw made their inputs respect the flags' facts
    # every mismatch and error as a reproducer (`finding`), for `--save` / `--replay`
    findings: list[dict] = field(default_factory=list)


def finding(kind: str, target: str, isel: str, c: "Case", message: str) -> dict:
    """A failing case as one JSON object: enough to rerun it alone (`replay`) at its lane count."""
    return {"kind": kind, "target": target, "isel": isel, "lanes": c.lanes, "expression": to_text(c.shown),
            "uniform": sorted(v.name for v in c.shown.variables() if v.is_uniform_leaf),
            "message": message[:2000]}


def natural_lanes(target: str, t: ScalarType) -> int:
    from pitchfork.backend.machine import get_target

    return get_target(target).natural_lanes(max(t.bits, 8))


def _kernel_vars(term: Term) -> list[Term]:
    return sorted(term.variables(), key=lambda v: v.name)


def _compile(module_text: str, target: str):  # type: ignore[no-untyped-def]
    from pitchfork.backend.machine import compile_module

    return compile_module(module_text, target, isolate=True)


def run_batch(terms: Sequence[Term], target: str, isel: str, seed: int = 0, batch: int = 150,
              lanes_choice: Optional[Callable[[random.Random, int], int]] = None,
              max_report: int = 20) -> Result:
    """Lower, compile and run every term on `target`; compare with the interpreter."""
    from pitchfork.backend.run import ToolMissing, check_tools
    from pitchfork.codegen.kernel import distinct_variables
    from pitchfork.selection.lower import select_instructions

    res = Result(target, isel)
    t0 = time.perf_counter()
    try:
        check_tools(target)
    except ToolMissing as e:
        res.skipped = str(e)
        return res
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    cases: list[Case] = []
    for term in terms:
        # One register of the result type; on HVX of the widest type (LLVM scalarises 64-bit lanes
        # there, and 128 scalarised lanes take seconds to compile and to emulate).
        wide = max(min(t.type.bits, 64) for t in term.walk())
        nat = natural_lanes(target, ScalarType(False, wide) if target == "hvx128" else term.type)
        if lanes_choice is not None:
            lanes = lanes_choice(rng, nat)
        else:
            lanes = max(1, rng.choice([nat // 2, nat, nat, 2 * nat, 3 * nat]))
        n = lanes * max(1, math.ceil(96 / lanes))
        # Inputs, the interpreter and the kernel's arguments are all keyed by variable name, but `c_u8`
        # and `c_i32` are two variables of one name: they run under two names (one value each).
        distinct = distinct_variables(term, [])[0]
        c = Case(distinct, lanes, n, source=term)
        try:
            c.final = select_instructions(distinct, target, isel).final
        except Exception as e:  # noqa: BLE001 - a selection crash is a finding
            c.error = f"select: {type(e).__name__}: {e}"
            res.errors.append(f"{c.error}\n  expression: {to_text(term)}")
            res.findings.append(finding("select", target, isel, c, c.error))
        cases.append(c)

    todo = [c for c in cases if c.final is not None]
    # (No compile-ahead thread: forking an LLVM compile while this thread runs LLVM (the JIT, object
    # emission) can deadlock the child on a lock held at fork time.)
    for start in range(0, len(todo), batch):
        good, mods, errors, failed = _compile_chunk(todo[start:start + batch], target)
        res.errors.extend(errors)
        res.findings.extend(finding("compile", target, isel, c, e) for c, e in failed)
        _run_chunk(good, mods, target, nrng, res, max_report)
        if res.skipped:
            break
    res.seconds = time.perf_counter() - t0
    return res


def _build(cs: list[tuple[int, Case]], target: str = "") -> str:
    from pitchfork.codegen.kernel import add_expression_kernel, new_module

    m = new_module()
    for i, c in cs:
        add_expression_kernel(m, f"k{i}", c.final, c.lanes, _kernel_vars(c.final), target or None)
    return str(m)


def _compile_chunk(chunk: list[Case], target: str):  # type: ignore[no-untyped-def]
    """One module for the chunk; if it does not compile, its halves, recursively (a kernel that fails
    alone is a finding). Bisecting finds the few kernels a module was refused for in about
    2 * log2(len(chunk)) compiles each, where compiling every kernel alone took len(chunk) (a 150-kernel
    hvx128 batch with one refused kernel: 150 compiles and qemu runs)."""
    indexed = list(enumerate(chunk))
    errors: list[str] = []
    failed: list[tuple[Case, str]] = []
    good: list[tuple[int, Case]] = []
    mods: list = []
    _compile_parts(indexed, target, good, mods, errors, failed, top=True)
    return good, mods, errors, failed


def _compile_parts(part, target, good, mods, errors, failed, top=False):  # type: ignore[no-untyped-def]
    from pitchfork.backend.machine import CompileError

    if len(part) > 1:
        try:
            mods.append(_compile(_build(part, target), target))
            good.extend(part)
            return
        except CompileError as e:  # a finding only if some kernel fails alone too (reported below)
            if top:
                print(f"note: the {len(part)}-kernel module did not compile "
                      f"({str(e).strip().splitlines()[0][:200]}); bisecting", file=sys.stderr, flush=True)
        half = len(part) // 2
        _compile_parts(part[:half], target, good, mods, errors, failed)
        _compile_parts(part[half:], target, good, mods, errors, failed)
        return
    (i, c), = part
    err = None
    for _ in range(2):  # LLVM's HVX backend asserts nondeterministically on some i64 code
        try:
            mods.append(_compile(_build([(i, c)], target), target))
            good.append((i, c))
            return
        except CompileError as e:
            err = e
    errors.append(f"compile: {str(err)[:6000]}\n  expression: {to_text(c.shown)}\n"
                  f"  lowered: {to_text(c.final)}")
    failed.append((c, str(err)))


def _run_chunk(good, mods, target, nrng, res, max_report) -> None:  # type: ignore[no-untyped-def]
    from pitchfork.backend.harness import Buffer, Call, Scalar
    from pitchfork.codegen.kernel import input_factors
    from pitchfork.backend.run import RunError, run_calls

    if not good:
        return
    calls, envs = [], []
    for i, c in good:
        vs = _kernel_vars(c.term)
        factors = input_factors(c.term)  # elements per output element (> 1 under a vector_reduce)
        env = {v.name: input_values(nrng, v.type, c.n * factors.get(v.name, 1)) for v in vs}
        uniform = [v for v in vs if v.is_uniform_leaf]
        for v in uniform:  # a broadcast: one value (drawn like the others) in every lane
            env[v.name] = np.full_like(env[v.name], env[v.name][int(nrng.integers(len(env[v.name])))])
        if uniform and has_flags(c.term):  # no per-lane redraw (it would break uniformity): mask only
            c.mask = np.broadcast_to(facts_hold(c.term, env), (c.n,)).copy()
        else:
            c.mask = respecting_facts(c.term, env, nrng) if has_flags(c.term) and env else None
        envs.append(env)
        out_t = c.term.type
        out = np.zeros(c.n, dtype=np.uint8 if out_t.bits == 1 else out_t.np_dtype)
        args = [Buffer.output(out)]
        for v in _kernel_vars(c.final):
            a = env.get(v.name)
            if a is None:  # lowering cannot introduce variables; be loud if it does
                raise AssertionError(f"lowered term has unknown variable {v.name}")
            args.append(Buffer.input(a.astype(np.uint8) if v.type.bits == 1 else a,
                                     misalign=int(nrng.integers(0, 4)) * int(nrng.integers(0, 2))))
        args.append(Scalar(c.n, 64))
        calls.append(Call(f"k{i}", args))
    try:
        outs = run_calls(mods, target, calls)
    except RunError as e:
        msg = str(e)
        if target == "hvx128" and "relocation" in msg:
            res.skipped = ("hvx128 kernels do not link (lld: unknown relocation, the known constant-pool "
                           f"problem): {msg.splitlines()[0][:300]}")
            return
        res.errors.append(f"run: {msg[:3000]}")
        res.findings.extend(finding("run", target, res.isel, c, msg) for _, c in good)
        return
    for (i, c), env, out in zip(good, envs, outs):
        got = out[0]
        exp = evaluate(c.term, env)
        if c.term.type.bits == 1:
            exp = exp.astype(np.uint8)
        exp = np.asarray(exp).astype(got.dtype)
        res.ran += 1
        differ = got != exp
        if c.mask is not None:  # lanes whose inputs break a flag's fact: the term promises nothing there
            res.masked += int((~c.mask).sum())
            differ &= c.mask
        if not differ.any():
            continue
        bad = np.nonzero(differ)[0][:6]
        inputs = {k: [int(v[j]) for j in bad] for k, v in env.items()}
        low = evaluate(c.final, env)
        mm = Mismatch(target, res.isel, c.shown, c.final, c.lanes, inputs, [int(exp[j]) for j in bad],
                      [int(got[j]) for j in bad], lowered_ok=bool(np.array_equal(np.asarray(low).astype(got.dtype), exp)))
        res.mismatches.append(mm)
        res.findings.append(finding("mismatch", target, res.isel, c, mm.report()))
        if len(res.mismatches) <= max_report:
            print(mm.report(), file=sys.stderr)


def summary(r: Result) -> str:
    if r.skipped:
        return f"{r.target:9s} isel={r.isel:9s} SKIPPED: {r.skipped}"
    return (f"{r.target:9s} isel={r.isel:9s} ran {r.ran:6d} expressions, {len(r.mismatches)} mismatches, "
            f"{len(r.errors)} errors, {r.seconds:.1f} s" + (f", {r.masked} lanes masked" if r.masked else ""))


def save_findings(results: Sequence[Result], path: str) -> int:
    """Write every finding of `results` to `path` (JSON lines); the number written."""
    import json

    rows = [f for r in results for f in r.findings]
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")
    return len(rows)


def replay(path: str, seed: int = 0) -> list[Result]:
    """Rerun the findings saved in `path` (`--save`), each alone at its own target, isel and lane count
    (inputs are drawn afresh from `seed`: a mismatch that needs particular inputs may want several seeds)."""
    import json

    from fpir.text import parse

    rows = [json.loads(line) for line in open(path) if line.strip()]
    out = []
    for target, isel in sorted({(r["target"], r["isel"]) for r in rows}):
        mine = [r for r in rows if (r["target"], r["isel"]) == (target, isel)]
        terms = [_with_uniform(parse(r["expression"]), set(r.get("uniform", ()))) for r in mine]
        lanes = iter([r["lanes"] for r in mine])
        out.append(run_batch(terms, target, isel, seed=seed, batch=1, lanes_choice=lambda rng, nat: next(lanes)))
    return out


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--schedules" in argv:  # whole pipelines under random schedules: tests/pitchfork/difftest_schedules.py
        from tests.pitchfork.difftest_schedules import main as schedules_main

        return schedules_main([a for a in argv if a != "--schedules"])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--count", type=int, default=1000, help="expressions per target and isel")
    p.add_argument("--target", action="append", choices=TARGETS, help="repeatable (default: all)")
    p.add_argument("--isel", action="append", choices=ISELS, help="repeatable (default: both)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--batch", type=int, default=150, help="kernels per module / emulator run")
    p.add_argument("--max-bits", type=int, default=64, choices=(8, 16, 32, 64),
                   help="widest element type in the expressions")
    p.add_argument("--overflow", action="store_true",
                   help="terms as the Halide frontend builds them (nsw flags, i32/i64 averaging and "
                        "rounding-shift spellings): random_overflow_terms")
    p.add_argument("--uniform", action="store_true",
                   help="make each variable a uniform leaf (a broadcast, one value in every lane) with "
                        "probability 1/2, as the Halide frontend makes its splats: with_uniform_leaves")
    p.add_argument("--reductions", action="store_true",
                   help="terms under vector_reduce_<op>_x<f>, half of them dot-product / pair-sum / "
                        "sum-of-absolute-difference shapes: random_reductions")
    p.add_argument("--families", action="store_true",
                   help="issue 11's lifting-family spellings and HVX instruction forms with random "
                        "operands: random_family_terms")
    p.add_argument("--save", metavar="PATH",
                   help="write every mismatch and error as a reproducer (JSON lines: target, isel, lanes, "
                        "expression text, message) to PATH; rerun them with --replay PATH")
    p.add_argument("--replay", metavar="PATH",
                   help="rerun the findings saved with --save, each alone at its own target, isel and "
                        "lane count (the generator options are ignored)")
    args = p.parse_args(argv)
    if args.replay:
        results = replay(args.replay, args.seed)
        for r in results:
            for e in r.errors[:20]:
                print("ERROR " + e, file=sys.stderr)
            print(summary(r), flush=True)
        if args.save:
            save_findings(results, args.save)
        return int(any(r.mismatches or r.errors for r in results))
    if args.overflow + args.reductions + args.families > 1:
        p.error("--overflow, --reductions and --families are three generators: pick one")
    if args.families:
        terms = random_family_terms(args.count, args.seed, args.max_bits, min(args.depth, 3))
    elif args.reductions:
        terms = random_reductions(args.count, args.seed, min(args.depth, 3), args.max_bits)
    elif args.overflow:
        terms = random_overflow_terms(args.count, args.seed, min(args.depth, 3))
    else:
        terms = random_terms(args.count, args.seed, args.depth, args.max_bits)
    if args.uniform:
        terms = with_uniform_leaves(terms, args.seed)
    status = 0
    results = []
    for target in args.target or TARGETS:
        for isel in args.isel or ISELS:
            r = run_batch(terms, target, isel, seed=args.seed, batch=args.batch)
            for e in r.errors[:20]:
                print("ERROR " + e, file=sys.stderr)
            print(summary(r), flush=True)
            status |= bool(r.mismatches or r.errors)
            results.append(r)
            if args.save:  # after each target/isel, so an interrupted run keeps what it found
                save_findings(results, args.save)
    if args.save:
        print(f"{sum(len(r.findings) for r in results)} findings written to {args.save}", flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main())
