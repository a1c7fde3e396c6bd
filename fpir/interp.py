"""numpy interpreter for FPIR terms: exact, for every type.

`evaluate(term, env)` maps variable names to numpy arrays (or Python ints, broadcast) and returns an
array of the term's dtype; a term using one name at two types (two variables) is refused, since one
name can have only one value. The last axis is the lane axis: lane-wise ops broadcast over every axis, and a
lane-combining op (`vector_reduce_<op>_x<f>`) folds each group of f adjacent entries of the last axis
(an operand without lanes, a 0-d array, is a broadcast: its f copies are folded); an operand an op reads
at lane 0 only (`OpSpec.lane0_args`, x86 vpsraw's count) is cut to its first lane and broadcast. Primitive ops use the op table's exact numpy semantics; FPIR and target
ops are evaluated through their definition templates, so there is no second copy of their meaning.
Shared sub-terms are evaluated once.

Flags (`add.nsw`) do not change values: `facts_hold(term, env)` says, per lane, whether every fact the
term's flagged nodes state holds for these inputs (the differential tests keep only such inputs).
"""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from fpir.ops import template
from fpir.opspec import spec
from fpir.term import Term
from fpir.types import FPIRTypeError, ScalarType


def as_value(x: Any, t: ScalarType) -> np.ndarray:
    """Check and convert an input value (array or int) to the exact dtype of t."""
    a = np.asarray(x)
    if a.dtype == object or a.dtype.kind in "iub":
        if a.dtype.kind == "O":
            bad = [v for v in a.ravel() if not t.contains(int(v))]
        else:
            bad = [] if a.size == 0 else [v for v in (a.min(), a.max()) if not t.contains(int(v))]
        if bad:
            raise FPIRTypeError(f"value {bad[0]} out of range for {t}")
        return a.astype(t.np_dtype)
    raise FPIRTypeError(f"cannot use {a.dtype} data as {t}")


def evaluate(term: Term, env: Mapping[str, Any]) -> np.ndarray:
    memo: dict[int, np.ndarray] = {}
    seen: dict[str, ScalarType] = {}
    for t in term.walk():
        if t.op == "var":
            _one_type(t, seen)
        memo[id(t)] = _eval_node(t, [memo[id(a)] for a in t.args], env)
    return memo[id(term)]


def _one_type(v: Term, seen: dict[str, ScalarType]) -> None:
    """An environment maps names to values, so one name at two types (`c_u8`, `c_i32`: two variables
    of the term) cannot be given two values: refuse, rather than read one array as both types."""
    t = seen.setdefault(v.name, v.type)
    if t != v.type:
        raise FPIRTypeError(f"variable name {v.name!r} is used at two types ({t} and {v.type}); an environment "
                            "keyed by name cannot give both values: rename one (pitchfork.codegen.kernel."
                            "distinct_variables)")


def _eval_node(t: Term, args: list[np.ndarray], env: Mapping[str, Any]) -> np.ndarray:
    if t.op == "var":
        if t.name not in env:
            raise KeyError(f"no value for variable {t.name}")
        return as_value(env[t.name], t.type)
    if t.op == "const":
        return np.asarray(t.value, dtype=t.type.np_dtype) if t.type.bits <= 64 else np.asarray(t.value, dtype=object)
    s = spec(t.op)
    if s.reduce is not None:
        return _reduce(s.reduce[0], s.reduce[1], args[0], t.type)
    if s.lane0_args:  # these operands are read at lane 0 only, for every result lane
        args = [np.asarray(a)[..., :1] if i in s.lane0_args and np.ndim(a) > 0 else a for i, a in enumerate(args)]
    return _apply(t.op, args, [a.type for a in t.args], t.type)


def _apply(op: str, args: list[np.ndarray], types: list[ScalarType], rt: ScalarType) -> np.ndarray:
    s = spec(op)
    if s.np_impl is not None:
        return s.np_impl(args, types, rt)
    body, names = template(op, tuple(types), rt)
    return evaluate(body, dict(zip(names, args)))


def _reduce(combine: str, f: int, x: np.ndarray, t: ScalarType) -> np.ndarray:
    """Left fold of the lane-wise op `combine` over each group of f adjacent lanes (last axis)."""
    x = np.asarray(x)
    scalar = x.ndim == 0
    if scalar:
        x = np.broadcast_to(x, (f,))
    n = x.shape[-1]
    if n % f:
        raise FPIRTypeError(f"vector_reduce by {f} of {n} lanes: the lane count must be a multiple of {f}")
    groups = x.reshape(x.shape[:-1] + (n // f, f))
    acc = groups[..., 0]
    for k in range(1, f):
        acc = np.asarray(_apply(combine, [acc, groups[..., k]], [t, t], t))
    return acc.reshape(()) if scalar else acc


def facts_hold(term: Term, env: Mapping[str, Any]) -> np.ndarray:
    """Boolean mask (broadcast over the inputs' shape): True where every flag's fact holds at every
    flagged node of the term (e.g. no `add.nsw` overflows)."""
    memo: dict[int, np.ndarray] = {}
    ok: Any = np.asarray(True)
    seen: dict[str, ScalarType] = {}
    for t in term.walk():
        if t.op == "var":
            _one_type(t, seen)
        args = [memo[id(a)] for a in t.args]
        memo[id(t)] = _eval_node(t, args, env)
        if t.args and t.attrs:
            s = spec(t.op)
            types = [a.type for a in t.args]
            for f in t.attrs:
                ok = ok & np.asarray(s.flags[f].np_holds(args, types, t.type), dtype=np.bool_)
    return np.asarray(ok)
