"""pitchfork/frontend/ir.py traversal: `walk` visits every node once, in pre-order, each node's children
in `children`'s field order (the order the passes and checks built on it rely on)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.stmt import parse_stmt

DATA = Path(__file__).with_name("data")


def _preorder(node: H.Node) -> list[H.Node]:
    """The reference order: the node, then each child's pre-order, children as `children` yields them."""
    out = [node]
    for c in H.children(node):
        out.extend(_preorder(c))
    return out


@pytest.mark.parametrize("path", sorted(DATA.glob("*.stmt")), ids=lambda p: p.stem)
def test_walk_is_the_preorder_of_children(path: Path) -> None:
    stmt = parse_stmt(path.read_text())
    got = list(H.walk(stmt))
    want = _preorder(stmt)
    assert len(got) == len(want) > 10
    assert all(a is b for a, b in zip(got, want))


def test_walk_of_a_leaf_is_the_leaf() -> None:
    leaf = H.IntImm(7, HType("int", 32))
    assert [n is leaf for n in H.walk(leaf)] == [True]


@pytest.mark.parametrize("path", sorted(DATA.glob("*.stmt")), ids=lambda p: p.stem)
def test_widest_lanes_is_the_widest_expression_of_walk(path: Path) -> None:
    stmt = parse_stmt(path.read_text())
    want = max((n.lanes for n in H.walk(stmt) if isinstance(n, H.Expr)), default=1)
    assert H.widest_lanes(stmt) == want
    for n in H.walk(stmt):  # every sub-tree too (statements without expressions: 1)
        assert H.widest_lanes(n) == max((m.lanes for m in H.walk(n) if isinstance(m, H.Expr)), default=1)


def test_widest_lanes_sees_a_wide_operand_under_a_narrow_node() -> None:
    """A vector reduction is narrower than its operand: the operand's lanes count."""
    wide = H.Variable("v", HType("int", 32, 2048))
    red = H.VectorReduce("add", wide, HType("int", 32, 4))
    assert H.widest_lanes(H.Evaluate(red)) == 2048


def _node_classes() -> list[type]:
    return [c for c in vars(H).values()
            if isinstance(c, type) and issubclass(c, H.Node) and "__dataclass_fields__" in c.__dict__]


@pytest.mark.parametrize("cls", _node_classes(), ids=lambda c: c.__name__)
def test_node_init_is_the_dataclass_init(cls: type) -> None:
    """ir._fast_init's __init__: the dataclass's parameters (names, order, defaults), every field stored
    as given, positionally or by keyword; the node still frozen, equal and hashed as a dataclass."""
    import dataclasses
    import inspect

    flds = dataclasses.fields(cls)
    params = list(inspect.signature(cls.__init__).parameters.values())[1:]
    assert [p.name for p in params] == [f.name for f in flds]
    for p, f in zip(params, flds):
        want = inspect.Parameter.empty if f.default is dataclasses.MISSING else f.default
        assert p.default is want
    values = [object() for _ in flds]  # distinct markers: each field must hold its own
    for node in (cls(*values), cls(**{f.name: v for f, v in zip(flds, values)})):
        assert all(getattr(node, f.name) is v for f, v in zip(flds, values))
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(node, flds[0].name, None)
    required = [f for f in flds if f.default is dataclasses.MISSING]
    node = cls(*[v for f, v in zip(flds, values) if f.default is dataclasses.MISSING])
    assert all(getattr(node, f.name) is f.default for f in flds if f not in required)
    assert cls(*values) == cls(*values) and hash(cls(*values)) == hash(cls(*values))
