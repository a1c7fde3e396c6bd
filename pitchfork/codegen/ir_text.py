"""The text of an llvmlite module, as `str(module)` gives it, with less Python work per instruction;
and the module freed without the cyclic collector once its text is taken (`free_module`).

llvmlite prints a module through each instruction's `descr`, which builds its line from several
`str.format` calls, generator joins and a metadata lookup: on a compile of a few thousand
instructions that printing was ~20-30 ms, a tenth of `pitchfork.compile`'s Python time. `module_text`
gives every instruction of the common kinds its line from one f-string each, stores it in the cache
llvmlite's own `__str__` reads (`_StrCaching`), and then lets llvmlite print the module: the module,
function and block structure, and every instruction of another kind, stay llvmlite's own code.

Invariant: `module_text(m) == str(m)`, character for character. Each fast line is the text the kind's
`descr` writes (the same pieces in the same order, `rstrip`ped as `NamedValue._to_string` does). A
kind is formatted here only when its class uses exactly the `descr` and `_to_string` functions this
module was written against (`_FORMATTERS` is keyed by the function objects), and the first call checks
every formatter against llvmlite's own printing on a small module (`_self_check`): if any line
differs (another llvmlite version), the fast lines are never used and `module_text` is `str(m)`.
tests/pitchfork/codegen/test_ir_text.py compares the two on every benchmark's module.
"""

from __future__ import annotations

from typing import Callable, Optional

from llvmlite import ir
from llvmlite.ir import instructions as _ins
from llvmlite.ir import values as _val

#: the attribute llvmlite's `_StrCaching.__str__` caches an instruction's text in (name-mangled)
_CACHE = "_StrCaching__cached_str"


def _md(i: _ins.Instruction) -> str:
    """`i._stringify_metadata(leading_comma=True)`, without the call where there is no metadata."""
    return i._stringify_metadata(leading_comma=True) if i.metadata else ""


def _generic(i: _ins.Instruction) -> str:  # Instruction.descr: binary operators
    opname = " ".join([i.opname, *i.flags]) if i.flags else i.opname
    ops = ", ".join([op.get_reference() for op in i.operands])
    return f"{opname} {i.type} {ops}{_md(i)}"


def _cast(i: _ins.CastInstr) -> str:
    op = i.operands[0]
    return f"{i.opname} {op.type} {op.get_reference()} to {i.type} {_md(i)}"


def _typed_operands(i: _ins.Instruction) -> str:
    return ", ".join([f"{op.type} {op.get_reference()}" for op in i.operands])


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


#: llvmlite's `descr` function -> the formatter of the same text (without the "%name = " prefix)
_FORMATTERS: dict[Callable[..., None], Callable[..., str]] = {
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
}
_TO_STRING = _val.NamedValue._to_string
#: per instruction class: its formatter, or None (llvmlite prints it)
_by_class: dict[type, Optional[Callable[..., str]]] = {}
#: None until the first call's self-check; then whether the fast lines are used
_checked: list[bool] = []


def _formatter(cls: type) -> Optional[Callable[..., str]]:
    try:
        return _by_class[cls]
    except KeyError:
        f = _FORMATTERS.get(getattr(cls, "descr", None)) if getattr(cls, "_to_string", None) is _TO_STRING else None
        _by_class[cls] = f
        return f


def _line(i: _ins.Instruction, f: Callable[..., str]) -> str:
    body = f(i)
    if isinstance(i.type, ir.VoidType):
        return body.rstrip()
    return f"{i.get_reference()} = {body}".rstrip()


def _fill(module: ir.Module) -> None:
    """Store each instruction's line (of a kind formatted here) where llvmlite's `__str__` reads it."""
    for fn in module.functions:
        for block in fn.blocks:
            for i in block.instructions:
                d = i.__dict__
                if _CACHE in d:
                    continue  # printed before: llvmlite returns that text, so do we
                f = _formatter(type(i))
                if f is not None:
                    d[_CACHE] = _line(i, f)


def _sample() -> ir.Module:
    """A module with every kind formatted here, with and without flags, alignment and metadata."""
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
        return str(m2) == expected
    except Exception:  # noqa: BLE001 - an llvmlite whose API differs: print with llvmlite alone
        return False


def module_text(module: ir.Module) -> str:
    """`str(module)`, character for character (see the module docstring)."""
    if not _checked:
        _checked.append(_self_check())
    if _checked[0]:
        _fill(module)
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
