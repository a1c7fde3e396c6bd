"""Bottom-up term banks: enumeration by cost level with observational-equivalence pruning, in batch.

A `Bank` belongs to one grammar (leaves, op forms, types, cost levels) and one list of example rows.
Level L holds every term the grammar builds whose cost level is L, out of the *representatives* of
lower levels: for each fingerprint (the term's values on every example row, hashed) only the first
term built is kept as a child for later levels (observational equivalence, as in Ruler and Daly et
al. 2024). A candidate is never a Python object while it is being enumerated: for one op form and
one choice of argument blocks, all argument combinations are evaluated in one numpy call over a
(candidates x rows) array, hashed row-wise, and deduplicated with numpy; only representatives get an
entry (op form, argument ids), and a `Term` is built only for a candidate a search asks for.

Every candidate's fingerprint and provenance are kept per level (not only the representatives), so
a search for a left side finds *all* terms of a level with its fingerprint, and a bank built for one
left side serves every later left side with the same grammar and rows (their searches only read
it, and build the levels not built yet). The bank's contents depend only on (grammar, rows, level),
never on which left side asked first, so results are the same with or without sharing.

Invariants: a level is built completely or not at all; representatives of a level have fingerprints
distinct from each other and from every lower level's; `level_count[L]` (the number of candidates
of level L from forms of positive cost) is known before level L is built, which is
what search budgets count (it is computed from the lower levels, filters applied, without
evaluating anything).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterator, Optional, Sequence

import numpy as np

from fpir.ops import make, template
from fpir.opspec import OPS, spec
from fpir.term import Term
from fpir.types import FPIRTypeError, ScalarType
from pitchfork.trs.pattern import COMMUTATIVE

if TYPE_CHECKING:
    from synth.search import Grammar

#: elements of a (candidates x rows) array evaluated at once (memory stays ~ tens of MB)
CHUNK_ELEMENTS = 1 << 21
#: banks kept per process (most recently used), and the candidates they may hold in total
MAX_BANKS = 3
MAX_CACHED_CANDIDATES = 6_000_000

_RNG = np.random.default_rng(0x5EED_13)
_COL_SALT = _RNG.integers(0, 2**63, size=8192, dtype=np.uint64) * np.uint64(2) + np.uint64(1)

_NATIVE = frozenset({8, 16, 32, 64})
_NATIVE_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "min": np.minimum,
    "max": np.maximum,
    "and": np.bitwise_and,
    "or": np.bitwise_or,
    "xor": np.bitwise_xor,
}


# ---------------------------------------------------------------------------------------------
# Batch evaluation


def fast_apply(op: str, args: Sequence[np.ndarray], types: Sequence[ScalarType], rt: ScalarType) -> np.ndarray:
    """The op's exact values on arrays of any (broadcastable) shape.

    Wrapping add/sub/mul, min/max, bitwise ops, casts and reinterprets between 8..64-bit integer types
    are computed in the native dtype (numpy integer arithmetic wraps, and astype between integer
    dtypes truncates or extends exactly as FPIR's cast does), so 32- and 64-bit products never fall
    back to Python ints; everything else goes through the op table's numpy semantics, FPIR and target
    ops through their definition templates (tests/synth/test_bank.py checks both paths agree)."""
    native = rt.bits in _NATIVE and all(t.bits in _NATIVE for t in types)
    if native:
        fn = _NATIVE_BINARY.get(op)
        if fn is not None and all(t == rt for t in types):
            with np.errstate(all="ignore"):
                return fn(np.asarray(args[0]), np.asarray(args[1])).astype(rt.np_dtype, copy=False)
        if op == "not" and types[0] == rt:
            return np.invert(np.asarray(args[0]))
        if op in ("cast", "reinterpret") and (op == "cast" or types[0].bits == rt.bits):
            return np.asarray(args[0]).astype(rt.np_dtype)
        if op in ("shl", "shr") and types[0] == rt and (types[1].bits <= 32 or types[1].signed):
            return _native_shift(op == "shl", np.asarray(args[0]), np.asarray(args[1]), rt)
        if op == "saturating_cast":
            return _native_saturating_cast(np.asarray(args[0]), types[0], rt)
    s = spec(op)
    if s.reduce is not None:
        raise FPIRTypeError(f"{op} combines lanes; banks evaluate lane-wise ops only")
    if s.np_impl is not None:
        return np.asarray(s.np_impl(list(args), list(types), rt))
    body, names = template(op, tuple(types), rt)
    env = dict(zip(names, args))
    memo: dict[int, np.ndarray] = {}
    for t in body.walk():
        if t.op == "var":
            memo[id(t)] = np.asarray(env[t.name])
        elif t.op == "const":
            memo[id(t)] = np.asarray(t.value, dtype=t.type.np_dtype)
        else:
            memo[id(t)] = fast_apply(t.op, [memo[id(a)] for a in t.args], [a.type for a in t.args], t.type)
    return memo[id(body)]


def lane_apply(
    op: str, args: Sequence[np.ndarray], types: Sequence[ScalarType], rt: ScalarType,
    gs: Sequence[int], g: int, rows: int,
) -> np.ndarray:
    """A lane-combining op over (candidates x rows*factor) arrays: argument i holds gs[i] lanes per
    row (row-major), the result g. Each (candidate, row) becomes one vector of lanes for the
    interpreter, which folds lane groups as the op's meaning says (fpir/interp.py)."""
    from fpir.interp import evaluate
    from fpir.term import var

    m = max(np.shape(a)[0] if np.ndim(a) == 2 else 1 for a in args)
    env = {}
    xs = []
    for i, (a, t, gi) in enumerate(zip(args, types, gs)):
        a = np.broadcast_to(np.asarray(a), (m, rows * gi)) if np.ndim(a) == 2 else np.broadcast_to(a, (m, rows * gi))
        env[f"a{i}"] = a.reshape(m * rows, gi)
        xs.append(var(f"a{i}", t))
    out = np.asarray(evaluate(make(op, *xs, type=rt if spec(op).explicit_type else None, fold=False), env))
    return out.reshape(m, rows * g)


def _native_saturating_cast(x: np.ndarray, s: ScalarType, rt: ScalarType) -> np.ndarray:
    """saturating_cast<rt>(x) of an integer type `s` at most 64 bits wide, in the native dtypes: its
    definition clamps in a signed type twice as wide (128 bits from 64: Python ints in object arrays,
    most of the CPU of an HVX bank with i32 products, `vmpyo_sacc`); clamping in `s` itself to the
    part of rt's range that `s` holds gives the same values."""
    lo, hi = max(rt.min, s.min), min(rt.max, s.max)
    x = x.astype(s.np_dtype, copy=False)
    if lo > s.min or hi < s.max:
        x = np.clip(x, np.asarray(lo, dtype=s.np_dtype), np.asarray(hi, dtype=s.np_dtype))
    return np.asarray(x).astype(rt.np_dtype)


def _native_shift(left_op: bool, a: np.ndarray, b: np.ndarray, rt: ScalarType) -> np.ndarray:
    """shl/shr with FPIR's meaning (a negative amount shifts the other way; amounts of `bits` or more
    give 0, or the sign fill for an arithmetic right shift), in the native dtype. An amount of any
    signed width or of at most 32 bits (int64 holds it and its negation once clamped to +-64)."""
    bits = rt.bits
    b = np.clip(b.astype(np.int64), -64, 64)
    up = np.clip(b if left_op else -b, 0, bits)  # left-shift magnitude
    down = np.clip(-b if left_op else b, 0, bits)  # right-shift magnitude
    with np.errstate(all="ignore"):
        shl = (a.astype(np.uint64) << np.minimum(up, 63).astype(np.uint64)).astype(rt.np_dtype)
        shl = np.where(up >= bits, np.zeros((), rt.np_dtype), shl)
        shr = a >> np.minimum(down, bits - 1).astype(rt.np_dtype)
        if not rt.signed:
            shr = np.where(down >= bits, np.zeros((), rt.np_dtype), shr)
        pos = b >= 0
        return np.where(pos, shl, shr) if left_op else np.where(pos, shr, shl)


def row_hashes(vals: np.ndarray, salt: int) -> np.ndarray:
    """A 64-bit fingerprint per row of a (k x rows) array: each column is salted, mixed with the
    splitmix64 finalizer and summed (wrapping), so rows that differ anywhere collide with probability
    about 2**-64. A collision can only hide a distinct term, never make a wrong one: matches are
    re-checked exactly and proven by Z3."""
    n = vals.shape[1]
    x = vals.astype(np.uint64)
    x ^= _COL_SALT[:n]
    x ^= x >> np.uint64(30)
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x.sum(axis=1, dtype=np.uint64) ^ np.uint64(salt)


def type_salt(t: ScalarType) -> int:
    return (hash(t.name) * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF


def apply_rows(op: str, argv: list, ts: tuple, rt: Any, gs: tuple, g: int, n: int, m: int) -> Optional[np.ndarray]:
    """`op` applied to `m` rows of argument values (lane-grouped ops over their lane groups), as an
    (m, n * g) array of `rt`'s dtype; None when the op is undefined on these arguments (the candidate
    is skipped, as an evaluation error means it is not a value of this type)."""
    try:
        with np.errstate(all="ignore"):
            vals = lane_apply(op, argv, ts, rt, gs, g, n) if OPS[op].arg_lanes else fast_apply(op, argv, ts, rt)
    except (FPIRTypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return np.broadcast_to(np.asarray(vals), (m, n * g)).astype(rt.np_dtype, copy=False)


# ---------------------------------------------------------------------------------------------
# The bank


class BudgetExceeded(Exception):
    """Building the next level would pass the caller's candidate budget."""


class _Block:
    """The representatives of one (level, type): appended to in parts while the level is built,
    concatenated once when read."""

    __slots__ = ("_parts", "_cat", "_hist")

    def __init__(self) -> None:
        self._parts: list[tuple[np.ndarray, ...]] = []
        self._cat: Optional[tuple[np.ndarray, ...]] = None
        self._hist: Optional[np.ndarray] = None

    def append(
        self, vals: np.ndarray, gids: np.ndarray, const: np.ndarray, castlike: np.ndarray, pow2: np.ndarray,
        ops: np.ndarray,
    ) -> None:
        self._parts.append((vals, gids, const, castlike, pow2, ops))
        self._cat = None
        self._hist = None

    def _get(self) -> tuple[np.ndarray, ...]:
        if self._cat is None:
            self._cat = tuple(np.concatenate(col) for col in zip(*self._parts))
            self._parts = [self._cat]
        return self._cat

    vals = property(lambda self: self._get()[0])  # (k, rows) in the type's dtype
    gids = property(lambda self: self._get()[1])  # (k,) entry ids
    const = property(lambda self: self._get()[2])  # (k,) a constant leaf
    castlike = property(lambda self: self._get()[3])  # (k,) a cast or reinterpret
    pow2 = property(lambda self: self._get()[4])  # (k,) a constant power of two
    ops = property(lambda self: self._get()[5])  # (k,) operations other than reinterprets

    @property
    def hist(self) -> np.ndarray:
        """Representatives per operation count."""
        if self._hist is None:
            self._hist = np.bincount(self.ops)
        return self._hist


@dataclass
class _Level:
    hashes: np.ndarray  # every candidate of the level (duplicates included)
    forms: np.ndarray  # form index per candidate (-1: a leaf)
    args: np.ndarray  # (m, 3) entry ids of the arguments (-1 unused; a leaf's own id in column 0)


def _pow2(v: int) -> bool:
    return v > 0 and v & (v - 1) == 0


#: (op, its type rule, form type, argument types) -> the result type, None where the rule refuses:
#: every bank asks every type tuple of every form, most of them refused (the same in every bank)
_TYPE_RULES: dict[tuple, Optional[ScalarType]] = {}


def _type_rule(op: str, rtype: Optional[ScalarType], ts: tuple[ScalarType, ...]) -> Optional[ScalarType]:
    s = spec(op)
    key = (op, s.type_rule, rtype, ts)  # the rule itself too: an op declared again is asked again
    if key not in _TYPE_RULES:
        try:
            r = s.type_rule(list(ts), rtype)
            _TYPE_RULES[key] = rtype if rtype is not None and s.explicit_type else r
        except (FPIRTypeError, ValueError, KeyError):
            _TYPE_RULES[key] = None
    return _TYPE_RULES[key]


#: (op, its type rule, form type, the grammar's types in order) -> the argument type tuples a bank
#: of those types builds the form at, with their result types (`Bank._signatures`): the same in every
#: bank over those types, and asked of every type tuple (a deep search builds a bank per CEGIS round
#: and top-down sub-goal)
_TYPED_TUPLES: dict[tuple, list[tuple[tuple[ScalarType, ...], ScalarType]]] = {}


def _typed_tuples(
    op: str, rtype: Optional[ScalarType], types: tuple[ScalarType, ...]
) -> list[tuple[tuple[ScalarType, ...], ScalarType]]:
    s = spec(op)
    key = (op, s.type_rule, rtype, types)
    got = _TYPED_TUPLES.get(key)
    if got is None:
        got = []
        allowed = set(types)
        for ts in _tuples(types, s.arity):
            rt = _type_rule(op, rtype, ts)
            if rt is None or rt not in allowed:
                continue
            if s.arity == 1 and op in ("cast", "reinterpret", "saturating_cast") and rt == ts[0]:
                continue
            if op in COMMUTATIVE and s.arity == 2 and ts[0].name > ts[1].name:
                continue
            got.append((ts, rt))
        _TYPED_TUPLES[key] = got
    return got


class Bank:
    def __init__(
        self, grammar: "Grammar", vars_: Sequence[Term], rows: Sequence[tuple[int, ...]],
        factors: Optional[dict[str, int]] = None,
    ) -> None:
        """`rows` hold one value per lane variable (`lane_names`): a variable of lane factor F
        (F lanes of it per result lane, `factors`; default 1) has F consecutive columns."""
        self.g = grammar
        self.n = len(rows)
        self.var_factor = {v.name: (factors or {}).get(v.name, 1) for v in vars_}
        # every power of two up to the largest factor: a chain of pairwise ops passes through the
        # factors between (ARM addp(addp(x)) sums 4 lanes of x through 2)
        top = max(self.var_factor.values(), default=1)
        self.factors = tuple(sorted({1, *self.var_factor.values(), *(1 << k for k in range(top.bit_length()) if 1 << k <= top)}))
        self.env = {}
        col = 0
        for v in vars_:
            f = self.var_factor[v.name]
            a = np.array([r[col : col + f] for r in rows], dtype=v.type.np_dtype).reshape(self.n * f)
            self.env[v.name] = a  # row-major: row r, lane k at r * f + k
            col += f
        self.forms = list(grammar.forms)
        self.types = sorted(grammar.types, key=lambda t: (t.bits, t.signed))
        self.salt = {(t, g): type_salt(t) ^ (g - 1) * 0x9E3779B97F4A7C15 % 2**64
                     for t in self.types for g in self.factors}
        # entries (representatives): how to rebuild each as a Term
        self.n_entries = 0
        self.e_form = np.zeros(1024, dtype=np.int32)
        self.e_args = np.zeros((1024, 3), dtype=np.int64)
        self.e_leaf: dict[int, Term] = {}
        self._terms: dict[int, Term] = {}
        self.blocks: dict[tuple[int, ScalarType, int], _Block] = {}  # (level, type, lane factor)
        self.levels: list[_Level] = []
        self.level_count: list[int] = []
        self.seen: dict[tuple[ScalarType, int], set[int]] = {k: set() for k in self.salt}
        # level-0 entries: every variable at its lane factor, every constant at each factor; a
        # compound leaf (hoisted work on uniform operands, `Grammar.leaves`) at factor 1, over
        # variables of factor 1 only
        self.leaf_slots = [
            (leaf, g) for leaf in grammar.leaves
            for g in ((self.var_factor.get(leaf.name, 1),) if leaf.is_var else self.factors if leaf.is_const
                      else (1,) if all(self.var_factor.get(v.name, 1) == 1 for v in leaf.variables()) else ())
        ]
        self.candidates = 0  # built after the structural filters (what terms/s counts)
        self.seconds = 0.0
        self._rules: dict[tuple, Optional[ScalarType]] = {}
        self._sigs = self._signatures()

    # -- type instances of each form ---------------------------------------------------------

    def _result_type(self, op: str, rtype: Optional[ScalarType], ts: tuple[ScalarType, ...]) -> Optional[ScalarType]:
        key = (op, rtype, ts)
        if key not in self._rules:
            r = _type_rule(op, rtype, ts)
            self._rules[key] = r if r in self.g.types else None
        return self._rules[key]

    def _signatures(self) -> list[list[tuple[tuple[ScalarType, ...], ScalarType, int, tuple[int, ...], int]]]:
        """Per form: every argument type tuple that type-checks, with the result type, the node's
        cost level, the arguments' lane factors and the result's. A lane-wise op takes and gives one
        factor; a lane-combining one (`arg_lanes`: reductions, udot, vrmpy, pmaddwd pairs, pairwise
        adds) reads argument i at `arg_lanes[i]` times the result's factor."""
        out = []
        for op, rtype in self.forms:
            s = OPS[op]
            sigs = []
            lanes = tuple(s.arg_lanes) if s.arg_lanes else (1,) * s.arity
            placements = [
                (tuple(g * a for a in lanes), g) for g in self.factors
                if all(g * a in self.factors for a in lanes)
            ]
            if 1 <= s.arity <= 3 and placements:
                for ts, rt in _typed_tuples(op, rtype, tuple(self.types)):
                    for gs, g in placements:
                        sigs.append((ts, rt, int(self.g.node_level(op, ts, rt)), gs, g))
            out.append(sigs)
        return out

    # -- building ----------------------------------------------------------------------------

    def term(self, gid: int) -> Term:
        hit = self._terms.get(gid)
        if hit is None:
            if gid in self.e_leaf:
                hit = self.e_leaf[gid]
            else:
                op, rtype = self.forms[int(self.e_form[gid])]
                args = self.e_args[gid, : OPS[op].arity].tolist()
                hit = make(op, *[self.term(a) for a in args], type=rtype, fold=False)
            self._terms[gid] = hit
        return hit

    def candidate_term(self, level: int, i: int) -> Term:
        lv = self.levels[level]
        f = int(lv.forms[i])
        if f < 0:
            return self.term(int(lv.args[i, 0]))
        op, rtype = self.forms[f]
        arity = OPS[op].arity
        return make(op, *[self.term(int(a)) for a in lv.args[i, :arity]], type=rtype, fold=False)

    def _count(self, level: int) -> int:
        """Candidates of `level` for forms of positive cost: argument combinations within the
        grammar's operation limit (exact, from per-block histograms of operation counts; the
        constant filters are not subtracted), computed before the level is built."""
        if level == 0:
            return len(self.leaf_slots)
        total = 0
        for fi, sigs in enumerate(self._sigs):
            op = self.forms[fi][0]
            own = 0 if op == "reinterpret" else 1
            for ts, _rt, nl, gs, _g in sigs:
                if nl <= 0:
                    continue
                for lv in _splits(level - nl, len(ts)):
                    bs = [self.blocks.get((li, ti, gi)) for li, ti, gi in zip(lv, ts, gs)]
                    if any(b is None for b in bs):
                        continue
                    total += _combinations(op, lv, ts, bs, own, self.g.max_ops)  # type: ignore[arg-type]
        return total

    def ensure(self, level: int, budget: int) -> None:
        """Build levels up to `level`; BudgetExceeded if their counts would pass `budget`."""
        import time

        while len(self.levels) <= level:
            nxt = len(self.levels)
            count = self._count(nxt)
            if sum(self.level_count) + count > budget:
                raise BudgetExceeded()
            t0 = time.perf_counter()
            self.level_count.append(count)
            self._build(nxt)
            self.seconds += time.perf_counter() - t0
        if sum(self.level_count[: level + 1]) > budget:
            # built already by a search with a larger budget (banks are shared): the same verdict as
            # a fresh bank, which would not have built this level under `budget`
            raise BudgetExceeded()

    def _build(self, level: int) -> None:
        chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        if level == 0:
            ids, hs = [], []
            for leaf, g in self.leaf_slots:
                v = self.env[leaf.name] if leaf.is_var else np.asarray(leaf.value, dtype=leaf.type.np_dtype) \
                    if leaf.is_const else _leaf_values(leaf, self.env)
                vals = np.broadcast_to(v, (self.n * g,)).reshape(1, self.n * g)
                gid = self._new_entries(leaf.type, level, vals, -1, np.zeros((1, 0), dtype=np.int64), leaf, g=g)
                ids.append(gid if gid is not None else -1)
                hs.append(row_hashes(vals, self.salt[(leaf.type, g)])[0])
            args = np.full((len(ids), 3), -1, dtype=np.int64)
            args[:, 0] = ids
            self.levels.append(_Level(np.array(hs, dtype=np.uint64), np.full(len(ids), -1, dtype=np.int32), args))
            return
        for fi, (op, _rtype) in enumerate(self.forms):
            for ts, rt, nl, gs, g in self._sigs[fi]:
                # the argument tuples of every split of the level are evaluated together, in batches
                # of about `step` rows (few numpy calls however small each split is)
                batch: list[tuple[list[np.ndarray], list[np.ndarray], np.ndarray]] = []
                size = 0
                step = max(1, CHUNK_ELEMENTS // max(1, self.n * max(gs + (g,))))
                for lv in _splits(level - nl, len(ts)):
                    bs = [self.blocks.get((li, ti, gi)) for li, ti, gi in zip(lv, ts, gs)]
                    if any(b is None for b in bs):
                        continue
                    for piece in self._pieces(op, ts, lv, bs, step):  # type: ignore[arg-type]
                        batch.append(piece)
                        size += len(piece[2])
                        if size >= step:
                            self._evaluate(op, fi, ts, rt, level, batch, chunks, gs, g)
                            batch, size = [], 0
                if batch:
                    self._evaluate(op, fi, ts, rt, level, batch, chunks, gs, g)
        if chunks:
            hs = np.concatenate([c[0] for c in chunks])
            fs = np.concatenate([c[1] for c in chunks])
            ag = np.concatenate([c[2] for c in chunks])
        else:
            hs, fs, ag = np.zeros(0, np.uint64), np.zeros(0, np.int32), np.zeros((0, 3), np.int64)
        self.levels.append(_Level(hs, fs, ag))

    def _pieces(
        self, op: str, ts: tuple[ScalarType, ...], lv: tuple[int, ...], bs: list[_Block], step: int
    ) -> Iterator[tuple[list[np.ndarray], list[np.ndarray], np.ndarray]]:
        """(argument values, argument ids, operation counts) of the split's argument tuples that pass
        the filters, in pieces of at most `step`."""
        own = 0 if op == "reinterpret" else 1
        if self.g.max_ops is not None and sum(int(b.ops.min()) for b in bs) + own > self.g.max_ops:
            return
        idx = _index_tuples(op, lv, ts, bs)
        if idx is None:
            return
        keep = _filters(op, idx, bs, self.g.max_ops)
        if keep is not None:
            idx = [i[keep] for i in idx]
        m = len(idx[0])
        self.candidates += m
        for s in range(0, m, step):
            part = [i[s : s + step] for i in idx]
            yield (
                [b.vals[p] for b, p in zip(bs, part)],
                [b.gids[p] for b, p in zip(bs, part)],
                sum(b.ops[p] for b, p in zip(bs, part)) + own,
            )

    def _evaluate(
        self,
        op: str,
        fi: int,
        ts: tuple[ScalarType, ...],
        rt: ScalarType,
        level: int,
        batch: list[tuple[list[np.ndarray], list[np.ndarray], np.ndarray]],
        chunks: list,
        gs: tuple[int, ...] = (),
        g: int = 1,
    ) -> None:
        k = len(ts)
        argv = [np.concatenate([p[0][j] for p in batch]) if len(batch) > 1 else batch[0][0][j] for j in range(k)]
        gids = [np.concatenate([p[1][j] for p in batch]) if len(batch) > 1 else batch[0][1][j] for j in range(k)]
        ops = np.concatenate([p[2] for p in batch]) if len(batch) > 1 else batch[0][2]
        m = len(ops)
        vals = apply_rows(op, argv, ts, rt, gs, g, self.n, m)
        if vals is None:
            return
        h = row_hashes(vals, self.salt[(rt, g)])
        args = np.full((m, 3), -1, dtype=np.int64)
        for j in range(k):
            args[:, j] = gids[j]
        chunks.append((h, np.full(m, fi, dtype=np.int32), args))
        self._dedup(rt, level, vals, h, fi, args[:, :k], ops, g)

    def _dedup(
        self, rt: ScalarType, level: int, vals: np.ndarray, h: np.ndarray, fi: int, args: np.ndarray,
        ops: np.ndarray, g: int = 1,
    ) -> None:
        _, first = np.unique(h, return_index=True)
        first.sort()
        seen = self.seen[(rt, g)]
        hl = h.tolist()
        new = [i for i in first.tolist() if hl[i] not in seen]
        if not new:
            return
        seen.update(hl[i] for i in new)
        sel = np.array(new, dtype=np.int64)
        self._new_entries(rt, level, vals[sel], fi, args[sel], None, ops=ops[sel], g=g)

    def _new_entries(
        self,
        t: ScalarType,
        level: int,
        vals: np.ndarray,
        fi: int,
        args: np.ndarray,
        leaf: Optional[Term],
        ops: Optional[np.ndarray] = None,
        g: int = 1,
    ) -> Optional[int]:
        if leaf is not None:
            h = int(row_hashes(vals, self.salt[(t, g)])[0])
            if h in self.seen[(t, g)]:
                return None
            self.seen[(t, g)].add(h)
        start = self.n_entries
        k = len(vals)
        if start + k > len(self.e_form):
            cap = max(2 * len(self.e_form), start + k)
            self.e_form = np.resize(self.e_form, cap)
            self.e_args = np.resize(self.e_args, (cap, 3))
        self.e_form[start : start + k] = fi
        if args.shape[1]:
            self.e_args[start : start + k, : args.shape[1]] = args
        self.n_entries = start + k
        gids = np.arange(start, start + k, dtype=np.int64)
        if leaf is not None:
            self.e_leaf[start] = leaf
            const = np.array([leaf.is_const])
            pow2 = np.array([leaf.is_const and _pow2(leaf.value)])
            castlike = np.array([False])
            ops = np.zeros(1, dtype=np.int64)
        else:
            const = np.zeros(k, dtype=bool)
            pow2 = np.zeros(k, dtype=bool)
            castlike = np.full(k, self.forms[fi][0] in ("cast", "reinterpret"), dtype=bool)
        assert ops is not None
        self.blocks.setdefault((level, t, g), _Block()).append(
            np.ascontiguousarray(vals), gids, const, castlike, pow2, ops
        )
        return start

    # -- the last level, for one result type only ---------------------------------------------

    def _top_sigs(self, level: int, rt: ScalarType, g: int) -> Iterator[tuple[int, tuple, tuple, list[_Block], tuple, bool]]:
        """(form, argument types, split, argument blocks, lane factors, flipped) of the level's
        candidates whose result is `rt` (flipped False) or its sign flip (flipped True: a
        reinterpret to `rt` above it is free, level 0), at lane factor g."""
        flip = rt.with_sign(not rt.signed) if rt.bits > 1 else None
        for fi, (op, _rtype) in enumerate(self.forms):
            for ts, r, nl, gs, gg in self._sigs[fi]:
                if nl <= 0 or gg != g or r not in (rt, flip):
                    continue
                for lv in _splits(level - nl, len(ts)):
                    bs = [self.blocks.get((li, ti, gi)) for li, ti, gi in zip(lv, ts, gs)]
                    if any(b is None for b in bs):
                        continue
                    yield fi, ts, lv, bs, gs, r != rt  # type: ignore[misc]

    def top_count(self, level: int, rt: ScalarType, g: int = 1) -> int:
        """`_count(level)` restricted to candidates of result type `rt` (or its sign flip): what
        `top_matches` enumerates. Levels below `level` must be built."""
        total = 0
        for fi, ts, lv, bs, _gs, _f in self._top_sigs(level, rt, g):
            op = self.forms[fi][0]
            total += _combinations(op, lv, ts, bs, 0 if op == "reinterpret" else 1, self.g.max_ops)
        return total

    def top_matches(self, level: int, rt: ScalarType, h: int, g: int = 1) -> list[Term]:
        """The level's candidates of result type `rt` whose fingerprint is h, without building the
        level: a candidate of the top level searched is never a child, so only the left side's
        result type matters there (and its sign flip under a free reinterpret). The bank is not
        changed (no representatives are added), so sharing stays sound."""
        from fpir.ops import make as mk

        out: list[Term] = []
        for fi, ts, lv, bs, gs, flipped in self._top_sigs(level, rt, g):
            op, rtype = self.forms[fi]
            r = self._result_type(op, rtype, ts)
            if r is None:
                continue
            step = max(1, CHUNK_ELEMENTS // max(1, self.n * max(gs + (g,))))
            for argv, gids, _ops in self._pieces(op, ts, lv, bs, step):
                vals = apply_rows(op, argv, ts, r, gs, g, self.n, len(gids[0]))
                if vals is None:
                    continue
                if flipped:  # same bits: the reinterpret's values
                    vals = vals.astype(rt.np_dtype)
                hit = np.nonzero(row_hashes(vals, self.salt[(rt, g)]) == np.uint64(h))[0]
                for i in hit.tolist():
                    t = mk(op, *[self.term(int(a[i])) for a in gids], type=rtype, fold=False)
                    out.append(mk("reinterpret", t, type=rt) if flipped else t)
        return out

    # -- queries -----------------------------------------------------------------------------

    def matches(self, level: int, h: int) -> np.ndarray:
        """Indices of the level's candidates whose fingerprint is h (the type is salted into it)."""
        return np.nonzero(self.levels[level].hashes == np.uint64(h))[0]

    def size(self) -> int:
        return sum(len(lv.hashes) for lv in self.levels)


def _leaf_values(leaf: Term, env: dict[str, np.ndarray]) -> np.ndarray:
    """A compound leaf's values on the example rows (its variables' columns, factor 1)."""
    from fpir.interp import evaluate

    with np.errstate(all="ignore"):
        return np.asarray(evaluate(leaf, {v.name: env[v.name] for v in leaf.variables()})).astype(leaf.type.np_dtype)


def _tuples(types: Sequence[ScalarType], k: int) -> list[tuple[ScalarType, ...]]:
    out: list[tuple[ScalarType, ...]] = [()]
    for _ in range(k):
        out = [o + (t,) for o in out for t in types]
    return out


def _splits(total: int, k: int) -> list[tuple[int, ...]]:
    """Every way to write `total` as an ordered sum of k non-negative levels."""
    if total < 0:
        return []
    if k == 1:
        return [(total,)]
    return [(a,) + rest for a in range(total + 1) for rest in _splits(total - a, k - 1)]


def _combinations(
    op: str, lv: tuple[int, ...], ts: tuple[ScalarType, ...], bs: list[_Block], own: int, max_ops: Optional[int]
) -> int:
    """How many argument tuples `_index_tuples` yields that fit the operation limit."""
    sizes = [len(b.gids) for b in bs]
    tri = len(bs) == 2 and op in COMMUTATIVE and ts[0] == ts[1]
    if tri and lv[0] > lv[1]:
        return 0
    same = tri and lv[0] == lv[1]
    if max_ops is None:
        n = 1
        for k in sizes:
            n *= k
        return (sizes[0] * (sizes[0] + 1)) // 2 if same else n
    room = max_ops - own
    if room < 0:
        return 0
    conv = np.ones(1, dtype=np.int64)
    for b in bs:
        conv = np.convolve(conv, b.hist[: room + 1])[: room + 1]
    ordered = int(conv.sum())
    if not same:
        return ordered
    h = bs[0].hist
    diag = int(sum(h[k] for k in range(min(len(h), room // 2 + 1))))
    return (ordered + diag) // 2


def _index_tuples(
    op: str, lv: tuple[int, ...], ts: tuple[ScalarType, ...], bs: list[_Block]
) -> Optional[list[np.ndarray]]:
    sizes = [len(b.gids) for b in bs]
    if len(bs) == 1:
        return [np.arange(sizes[0])]
    if len(bs) == 2:
        if op in COMMUTATIVE and ts[0] == ts[1]:
            if lv[0] > lv[1]:
                return None  # the mirrored combination is enumerated
            if lv[0] == lv[1]:
                a, b = np.triu_indices(sizes[0])
                return [a, b]
        a, b = np.divmod(np.arange(sizes[0] * sizes[1], dtype=np.int64), sizes[1])
        return [a, b]
    grid = np.indices(sizes).reshape(len(bs), -1)
    return [grid[i].astype(np.int64) for i in range(len(bs))]


def _filters(op: str, idx: list[np.ndarray], bs: list[_Block], max_ops: Optional[int]) -> Optional[np.ndarray]:
    """Structural pruning that the fingerprints cannot do (rules prefer canonical spellings):
    constant-only applications (the leaves hold the useful constants), casts of casts, extending ops
    of a constant, multiplies by a power of two (the TRS's canonical form is a shift); and terms
    with more operations (other than reinterprets) than the grammar allows (a sub-term never has
    fewer than its parts, so nothing acceptable is lost)."""
    const = [b.const[i] for b, i in zip(bs, idx)]
    keep = ~np.logical_and.reduce(const)
    if max_ops is not None:
        keep &= sum(b.ops[i] for b, i in zip(bs, idx)) + (0 if op == "reinterpret" else 1) <= max_ops
    if op in ("cast", "reinterpret"):
        keep &= ~bs[0].castlike[idx[0]]
    if op.startswith("extending_"):
        keep &= ~np.logical_or.reduce(const)
    if op in ("mul", "widening_mul", "extending_mul"):
        keep &= ~np.logical_or.reduce([b.pow2[i] for b, i in zip(bs, idx)])
    return None if keep.all() else keep


# ---------------------------------------------------------------------------------------------
# Sharing


_BANKS: "OrderedDict[tuple, Bank]" = OrderedDict()


def shared_bank(
    key: Optional[tuple], grammar: "Grammar", vars_: Sequence[Term], rows: Sequence[tuple[int, ...]],
    factors: Optional[dict[str, int]] = None,
) -> Bank:
    """The process's bank for (grammar key, rows, lane factors), built on first use; no sharing
    without a key."""
    if key is None:
        return Bank(grammar, vars_, rows, factors)
    full = (key, tuple((v.name, v.type.name) for v in vars_), tuple(rows), tuple(sorted((factors or {}).items())))
    hit = _BANKS.get(full)
    if hit is not None:
        _BANKS.move_to_end(full)
        return hit
    bank = Bank(grammar, vars_, rows, factors)
    _BANKS[full] = bank
    while len(_BANKS) > MAX_BANKS or (
        len(_BANKS) > 1 and sum(b.size() for b in _BANKS.values()) > MAX_CACHED_CANDIDATES
    ):
        _BANKS.popitem(last=False)
    return bank


def clear_banks() -> None:
    _BANKS.clear()


def stats() -> dict[str, Any]:
    return {"banks": len(_BANKS), "candidates": sum(b.size() for b in _BANKS.values())}
