"""Left-side alternates: a sub-pattern of a synthesized lowering rule that is exactly the declared
semantics of one of the ISA's instructions also matches that instruction.

A lowering left side is a cut whose children were lowered by the rules loaded when it was searched.
Another rule set (the hand-written rules the compiler loads beside the synthesized ones, or an earlier
round's rules) can lower such a child to an instruction whose declared semantics is the child's own
op, one to one: x86 `widening_mul(x_i16, y_i16)` becomes `x86.wmul_pmaddwd(x, y)`. A rule over
`widening_mul(a, b) + widening_mul(c, d)` then no longer matches what it should rewrite
(`x86.wmul_pmaddwd(a, b) + x86.wmul_pmaddwd(c, d)`, hand rule pmaddwd's left side), although the two
are equal by the instruction's semantics. `instruction_alternates` names, for each such proper sub-term
of a left side, the instruction form it may also take; the rule is then written with
`either(sub-term, instruction)` (synth/generalize.py `side_text`) and, like every rule, verified by Z3
at every alternative before it is kept. Only one-op semantics count (the instruction is that op over
its operands in order, at the sub-term's types), so an alternative never changes what the rule means.

Invariant: an alternate is equal to its sub-term for all inputs by the instruction's declared
semantics; the rule text states it and the verifier proves each alternative.
"""

from __future__ import annotations

from functools import lru_cache

from fpir.opspec import OPS
from fpir.term import Term
from fpir.types import ScalarType

#: at most this many sub-terms get an alternate (a rule with k of them has 2^k alternatives to verify)
MAX_ALTERNATES = 3


@lru_cache(maxsize=None)
def _aliases(prefix: str) -> dict[tuple[str, tuple[ScalarType, ...], ScalarType], str]:
    """(op, operand types, result type) -> the instruction (name starting with `prefix`) whose
    declared semantics at that signature is `op` applied to its operands in order."""
    from pitchfork.targets.base import PARAMS, semantics_check, target_ops

    out: dict[tuple[str, tuple[ScalarType, ...], ScalarType], str] = {}
    for s in target_ops(prefix.rstrip(".")):
        if s.arg_lanes and any(k != 1 for k in s.arg_lanes):
            continue  # a lane-combining instruction is no one-to-one alias of a lane-wise op
        for sg, body in semantics_check(s.name):
            ps = body.args
            if ps and all(a.is_var for a in ps) and [a.name for a in ps] == list(PARAMS[:len(sg.args)]) \
                    and [a.type for a in ps] == list(sg.args):
                out.setdefault((body.op, tuple(sg.args), sg.result), s.name)
    return out


def instruction_alternates(lhs: Term, isa: str, prefix: str) -> dict[Term, Term]:
    """Proper sub-terms of `lhs` (not the root, not leaves) -> the same operands under the ISA's
    instruction (its names start with `prefix`, `x86.`) whose semantics is the sub-term's op (see
    module doc); at most MAX_ALTERNATES, the first met in pre-order."""
    from fpir.ops import make
    from pitchfork.targets import load_target

    load_target(isa)
    aliases = _aliases(prefix)
    out: dict[Term, Term] = {}
    stack = list(reversed(lhs.args))
    while stack and len(out) < MAX_ALTERNATES:
        t = stack.pop()
        if not t.args:
            continue
        name = aliases.get((t.op, tuple(a.type for a in t.args), t.type))
        if name is not None and t not in out and OPS[t.op].kind != "target":
            out[t] = make(name, *t.args)
        stack.extend(reversed(t.args))
    return out
