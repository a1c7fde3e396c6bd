"""pitchfork/codegen/ir_constants.py: shared constants print exactly as the `ir.Constant`s they replace.

* `undef(t)`: one object per type text (equal types made separately share it; different element types or
  lane counts do not), printed and referenced as `ir.Constant(t, ir.Undefined)` is, and usable as a
  shuffle's undef operand in two functions of two modules.
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.codegen.ir_constants import mask, undef


def test_undef_is_shared_and_prints_as_a_fresh_undef_constant() -> None:
    types = [ir.VectorType(ir.IntType(8), 256), ir.VectorType(ir.IntType(16), 128), ir.VectorType(ir.IntType(8), 4),
             ir.VectorType(ir.FloatType(), 8), ir.IntType(32)]
    for t in types:
        fresh = ir.Constant(t, ir.Undefined)
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
    fresh = ir.Constant(t, ir.Undefined)
    assert all(f"<8 x i16> %\".1\", {fresh}" in text for text in texts)
