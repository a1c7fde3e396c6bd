"""An llvmlite `IRBuilder` whose most frequent instructions are built with less Python work each.

llvmlite builds an instruction through a chain of calls: the builder method (a `functools.wraps`
wrapper for binary operators and casts), the instruction class's `__init__`, `Instruction.__init__`,
`NamedValue.__init__` (two asserts, the `name` property's setter, the scope's `register`), then
`IRBuilder._insert`; a binary operator compares its operand types through `Type.__ne__` and `__eq__`,
and a shuffle checks every mask lane through a generator. On an arm64 compile of a few thousand
instructions that chain is a tenth of the codegen's Python time. `FastBuilder` builds the instructions of the
kinds codegen emits most (integer binary operators, casts, `select`, integer compares, `shufflevector`,
`extractelement`, `insertelement`; `load`, `store` and one-index `getelementptr` through a typed pointer;
a plain `call` of a function) by filling the new object's attributes in one step: the same
class, the same attributes in the same order, with the same values (the same operand container kind:
llvmlite keeps a binary operator's operands as a tuple and the others' as lists), the name registered
by the same scope call, the object inserted where `_insert` puts it. Every other builder method is
llvmlite's own.

Invariant: the module a `FastBuilder` builds is the module llvmlite's `IRBuilder` builds from the same
calls, object for object (so its text, every later reader of `opname`/`operands`, `replace_usage` and
`set_metadata` see no difference), and every call llvmlite rejects is rejected with llvmlite's own error
(the fast paths check what llvmlite's constructors check, and an operand that fails a check is handed
to llvmlite's method, which raises). The fast paths are used only when the first builder's
self-check (`_self_check`: a sample built both ways, every instruction's class, attribute names,
order and values compared, and the module's text) passes; otherwise `fast_builder` returns llvmlite's
`IRBuilder`.
tests/pitchfork/codegen/test_fast_builder.py checks both.
"""

from __future__ import annotations

from typing import Any, Callable, Optional, Sequence

from llvmlite import ir
from llvmlite.ir import builder as _bld
from llvmlite.ir import instructions as _ins
from llvmlite.ir import types as _ty
from llvmlite.ir import values as _val

_Instruction = _ins.Instruction
_CastInstr = _ins.CastInstr
_SelectInstr = _ins.SelectInstr
_ICMPInstr = _ins.ICMPInstr
_ShuffleVector = _ins.ShuffleVector
_ExtractElement = _ins.ExtractElement
_InsertElement = _ins.InsertElement
_LoadInstr = _ins.LoadInstr
_StoreInstr = _ins.StoreInstr
_GEPInstr = _ins.GEPInstr
_CallInstr = _ins.CallInstr
_FastMathFlags = _ins.FastMathFlags
_CallInstrAttributes = _ins.CallInstrAttributes
_Function = _val.Function
_MetaDataType = _ty.MetaDataType
_TypedPointerType = _ty._TypedPointerType
_PointerType = _ty.PointerType
_VoidType = _ty.VoidType
_VectorType = _ty.VectorType
_IntType = _ty.IntType
_Constant = _val.Constant
_Undefined = _val.Undefined
_new = object.__new__
#: a store's type (llvmlite makes one per store; a type is a value, so one object serves them all and
#: its text is formatted once)
_VOID = _VoidType()
#: llvmlite's comparison spellings (`IRBuilder._icmp` reads the same table)
_CMP_MAP: dict[str, str] = dict(_bld._CMP_MAP)


def _named(cls: type, block: ir.Block, typ: ir.Type, opname: str, operands: Any, name: str,
           flags: list[str]) -> Any:
    """A `cls` instruction with the attributes `Instruction.__init__` gives it (`parent`, `type`,
    `_name` registered in the block's scope, `opname`, `operands`, `flags`, `metadata`), in that order."""
    i = _new(cls)
    i.__dict__.update(parent=block, type=typ, _name=block.scope.register(name, deduplicate=True),
                      opname=opname, operands=operands, flags=flags, metadata={})
    return i


#: opname -> the IRBuilder method of that binary operator
_BINOP_METHODS = {"add": "add", "sub": "sub", "mul": "mul", "and": "and_", "or": "or_", "xor": "xor",
                  "shl": "shl", "lshr": "lshr", "ashr": "ashr"}


def _binop_method(opname: str) -> Callable[..., Any]:
    """The `IRBuilder` method of the integer binary operator `opname` (`FastBuilder._binop`)."""
    def method(self: FastBuilder, lhs: ir.Value, rhs: ir.Value, name: str = "", flags: Sequence[str] = ()) -> Any:
        return self._binop(opname, lhs, rhs, name, flags)
    method.__name__ = _BINOP_METHODS[opname]
    return method


def _cast_method(opname: str) -> Callable[..., Any]:
    """The `IRBuilder` method of the cast `opname` (`FastBuilder._cast`)."""
    def method(self: FastBuilder, val: ir.Value, typ: ir.Type, name: str = "") -> Any:
        return self._cast(opname, val, typ, name)
    method.__name__ = opname
    return method


def _no_attributes(names: Any) -> bool:
    """Whether `names` is an empty tuple or list (llvmlite's attribute sets then start empty)."""
    return type(names) in (tuple, list) and not names


class FastBuilder(ir.IRBuilder):
    """`ir.IRBuilder` with the frequent instruction kinds built in one step (see the module docstring).
    Built only through `fast_builder`, which checks that the fast paths give llvmlite's objects."""

    def _put(self, instr: Any) -> Any:
        """`IRBuilder._insert`: at the anchor of the current block (debug metadata: llvmlite's own)."""
        if self.debug_metadata is not None:
            self._insert(instr)
            return instr
        self._block.instructions.insert(self._anchor, instr)
        self._anchor += 1
        return instr

    # ---- integer binary operators (llvmlite's `_binop` wrapper: operands of one type, kept as a tuple)
    def _binop(self, opname: str, lhs: ir.Value, rhs: ir.Value, name: str, flags: Sequence[str]) -> Any:
        t = lhs.type
        if t is not rhs.type and t != rhs.type:
            return getattr(ir.IRBuilder, _BINOP_METHODS[opname])(self, lhs, rhs, name, flags)  # raises
        return self._put(_named(_Instruction, self._block, t, opname, (lhs, rhs), name, list(flags)))

    add, sub, mul = _binop_method("add"), _binop_method("sub"), _binop_method("mul")
    and_, or_, xor = _binop_method("and"), _binop_method("or"), _binop_method("xor")
    shl, lshr, ashr = _binop_method("shl"), _binop_method("lshr"), _binop_method("ashr")

    # ---- casts (llvmlite's `_castop` wrapper: a value already of the type is returned as it is)
    def _cast(self, opname: str, val: ir.Value, typ: ir.Type, name: str) -> Any:
        if val.type == typ:
            return val
        return self._put(_named(_CastInstr, self._block, typ, opname, [val], name, []))

    bitcast, trunc = _cast_method("bitcast"), _cast_method("trunc")
    zext, sext = _cast_method("zext"), _cast_method("sext")

    # ---- the rest
    def select(self, cond: ir.Value, lhs: ir.Value, rhs: ir.Value, name: str = "",
               flags: Sequence[str] = ()) -> Any:
        t = lhs.type
        if t is not rhs.type and t != rhs.type:
            return ir.IRBuilder.select(self, cond, lhs, rhs, name, flags)  # llvmlite's assertion
        return self._put(_named(_SelectInstr, self._block, t, "select", [cond, lhs, rhs], name, list(flags)))

    def _icmp(self, prefix: str, cmpop: str, lhs: ir.Value, rhs: ir.Value, name: str) -> Any:
        op = _CMP_MAP.get(cmpop)
        if op is None:
            return ir.IRBuilder._icmp(self, prefix, cmpop, lhs, rhs, name)  # llvmlite's ValueError
        if cmpop != "==" and cmpop != "!=":
            op = prefix + op
        if op not in _ICMPInstr.VALID_OP:
            return ir.IRBuilder._icmp(self, prefix, cmpop, lhs, rhs, name)
        lt = lhs.type
        typ = _VectorType(_IntType(1), lt.count) if isinstance(lt, _VectorType) else _IntType(1)
        i = _named(_ICMPInstr, self._block, typ, "icmp", [lhs, rhs], name, [])
        i.__dict__["op"] = op
        return self._put(i)

    def shuffle_vector(self, vector1: ir.Value, vector2: ir.Value, mask: ir.Constant, name: str = "") -> Any:
        t1 = vector1.type
        mt = mask.type
        undef = vector2 == _Undefined
        if (not isinstance(t1, _VectorType) or (not undef and vector2.type != t1) or type(mask) is not _Constant
                or type(mt) is not _VectorType or type(mt.element) is not _IntType or mt.element.width != 32):
            return ir.IRBuilder.shuffle_vector(self, vector1, vector2, mask, name)  # llvmlite's errors
        index_range = range(t1.count if undef else 2 * t1.count)
        if not all(map(index_range.__contains__, [c.constant for c in mask.constant])):
            return ir.IRBuilder.shuffle_vector(self, vector1, vector2, mask, name)  # llvmlite's IndexError
        typ = _VectorType(t1.element, mt.count)
        return self._put(_named(_ShuffleVector, self._block, typ, "shufflevector", [vector1, vector2, mask],
                                name, []))

    def extract_element(self, vector: ir.Value, idx: ir.Value, name: str = "") -> Any:
        vt = vector.type
        if not (isinstance(vt, _VectorType) and isinstance(idx.type, _IntType)):
            return ir.IRBuilder.extract_element(self, vector, idx, name)  # llvmlite's TypeError
        return self._put(_named(_ExtractElement, self._block, vt.element, "extractelement", [vector, idx], name, []))

    def insert_element(self, vector: ir.Value, value: ir.Value, idx: ir.Value, name: str = "") -> Any:
        vt = vector.type
        if not (isinstance(vt, _VectorType) and value.type == vt.element and isinstance(idx.type, _IntType)):
            return ir.IRBuilder.insert_element(self, vector, value, idx, name)  # llvmlite's TypeError
        return self._put(_named(_InsertElement, self._block, vt, "insertelement", [vector, value, idx], name, []))

    # ---- calls (llvmlite's `CallInstr`: no fast-math flags, attributes or argument attributes)
    def call(self, fn: ir.Value, args: Sequence[ir.Value], name: str = "", cconv: Optional[str] = None,
             tail: Any = False, fastmath: Any = (), attrs: Any = (), arg_attrs: Any = None) -> Any:
        """A plain call of a `Function` with arguments of its parameter types; anything else (flags,
        attributes, a tail marker's name, a variadic or metadata parameter, a mismatching argument) is
        llvmlite's own `call`, which checks it."""
        if (type(fn) is not _Function or not _no_attributes(fastmath) or not _no_attributes(attrs) or arg_attrs
                or isinstance(tail, str)):
            return ir.IRBuilder.call(self, fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        fnty = fn.function_type
        if fnty.var_arg or len(args) != len(fnty.args):
            return ir.IRBuilder.call(self, fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        for a, t in zip(args, fnty.args):
            at = a.type
            if (at is not t and at != t) or isinstance(t, _MetaDataType):
                return ir.IRBuilder.call(self, fn, args, name, cconv, tail, fastmath, attrs, arg_attrs)
        block = self._block
        i = _new(_CallInstr)
        # CallInstr.__init__'s attributes, then Instruction.__init__'s, in their order
        i.__dict__.update(cconv=fn.calling_convention if cconv is None else cconv, tail="tail" if tail else "",
                          fastmath=_FastMathFlags(), attributes=_CallInstrAttributes(), arg_attributes={},
                          parent=block, type=fnty.return_type,
                          _name=block.scope.register(name, deduplicate=True), opname="call",
                          operands=[fn, *args], flags=[], metadata={})
        return self._put(i)

    # ---- memory, through a typed pointer (llvmlite's element type: its pointee)
    def load(self, ptr: ir.Value, name: str = "", align: Optional[int] = None, typ: Optional[ir.Type] = None) -> Any:
        pt = ptr.type
        if typ is not None or type(pt) is not _TypedPointerType or pt.is_opaque or isinstance(ptr, _ins.AllocaInstr):
            return ir.IRBuilder.load(self, ptr, name, align, typ)
        i = _named(_LoadInstr, self._block, pt.pointee, "load", [ptr], name, [])
        i.__dict__["align"] = align  # LoadInstr's None, then the builder's value: one attribute, last
        return self._put(i)

    def store(self, value: ir.Value, ptr: ir.Value, align: Optional[int] = None) -> Any:
        pt = ptr.type
        if type(pt) is not _TypedPointerType or pt.is_opaque or pt.pointee != value.type:
            return ir.IRBuilder.store(self, value, ptr, align)  # (llvmlite's TypeError on mismatching types)
        i = _named(_StoreInstr, self._block, _VOID, "store", [value, ptr], "", [])
        i.__dict__["align"] = align
        return self._put(i)

    def gep(self, ptr: ir.Value, indices: Any, inbounds: bool = False, name: str = "",
            source_etype: Optional[ir.Type] = None) -> Any:
        """One index into a typed pointer to a non-pointer: the result has the pointer's type."""
        pt = ptr.type
        if (source_etype is not None or type(pt) is not _TypedPointerType or pt.is_opaque or len(indices) != 1
                or not isinstance(indices[0].type, _IntType) or isinstance(pt.pointee, _PointerType)):
            return ir.IRBuilder.gep(self, ptr, indices, inbounds, name, source_etype)
        i = _new(_GEPInstr)
        i.__dict__.update(source_etype=pt.pointee, parent=self._block, type=pt,
                          _name=self._block.scope.register(name, deduplicate=True), opname="getelementptr",
                          operands=[ptr, *indices], flags=[], metadata={}, pointer=ptr, indices=indices,
                          inbounds=inbounds)
        return self._put(i)



def _sample(b: ir.IRBuilder, fn: ir.Function) -> None:
    """Every fast path, named and unnamed, with flags, scalars and vectors, and a cast to the same type."""
    i8, i16, i32 = ir.IntType(8), ir.IntType(16), ir.IntType(32)
    v8, v4 = ir.VectorType(i16, 8), ir.VectorType(i32, 4)
    x, y, s, t = fn.args
    a = b.add(x, y, flags=("nsw",))
    for m in ("sub", "mul", "and_", "or_", "xor", "shl", "lshr", "ashr"):
        a = getattr(b, m)(a, y, name="v")
    b.add(s, t, name="s")
    w = b.bitcast(a, v4)
    b.bitcast(w, v4)
    n = b.trunc(s, i8, name="n")
    b.zext(n, i16)
    b.sext(n, i32, name="n")
    c = b.icmp_signed("<", x, y)
    b.icmp_unsigned(">=", s, t, name="c")
    b.icmp_signed("==", s, t)
    b.icmp_unsigned("!=", x, y)
    b.select(c, x, y, name="sel")
    b.select(b.icmp_signed("<=", s, t), s, t, flags=("nnan",))
    b.shuffle_vector(x, y, ir.Constant(ir.VectorType(i32, 4), [0, 9, 2, 15]))
    b.shuffle_vector(x, ir.Constant(v8, ir.Undefined), ir.Constant(ir.VectorType(i32, 2), [7, 0]), name="sh")
    e = b.extract_element(w, ir.Constant(i32, 1), name="e")
    b.insert_element(w, e, ir.Constant(i32, 3))
    p = b.bitcast(b.alloca(v4), ir.PointerType(i32), name="p")  # a typed pointer (and an alloca: llvmlite's)
    q = b.gep(p, [s], inbounds=True)
    b.gep(p, (ir.Constant(i32, 2),), name="q")
    b.gep(b.alloca(ir.ArrayType(i32, 4)), [ir.Constant(i32, 0), s])  # two indices: llvmlite's
    ld = b.load(q, align=4)
    b.load(p, name="ld")
    b.store(ld, q, align=4)
    b.store(s, p)
    m = fn.module
    g = ir.Function(m, ir.FunctionType(i32, [i32, v4]), "g")
    h = ir.Function(m, ir.FunctionType(ir.VoidType(), []), "h")
    h.calling_convention = "fastcc"
    b.call(g, [s, w], name="r")
    b.call(g, (t, w), tail=True)
    b.call(h, [])
    b.call(h, [], cconv="ccc", tail=False)
    b.call(g, [s, w], fastmath=["fast"], attrs=("nounwind",))  # llvmlite's


def _shape(v: Any, names: dict[int, str]) -> Any:
    """A value of an instruction's attribute, comparable across two modules: instructions, blocks
    and arguments by their position, containers by kind and contents, the rest as they print."""
    if id(v) in names:
        return names[id(v)]
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, [_shape(x, names) for x in v])
    if isinstance(v, dict):
        return ("dict", sorted((k, str(x)) for k, x in v.items()))
    return (type(v).__name__, str(v))


def _built(builder: type) -> list[Any]:
    """`_sample` through `builder`: per instruction its class and its attributes' names and shapes."""
    m = ir.Module("fast_builder_check")
    i16 = ir.IntType(16)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.VectorType(i16, 8)] * 2 + [ir.IntType(32)] * 2), "f")
    block = fn.append_basic_block("entry")
    b = builder(block)
    _sample(b, fn)
    b.position_at_start(block)
    b.add(fn.args[2], fn.args[3], name="first")  # inserted before the others
    names: dict[int, str] = {id(block): "block", **{id(a): f"arg{k}" for k, a in enumerate(fn.args)}}
    names.update({id(i): f"i{k}" for k, i in enumerate(block.instructions)})
    return [(type(i), [(k, _shape(v, names)) for k, v in i.__dict__.items()]) for i in block.instructions] + [str(m)]


#: None until the first `fast_builder`; then whether FastBuilder passed its checks
_checked: list[bool] = []


def _self_check() -> bool:
    """Whether `FastBuilder` builds the sample exactly as `IRBuilder` does (another llvmlite may not)."""
    try:
        return _built(FastBuilder) == _built(ir.IRBuilder)
    except Exception:  # noqa: BLE001 - an llvmlite whose API differs: its own builder
        return False


def fast_builder(block: Optional[ir.Block] = None) -> ir.IRBuilder:
    """A `FastBuilder` at the end of `block`, or llvmlite's `IRBuilder` if the fast paths' checks fail."""
    if not _checked:
        _checked.append(_self_check())
    return FastBuilder(block) if _checked[0] else ir.IRBuilder(block)

