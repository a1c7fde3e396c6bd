"""Peephole left sides: pairs of instructions that the lowering rules found so far put together.

A lowering left side is a cut of the lifted corpus (FPIR), its children lowered by the rules loaded
when it is searched. A rule found there lowers that node; the node's parent is searched over the
child as lowered. What no such cut ever poses is an instruction *over* an instruction that the rules
made, bottom-up, at two different nodes: HVX conv3x3a16's nine-tap sum, lowered by the rules a
bring-up finds (`a + widening_mul(x, s)` -> `vmpy_acc(a, x, s)`, one tap at a time), is a chain
`vmpy_acc(vmpy_acc(vmpa(..), x1, s1), x2, s2)`, ... whose every two links are one `vmpa_acc`
(the hand rule vmpa_acc): 17 instructions where the hand-written lowering has 11. The node where the
pair forms is an `add` of the corpus, but its left side as searched is `vmpy_acc(a, x1, s1) +
widening_mul(x2, s2)` only in the round after the one that found `vmpy_acc`.

So after the lowering rounds, the corpus's whole expressions are lowered with every rule written so
far (`instruction_pairs` of the result): each instruction with an instruction operand, that operand's
own operands and every other operand cut to variables (constants kept), is a left side of its own, searched and
verified like every other (a rule found there rewrites what the rules produce on real code, so it fires
on the corpus by construction; a cut with more variables than one instruction takes,
`search.MAX_PROBE_ARITY`, is left out: no single instruction replaces it).

Invariant: every peephole cut is a sub-term pattern of the lowered corpus, so a rule found for it
matches there; the rule is Z3-verified at every type instance like every lowering rule.
"""

from __future__ import annotations

from typing import Iterator, Sequence

from fpir.opspec import spec
from fpir.term import Term
from synth.corpus import Corpus, _cut_var, rebuild


def _instruction(t: Term) -> bool:
    return bool(t.args) and spec(t.op).kind == "target"


def _operand(t: Term) -> Term:
    """A leaf as it is (a variable or a constant), any other sub-term cut to a variable."""
    return _cut_var(t) if t.args else t


def instruction_pairs(term: Term) -> Iterator[Term]:
    """Every instruction of `term` with an instruction operand, as a cut (see module doc): the
    instruction operands keep their instruction over cut operands, the other operands are cut."""
    seen: set[Term] = set()
    for node in term.walk():
        if node in seen or not _instruction(node) or not any(_instruction(a) for a in node.args):
            continue
        seen.add(node)
        args = [rebuild(a, [_operand(b) for b in a.args]) if _instruction(a) else _operand(a) for a in node.args]
        yield rebuild(node, args)


def peephole_corpus(inputs: dict[str, Sequence[Term]], isa: str, hide: tuple[str, ...]) -> Corpus:
    """The instruction pairs (`instruction_pairs`) of the ISA's whole expressions, lifted and then
    lowered as the compiler lowers them with the rules loaded now (less `hide`), counted like cuts."""
    from pitchfork.selection.lift import lift
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from synth.tasks import _without

    info = load_target(isa)
    rw = Rewriter(_without(info.rules, hide), cost=info.cost)
    out = Corpus()
    for source, exprs in inputs.items():
        for t in exprs:
            low = rw.rewrite(lift(t))
            out.add_cuts(low, source, instruction_pairs(low))
    return out
