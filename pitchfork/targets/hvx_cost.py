"""The lane-order conversions HVX's lowering cost breaks instruction-count ties by
(`pitchfork.targets.lane_order_target_cost`: `target_cost` with them right after the instruction count).

Widening instructions write de-interleaved register pairs (pitchfork/targets/hvx_lanes.py); what reads
such a value in natural lane order needs a `vshuff` first, and a de-interleaved accumulator
(`vmpy.acc`, `vadd.acc`, `vmpa.acc`) given a value in natural order needs a `vdeal`. Two lowerings with
the same instruction count can differ by those shuffles: camera_pipe's curve interpolation
`vmpyi(d, e) + reinterpret<i16>(vmpy(a_u8, 8))` as `vmpy_acc(vmpyi(d, e), a, 8)` deals the natural
vmpyi result into the accumulator and leaves a de-interleaved sum that its narrowing shuffles back
(two shuffles); `vmpyi_acc(reinterpret<i16>(vmpy(a, 8)), d, e)` shuffles the product once and stays in
natural order. The instruction counts tie (3), and the input-width tie-break of `target_cost` chose the
first (6 sites: 269,578 -> 272,586 packets).

So among forms with the same instruction count the HVX lowering minimises the conversions its lane
orders imply (`conversions`), before input widths: per node, a de-interleaved accumulator fed a
natural-order value (a `vdeal` in, and the `vshuff` its de-interleaved sum then needs where the natural
value was used: two); a lane-wise op whose operands mix both orders (it runs in natural order: one
`vshuff` per de-interleaved operand); any other generic op (a truncating `cast`, a select: LLVM's code
reads natural order) per de-interleaved operand. A widening instruction's own de-interleaved result is
not counted: the term's user is not known yet (an interleaving narrowing such as `vshuffe` / `vsat` /
`vasr` reads it as it is), and counting it would rank a 32-bit vmpyie on operands widened twice above
one 16 x 16 vmpy (`u32(x_u8) * u32(y_u16)`: 14 against 13 loop packets) while the cost charged a
widening cast one instruction whatever its levels (it counts them now: pitchfork/targets/primitive_cost.py).
The instruction count stays first, so no rule that
saves an instruction loses to it; like `ordered_target_cost` on arm64 it only orders ties. Only a cost
choice: every emitter is exact in either order.
"""

from __future__ import annotations

from fpir.opspec import spec
from fpir.term import Term
from pitchfork.targets.hvx_lanes import DEINT, DEINT_RESULT, LANEWISE, NATURAL, is_lanewise, layout_step

#: terms whose layout is known, filled bottom-up (cleared when it grows past LAYOUT_MEMO_LIMIT, as DagCost's)
_LAYOUTS: dict[Term, str] = {}
LAYOUT_MEMO_LIMIT = 200_000


def term_layout(term: Term) -> str:
    """`hvx_lanes.layout(term)` with the uniform leaves (`var(..., uniform=True)`) as the uniform names,
    walked iteratively (a 10,000-deep term does not recurse) and memoised per interned term."""
    hit = _LAYOUTS.get(term)
    if hit is not None:
        return hit
    if len(_LAYOUTS) > LAYOUT_MEMO_LIMIT:
        _LAYOUTS.clear()
    stack: list[tuple[Term, bool]] = [(term, False)]
    while stack:  # post-order over the sub-terms not known yet
        t, ready = stack.pop()
        if t in _LAYOUTS:
            continue
        if ready:
            # a uniform leaf (the frontend's splat of a scalar) is what the emitter's environment splats
            uniform = frozenset((t.name,)) if t.is_var and t.is_uniform_leaf else frozenset()
            _LAYOUTS[t] = layout_step(t, tuple(_LAYOUTS[a] for a in t.args), uniform)
            continue
        stack.append((t, True))
        stack.extend((a, False) for a in t.args if a not in _LAYOUTS)
    return _LAYOUTS[term]


def _declared(t: Term) -> str:
    s = spec(t.op)
    return s.meta.get("layout", "") if s.kind == "target" else ""


def conversions(t: Term) -> int:
    """Lane-order conversions node `t` implies for its operands (not counting its own result's)."""
    if not t.args:
        return 0
    args = tuple(term_layout(a) for a in t.args)
    declared = _declared(t)
    if declared == DEINT_RESULT:
        # an accumulator of the result's type is read de-interleaved (the narrow operands are whole
        # registers): a natural one is dealt in, and the sum comes out de-interleaved where the value it
        # accumulates onto was natural, so its users shuffle it back: a round trip, two conversions
        return 2 * int(t.args[0].type == t.type and args[0] == NATURAL)
    if spec(t.op).kind == "target" and declared != LANEWISE:
        return 0  # interleaving narrowings, dot products: read either order as they are emitted
    if is_lanewise(t, args) and layout_step(t, args) != NATURAL:
        return 0  # runs in the operands' (de-interleaved or any) order
    return sum(1 for a in args if a == DEINT)
