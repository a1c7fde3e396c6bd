"""HVX accumulation chains started from a value nothing else reads.

`hvx.vmpyi_acc(a, y, z)` (`Vx.w += vmpyi(Vu.w, Rt.b)`) overwrites its accumulator register. A selected
sum of taps is a chain of them and of plain wrapping `add`s, and its first accumulator is whichever
summand the source happened to write first. When that summand is an aligned load whose registers the
misaligned taps of the same row still `valign` from (gaussian7x7's column pass: the tap at x-3 of a
row stored aligned at x-3), LLVM must copy it before the first accumulation: 16 vector copies in the
loop, and more spills. Halide 21 starts such a chain from a misaligned tap (a fresh valign) and adds
the aligned one last.

Every lane-wise wrapping accumulate (`accumulating_ops()`: acc + f(args) at the accumulator's type, multiply-,
multiply-add-, dot-, shift- and widening-add-accumulates alike; not the saturating `sacc` forms, whose
order matters) overwrites its accumulator the same way, so any of them can link a chain.
`start_from_fresh` rebuilds each chain of `add` / accumulate nodes (partial sums used once) as:
the plain summand of lowest rank, then every product in the original order, then the other plain
summands. Invariant: the value is unchanged, since every node of a chain is a wrapping sum at one type
(a dropped `nsw` flag is always sound: flags never change a value). Chains without a product, and
chains whose first accumulator already has the lowest rank, are kept as they are.
"""

from __future__ import annotations

from functools import cache
from typing import Callable

from fpir.ops import make
from fpir.term import Term, intern
from pitchfork.targets.base import semantics_check, target_ops
import pitchfork.targets.hvx  # noqa: F401 (declares the hvx.* rows accumulating_ops() reads)

def _accumulates(name: str) -> bool:
    """`name` is acc + f(other arguments) at every signature, wrapping at the accumulator's type: its
    declared meaning is a chain of `add`s whose first summand is the first operand `x`, read nowhere
    else, and its result type is x's (read from the instruction table, so a new row is covered)."""
    for sg, meaning in semantics_check(name):
        if sg.result != sg.args[0]:
            return False
        t = meaning
        while t.op == "add" and t.type == sg.result:
            t = t.args[0]
        if not (t.is_var and t.name == "x") or sum(1 for n in meaning.walk() if n.is_var and n.name == "x") != 1:
            return False
    return True


@cache
def accumulating_ops() -> frozenset[str]:
    """The lane-wise accumulating HVX instructions, accumulator first (not the saturating vmpyo sacc
    forms: their meaning is a saturating add). Read on first use, not at import: elaborating every
    row's semantics costs ~45 ms, which every compile process would pay whatever its target."""
    return frozenset(s.name for s in target_ops("hvx") if _accumulates(s.name))


def start_from_fresh(term: Term, rank: Callable[[Term], int]) -> Term:
    """`term` with each accumulation chain started from its plain summand of lowest `rank` (the
    first such in sum order); `rank` says how costly it is to overwrite a summand's register
    (0: a value computed for this sum alone)."""
    accumulate = accumulating_ops()
    uses: dict[Term, int] = {}
    for t in term.walk():
        for a in t.args:
            uses[a] = uses.get(a, 0) + 1
    memo: dict[Term, Term] = {}

    def link(t: Term, typ: object) -> bool:
        """t continues a chain of type typ (a partial sum nothing else reads)."""
        return t.type == typ and (t.op == "add" or t.op in accumulate) and uses.get(t, 0) == 1

    def flatten(t: Term, plain: list[Term], products: list[tuple[str, list[Term]]]) -> None:
        head = t.args if t.op == "add" else t.args[:1]
        for a in head:
            flatten(a, plain, products) if link(a, t.type) else plain.append(rebuild(a))
        if t.op != "add":
            products.append((t.op, [rebuild(a) for a in t.args[1:]]))

    def overwrites_plain(t: Term) -> bool:
        """The chain's first instruction accumulates onto one of its plain summands (an `add`
        first makes a new register)."""
        while link(t.args[0], t.type):
            t = t.args[0]
        return t.op in accumulate

    def rebuild(t: Term) -> Term:
        got = memo.get(t)
        if got is not None:
            return got
        out = t
        if t.op == "add" or t.op in accumulate:
            plain: list[Term] = []
            products: list[tuple[str, list[Term]]] = []
            flatten(t, plain, products)
            best = min(range(len(plain)), key=lambda i: (rank(plain[i]), i)) if plain else -1
            if products and best > 0 and overwrites_plain(t) and rank(plain[best]) < rank(plain[0]):
                out = plain[best]
                for op, args in products:
                    out = make(op, out, *args)
                for p in plain[:best] + plain[best + 1:]:
                    out = make("add", out, p)
                memo[t] = out
                return out
        if t.args:
            args = tuple(rebuild(a) for a in t.args)
            if any(a is not b for a, b in zip(args, t.args)):
                out = intern(t.op, t.type, args, t.attrs)
        memo[t] = out
        return out

    return rebuild(term)
