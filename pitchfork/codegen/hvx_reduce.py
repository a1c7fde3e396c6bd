"""HVX: a reduction to one lane of a value built in pieces (isel=pitchfork only).

A reduction to one lane does not depend on the order of its lanes. When its operand reaches it
through lane permutations and concatenations (the `vshuff` that restores natural order after a
widening instruction, the concatenation of the registers of a multi-register value), the selected
code reduces the pieces as they are: their registers are combined lane-wise into one register
(a balanced tree), and LLVM's `llvm.vector.reduce.<op>` finishes that one register.

Handed the whole multi-register value instead (what Halide 21 and "LLVM alone" give it), LLVM 22's
Hexagon backend first restores the order (`vshuff` per pair), adds register pairs with register
copies in between and extracts lane 0 through a stack round trip; its `valign` amounts need
r0-r7 and were rematerialised inside l2norm's hot loop (29 instructions against Halide 21's 28;
reduced as pieces: 21).

Exact for the associative, commutative combines only: wrapping add, min, max (never a signed
saturating add, whose value depends on the order). Invariant: `reduce_to_lane` returns None, and
the caller keeps the generic lowering, for any other combine or lane width, for a value with
nothing to look through (a single load, one register: measured no better, and softmax's 4-register
sum got 2% slower combined by hand), or pieces that are not whole registers.
"""

from __future__ import annotations

from typing import Any, Optional

from llvmlite import ir

from fpir.ops import make
from fpir.term import var
from fpir.types import ScalarType
from pitchfork.codegen.expr import shuffle_mask
from pitchfork.codegen.ir_constants import undef

REG_BYTES = 128  # one HVX register (128-byte mode)
#: the combines whose value does not depend on the lane order (associative and commutative)
ORDER_FREE = frozenset({"add", "min", "max"})


def reduce_to_lane(em: Any, combine: str, v: ir.Value, t: ScalarType) -> Optional[ir.Value]:
    """`combine` over all lanes of `v` (lanes of type `t`) as a 1-lane vector, or None (see module)."""
    from pitchfork.codegen.expr import ExprEmitter
    from pitchfork.selection.lower import expand_fpir

    if combine not in ORDER_FREE or t.bits not in (8, 16, 32):
        return None
    per_reg = REG_BYTES * 8 // t.bits
    parts = _pieces(v)
    if parts == [v] or any(p.type.count % per_reg for p in parts):
        return None  # nothing to look through (or not whole registers): LLVM's own lowering
    op = expand_fpir(make(combine, var("a", t), var("b", t)))

    def both(a: ir.Value, b: ir.Value) -> ir.Value:
        return ExprEmitter(em.b, per_reg, {"a": a, "b": b}, em.target).emit(op)

    regs = [r for p in parts for r in em.split(p, per_reg)]
    while len(regs) > 1:  # a balanced tree: independent combines can share packets
        regs = [both(regs[i], regs[i + 1]) if i + 1 < len(regs) else regs[i] for i in range(0, len(regs), 2)]
    name = {"add": "add", "min": "smin" if t.signed else "umin", "max": "smax" if t.signed else "umax"}[combine]
    r = em.call(f"llvm.vector.reduce.{name}.v{per_reg}i{t.bits}", regs[0].type.element, [regs[0]])
    return em.b.insert_element(undef(ir.VectorType(r.type, 1)), r,
                               ir.Constant(ir.IntType(32), 0))


def _pieces(v: ir.Value) -> list[ir.Value]:
    """Values whose lanes, all together, are the lanes of `v` in some order: through the lane
    permutations (the interleave that restores natural order after a widening instruction) and
    concatenations the emitters build, which a reduction to one lane does not need (its value does
    not depend on the lane order), so no vshuff/vdeal is spent on them."""
    if not isinstance(v, ir.instructions.ShuffleVector):
        return [v]
    a, b, _ = v.operands
    idx = shuffle_mask(v)
    if idx is None:
        return [v]
    n = a.type.count
    if _undefined(b) and sorted(idx) == list(range(n)):
        return _pieces(a)
    if b.type == a.type and sorted(idx) == list(range(2 * n)):
        return _pieces(a) + _pieces(b)
    return [v]


def _undefined(v: ir.Value) -> bool:
    """An undef vector constant (llvmlite keeps it as one undef per lane)."""
    if not isinstance(v, ir.Constant):
        return False
    c = v.constant
    return c is ir.Undefined or isinstance(c, (tuple, list)) and all(
        isinstance(x, ir.Constant) and x.constant is ir.Undefined for x in c)
