"""Type rules and argument type hints of the ops in `fpir.ops`.

A type rule takes the operand types (and the type written in the syntax, for explicitly typed ops such as
`cast<t>`) and returns the result type, or raises FPIRTypeError naming the op and the operand types. An
argument hint gives the type a bare constant argument takes from its siblings (the parser and printer use
it). Neither says anything about values: the op table (`fpir.ops.OPS`) pairs each op with its rule and hint.
"""

from __future__ import annotations

from typing import Callable, Optional, Sequence

from fpir.types import FPIRTypeError, ScalarType, u1

TypeRule = Callable[[Sequence[ScalarType], Optional[ScalarType]], ScalarType]
ArgHint = Callable[[int, Sequence[Optional[ScalarType]], Optional[ScalarType]], Optional[ScalarType]]


def same_type(name: str) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        if any(t != ts[0] for t in ts):
            raise FPIRTypeError(f"{name}: operands must have the same type, got {', '.join(map(str, ts))}")
        return ts[0]

    return rule


def int_only(name: str, ts: Sequence[ScalarType]) -> None:
    for t in ts:
        if t.is_bool:
            raise FPIRTypeError(f"{name}: operands must be integers, got {t}")


def same_int(name: str) -> TypeRule:
    base = same_type(name)

    def rule(ts: Sequence[ScalarType], t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        return base(ts, t)

    return rule


def cmp_rule(name: str) -> TypeRule:
    base = same_type(name)

    def rule(ts: Sequence[ScalarType], t: Optional[ScalarType]) -> ScalarType:
        base(ts, t)
        return u1

    return rule


def select_rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
    if ts[0] != u1:
        raise FPIRTypeError(f"select: condition must be u1, got {ts[0]}")
    if ts[1] != ts[2]:
        raise FPIRTypeError(f"select: branches must have the same type, got {ts[1]}, {ts[2]}")
    return ts[1]


def shift_rule(name: str, result: Callable[[ScalarType], ScalarType] = lambda t: t) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        if ts[0].bits != ts[1].bits:
            raise FPIRTypeError(f"{name}: shift amount must have {ts[0].bits} bits like the shifted value, got {ts[1]}")
        return result(ts[0])

    return rule


def cast_rule(name: str, same_bits: bool = False, ints: bool = False) -> TypeRule:
    def rule(ts: Sequence[ScalarType], t: Optional[ScalarType]) -> ScalarType:
        if t is None:
            raise FPIRTypeError(f"{name} needs a target type")
        if same_bits and ts[0].bits != t.bits:
            raise FPIRTypeError(f"{name}<{t}>: operand must have {t.bits} bits, got {ts[0]}")
        if ints:
            int_only(name, [ts[0], t])
        return t

    return rule


def unsigned_of(name: str) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        if any(t != ts[0] for t in ts):
            raise FPIRTypeError(f"{name}: operands must have the same type, got {', '.join(map(str, ts))}")
        return ts[0].to_unsigned()

    return rule


def widening(name: str, result: Callable[[ScalarType], ScalarType] = lambda t: t.widen()) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        if ts[0] != ts[1]:
            raise FPIRTypeError(f"{name}: operands must have the same type, got {ts[0]}, {ts[1]}")
        if ts[0].bits >= 256:
            raise FPIRTypeError(f"{name}: cannot widen {ts[0]}")
        return result(ts[0])

    return rule


def widening_mul_rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
    int_only("widening_mul", ts)
    if ts[0].bits != ts[1].bits:
        raise FPIRTypeError(f"widening_mul: operands must have the same width, got {ts[0]}, {ts[1]}")
    return ScalarType(ts[0].signed or ts[1].signed, ts[0].bits * 2)


def extending_rule(name: str) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        if ts[0].bits != 2 * ts[1].bits:
            raise FPIRTypeError(f"{name}: first operand must be twice as wide as the second, got {ts[0]}, {ts[1]}")
        return ts[0]

    return rule


def mul_shr_rule(name: str) -> TypeRule:
    def rule(ts: Sequence[ScalarType], _t: Optional[ScalarType]) -> ScalarType:
        int_only(name, ts)
        if ts[0] != ts[1]:
            raise FPIRTypeError(f"{name}: multiplicands must have the same type (and signedness), got {ts[0]}, {ts[1]}")
        if ts[2] != ts[0].to_unsigned():
            raise FPIRTypeError(f"{name}: shift amount must be {ts[0].to_unsigned()}, got {ts[2]}")
        return ts[0]

    return rule


# ---------------------------------------------------------------------------------------------
# Argument type hints (type of a bare constant argument, from its siblings)


def _first_known(known: Sequence[Optional[ScalarType]]) -> Optional[ScalarType]:
    return next((k for k in known if k is not None), None)


def hint_same(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    k = _first_known(known)
    return k if k is not None else expected


def hint_cmp(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    return _first_known(known)  # the result is u1: it says nothing about the operands


def hint_select(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    if i == 0:
        return u1
    other = known[2 if i == 1 else 1]
    return other if other is not None else expected


def hint_shift(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    other = known[1 - i] if len(known) == 2 else known[0]
    if i >= 1 and known[0] is not None:
        return known[0]
    return other


def hint_widening(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    k = _first_known(known)
    if k is not None:
        return k
    return expected.narrow() if expected is not None and expected.bits > 8 else None


def hint_extending(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    if i == 1 and known[0] is not None:
        return known[0].narrow()
    if i == 0 and known[1] is not None:
        return known[1].widen()
    return expected if i == 0 else None


def hint_mul_shr(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    base = known[0] or known[1] or expected
    if i == 2:
        return base.to_unsigned() if base is not None else None
    return base


def hint_cast(i: int, known: Sequence[Optional[ScalarType]], expected: Optional[ScalarType]) -> Optional[ScalarType]:
    return expected
