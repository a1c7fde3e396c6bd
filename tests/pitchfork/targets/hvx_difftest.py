"""Differential testing helpers for HVX: build element-wise kernels for many terms, run them all in one
qemu-hexagon batch, compare bit-exactly with the numpy interpreter (fpir.interp.evaluate)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from fpir.interp import evaluate
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.backend.harness import Buffer, Call, Scalar
from pitchfork.codegen.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.backend.machine import CompiledModule, compile_module
from pitchfork.backend.run import run_calls

TARGET = "hvx128"


def free_vars(term: Term) -> list[Term]:
    return sorted({t for t in term.walk() if t.op == "var"}, key=lambda v: v.name)


def edge_values(t: ScalarType) -> list[int]:
    if t.bits == 1:
        return [0, 1]
    vals = {t.min, t.max, 0, 1, t.min + 1, t.max - 1, t.max // 2, t.max // 2 + 1, 2, 3}
    if t.signed:
        vals |= {-1, -2, t.min // 2, t.min // 2 - 1}
    for k in range(t.bits):
        for v in (1 << k, (1 << k) - 1, -(1 << k)):
            if t.contains(v):
                vals.add(v)
    return sorted(vals)


def make_input(t: ScalarType, n: int, rng: np.random.Generator, salt: int = 0) -> np.ndarray:
    """Random values of type t, the first lanes set to edge values. Variables get different
    rotations (salt) so that pairs of edge values meet in some lane."""
    if t.bits == 1:
        return rng.integers(0, 1, endpoint=True, size=n, dtype=np.uint8)
    dt = storage_type(t).np_dtype
    out = rng.integers(t.min, t.max, endpoint=True, size=n, dtype=dt)
    edges = edge_values(t)
    m = len(edges)
    k = min(m * m, n // 2)
    idx = np.arange(k)
    sel = (idx // m + idx * salt) % m if salt else idx % m
    out[:k] = np.array(edges, dtype=object)[sel].astype(dt)
    return out


@dataclass
class Case:
    name: str
    term: Term
    lanes: int
    n: int = 0
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    expected: np.ndarray | None = None
    module: CompiledModule | None = None
    function: str = ""  # the kernel's name in `module` (several kernels share a module)
    error: str = ""
    #: variables that hold one value in every lane (read once and splat by the kernel: a runtime scalar)
    uniform: frozenset[str] = frozenset()


def prepare(cases: Sequence[Case], rng: np.random.Generator, min_elems: int = 512) -> None:
    for c in cases:
        reps = max(2, -(-min_elems // c.lanes))
        c.n = c.lanes * reps
        vs = free_vars(c.term)
        for i, v in enumerate(vs):
            c.inputs[v.name] = make_input(v.type, c.n, rng, salt=i)
            if v.name in c.uniform:  # one value, an edge value or a random one
                pick = rng.choice(np.concatenate([np.asarray(edge_values(v.type), dtype=object), c.inputs[v.name][-4:]]))
                c.inputs[v.name][:] = int(pick)
        c.expected = np.asarray(evaluate(c.term, {k: _as_type(a, v.type) for (k, a), v in
                                                  zip(c.inputs.items(), vs)}))
        if c.term.type.bits == 1:
            c.expected = c.expected.astype(np.uint8)
        if c.expected.shape == ():
            c.expected = np.full(c.n, c.expected)


def _as_type(a: np.ndarray, t: ScalarType) -> np.ndarray:
    return a.astype(bool) if t.bits == 1 else a


def _module(group: Sequence[tuple[str, Case]]) -> str:
    m = new_module("hvx_cases")
    for fn, c in group:
        add_expression_kernel(m, fn, c.term, c.lanes, free_vars(c.term), TARGET, c.uniform)
    return str(m)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0] if text else ''}"


def compile_groups(group: list[tuple[str, Case]], isolate: bool, failures: list[str]) -> list[tuple[str, Case]]:
    """Compile the kernels of `group` as one module; on an error, bisect to find the failing kernels
    (recorded in `failures`) and compile the others. Returns the compiled (function, case) pairs."""
    try:
        cm = compile_module(_module(group), TARGET, isolate=isolate)
    except Exception as e:  # noqa: BLE001 - recorded per case below
        if len(group) == 1:
            c = group[0][1]
            c.error = f"compile: {_first_line(e)}"
            failures.append(f"{c.name} [lanes {c.lanes}]: {c.error}")
            return []
        mid = len(group) // 2
        return compile_groups(group[:mid], isolate, failures) + compile_groups(group[mid:], isolate, failures)
    for fn, c in group:
        c.module, c.function = cm, fn
    return group


def run_cases(cases: Sequence[Case], rng: np.random.Generator, isolate: bool = False,
              group_size: int = 64, alone: Callable[[Case], bool] = lambda c: False) -> list[str]:
    """Compile every case (many kernels per module; a kernel that fails to emit or compile is
    recorded, not fatal), run them all in one qemu batch; return the failures. Cases for which
    `alone` holds (kernels expected to abort LLVM) get a module each, so the others' modules
    compile at the first attempt instead of being bisected around them."""
    prepare(cases, rng)
    failures: list[str] = []
    emitted: list[tuple[str, Case]] = []
    for i, c in enumerate(cases):
        try:
            _module([(f"k{i}", c)])  # emission errors are per case
            emitted.append((f"k{i}", c))
        except Exception as e:  # noqa: BLE001
            c.error = f"emit: {_first_line(e)}"
            failures.append(f"{c.name} [lanes {c.lanes}]: {c.error}")
    live: list[tuple[str, Case]] = []
    for fc in emitted:
        if alone(fc[1]):
            live += compile_groups([fc], isolate, failures)
    emitted = [fc for fc in emitted if not alone(fc[1])]
    for k in range(0, len(emitted), group_size):
        live += compile_groups(emitted[k:k + group_size], isolate, failures)
    calls = []
    for fn, c in live:
        rt = storage_type(c.term.type)
        out = np.zeros(c.n, dtype=rt.np_dtype)
        args = [Buffer.output(out)] + [Buffer.input(c.inputs[v.name]) for v in free_vars(c.term)]
        calls.append(Call(fn, (*args, Scalar(c.n, 64))))
    if not calls:
        return failures
    modules = list({id(c.module): c.module for _, c in live}.values())
    results = run_calls(modules, TARGET, calls)  # type: ignore[arg-type]
    for (fn, c), res in zip(live, results):
        got = res[0]
        exp = np.asarray(c.expected).astype(got.dtype)
        if not np.array_equal(got, exp):
            bad = np.nonzero(got != exp)[0]
            j = int(bad[0])
            ins = ", ".join(f"{k}={int(v[j])}" for k, v in c.inputs.items())
            failures.append(f"{c.name} [lanes {c.lanes}]: {len(bad)} lanes differ; first lane {j}: {ins} -> "
                            f"got {int(got[j])}, expected {int(exp[j])}")
    return failures


# ---------------------------------------------------------------------------------------------
# Every FPIR op at every type instance it accepts


def fpir_instances() -> list[tuple[str, Term]]:
    """(label, term) for every FPIR op and every operand-type instance over u8..i64 (saturating_cast:
    every source/target pair), operands as variables; plus constant-operand variants that the HVX
    rules specialise (constant shifts and multipliers)."""
    import itertools

    from fpir.ops import FPIR_OPS, make
    from fpir.opspec import spec
    from fpir.term import const, var
    from fpir.types import INT_TYPES, FPIRTypeError

    out: list[tuple[str, Term]] = []
    names = "xyz"
    for op in FPIR_OPS:
        s = spec(op)
        if op == "saturating_cast":
            for a, b in itertools.product(INT_TYPES, INT_TYPES):
                if a != b:
                    out.append((f"saturating_cast<{b}>({a})", make(op, var("x", a), type=b)))
            continue
        for ts in itertools.product(INT_TYPES, repeat=s.arity):
            try:
                t = make(op, *[var(names[i], ty) for i, ty in enumerate(ts)])
            except FPIRTypeError:
                continue
            out.append((f"{op}({', '.join(map(str, ts))})", t))
            x = var("x", ts[0])
            if op in ("rounding_shr", "rounding_shl", "widening_shl", "widening_shr", "saturating_shl"):
                for c in (1, ts[0].bits // 2, ts[0].bits - 1):
                    out.append((f"{op}({ts[0]}, {ts[1]} {c})", make(op, x, const(c, ts[1]))))
            if op in ("mul_shr", "rounding_mul_shr"):
                for c in (0, 1, ts[0].bits // 2, ts[0].bits - 1, ts[0].bits):
                    out.append((f"{op}({ts[0]}, {ts[1]}, {c})", make(op, x, var("y", ts[1]), const(c, ts[2]))))
            if op == "widening_mul":
                c = 3 if not ts[1].signed else -3
                out.append((f"{op}({ts[0]}, {ts[1]} {c})", make(op, x, const(c, ts[1]))))
    return [w for label, t in out for w in _storable(label, t)]


def _storable(label: str, t: Term) -> list[tuple[str, Term]]:
    """A 128-bit result (widening ops on 64-bit lanes) is checked as its two 64-bit halves."""
    from fpir.ops import make
    from fpir.term import const

    if t.type.bits <= 64:
        return [(label, t)]
    half = ScalarType(t.type.signed, 64)
    return [(f"{label} [low half]", make("cast", t, type=half)),
            (f"{label} [high half]", make("cast", make("shr", t, const(64, t.type)), type=half))]


# ---------------------------------------------------------------------------------------------
# Every HVX instruction at every signature, as a term of its own


def _deint_producer(t: ScalarType, tag: str) -> Term | None:
    """A term of type t computed by a widening instruction (a de-interleaved pair), or None."""
    from fpir.ops import make
    from fpir.term import var
    from fpir.types import parse_type

    def v(s: str, ty: str) -> Term:
        return var(f"{tag}{s}", parse_type(ty))

    src = {"u16": ("hvx.vadd_w", "u8"), "i16": ("hvx.vsub_w", "u8"), "u32": ("hvx.vadd_w", "u16"),
           "i32": ("hvx.vadd_w", "i16")}.get(t.name)
    return None if src is None else make(src[0], v("a", src[1]), v("b", src[1]))


_CONST_POSITIONS = {"hvx.vmpy": (1, 0), "hvx.vmpy_acc": (2, 1), "hvx.vmpyhss": (1,), "hvx.vmpyi": (1, 0),
                    "hvx.vmpyi_acc": (2, 1), "hvx.vmpy_acc_zp": (2,)}
_VMPA_TAPS = ((1, 2), (2, 1), (3, 5), (-1, 7), (255, 255), (-128, 127), (0, 1))
#: instructions taking f constant taps last, and the taps tried (extremes and unequal ones)
_TAP_OPS = {"hvx.vdmpy": 2, "hvx.vdmpy_acc": 2, "hvx.vtmpy": 2, "hvx.vrmpy_taps": 4, "hvx.vrmpy_taps_acc": 4}
_TAP_SETS = {2: ((3, -5), (-128, 127), (255, 255), (0, 1)),
             4: ((1, 2, 3, 4), (-128, 127, -1, 0), (255, 255, 255, 255), (7, -3, 0, 100))}


def _const_values(t: ScalarType, rt_edges: bool = False) -> list[int]:
    """Constant operands; `rt_edges` adds the edges of the byte / halfword Rt ranges (vmpyi picks
    vmpyi(.., Rt.b), vmpyi(.., Rt.h) or the vector form by the constant's signed range)."""
    vals = {0, 1, 2, 3, 5, 100, t.max, t.min}
    if rt_edges:
        vals |= {127, 128, 255, 256, 32767, 32768, 65535, 65536, -128, -129, -32768, -32769}
    if t.signed:
        vals |= {-1, -3, t.min + 1}
    return sorted(v for v in vals if t.contains(v))


def instruction_cases(names: Sequence[str], lane_factors: Sequence[float] = (0.5, 1, 3)) -> list[Case]:
    """For each instruction and signature: variable operands at several lane counts (half a register,
    one, three: padding and splitting), de-interleaved operands (the layout-following emitter paths),
    and the constant operands that select scalar (Rt) forms, including out-of-range ones (fallback)."""
    from fpir.ops import make
    from fpir.opspec import OPS
    from fpir.term import const, var
    from pitchfork.targets.base import sig

    out: list[Case] = []
    pnames = "xyzwabcde"
    for name in names:
        for text in OPS[name].meta["signatures"]:
            sg = sig(text)
            reg = 1024 // min([a.bits for a in sg.args] + [sg.result.bits])
            vs = [var(pnames[i], t) for i, t in enumerate(sg.args)]
            label = f"{name}({text})"
            base = make(name, *vs)
            # (Tap instructions with variable taps only run their fallback: one lane count is enough.)
            out += [Case(label, base, int(reg * f)) for f in ((1,) if name in _TAP_OPS else lane_factors)]
            ps = [_deint_producer(t, pnames[i]) or v for i, (t, v) in enumerate(zip(sg.args, vs))]
            if any(p is not v for p, v in zip(ps, vs)):
                out += [Case(f"{label} de-interleaved operands", make(name, *ps), int(reg * f)) for f in lane_factors]
            if name.startswith("hvx.vasr") and name != "hvx.vasr_acc":
                ib = sg.args[0].bits
                for c in range(ib + 1):
                    if sg.args[1].contains(c):
                        out.append(Case(f"{label} y={c}", make(name, vs[0], const(c, sg.args[1])), reg))
                out.append(Case(f"{label} y={ib // 2} de-interleaved", make(name, ps[0], const(ib // 2, sg.args[1])),
                                reg))
            if name in ("hvx.vasl_acc", "hvx.vasr_acc"):  # the Rt amounts in [0, bits) and fallbacks outside
                for c in (0, 1, 2, 7, sg.args[2].bits - 1, sg.args[2].bits, sg.args[2].bits + 3):
                    out.append(Case(f"{label} z={c}", make(name, vs[0], vs[1], const(c, sg.args[2])), reg))
                out.append(Case(f"{label} z=3 de-interleaved", make(name, ps[0], ps[1], const(3, sg.args[2])), reg))
            if name in ("hvx.vmpa", "hvx.vmpa_acc"):
                at = 2 if name == "hvx.vmpa" else 3
                t = sg.args[at]
                for c0, c1 in _VMPA_TAPS:
                    if t.contains(c0) and t.contains(c1):
                        out.append(Case(f"{label} taps {c0},{c1}", make(name, *vs[:at], const(c0, t), const(c1, t)),
                                        reg))
            if name in _TAP_OPS:  # vdmpy / vrmpy by constant taps: the taps are the last f operands
                f = _TAP_OPS[name]
                t = sg.args[-1]
                for j, taps in enumerate(_TAP_SETS[f]):
                    if all(t.contains(c) for c in taps):
                        args = vs[:len(vs) - f] + [const(c, t) for c in taps]
                        out += [Case(f"{label} taps {taps}", make(name, *args), int(reg * fl))
                                for fl in ((1, 3) if j == 0 else (1,))]
            for p in _CONST_POSITIONS.get(name, ()):
                for c in _const_values(sg.args[p], name.startswith("hvx.vmpyi")):
                    args = list(vs)
                    args[p] = const(c, sg.args[p])
                    out.append(Case(f"{label} operand {p} = {c}", make(name, *args), reg))
    return out


def loop_of(c: Case):  # type: ignore[no-untyped-def]
    """The inner loop (pitchfork.backend.machine.Loop) of a compiled case's kernel."""
    from pitchfork.backend.asm import inner_loop

    assert c.module is not None
    return inner_loop(c.module.assembly(), c.function, target=TARGET)
