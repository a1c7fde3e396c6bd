"""fpir/term.py `Term.walk`: post-order over distinct sub-terms. `walk()` (the visited set of terms) and
`walk(seen)` (the visited set of ids, pruned) give the same nodes in the same order; a leaf is its walk."""

from __future__ import annotations

import random

import pytest

from fpir import parse
from fpir.term import Term, const, var
from fpir.types import ScalarType


def _reference(t: Term) -> list[Term]:
    """Post-order, each distinct node at its first completed visit (the recursive definition)."""
    out: list[Term] = []
    seen: set[int] = set()

    def go(n: Term) -> None:
        if id(n) in seen:
            return
        seen.add(id(n))
        for a in n.args:
            go(a)
        out.append(n)

    go(t)
    return out


EXPRS = [
    "a_u8",
    "u16(a_u8) + u16(a_u8)",
    "(x_i32 + y_i32) * (x_i32 + y_i32) - x_i32",
    "select(a_u8 < b_u8, a_u8, b_u8 + a_u8)",
    "u8(min(u16(a_u8) + u16(b_u8), 255))",
    " + ".join(f"i32(a{i % 7}_i16) * i32(b{i % 5}_i16)" for i in range(40)),
]


@pytest.mark.parametrize("text", EXPRS)
def test_walk_is_the_reference_post_order(text: str) -> None:
    t = parse(text)
    want = _reference(t)
    assert all(a is b for a, b in zip(list(t.walk()), want, strict=True))
    seen: set[int] = set()
    assert all(a is b for a, b in zip(list(t.walk(seen)), want, strict=True))
    assert seen == {id(n) for n in want}


def test_walk_of_random_shared_dags() -> None:
    rng = random.Random(26)
    u16 = ScalarType(False, 16)
    for _ in range(200):
        pool = [var(f"v{i}", u16) for i in range(3)] + [const(rng.randrange(4), u16)]
        for _ in range(rng.randrange(1, 25)):
            a, b = rng.choice(pool), rng.choice(pool)
            pool.append(_add(a, b))
        t = pool[-1]
        assert all(x is y for x, y in zip(list(t.walk()), _reference(t), strict=True))


def _add(a: Term, b: Term) -> Term:
    from fpir.ops import make

    return make("add", a, b)


def test_pruned_walk_skips_seen_subterms() -> None:
    t = parse("(x_i32 + y_i32) * z_i32")
    inner = t.args[0]
    seen = {id(inner)}
    assert [n.op for n in t.walk(seen)] == ["var", "mul"]
