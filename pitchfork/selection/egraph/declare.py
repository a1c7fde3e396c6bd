"""FPIR declared to egglog, generated from the op table (fpir/ops.py): no second list of ops or types.

Encoding (egglog program text, for `egglog.bindings`):

* `Ty` is a String holding the FPIR type name ("u8", "i16", ...).
* sort `E`: one constructor per op row of kind primitive/fpir (and every registered reduction), named
  `op_<name>` (egglog's own primitives own `min`, `and`, ...), taking the node's result type first,
  then its arguments: `(op_add "u16" a b)`. An op's flags get their own constructor,
  `op_add__nsw`: a flagged node is unioned with its plain twin (dropping a flag is always sound), so a
  plain pattern matches both and a flagged pattern only nodes whose producer stated the fact. The
  encoder is the only producer of flagged nodes (the compiled algebra and fold rules write none), and
  it adds the twin beside each (`encode`, `bind`); so no rule does (14 such `types` rules cost the
  prelude, every push/pop and every schedule that runs `types`, for unions already made).
* leaves: `(Const v "ty")` for constants; `(Leaf n "ty")` for everything else the e-graph does not
  look into (variables, uniform variables, target instructions, constants outside egglog's i64), n
  indexing `Encoding.leaves`.
* `(Root e) = k`: marks the input's e-class with the shape's index `k` in its egglog scope
  (`Encoding.program` sets it), by which the engine finds the root after saturation (a scope may hold
  several shapes: engine.Budget.scope). Leaf indices start at `Encoding.leaf_base`, so the shapes of
  one scope share no leaf.
* `(tyof e)`: the type of an e-class, which typed wildcards (`x_u8`) of rule patterns query. Whoever
  adds an op node sets it from the node's type field: the encoder beside each `let` (`encode`, `bind`),
  a compiled rule beside each node of its right side (rules.py). (A `types` rule per constructor
  did the same for every node, but egglog paid for ~100 such rules in the prelude, in every `(push)`
  / `(pop)` and in every schedule that ran them: a third of each saturation.) Constants and leaves
  keep their two `types` rules.

Terms reach egglog as actions (`let`, `set`, `union`) batched into one rule with an empty query
(`Encoding.batch`), which egglog runs once: each top-level command costs egglog ~0.05-0.1 ms whatever
its size, and a shape needs ~150 of them, while one rule of 150 actions costs about what 50 commands
do. A batch's `let` names are local to its rule, so every batch names the nodes it needs afresh: a
node already in the e-graph is found again by hash-consing (same constructor over the same
e-classes), not added twice.

Invariant: `encode` and `Encoding.decode_node` are inverse on every term they accept; a term is
encoded as one `let` per distinct node (post-order), so deep terms need no recursion here or in
egglog's parser.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Optional

from fpir.ops import make
from fpir.opspec import OPS, spec
from fpir.term import Term, const
from fpir.types import ScalarType, parse_type

#: egglog i64 holds constants in this range; others become opaque leaves
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

CONST, LEAF = "Const", "Leaf"
#: the function marking the input's e-class, and the ruleset of the action batches (Encoding.batch)
ROOT, BATCH_RULESET = "Root", "batch"
#: leaf indices of the shapes of one egglog scope are this far apart (more leaves than any term has)
LEAF_STRIDE = 1 << 32


def lifting_ops() -> list[str]:
    """The ops the e-graph knows: every primitive and FPIR row of the table (target instructions
    are the lowering's business and stay opaque leaves)."""
    return sorted(n for n, s in OPS.items() if s.kind in ("primitive", "fpir"))


def ctor(op: str, flags: Iterable[str] = ()) -> str:
    """The egglog constructor of an op node carrying `flags` (sorted)."""
    fl = sorted(flags)
    return "op_" + op + "".join("__" + f for f in fl)


@lru_cache(maxsize=None)
def parse_ctor(name: str) -> tuple[str, tuple[str, ...]]:
    """(op, flags) of a constructor made by `ctor`."""
    assert name.startswith("op_")
    parts = name[3:].split("__")
    return parts[0], tuple(parts[1:])


def flag_sets(op: str) -> list[tuple[str, ...]]:
    """The flag combinations a node of `op` may carry: every subset of its flags (`shl.inrange.nsw`),
    the empty one first (ops have at most two flags)."""
    from itertools import combinations

    fl = sorted(spec(op).flags)
    return [c for k in range(len(fl) + 1) for c in combinations(fl, k)]


def declarations(ops: Optional[list[str]] = None) -> str:
    """The egglog declarations: sort E with its constructors, tyof, and the `types` ruleset."""
    ops = ops if ops is not None else lifting_ops()
    lines = ["(datatype E", f"  ({CONST} i64 String)", f"  ({LEAF} i64 String)"]
    for op in ops:
        ar = spec(op).arity
        for fl in flag_sets(op):
            lines.append(f"  ({ctor(op, fl)} String{' E' * ar})")
    lines.append(")")
    lines.append("(function tyof (E) String :merge old)")
    lines.append(f"(function {ROOT} (E) i64 :merge old)")
    lines.append(f"(ruleset {BATCH_RULESET})")
    lines.append("(ruleset types)")
    lines.append(f"(rule ((= e ({CONST} v t))) ((set (tyof e) t)) :ruleset types)")
    lines.append(f"(rule ((= e ({LEAF} v t))) ((set (tyof e) t)) :ruleset types)")
    for op in ops:
        s = spec(op)
        if s.explicit_type:  # an identity cast is its operand (fpir.ops.make drops it too)
            lines.append(f"(rule ((= e ({ctor(op)} t x)) (= (tyof x) t)) ((union e x)) :ruleset types)")
    return "\n".join(lines) + "\n"


def quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'


@dataclass
class Encoding:
    """A term written as egglog actions: `lets` (one `let` per distinct node, with its `set` of
    `tyof`), `root` the name of the whole term within the first batch. `names` are the current batch's
    (Encoding.batch ends them)."""

    lets: list[str] = field(default_factory=list)
    leaves: list[Term] = field(default_factory=list)
    names: dict[Term, str] = field(default_factory=dict)
    root: str = ""
    leaf_index: dict[Term, int] = field(default_factory=dict)
    known: frozenset[str] = frozenset()
    # ids of the terms of the current batch whose every node is named (by an earlier `bind`, which
    # keeps them alive in `names`): `bind` does not walk into them again
    closed: set[int] = field(default_factory=set)
    # the first Leaf index (leaf_index holds indices from it on), and the shape's index in its scope
    leaf_base: int = 0
    key: int = 0

    def program(self) -> list[str]:
        """The input's actions, marking its root e-class (`Root`): the start of the first batch."""
        return self.lets + [f"(set ({ROOT} {self.root}) {self.key})"]

    def batch(self, actions: list[str], index: int) -> str:
        """`actions` as one egglog rule with an empty query and the run that fires it (once: an
        empty query matches once, and a later run does not match it again). `index` names the rule
        (unique within the e-graph). The batch's `let` names end here: later `bind`s name afresh."""
        self.names = {}
        self.closed = set()
        return (f"(rule () ({' '.join(actions)}) :ruleset {BATCH_RULESET} :name \"{BATCH_RULESET}{index}\")\n"
                f"(run {BATCH_RULESET} 1)\n")

    def bind(self, term: Term, out: list[str]) -> str:
        """The name of `term`'s e-class in the current batch: the name `encode` or an earlier `bind`
        of this batch gave it, or a new one, appending to `out` a `let` for each of its nodes not named
        in this batch yet (post-order). Union actions built from these names stay linear in the
        nodes (a nested expression would write a shared sub-term once per use)."""
        names, closed = self.names, self.closed
        if id(term) in closed:
            return names[term]
        # Nodes whose id is closed are skipped with their sub-terms: every node below a closed node is
        # named, so the nodes left out are exactly ones the loop would skip, and the others come in
        # `walk`'s order (pruning a depth-first traversal does not reorder what it still visits).
        for t in term.walk(closed):
            if t in names:
                continue
            ty = quote(t.type.name)
            name = f"n_{len(names)}"
            if t.op == "const" and I64_MIN <= t.value <= I64_MAX:
                out.append(f"(let {name} ({CONST} {t.value} {ty}))")
            elif not t.args or t.op not in self.known:
                if t not in self.leaf_index:
                    self.leaf_index[t] = self.leaf_base + len(self.leaves)
                    self.leaves.append(t)
                out.append(f"(let {name} ({LEAF} {self.leaf_index[t]} {ty}))")
            else:
                out.append(f"(let {name} ({ctor(t.op, t.attrs)} {ty}{''.join(' ' + names[a] for a in t.args)}))")
                out.append(f"(set (tyof {name}) {ty})")
                if t.attrs:  # the plain twin of a flagged node: same value, fewer facts
                    out.append(f"(union {name} ({ctor(t.op, ())} {ty}{''.join(' ' + names[a] for a in t.args)}))")
            names[t] = name
        return names[term]

    def decode_node(self, ctor_name: str, tname: str, args: list[Term], payload: Optional[int] = None,
                    fold: bool = True) -> Term:
        """The Term of one e-node, given its children's terms (`payload`: Const value / Leaf index)."""
        t = _type(tname)
        if ctor_name == CONST:
            return const(int(payload), t)  # type: ignore[arg-type]
        if ctor_name == LEAF:
            return self.leaves[int(payload) - self.leaf_base]  # type: ignore[arg-type]
        op, flags = parse_ctor(ctor_name)
        s = spec(op)
        return make(op, *args, type=t if s.explicit_type else None, flags=flags, fold=fold)


@lru_cache(maxsize=None)
def _type(name: str) -> ScalarType:
    return parse_type(name)


def encode(term: Term, known: Optional[frozenset[str]] = None, prefix: str = "n_", key: int = 0) -> Encoding:
    """`term` as egglog lets (one per distinct node, post-order). A node whose op is outside `known`
    becomes an opaque leaf (its sub-terms are not encoded on its behalf). `key`: the shape's index in
    its egglog scope (its Root mark; its leaves are numbered from key * LEAF_STRIDE)."""
    known = known if known is not None else frozenset(lifting_ops())
    enc = Encoding(known=known, leaf_base=key * LEAF_STRIDE, key=key)
    opaque = {t for t in term.walk() if t.op not in ("var", "const") and t.op not in known}
    reach = _reachable_outside(term, opaque)
    leaf_index = enc.leaf_index
    for t in term.walk():
        if t not in reach:
            continue
        name = f"{prefix}{len(enc.names)}"
        ty = quote(t.type.name)
        if t.op == "const" and I64_MIN <= t.value <= I64_MAX:
            enc.lets.append(f"(let {name} ({CONST} {t.value} {ty}))")
        elif t.op in ("var", "const") or t in opaque:
            leaf_index[t] = enc.leaf_base + len(enc.leaves)
            enc.leaves.append(t)
            enc.lets.append(f"(let {name} ({LEAF} {leaf_index[t]} {ty}))")
        else:
            args = " ".join(enc.names[a] for a in t.args)
            enc.lets.append(f"(let {name} ({ctor(t.op, t.attrs)} {ty} {args}))")
            enc.lets.append(f"(set (tyof {name}) {ty})")
            if t.attrs:  # the plain twin of a flagged node: same value, fewer facts
                enc.lets.append(f"(union {name} ({ctor(t.op, ())} {ty} {args}))")
        enc.names[t] = name
    enc.root = enc.names[term]
    return enc


def _reachable_outside(term: Term, opaque: set[Term]) -> set[Term]:
    """Nodes reachable from the root without passing through an opaque node (they need encoding
    even when an opaque node also contains them)."""
    out: set[Term] = set()
    stack = [term]
    while stack:
        t = stack.pop()
        if t in out:
            continue
        out.add(t)
        if t not in opaque:
            stack.extend(t.args)
    return out


def type_name(t: ScalarType) -> str:
    return quote(t.name)
