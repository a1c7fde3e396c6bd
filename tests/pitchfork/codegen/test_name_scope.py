"""fast_names gives every value the name llvmlite's own scope would (pitchfork/codegen/name_scope.py)."""

from __future__ import annotations

import pytest
from llvmlite import ir
from llvmlite.ir._utils import DuplicatedNameError

from pitchfork.codegen.name_scope import _FastScope, fast_names


def _module(fast: bool) -> str:
    m = ir.Module("m")
    i32 = ir.IntType(32)
    fn = ir.Function(m, ir.FunctionType(i32, [i32, i32]), "f")
    if fast:
        fast_names(fn)
        assert isinstance(fn.scope, _FastScope)
    fn.args[0].name = "x"
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    v = fn.args[1]
    for name in ["", "", "t", "t", "t.1", "", ".7", "x", "t"]:
        v = b.add(v, fn.args[0], name=name)
    other = fn.append_basic_block("entry")  # a repeated block name is deduplicated too
    b.branch(other)
    b.position_at_end(other)
    b.ret(v)
    return str(m)


def test_names_as_llvmlite_gives_them() -> None:
    assert _module(fast=True) == _module(fast=False)


def test_duplicate_without_deduplication_raises() -> None:
    s = _FastScope()
    s.register("a")
    with pytest.raises(DuplicatedNameError):
        s.register("a")
