"""Halide's vector reductions (`vector_reduce_<op>`, from `atomic()` vectorized updates and rfactor) as
ordinary lane-wise expressions that instruction selection can see whole.

`vector_reduce_op(v)` with n input lanes and m output lanes combines, for output lane i, the input
lanes [i*f, (i+1)*f), f = n/m. For m > 1, `split_reduce` rewrites it as

    op(s_0, op(s_1, ... s_{f-1}))      s_j = v's lanes j, j+f, j+2f, ... (m lanes)

and pushes each strided slice down through lane-wise nodes (casts, arithmetic, selects, Halide's
fixed-point intrinsics) to the leaves: ramps and broadcasts are rewritten exactly, gathers get sliced
indices, and dense loads, lets, variables and anything else get a `slice_vectors` shuffle. So the
selector sees e.g. a fully_connected dot product as a sum of f widened products at the accumulator
width, and the deinterleaving shuffles act on the narrow loaded data rather than on widened values.
A reduction to one lane (m = 1) is emitted by codegen as a halving tree instead (log2 n vector ops).

Invariant: the rewritten expression equals Halide's VectorReduce semantics lane for lane. That holds
because every op handled is associative and commutative in the element type (wrapping add and mul,
min, max, and, or, and unsigned saturating_add), so the grouping does not matter; a signed
saturating_add reduction, whose value depends on the order, is rejected (`check_reduce`).
"""

from __future__ import annotations

from pitchfork.frontend import ir as H

#: Halide VectorReduce operators -> the FPIR op that combines two partial results
REDUCE_OPS: dict[str, str] = {"add": "add", "saturating_add": "saturating_add", "mul": "mul", "min": "min",
                              "max": "max", "and": "and", "or": "or"}

#: calls whose lanes are independent (the slice of the result is the call on the slices)
_LANEWISE_CALLS = frozenset({
    "shift_left", "shift_right", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "abs", "absd",
    "widening_add", "widening_sub", "widening_mul", "widening_shift_left", "widening_shift_right",
    "widen_right_add", "widen_right_sub", "widen_right_mul", "rounding_shift_left", "rounding_shift_right",
    "halving_add", "halving_sub", "rounding_halving_add", "saturating_add", "saturating_sub",
    "mul_shift_right", "rounding_mul_shift_right", "saturating_shift_left", "saturating_cast",
    "count_leading_zeros", "count_trailing_zeros", "popcount", "likely", "likely_if_innermost",
    "promise_clamped", "unsafe_promise_clamped", "reinterpret",
})


def check_reduce(e: H.VectorReduce) -> str | None:
    """Why `e` cannot be compiled exactly (None if it can)."""
    if e.op not in REDUCE_OPS:
        return f"vector_reduce_{e.op}"
    if e.op == "saturating_add" and e.type.is_int:
        return "vector_reduce_saturating_add on a signed type (its value depends on the combination order)"
    if e.value.type.lanes % e.type.lanes:
        return f"vector_reduce_{e.op} from {e.value.type.lanes} to {e.type.lanes} lanes"
    return None


def split_reduce(e: H.VectorReduce) -> H.Expr:
    """The m-lane expression equal to `e` (m = e's lanes > 1): the f strided slices of its value,
    combined with the reduction's op."""
    n, m = e.value.type.lanes, e.type.lanes
    f = n // m
    parts = [slice_expr(e.value, j, f, m) for j in range(f)]
    acc = parts[0]
    for p in parts[1:]:
        acc = _combine(e.op, acc, p, e.type)
    return acc


def _combine(op: str, a: H.Expr, b: H.Expr, t: H.HType) -> H.Expr:
    if op in ("add", "mul", "min", "max"):
        return H.BinOp({"add": "+", "mul": "*", "min": "min", "max": "max"}[op], a, b, t)
    if op in ("and", "or"):
        if t.is_bool:
            return H.BinOp("&&" if op == "and" else "||", a, b, t)
        return H.Call("bitwise_and" if op == "and" else "bitwise_or", (a, b), t)
    return H.Call(op, (a, b), t)  # saturating_add (unsigned)


def _wrap(e: H.Expr, start: int, stride: int, count: int) -> H.Expr:
    return H.Shuffle("slice", (e,), tuple(start + stride * i for i in range(count)), e.type.with_lanes(count))


def slice_expr(e: H.Expr, start: int, stride: int, count: int) -> H.Expr:
    """Lanes start, start+stride, ... (count of them) of vector expression `e`, pushed into lane-wise nodes."""
    n = e.type.lanes
    if n == 1:
        return e  # a scalar operand of a lane-wise node stands for all lanes
    t = e.type.with_lanes(count)

    def go(x: H.Expr) -> H.Expr:
        return slice_expr(x, start, stride, count) if x.type.lanes == n else x

    def same_width(*xs: H.Expr) -> bool:
        return all(x.type.lanes in (1, n) for x in xs)

    if isinstance(e, H.Broadcast) and e.value.type.is_scalar:
        return H.Broadcast(e.value, count, t)
    if isinstance(e, H.Ramp) and e.base.type.is_scalar:
        bt = e.base.type
        base = e.base if start == 0 else H.BinOp("+", e.base, H.BinOp("*", e.stride, H.IntImm(start, bt), bt), bt)
        step = H.BinOp("*", e.stride, H.IntImm(stride, bt), bt) if stride != 1 else e.stride
        return H.Ramp(base, step, count, t)
    if isinstance(e, H.Cast):
        return H.Cast(t, go(e.value)) if same_width(e.value) else _wrap(e, start, stride, count)
    if isinstance(e, H.Reinterpret) and e.value.type.lanes == n:
        return H.Reinterpret(t, go(e.value))
    if isinstance(e, H.BinOp) and same_width(e.a, e.b):
        return H.BinOp(e.op, go(e.a), go(e.b), e.type.with_lanes(count))
    if isinstance(e, H.Not) and same_width(e.a):
        return H.Not(go(e.a), t)
    if isinstance(e, H.Select) and same_width(e.cond, e.true_value, e.false_value):
        return H.Select(go(e.cond), go(e.true_value), go(e.false_value), t)
    if isinstance(e, H.Call) and e.name in _LANEWISE_CALLS and same_width(*e.args):
        return H.Call(e.name, tuple(go(a) for a in e.args), t)
    if isinstance(e, H.Shuffle):
        idx = tuple(e.indices[start + stride * i] for i in range(count))
        return H.Shuffle("shuffle", e.vectors, idx, t)
    if isinstance(e, H.Load) and e.index.type.lanes == n and not _is_dense(e.index):
        # A gather: gather only the lanes needed.
        pred = go(e.predicate) if e.predicate is not None else None
        return H.Load(e.buffer, go(e.index), t, None, pred)
    return _wrap(e, start, stride, count)


def _is_dense(index: H.Expr) -> bool:
    return isinstance(index, H.Ramp) and isinstance(index.stride, H.IntImm) and index.stride.value == 1
