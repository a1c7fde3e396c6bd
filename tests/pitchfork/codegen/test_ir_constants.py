"""pitchfork/codegen/ir_constants.py: shared constants print exactly as the `ir.Constant`s they replace.

* `undef(t)`: one object per type text (equal types made separately share it; different element types or
  lane counts do not), usable as a shuffle's undef operand in two functions of two modules. A scalar prints
  as `ir.Constant(t, ir.Undefined)` does; a vector prints `<n x T> undef` instead of lane by lane, and LLVM
  parses both spellings to the same module. Code reading constants sees the same lanes in both forms
  (hvx_floats' lanes, hvx_reduce's undef test, lane_order's lane sources).
"""

from __future__ import annotations

import llvmlite.binding as llvm
from llvmlite import ir

from pitchfork.backend.machine import _init_llvm
from pitchfork.codegen.hvx_floats import ScalarFloatBuilder
from pitchfork.codegen.hvx_reduce import _undefined
from pitchfork.codegen.ir_constants import mask, undef
from pitchfork.codegen.lane_order import _period, _sources


def test_undef_is_shared_and_prints_as_a_fresh_undef_constant() -> None:
    types = [ir.VectorType(ir.IntType(8), 256), ir.VectorType(ir.IntType(16), 128), ir.VectorType(ir.IntType(8), 4),
             ir.VectorType(ir.FloatType(), 8), ir.IntType(32)]
    for t in types:
        fresh = ir.Constant(t, ir.Undefined)
        if isinstance(t, ir.VectorType):
            assert str(undef(t)) == f"{t} undef" and undef(t).get_reference() == "undef"
            assert str(fresh) == f"{t} <" + ", ".join([f"{t.element} undef"] * t.count) + ">"
        else:
            assert str(undef(t)) == str(fresh) and undef(t).get_reference() == fresh.get_reference()
        assert undef(ir.VectorType(t.element, t.count) if isinstance(t, ir.VectorType) else ir.IntType(32)) is undef(t)
    assert len({id(undef(t)) for t in types}) == len(types)


def test_one_undef_in_two_modules() -> None:
    t = ir.VectorType(ir.IntType(16), 8)
    texts = []
    for name in ("a", "b"):
        m = ir.Module(name)
        f = ir.Function(m, ir.FunctionType(t, [t]), "f")
        b = ir.IRBuilder(f.append_basic_block("entry"))
        b.ret(b.shuffle_vector(f.args[0], undef(t), mask([1, 0, 3, 2, 5, 4, 7, 6])))
        texts.append(str(m))
    assert all('<8 x i16> %".1", <8 x i16> undef' in text for text in texts)


def _shuffle_module(second: ir.Constant) -> str:
    t = second.type
    m = ir.Module("m")
    f = ir.Function(m, ir.FunctionType(t, [t]), "f")
    b = ir.IRBuilder(f.append_basic_block("entry"))
    v = b.insert_element(second, b.extract_element(f.args[0], ir.Constant(ir.IntType(32), 1)),
                         ir.Constant(ir.IntType(32), 0))
    b.ret(b.shuffle_vector(v, second, mask([0, 0, 9, 3, 4, 12, 6, 7])))
    return str(m)


def test_llvm_parses_both_spellings_of_an_undef_vector_alike() -> None:
    _init_llvm()
    t = ir.VectorType(ir.IntType(16), 8)
    short, long = _shuffle_module(undef(t)), _shuffle_module(ir.Constant(t, ir.Undefined))
    assert short != long and "<8 x i16> undef" in short and "i16 undef, i16 undef" in long
    assert str(llvm.parse_assembly(short)) == str(llvm.parse_assembly(long))


def test_readers_see_the_same_lanes_in_both_forms() -> None:
    for t in (ir.VectorType(ir.IntType(8), 16), ir.VectorType(ir.FloatType(), 4)):
        short, long = undef(t), ir.Constant(t, ir.Undefined)
        # lane_order: an undef vector's lanes are the vector's own (llvmlite's lane tuple is not a list)
        assert [lane for _, lane in _sources(short, 3)] == [lane for _, lane in _sources(long, 3)] \
            == list(range(t.count))
        assert not _period(short, 1) and not _period(long, 1)
        assert _undefined(short) and _undefined(long)
        if isinstance(t.element, ir.FloatType):
            b = ScalarFloatBuilder()
            assert [str(x) for x in b._lanes(short)] == [str(x) for x in b._lanes(long)] == ["float undef"] * 4
