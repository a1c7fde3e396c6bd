"""Variant programs: each FPIR idiom written many exactly-equal ways (variants.txt), lifted by both
engines (`python3 -m benchmarks.variants`). `load()` reads the data file; `hit()` is the criterion."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from fpir.opspec import spec
from fpir.term import Term

DATA = Path(__file__).resolve().parent / "variants.txt"


@dataclass(frozen=True)
class Group:
    name: str
    canonical: str
    variants: tuple[str, ...]


def load(path: Path = DATA) -> list[Group]:
    groups: list[Group] = []
    name, canon, vs = "", "", []
    for line in path.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("="):
            if name:
                groups.append(Group(name, canon, tuple(vs)))
            name, canon = (x.strip() for x in line[1:].split(":", 1))
            vs = []
        else:
            vs.append(line)
    if name:
        groups.append(Group(name, canon, tuple(vs)))
    return groups


def fpir_ops(t: Term) -> Counter:
    return Counter(x.op for x in t.walk() if x.args and spec(x.op).kind == "fpir")


def primitive_ops(t: Term) -> int:
    """Arithmetic nodes that are not FPIR instructions (casts and reinterprets not counted)."""
    return sum(1 for x in t.walk() if x.args and spec(x.op).kind != "fpir" and x.op not in ("cast", "reinterpret"))


def hit(result: Term, canonical: Term, strict: bool = False) -> bool:
    """The result reached the canonical form's level of lifting: it costs no more
    (pitchfork/selection/cost.py) and has no more primitive arithmetic, and either has the canonical
    form's FPIR ops (as a multiset) or as many FPIR ops (an equally cheap spelling:
    widening_sub(p, q) for widening_add(p, -q)). Unless `strict`, a result that costs strictly less
    than the canonical form is a hit too: a narrower spelling the canonical form does not use (a sum
    that fits i16 added in i16 by a plain add rather than widened to i32), better by the one cost both
    engines are judged by. benchmarks.variants reports both rates."""
    from pitchfork.selection.cost import cost

    if not strict and cost(result) < cost(canonical):
        return True
    if cost(result) > cost(canonical) or primitive_ops(result) > primitive_ops(canonical):
        return False
    got, want = fpir_ops(result), fpir_ops(canonical)
    return got == want or sum(got.values()) >= sum(want.values())
