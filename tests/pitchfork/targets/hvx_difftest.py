"""Differential testing helpers for HVX: build element-wise kernels for many terms, run them all in one
qemu-hexagon batch, compare bit-exactly with the numpy interpreter (fpir.interp.evaluate)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np

from fpir.interp import evaluate
from fpir.term import Term
from fpir.types import ScalarType
from pitchfork.emit.harness import Buffer, Call, Scalar
from pitchfork.emit.kernel import add_expression_kernel, new_module, storage_type
from pitchfork.emit.machine import CompiledModule, compile_module
from pitchfork.emit.run import run_calls

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
    expected: Optional[np.ndarray] = None
    module: Optional[CompiledModule] = None
    error: str = ""


def prepare(cases: Sequence[Case], rng: np.random.Generator, min_elems: int = 512) -> None:
    for c in cases:
        reps = max(2, -(-min_elems // c.lanes))
        c.n = c.lanes * reps
        vs = free_vars(c.term)
        for i, v in enumerate(vs):
            c.inputs[v.name] = make_input(v.type, c.n, rng, salt=i)
        c.expected = np.asarray(evaluate(c.term, {k: _as_type(a, v.type) for (k, a), v in
                                                  zip(c.inputs.items(), vs)}))
        if c.term.type.bits == 1:
            c.expected = c.expected.astype(np.uint8)
        if c.expected.shape == ():
            c.expected = np.full(c.n, c.expected)


def _as_type(a: np.ndarray, t: ScalarType) -> np.ndarray:
    return a.astype(bool) if t.bits == 1 else a


def compile_case(c: Case, fn: str, isolate: bool = False) -> None:
    m = new_module(fn)
    add_expression_kernel(m, fn, c.term, c.lanes, free_vars(c.term))
    c.module = compile_module(str(m), TARGET, isolate=isolate)


def run_cases(cases: Sequence[Case], rng: np.random.Generator, isolate: bool = False) -> list[str]:
    """Compile every case (errors recorded per case), run all in one qemu batch; return failures."""
    prepare(cases, rng)
    failures: list[str] = []
    live: list[tuple[str, Case]] = []
    for i, c in enumerate(cases):
        fn = f"k{i}"
        try:
            compile_case(c, fn, isolate)
            live.append((fn, c))
        except Exception as e:  # noqa: BLE001 - recorded per case
            c.error = f"compile: {type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
            failures.append(f"{c.name} [lanes {c.lanes}]: {c.error}")
    calls = []
    for fn, c in live:
        rt = storage_type(c.term.type)
        out = np.zeros(c.n, dtype=rt.np_dtype)
        args = [Buffer.output(out)] + [Buffer.input(c.inputs[v.name]) for v in free_vars(c.term)]
        calls.append(Call(fn, (*args, Scalar(c.n, 64))))
    if not calls:
        return failures
    results = run_calls([c.module for _, c in live], TARGET, calls)  # type: ignore[misc]
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
