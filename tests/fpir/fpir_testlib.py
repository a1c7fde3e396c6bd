"""Shared helpers for the FPIR tests: op instances, test values, and a vectorised Z3 evaluator.

`z3_eval` evaluates a Z3 bit-vector/boolean AST on numpy arrays with SMT-LIB semantics (division by zero,
shifts by >= width, ...), written from the SMT-LIB definitions and not from fpir's code, so that
comparing it with `fpir.interp.evaluate` checks the Z3 encoding against the numpy semantics. Bit-vectors
are held as *unsigned* values: int64 arrays up to 32 bits (products still have correct low bits after
int64 wrap-around), object arrays of Python ints above.
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Iterable, Mapping, Optional, Sequence

import numpy as np
import z3

from fpir.interp import evaluate
from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import Term, var
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType

SHIFT_ARG = {"shl": 1, "shr": 1, "widening_shl": 1, "widening_shr": 1, "rounding_shl": 1, "rounding_shr": 1,
             "saturating_shl": 1, "mul_shr": 2, "rounding_mul_shr": 2}
ARG_NAMES = ("a", "b", "c")


# ---------------------------------------------------------------------------------------------
# Op instances


@dataclass(frozen=True)
class Instance:
    op: str
    arg_types: tuple[ScalarType, ...]
    explicit: Optional[ScalarType]  # the written type of cast<t>/reinterpret<t>/saturating_cast<t>
    result: ScalarType

    @property
    def id(self) -> str:
        t = f"<{self.explicit}>" if self.explicit is not None else ""
        return f"{self.op}{t}(" + ",".join(map(str, self.arg_types)) + ")"

    def term(self) -> Term:
        args = [var(n, t) for n, t in zip(ARG_NAMES, self.arg_types)]
        return make(self.op, *args, type=self.explicit)


def instances(op: str, types: Sequence[ScalarType] = USER_TYPES) -> list[Instance]:
    """Every type instance of `op` over `types` that its type rule accepts."""
    s = OPS[op]
    out = []
    targets: Iterable[Optional[ScalarType]] = types if s.explicit_type else [None]
    for explicit in targets:
        for ts in itertools.product(types, repeat=s.arity):
            try:
                rt = s.type_rule(list(ts), explicit)
            except FPIRTypeError:
                continue
            out.append(Instance(op, tuple(ts), explicit, explicit if s.explicit_type else rt))
    return out


def semantic_ops() -> list[str]:
    """The lane-wise ops (the lane-combining vector_reduce_* ops have their own tests: test_fpir_reduce.py)."""
    return [n for n, s in OPS.items() if s.kind in ("primitive", "fpir") and s.reduce is None]


# ---------------------------------------------------------------------------------------------
# Values


def edges(t: ScalarType) -> list[int]:
    if t.bits == 1:
        return [0, 1]
    vals = [t.min, t.max, 0, 1, -1, t.min + 1, t.max - 1, 2, t.max // 2, t.max // 2 + 1, t.min // 2]
    return sorted({v for v in vals if t.contains(v)})


def shift_amounts(t: ScalarType, bits: int) -> list[int]:
    """Amounts 0..bits+2 and -1..-(bits+2) (where representable in t) plus t's edges."""
    vals = list(range(0, bits + 3)) + [-k for k in range(1, bits + 3)] + edges(t)
    return sorted({v for v in vals if t.contains(v)})


def random_values(t: ScalarType, n: int, rng: np.random.Generator) -> list[int]:
    """Uniform values, small values and values next to powers of two (where interesting things happen)."""
    if t.bits <= 32:
        out = [int(v) for v in rng.integers(t.min, t.max, size=n, endpoint=True, dtype=np.int64)]
    else:
        span = t.max - t.min + 1
        out = [t.min + int.from_bytes(rng.bytes(t.bits // 8), "little") % span for _ in range(n)]
    for _ in range(n // 2):
        k = int(rng.integers(0, t.bits))
        v = (1 << k) + int(rng.integers(-2, 3))
        for c in (v, -v, int(rng.integers(-300, 301))):
            if t.contains(c):
                out.append(c)
    return out


def all_values(t: ScalarType) -> list[int]:
    return list(range(t.min, t.max + 1))


def arg_values(inst: Instance, rng: np.random.Generator, n_random: int = 24) -> list[list[int]]:
    """Per argument: every value for <= 8-bit types, else edges + shift amounts + random values."""
    out = []
    sh = SHIFT_ARG.get(inst.op)
    for i, t in enumerate(inst.arg_types):
        if t.bits <= 8:
            out.append(all_values(t))
            continue
        vals = set(edges(t)) | set(random_values(t, n_random, rng))
        if i == sh:
            vals |= set(shift_amounts(t, inst.arg_types[0].bits))
        out.append(sorted(vals))
    return out


def lanes(inst: Instance, rng: np.random.Generator, n_random_tuples: int = 1500,
          max_product: int = 70000) -> list[np.ndarray]:
    """Input columns (object arrays of Python ints) for an instance: the full product of the per-argument
    value lists when small enough (always for <= 8-bit operands), plus random tuples."""
    per_arg = arg_values(inst, rng)
    size = int(np.prod([len(v) for v in per_arg]))
    if size <= max_product or all(t.bits <= 8 for t in inst.arg_types):
        cols = _product(per_arg)
    else:  # product of the edge parts, plus random tuples from the full lists
        small = [v if len(v) <= 64 else sorted(set(edges(t)) | set(v[:: max(1, len(v) // 16)]))
                 for v, t in zip(per_arg, inst.arg_types)]
        cols = _product(small)
        extra = [np.array([vs[int(k)] for k in rng.integers(0, len(vs), size=n_random_tuples)], dtype=object)
                 for vs in per_arg]
        cols = [np.concatenate([c, e]) for c, e in zip(cols, extra)]
    return cols


MUL_SHR_SHIFTS = tuple(range(18)) + (31, 64, 127, 128, 200, 255)


@functools.cache
def mul_shr_8bit(op: str, t: ScalarType) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(a, b, q, fpir.interp result [q index, lane]) for `op` over every (a, b) pair of the 8-bit type t and
    every shift amount in MUL_SHR_SHIFTS. Cached: the semantics and the Halide tests share it."""
    a = np.repeat(np.arange(256, dtype=np.uint8), 256).view(t.np_dtype)
    b = np.tile(np.arange(256, dtype=np.uint8), 256).view(t.np_dtype)
    q = np.array(MUL_SHR_SHIFTS, dtype=np.uint8)
    term = make(op, var("a", t), var("b", t), var("c", t.to_unsigned()))
    return a, b, q, evaluate(term, {"a": a[None, :], "b": b[None, :], "c": q[:, None]})


def _product(per_arg: Sequence[Sequence[int]]) -> list[np.ndarray]:
    arrays = [np.array(v, dtype=object) for v in per_arg]
    grids = np.meshgrid(*arrays, indexing="ij")
    return [g.ravel() for g in grids]


def as_dtype(col: np.ndarray, t: ScalarType) -> np.ndarray:
    """Signed-or-unsigned Python-int values as an array of t's numpy dtype."""
    if t.bits == 1:
        return np.asarray(col).astype(np.int64).astype(np.bool_)
    return np.asarray(col).astype(object).astype(t.np_dtype) if t.bits == 64 else \
        np.asarray(col).astype(np.int64).astype(t.np_dtype)


def to_unsigned(values: Any, bits: int) -> np.ndarray:
    """Any integer/bool array -> the unsigned bit-vector representation used by z3_eval."""
    a = np.asarray(values)
    if a.dtype == np.bool_:
        a = a.astype(np.int64)
    if bits <= 32:
        return a.astype(np.int64) & ((1 << bits) - 1)
    return np.asarray(a.astype(object) & ((1 << bits) - 1), dtype=object)


def to_signed_py(u: int, t: ScalarType) -> int:
    return t.wrap(int(u))


# ---------------------------------------------------------------------------------------------
# Vectorised Z3 evaluation (SMT-LIB semantics)


def _repr(a: Any, w: int) -> np.ndarray:
    a = np.asarray(a)
    if w <= 32:
        return a.astype(np.int64)
    return a.astype(object)


def _signed(x: np.ndarray, w: int) -> np.ndarray:
    return x - ((x >> (w - 1)) << w)


def _udiv(x: np.ndarray, y: np.ndarray, mask: int) -> np.ndarray:
    zero = y == 0
    return np.where(zero, np.asarray(mask, dtype=x.dtype), x // np.where(zero, 1, y))


def _urem(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    zero = y == 0
    return np.where(zero, x, x % np.where(zero, 1, y))


class Z3Evaluator:
    """Evaluate Z3 ASTs over arrays of `n` lanes; `env` maps constant names to unsigned-value arrays."""

    def __init__(self, env: Mapping[str, np.ndarray], n: int) -> None:
        self.env = env
        self.n = n
        self.cache: dict[int, np.ndarray] = {}

    def __call__(self, root: z3.ExprRef) -> np.ndarray:
        stack: list[tuple[z3.ExprRef, bool]] = [(root, False)]
        keep = [root]  # AST ids are only unique while the ASTs are alive
        while stack:
            e, expanded = stack.pop()
            eid = e.get_id()
            if eid in self.cache:
                continue
            kids = [e.arg(i) for i in range(e.num_args())]
            if expanded or not kids:
                self.cache[eid] = self._node(e, [self.cache[k.get_id()] for k in kids])
                continue
            keep.extend(kids)
            stack.append((e, True))
            stack.extend((k, False) for k in kids if k.get_id() not in self.cache)
        return self.cache[root.get_id()]

    def _node(self, e: z3.ExprRef, a: list[np.ndarray]) -> np.ndarray:
        k = e.decl().kind()
        n = self.n
        if z3.is_bool(e):
            return self._bool(e, k, a)
        w = e.sort().size()
        mask = (1 << w) - 1
        if k == z3.Z3_OP_BNUM:
            return np.full(n, e.as_long(), dtype=np.int64 if w <= 32 else object)
        if k == z3.Z3_OP_UNINTERPRETED and not a:
            return _repr(self.env[e.decl().name()], w)
        if k == z3.Z3_OP_ITE:
            return np.where(a[0], a[1], a[2])
        if k == z3.Z3_OP_BADD:
            return _fold(lambda x, y: (x + y) & mask, a)
        if k == z3.Z3_OP_BSUB:
            return _fold(lambda x, y: (x - y) & mask, a)
        if k == z3.Z3_OP_BMUL:
            return _fold(lambda x, y: (x * y) & mask, a)
        if k == z3.Z3_OP_BNEG:
            return (-a[0]) & mask
        if k == z3.Z3_OP_BNOT:
            return a[0] ^ mask
        if k == z3.Z3_OP_BAND:
            return _fold(lambda x, y: x & y, a)
        if k == z3.Z3_OP_BOR:
            return _fold(lambda x, y: x | y, a)
        if k == z3.Z3_OP_BXOR:
            return _fold(lambda x, y: x ^ y, a)
        if k == z3.Z3_OP_BUDIV:
            return _udiv(a[0], a[1], mask)
        if k == z3.Z3_OP_BUREM:
            return _urem(a[0], a[1])
        if k in (z3.Z3_OP_BSDIV, z3.Z3_OP_BSREM, z3.Z3_OP_BSMOD):
            return self._signed_div(k, a[0], a[1], w)
        if k == z3.Z3_OP_BSHL:
            x, y = a
            return np.where(y >= w, 0, (x << np.minimum(y, w - 1)) & mask).astype(x.dtype)
        if k == z3.Z3_OP_BLSHR:
            x, y = a
            return np.where(y >= w, 0, x >> np.minimum(y, w - 1)).astype(x.dtype)
        if k == z3.Z3_OP_BASHR:
            x, y = a
            sx = _signed(x, w)
            fill = np.where(sx < 0, np.asarray(mask, dtype=x.dtype), 0)
            return np.where(y >= w, fill, (sx >> np.minimum(y, w - 1)) & mask).astype(x.dtype)
        if k == z3.Z3_OP_EXTRACT:
            hi, lo = e.params()
            return _repr((a[0] >> lo) & ((1 << (hi - lo + 1)) - 1), w)
        if k == z3.Z3_OP_CONCAT:
            acc = _repr(np.zeros(n, dtype=object), w)
            for x, kid in zip(a, e.children()):
                acc = (acc << kid.sort().size()) | _repr(x, w)
            return acc
        if k == z3.Z3_OP_ZERO_EXT:
            return _repr(a[0], w)
        if k == z3.Z3_OP_SIGN_EXT:
            (ext,) = e.params()
            src = w - ext
            x = _repr(a[0], w)
            return x + (x >> (src - 1)) * (((1 << ext) - 1) << src)
        raise NotImplementedError(f"z3_eval: unsupported bit-vector op {e.decl().name()} in {e}")

    def _bool(self, e: z3.ExprRef, k: int, a: list[np.ndarray]) -> np.ndarray:
        n = self.n
        if k == z3.Z3_OP_TRUE:
            return np.ones(n, dtype=np.bool_)
        if k == z3.Z3_OP_FALSE:
            return np.zeros(n, dtype=np.bool_)
        if k == z3.Z3_OP_AND:
            return _fold(np.logical_and, a)
        if k == z3.Z3_OP_OR:
            return _fold(np.logical_or, a)
        if k == z3.Z3_OP_XOR:
            return _fold(np.logical_xor, a)
        if k == z3.Z3_OP_NOT:
            return ~a[0]
        if k == z3.Z3_OP_IMPLIES:
            return ~a[0] | a[1]
        if k == z3.Z3_OP_ITE:
            return np.where(a[0], a[1], a[2])
        if k == z3.Z3_OP_EQ:
            return np.asarray(a[0] == a[1], dtype=np.bool_)
        if k == z3.Z3_OP_DISTINCT:
            out = np.ones(n, dtype=np.bool_)
            for i in range(len(a)):
                for j in range(i + 1, len(a)):
                    out &= np.asarray(a[i] != a[j], dtype=np.bool_)
            return out
        cmp = {z3.Z3_OP_ULT: np.less, z3.Z3_OP_ULEQ: np.less_equal, z3.Z3_OP_UGT: np.greater,
               z3.Z3_OP_UGEQ: np.greater_equal}
        if k in cmp:
            return np.asarray(cmp[k](a[0], a[1]), dtype=np.bool_)
        scmp = {z3.Z3_OP_SLT: np.less, z3.Z3_OP_SLEQ: np.less_equal, z3.Z3_OP_SGT: np.greater,
                z3.Z3_OP_SGEQ: np.greater_equal}
        if k in scmp:
            w = e.arg(0).sort().size()
            return np.asarray(scmp[k](_signed(a[0], w), _signed(a[1], w)), dtype=np.bool_)
        raise NotImplementedError(f"z3_eval: unsupported boolean op {e.decl().name()} in {e}")

    @staticmethod
    def _signed_div(k: int, s: np.ndarray, t: np.ndarray, w: int) -> np.ndarray:
        """bvsdiv / bvsrem / bvsmod exactly as SMT-LIB defines them from bvudiv / bvurem."""
        mask = (1 << w) - 1
        ms, mt = (s >> (w - 1)) == 1, (t >> (w - 1)) == 1
        abs_s = np.where(ms, (-s) & mask, s)
        abs_t = np.where(mt, (-t) & mask, t)
        if k == z3.Z3_OP_BSDIV:
            q = _udiv(abs_s, abs_t, mask)
            return np.where(ms ^ mt, (-q) & mask, q).astype(s.dtype)
        u = _urem(abs_s, abs_t)
        if k == z3.Z3_OP_BSREM:
            return np.where(ms, (-u) & mask, u).astype(s.dtype)
        res = np.where(ms & ~mt, (-u + t) & mask,
                       np.where(~ms & mt, (u + t) & mask, np.where(ms & mt, (-u) & mask, u)))
        return np.where(u == 0, u, res).astype(s.dtype)


def _fold(f: Any, xs: Sequence[np.ndarray]) -> np.ndarray:
    acc = xs[0]
    for x in xs[1:]:
        acc = f(acc, x)
    return acc


def z3_eval(expr: z3.ExprRef, env: Mapping[str, np.ndarray], n: int) -> np.ndarray:
    return Z3Evaluator(env, n)(expr)
