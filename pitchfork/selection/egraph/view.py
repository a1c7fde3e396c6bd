"""A frozen e-graph read out of egglog, for explaining an extraction (explain.py).

Its own module because both the engine (which captures the view when asked) and the explainer (which
searches it) use it: in either of them it would make an import cycle between the two.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from fpir.term import Term
from pitchfork.selection.egraph.declare import CONST, I64_MAX, I64_MIN, LEAF, Encoding, ctor


@dataclass(frozen=True)
class EGraphView:
    """A frozen e-graph read out of egglog with plain-int e-class ids: `nodes` maps an e-node key
    (constructor, type name, payload, child classes) to its class; `root` is the input's class."""

    nodes: dict
    root: int
    leaf_index: dict

    @staticmethod
    def of(classes: dict[Any, list], root_value: Any, enc: Encoding) -> "EGraphView":
        ids: dict[Any, int] = {}
        for c in classes:
            ids.setdefault(c, len(ids))
        nodes = {}
        for c, ns in classes.items():
            for n in ns:
                if any(ch not in ids for ch in n.children):
                    continue
                nodes[(n.ctor, n.tname, n.payload, tuple(ids[ch] for ch in n.children))] = ids[c]
        return EGraphView(nodes, ids.get(root_value, -1), dict(enc.leaf_index))

    def class_of(self, term: Term, memo: dict) -> Optional[int]:
        """The e-class of `term` (every node of it an e-node), else None."""
        for t in term.walk():
            if t in memo:
                continue
            tn = t.type.name
            if t.op == "const" and I64_MIN <= t.value <= I64_MAX:
                key = (CONST, tn, t.value, ())
            elif t in self.leaf_index:
                key = (LEAF, tn, self.leaf_index[t], ())
            else:
                kids = tuple(memo[a] for a in t.args)
                key = None if None in kids or not t.args else (ctor(t.op, t.attrs), tn, None, kids)
            memo[t] = None if key is None else self.nodes.get(key)
        return memo[term]
