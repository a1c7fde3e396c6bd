"""The text of an llvmlite module, as `str(module)` gives it, with less Python work per instruction;
and the module freed without the cyclic collector once its text is taken (`free_module`).

llvmlite prints a module through each instruction's `descr`, which builds its line from several
`str.format` calls, generator joins and a metadata lookup: on a compile of a few thousand
instructions that printing was ~20-30 ms, a tenth of `pitchfork.compile`'s Python time. `module_text`
gives every instruction of the common kinds (simple calls included: the selected intrinsics) its line
from one f-string each, stores it in the cache llvmlite's own `__str__` reads (`_StrCaching`), and then
prints the module as llvmlite's `Module.__repr__` does, joining each function definition's blocks and
lines itself (`_function_text`; llvmlite's `Block.descr` formats every line again through
`str.format`); prototypes, declarations, globals, metadata and every instruction of another kind stay
llvmlite's own code.

Invariant: `module_text(m) == str(m)`, character for character. Each fast line is the text the kind's
`descr` writes (the same pieces in the same order, `rstrip`ped as `NamedValue._to_string` does). A
kind is formatted here only when its class uses exactly the `descr` and `_to_string` functions this
module was written against (`_FORMATTERS` is keyed by the function objects), and the first call checks
every formatter against llvmlite's own printing on a small module (`_self_check`): if any line
differs (another llvmlite version), the fast lines are never used and `module_text` is `str(m)`. The
module and function structure is joined here only for classes whose printing methods are llvmlite's
own (`_MODULE_METHODS`, `_FUNCTION_METHODS`, `_BLOCK_DESCR`), and the self-check covers it too.
tests/pitchfork/codegen/test_ir_text.py compares the two on every benchmark's module.
"""

from __future__ import annotations

from typing import Callable, Optional

from llvmlite import ir
from llvmlite.ir import instructions as _ins
from llvmlite.ir import values as _val

#: the attribute llvmlite's `_StrCaching.__str__` caches an instruction's text in (name-mangled)
_CACHE = "_StrCaching__cached_str"
#: the attribute `_StringReferenceCaching.get_reference` caches a value's reference in (name-mangled)
_REFERENCE = "_StringReferenceCaching__cached_refstr"


def _md(i: _ins.Instruction) -> str:
    """`i._stringify_metadata(leading_comma=True)`, without the call where there is no metadata."""
    return i._stringify_metadata(leading_comma=True) if i.metadata else ""


def _generic(i: _ins.Instruction) -> str:  # Instruction.descr: binary operators
    opname = " ".join([i.opname, *i.flags]) if i.flags else i.opname
    operands = i.operands
    if len(operands) == 2:  # (every binary operator: its two references without a list and a join)
        a, b = operands
        return f"{opname} {i.type} {a.get_reference()}, {b.get_reference()}{_md(i)}"
    ops = ", ".join([op.get_reference() for op in operands])
    return f"{opname} {i.type} {ops}{_md(i)}"


def _cast(i: _ins.CastInstr) -> str:
    op = i.operands[0]
    return f"{i.opname} {op.type} {op.get_reference()} to {i.type} {_md(i)}"


def _typed_operands(i: _ins.Instruction) -> str:
    ops = i.operands
    n = len(ops)
    if n == 3:  # shufflevector, insertelement, a conditional br: one f-string, no list and join
        a, b, c = ops
        return f"{a.type} {a.get_reference()}, {b.type} {b.get_reference()}, {c.type} {c.get_reference()}"
    if n == 2:  # extractelement
        a, b = ops
        return f"{a.type} {a.get_reference()}, {b.type} {b.get_reference()}"
    return ", ".join([f"{op.type} {op.get_reference()}" for op in ops])


def _shuffle(i: _ins.ShuffleVector) -> str:
    return f"shufflevector {_typed_operands(i)} {_md(i)}"


def _gep(i: _ins.GEPInstr) -> str:
    indices = ", ".join([f"{x.type} {x.get_reference()}" for x in i.indices])
    op = "getelementptr inbounds" if i.inbounds else "getelementptr"
    p = i.pointer
    return f"{op} {i.source_etype}, {p.type} {p.get_reference()}, {indices} {_md(i)}"


def _load(i: _ins.LoadInstr) -> str:
    [v] = i.operands
    align = "" if i.align is None else ", align %d" % (i.align,)
    return f"load {i.type}, {v.type} {v.get_reference()}{align}{_md(i)}"


def _store(i: _ins.StoreInstr) -> str:
    v, p = i.operands
    align = "" if i.align is None else ", align %d" % (i.align,)
    return f"store {v.type} {v.get_reference()}, {p.type} {p.get_reference()}{align}{_md(i)}"


def _compare(i: _ins.CompareInstr) -> str:
    flags = "".join([" " + f for f in i.flags])
    a, b = i.operands[0], i.operands[1]
    return f"{i.opname}{flags} {i.op} {a.type} {a.get_reference()}, {b.get_reference()} {_md(i)}"


def _element(i: _ins.Instruction) -> str:  # InsertElement / ExtractElement (no metadata printed)
    return f"{i.opname} {_typed_operands(i)}"


def _select(i: _ins.SelectInstr) -> str:
    c, a, b = i.cond, i.lhs, i.rhs
    return (f"select {' '.join(i.flags)} {c.type} {c.get_reference()}, {a.type} {a.get_reference()}, "
            f"{b.type} {b.get_reference()} {_md(i)}")


def _terminator(i: _ins.Terminator) -> str:  # br, conditional br, ret ...: Terminator.descr
    return f"{i.opname} {_typed_operands(i)}{_md(i)}"


def _phi(i: _ins.PhiInstr) -> str:
    incs = ", ".join([f"[{v.get_reference()}, {b.get_reference()}]" for v, b in i.incomings])
    return f"phi {' '.join(i.flags)} {i.type} {incs} {_md(i)}"


def _call(i: _ins.CallInstr) -> Optional[str]:  # CallInstr._descr; None: llvmlite prints it
    fnty = i.callee.function_type
    if i.arg_attributes or fnty.var_arg:  # argument attributes, a variadic callee's type: left to llvmlite
        return None
    ret = fnty.return_type
    args = ", ".join([f"{a.type} {a.get_reference()}" for a in i.operands[1:]])
    callee = f"{i.cconv} {ret} {i.callee.get_reference()}" if i.cconv else f"{ret} {i.callee.get_reference()}"
    tail = f"{i.tail} " if i.tail else ""
    fn_attrs = " " + " ".join(i.attributes._to_list(ret)) if i.attributes else ""
    fm_attrs = " " + " ".join(i.fastmath._to_list(ret)) if i.fastmath else ""
    return f"{tail}{i.opname}{fm_attrs} {callee}({args}){fn_attrs}{_md(i)}"


#: llvmlite's `descr` function -> the formatter of the same text (without the "%name = " prefix; None
#: where this instruction is left to llvmlite)
_FORMATTERS: dict[Callable[..., None], Callable[..., Optional[str]]] = {
    _ins.Instruction.descr: _generic,
    _ins.CastInstr.descr: _cast,
    _ins.ShuffleVector.descr: _shuffle,
    _ins.GEPInstr.descr: _gep,
    _ins.LoadInstr.descr: _load,
    _ins.StoreInstr.descr: _store,
    _ins.CompareInstr.descr: _compare,
    _ins.InsertElement.descr: _element,
    _ins.ExtractElement.descr: _element,
    _ins.SelectInstr.descr: _select,
    _ins.Terminator.descr: _terminator,
    _ins.PhiInstr.descr: _phi,
    _ins.CallInstr.descr: _call,
}
_TO_STRING = _val.NamedValue._to_string
_GET_REFERENCE = _val.NamedValue.get_reference
_NAMED_REFERENCE = _val.NamedValue._get_reference
#: per instruction class: whether its reference is llvmlite's cached NamedValue one (`_plain_reference`)
_plain_ref_by_class: dict[type, bool] = {}
#: per instruction class: its formatter, or None (llvmlite prints it)
_by_class: dict[type, Optional[Callable[..., Optional[str]]]] = {}
#: None until the first call's self-check; then whether the fast lines are used
_checked: list[bool] = []


def _formatter(cls: type) -> Optional[Callable[..., Optional[str]]]:
    try:
        return _by_class[cls]
    except KeyError:
        f = _FORMATTERS.get(getattr(cls, "descr", None)) if getattr(cls, "_to_string", None) is _TO_STRING else None
        _by_class[cls] = f
        return f


_NAMED_NAME = _val.NamedValue.name
#: per instruction class: (whether its reference is llvmlite's cached NamedValue one, whether that reference
#: is `%"<name>"` written here (`_fast_reference`), its formatter or None)
_class_info: dict[type, tuple[bool, bool, Optional[Callable[..., Optional[str]]]]] = {}


def _plain_reference(cls: type) -> bool:
    """Whether `cls.get_reference()` is llvmlite's cached `NamedValue._get_reference()` (`_fill` may then
    fill that cache itself)."""
    try:
        return _plain_ref_by_class[cls]
    except KeyError:
        plain = _plain_ref_by_class[cls] = (getattr(cls, "get_reference", None) is _GET_REFERENCE
                                           and getattr(cls, "_get_reference", None) is _NAMED_REFERENCE)
        return plain


def _info(cls: type) -> tuple[bool, bool, Optional[Callable[..., Optional[str]]]]:
    """`_class_info[cls]`, computed at the class's first instruction."""
    plain = _plain_reference(cls)
    fast = plain and getattr(cls, "name_prefix", None) == "%" and getattr(cls, "name", None) is _NAMED_NAME
    info = _class_info[cls] = (plain, fast, _formatter(cls))
    return info


def _fill(module: ir.Module) -> None:
    """Store each instruction's line (of a kind formatted here) where llvmlite's `__str__` reads it.

    Each instruction's reference (`%"name"`) is stored first where llvmlite's `get_reference` caches
    it, computed as that method would (`_get_reference()`): llvmlite finds an empty cache by catching
    an AttributeError, and raising one per instruction (its first reference is when it is printed,
    here) was a third of this function's time (gaussian7x7 arm64, 2,094 instructions: 8.6 -> 5.9 ms
    of thread CPU). The text is the same: the cache holds what `get_reference` would have put there.
    For a class whose reference is `NamedValue._get_reference` with the `%` prefix and the `name`
    property reading `_name` (`_info`), a name without a backslash or a quote (which that method
    escapes) gives `%"name"` here without the method's property read and `str.format` (~1.2 us an
    instruction, a fifth of this function's time on conv3x3a16 arm64)."""
    class_info, void = _class_info, ir.VoidType
    for fn in module.functions:
        for block in fn.blocks:
            for i in block.instructions:
                d = i.__dict__
                if _CACHE in d:
                    continue  # printed before: llvmlite returns that text, so do we
                cls = type(i)
                plain, fast, f = class_info.get(cls) or _info(cls)
                ref = d.get(_REFERENCE) if plain else None  # (another class's get_reference may differ)
                if ref is None and plain:
                    name = d.get("_name") if fast else None
                    if name is not None and "\\" not in name and '"' not in name:
                        ref = d[_REFERENCE] = '%"' + name + '"'
                    else:
                        ref = d[_REFERENCE] = i._get_reference()
                if f is not None:
                    body = f(i)
                    if body is not None:
                        if isinstance(i.type, void):
                            d[_CACHE] = body.rstrip()
                        else:
                            d[_CACHE] = f"{i.get_reference() if ref is None else ref} = {body}".rstrip()


def _sample() -> ir.Module:
    """A module with every kind formatted here, with and without flags, alignment and metadata; calls
    with and without attributes, tail markers, fast-math flags, a calling convention, argument
    attributes and a variadic callee (the last two printed by llvmlite); declarations, a global and
    named metadata beside the definition."""
    m = ir.Module("ir_text_check")
    i8, i32 = ir.IntType(8), ir.IntType(32)
    v4 = ir.VectorType(i32, 4)
    fn = ir.Function(m, ir.FunctionType(ir.VoidType(), [ir.PointerType(i32), i32, v4]), "f")
    p, n, v = fn.args
    entry, loop, done = fn.append_basic_block("entry"), fn.append_basic_block("loop"), fn.append_basic_block("done")
    tail = fn.append_basic_block("tail")
    b = ir.IRBuilder(entry)
    md = m.add_metadata([ir.MetaDataString(m, "x")])
    a = b.add(n, n, flags=("nsw",))
    s = b.sub(a, ir.Constant(i32, 1), name="s")
    s.set_metadata("pf", md)
    t = b.trunc(s, i8)
    b.sext(t, i32).set_metadata("pf", md)
    q = b.gep(p, [n], inbounds=True)
    b.gep(p, [ir.Constant(i32, 2)])
    ld = b.load(q, align=4)
    b.load(q).set_metadata("pf", md)
    b.store(ld, q, align=4)
    b.store(ld, q).set_metadata("pf", md)
    c = b.icmp_signed("<", a, ld)
    b.icmp_unsigned("==", a, ld).set_metadata("pf", md)
    e = b.extract_element(v, ir.Constant(i32, 0))
    w = b.insert_element(v, e, ir.Constant(i32, 1))
    b.shuffle_vector(v, w, ir.Constant(v4, [0, 5, 2, 7]))
    b.select(c, a, ld)
    b.select(c, a, ld).set_metadata("pf", md)
    callee = ir.Function(m, ir.FunctionType(i32, [i32, v4]), "g")
    b.call(callee, [a, v])
    b.call(callee, [a, v], tail=True).set_metadata("pf", md)
    b.call(callee, [a, v], cconv="fastcc", attrs=("nounwind",), arg_attrs={0: ("signext",)})
    fcallee = ir.Function(m, ir.FunctionType(ir.FloatType(), [ir.FloatType()]), "h")
    fcallee.attributes.add("nounwind")
    b.call(fcallee, [ir.Constant(ir.FloatType(), 1.5)], fastmath=("fast",), attrs=("readnone",))
    b.call(ir.Function(m, ir.FunctionType(i32, [i32], var_arg=True), "k"), [a, a])
    b.call(ir.Function(m, ir.FunctionType(ir.VoidType(), []), "u"), [])
    glob = ir.GlobalVariable(m, i32, "gv")
    glob.initializer = ir.Constant(i32, 7)
    m.add_named_metadata("named", [md])
    b.cbranch(c, loop, done)
    b.position_at_end(loop)
    phi = b.phi(i32)
    phi.add_incoming(a, entry)
    phi.add_incoming(ir.Constant(i32, 0), loop)
    z = b.icmp_signed("!=", phi, ir.Constant(i32, 0))
    b.cbranch(z, loop, done).set_weights([1, 2])
    b.position_at_end(done)
    b.branch(tail)
    b.position_at_end(tail)
    b.ret_void()
    return m


def _self_check() -> bool:
    """Whether every formatter gives llvmlite's own text on `_sample()` (a different llvmlite may not)."""
    try:
        m = _sample()
        expected = str(m)
        m2 = _sample()
        _fill(m2)
        return str(m2) == expected and _print(_sample()) == expected and _print(m2) == expected
    except Exception:  # noqa: BLE001 - an llvmlite whose API differs: print with llvmlite alone
        return False


def _function_text(fn: ir.Function) -> str:
    """`str(fn)` of a function definition whose printing is llvmlite's own (`Function.descr`, each
    block's `Block.descr`): the prototype from llvmlite, each block's label and instruction lines
    joined here (an instruction's line is its cached text where it has one, else `str`, which is what
    `Block.descr`'s `"  {0}\n".format(instr)` writes; no llvmlite class defines `__format__`)."""
    buf: list[str] = []
    fn.descr_prototype(buf)
    buf.append("{\n")
    for block in fn.blocks:
        if type(block).descr is not _BLOCK_DESCR:
            block.descr(buf)
            continue
        buf.append(f"{block._format_name()}:\n")
        if block.instructions:  # (one join per block, not two concatenations per line)
            buf += ("  ", "\n  ".join([i.__dict__.get(_CACHE) or str(i) for i in block.instructions]), "\n")
    buf.append("}\n")
    return "".join(buf)


_BLOCK_DESCR = _val.Block.descr
_FUNCTION_METHODS = (_val.Function.__str__, _val.Function.descr, _val.Function.descr_body)


def _global_text(v: object) -> str:
    """`str(v)` of one of a module's globals (function definitions through `_function_text`)."""
    cls = type(v)
    if (isinstance(v, ir.Function) and v.blocks
            and (cls.__str__, cls.descr, cls.descr_body) == _FUNCTION_METHODS):
        return _function_text(v)
    return str(v)


def _module_str(module: ir.Module) -> str:
    """`str(module)` (llvmlite's `Module.__repr__`: header, identified types, globals, metadata), the
    function definitions' text joined by `_function_text`."""
    lines = ['; ModuleID = "%s"' % (module.name,), 'target triple = "%s"' % (module.triple,),
             'target datalayout = "%s"' % (module.data_layout,), '']
    lines += [it.get_declaration() for it in module.get_identified_types().values()]
    lines += [_global_text(v) for v in module.globals.values()]
    lines += module._get_metadata_lines()
    return "\n".join(lines)


_MODULE_METHODS = (object.__str__, ir.Module.__repr__, ir.Module._get_body_lines)


def _print(module: ir.Module) -> str:
    """`str(module)`, through `_module_str` when the module prints as llvmlite's Module does."""
    cls = type(module)
    if (cls.__str__, cls.__repr__, cls._get_body_lines) == _MODULE_METHODS:
        return _module_str(module)
    return str(module)


def module_text(module: ir.Module) -> str:
    """`str(module)`, character for character (see the module docstring)."""
    if not _checked:
        _checked.append(_self_check())
    if _checked[0]:
        _fill(module)
        return _print(module)
    return str(module)


def free_module(module: ir.Module) -> None:
    """Drop the references inside `module` that make its objects cycles (every instruction, block,
    argument, function, global and metadata node points back at its parent; a phi at later
    instructions), so that reference counting frees them as soon as the last outside reference goes.

    Why: `pitchfork.compile` pauses the cyclic collector while it compiles and runs a young collection
    at the end (pitchfork/api.py), and a module of n instructions left as cyclic garbage made that
    collection traverse and then tear down every object of it (a few per instruction): the compile's
    tail (this, the frame's exit, the collection) took 17.7 -> 6.0 ms of thread CPU on gaussian5x5 arm64
    and 75 -> 12 ms on conv3x3a16 (load 5, session 19). Freed here, the same memory is returned during
    the compile, by reference counting, and the collection only sees what survives. Call it once nothing reads the module any more (its text taken: `module_text`); the
    module and its values are unusable afterwards (their attributes are gone)."""
    for g in list(module.globals.values()):
        if isinstance(g, ir.Function):
            for block in g.blocks:
                for i in block.instructions:
                    i.__dict__.clear()
                block.__dict__.clear()
            for a in g.args:
                a.__dict__.clear()
            g.return_value.__dict__.clear()
        g.__dict__.clear()
    for md in module.metadata:
        md.__dict__.clear()
    for nmd in module.namedmetadata.values():
        nmd.__dict__.clear()
    module.__dict__.clear()
