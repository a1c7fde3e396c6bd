"""FastBuilder builds what llvmlite's IRBuilder builds, and rejects what it rejects
(pitchfork/codegen/fast_builder.py)."""

from __future__ import annotations

from typing import Any, Callable

import pytest
from llvmlite import ir

from pitchfork.codegen import fast_builder as fb

I16, I32 = ir.IntType(16), ir.IntType(32)
V8 = ir.VectorType(I16, 8)


def test_self_check_passes_and_fast_builder_is_used() -> None:
    assert fb._self_check()
    fn = ir.Function(ir.Module("m"), ir.FunctionType(ir.VoidType(), []), "f")
    assert isinstance(fb.fast_builder(fn.append_basic_block("entry")), fb.FastBuilder)


def test_sample_objects_equal_llvmlite_s() -> None:
    """Every instruction of the sample: the same class, attribute names, order and values; the same text."""
    ours, theirs = fb._built(fb.FastBuilder), fb._built(ir.IRBuilder)
    assert len(ours) > 20 and ours == theirs


def _function() -> tuple[ir.Function, ir.Block]:
    fn = ir.Function(ir.Module("m"), ir.FunctionType(ir.VoidType(), [V8, V8, I32, I16, ir.PointerType(I16)]), "f")
    return fn, fn.append_basic_block("entry")


BAD_CALLS: list[tuple[str, Callable[[ir.IRBuilder, Any], Any]]] = [
    ("binop of two types", lambda b, a: b.add(a[0], a[2])),
    ("select of two types", lambda b, a: b.select(b.icmp_signed("<", a[2], a[2]), a[2], a[3])),
    ("unknown comparison", lambda b, a: b.icmp_signed("<>", a[2], a[2])),
    ("shuffle of a scalar", lambda b, a: b.shuffle_vector(a[2], a[2], ir.Constant(ir.VectorType(I32, 2), [0, 1]))),
    ("shuffle of two types", lambda b, a: b.shuffle_vector(a[0], ir.Constant(ir.VectorType(I32, 8), None),
                                                          ir.Constant(ir.VectorType(I32, 2), [0, 1]))),
    ("shuffle mask out of range", lambda b, a: b.shuffle_vector(a[0], a[1], ir.Constant(ir.VectorType(I32, 2),
                                                                                       [0, 16]))),
    ("shuffle mask not i32", lambda b, a: b.shuffle_vector(a[0], a[1], ir.Constant(ir.VectorType(I16, 2), [0, 1]))),
    ("extract from a scalar", lambda b, a: b.extract_element(a[2], a[2])),
    ("extract at a vector index", lambda b, a: b.extract_element(a[0], a[1])),
    ("insert of the wrong element type", lambda b, a: b.insert_element(a[0], a[2], a[2])),
    ("load from a scalar", lambda b, a: b.load(a[2])),
    ("store of the wrong type", lambda b, a: b.store(a[2], a[4])),
    ("store to a scalar", lambda b, a: b.store(a[2], a[2])),
    ("gep at a vector index", lambda b, a: b.gep(a[4], [a[0]])),
    ("call with an argument of another type", lambda b, a: b.call(_callee(a), [a[3]])),
    ("call with too few arguments", lambda b, a: b.call(_callee(a), [])),
    ("call with an unknown attribute", lambda b, a: b.call(_callee(a), [a[2]], attrs=("fast",))),
]


def _callee(args: Any) -> ir.Function:
    """`i32 g(i32)` in the module of the function whose arguments are `args`."""
    m = args[0].parent.module
    return m.globals.get("g") or ir.Function(m, ir.FunctionType(I32, [I32]), "g")


@pytest.mark.parametrize("what,call", BAD_CALLS, ids=[w for w, _ in BAD_CALLS])
def test_rejects_what_llvmlite_rejects(what: str, call: Callable[[ir.IRBuilder, Any], Any]) -> None:
    errors = []
    for builder in (fb.FastBuilder, ir.IRBuilder):
        fn, block = _function()
        with pytest.raises((TypeError, ValueError, IndexError, AssertionError)) as e:
            call(builder(block), fn.args)
        errors.append((type(e.value), str(e.value)))
        assert block.instructions == [] or what == "select of two types"  # (its compare was built first)
    assert errors[0] == errors[1]


def test_cast_to_the_same_type_is_the_value() -> None:
    fn, block = _function()
    b = fb.FastBuilder(block)
    assert b.bitcast(fn.args[0], V8) is fn.args[0] and b.zext(fn.args[3], I16) is fn.args[3]
    assert block.instructions == []


def test_inserts_at_the_builder_position() -> None:
    """position_before / position_at_start: the fast paths insert where llvmlite's `_insert` does."""
    texts = []
    for builder in (fb.FastBuilder, ir.IRBuilder):
        fn, block = _function()
        b = builder(block)
        last = b.add(fn.args[2], fn.args[2], name="last")
        b.position_before(last)
        b.sub(fn.args[2], fn.args[2], name="before")
        b.position_at_start(block)
        b.trunc(fn.args[2], I16, name="first")
        texts.append(str(fn))
    assert texts[0] == texts[1]
    assert texts[0].index('"first"') < texts[0].index('"before"') < texts[0].index('"last"')
