"""pitchfork.codegen.ir_text: `module_text(m)` is `str(m)` character for character (what LLVM parses,
so every compile's IR is the same as with llvmlite's own printing), on a module of every kind it
formats and on the modules `pitchfork.compile` builds for benchmarks on each ISA; a formatter that
disagrees with llvmlite turns the fast lines off, and a class with its own `descr` is printed by
llvmlite."""

from __future__ import annotations

from typing import Any

import pytest
from llvmlite import ir

import pitchfork
import pitchfork.api as api
from pitchfork.codegen import ir_text


def _clear(module: ir.Module) -> None:
    """Forget every instruction's printed line and its reference (which `module_text` stores where
    llvmlite caches it), so the next print formats both again, through llvmlite's own code."""
    for fn in module.functions:
        for block in fn.blocks:
            for i in block.instructions:
                i.__dict__.pop(ir_text._CACHE, None)
                i.__dict__.pop(ir_text._REFERENCE, None)


def _instructions(module: ir.Module) -> list[ir.Instruction]:
    return [i for fn in module.functions for block in fn.blocks for i in block.instructions]


def test_sample_module_same_text() -> None:
    assert ir_text._self_check()
    m = ir_text._sample()
    expected = str(m)
    _clear(m)
    assert ir_text.module_text(m) == expected
    # every instruction but `ret void` (Ret has its own descr) got its line from a formatter here
    kinds = {type(i).__name__ for i in _instructions(ir_text._sample()) if ir_text._formatter(type(i)) is not None}
    assert kinds >= {"Instruction", "CastInstr", "ShuffleVector", "GEPInstr", "LoadInstr", "StoreInstr", "ICMPInstr",
                     "InsertElement", "ExtractElement", "SelectInstr", "ConditionalBranch", "Branch", "PhiInstr",
                     "CallInstr"}


def test_calls_with_argument_attributes_or_a_variadic_callee_are_printed_by_llvmlite() -> None:
    """_fill caches the line of every simple call, and leaves the two forms `_call` declines to llvmlite."""
    m = ir_text._sample()
    ir_text._fill(m)
    calls = [i for i in _instructions(m) if isinstance(i, ir.CallInstr)]
    declined = [i for i in calls if i.arg_attributes or i.callee.function_type.var_arg]
    assert len(calls) == 6 and len(declined) == 2
    assert all((ir_text._CACHE in i.__dict__) == (i not in declined) for i in calls)
    expected = str(ir_text._sample())
    assert str(m) == expected and ir_text.module_text(m) == expected


def test_module_text_joins_function_bodies_as_llvmlite() -> None:
    """The module printed by `_module_str` (function definitions joined in ir_text) is llvmlite's text,
    with and without the instructions' lines cached; a function class with its own printing is llvmlite's."""
    m = ir_text._sample()
    expected = str(m)
    assert ir_text._module_str(ir_text._sample()) == expected
    ir_text._fill(m)
    assert ir_text._module_str(m) == expected

    class Own(ir.Function):
        def descr_body(self, buf: list[str]) -> None:
            buf.append("  unreachable\n")

    m2 = ir.Module("own")
    f = Own(m2, ir.FunctionType(ir.VoidType(), []), "f")
    ir.IRBuilder(f.append_basic_block("entry")).ret_void()
    assert "unreachable" in str(m2)
    assert ir_text.module_text(m2) == str(m2)


def test_a_differing_formatter_turns_the_fast_lines_off(monkeypatch: pytest.MonkeyPatch) -> None:
    cast = ir_text._FORMATTERS[ir.CastInstr.descr]
    monkeypatch.setitem(ir_text._FORMATTERS, ir.CastInstr.descr, lambda i: cast(i).replace(" to ", " to  "))  # a blank more
    monkeypatch.setattr(ir_text, "_by_class", {})
    monkeypatch.setattr(ir_text, "_class_info", {})
    monkeypatch.setattr(ir_text, "_checked", [])
    assert not ir_text._self_check()
    m = ir_text._sample()
    assert ir_text.module_text(m) == str(m)
    assert ir_text._checked == [False]
    # no line is formatted here any more: every line is llvmlite's
    def no_fill(module: ir.Module) -> None:
        raise AssertionError("formatted by ir_text after a failed self-check")

    monkeypatch.setattr(ir_text, "_fill", no_fill)
    _clear(m)
    assert ir_text.module_text(m) == str(m)


def test_a_class_with_its_own_descr_is_printed_by_llvmlite() -> None:
    class Marked(ir.CastInstr):
        def descr(self, buf: list[str]) -> None:
            buf.append("freeze i32 0\n")

    class Plain(ir.CastInstr):
        pass

    assert ir_text._formatter(Marked) is None
    assert ir_text._formatter(Plain) is ir_text._cast


BENCHES = [("add", "x86-avx2"), ("gaussian3x3", "arm64"), ("softmax", "arm64"), ("sobel3x3", "hvx128"),
           ("average_pool", "hvx128"), ("camera_pipe", "x86-avx2"), ("fully_connected", "arm64")]


@pytest.mark.parametrize("bench,isa", BENCHES)
def test_benchmark_modules_same_text(bench: str, isa: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.common import HALIDE_TARGETS
    from benchmarks.registry import get

    seen: list[tuple[str, str]] = []

    def checked(module: ir.Module) -> str:
        fast = ir_text.module_text(module)
        _clear(module)
        seen.append((fast, str(module)))  # llvmlite's own printing of every line
        return fast

    monkeypatch.setattr(api, "module_text", checked)
    b = get(bench)
    out, args = b.build(isa, b.param_sets[0])
    prog: Any = pitchfork.compile(out, args, target=HALIDE_TARGETS[isa], name=bench, fallback=False)
    assert prog.module is not None
    assert len(seen) == 1
    fast, slow = seen[0]
    assert fast == slow
    assert prog.module.source_ir == fast


def test_free_module_leaves_no_cycles() -> None:
    """After free_module, reference counting alone frees the whole module (the cyclic collector off):
    every instruction, block, argument, function, the return value, metadata and the module."""
    import gc
    import weakref

    m = ir_text._sample()
    fn = m.get_global("f")
    objs: list[Any] = [m, fn, fn.return_value, *fn.args, *fn.blocks, *m.metadata]
    objs += [i for block in fn.blocks for i in block.instructions]
    refs = [weakref.ref(o) for o in objs]
    ir_text.module_text(m)
    was = gc.isenabled()
    gc.disable()
    try:
        # without free_module the module is a cycle: dropping it frees nothing
        m2 = ir_text._sample()
        r2 = weakref.ref(m2)
        del m2
        assert r2() is not None
        ir_text.free_module(m)
        del m, fn, objs
        assert [r for r in refs if r() is not None] == []
    finally:
        if was:
            gc.enable()
        gc.collect()


def test_names_llvmlite_escapes_keep_llvmlites_reference() -> None:
    """`_fill` writes `%"name"` itself only for names `NamedValue._get_reference` does not escape: a name
    with a quote or a backslash, and the deduplicated unnamed values beside them, print as llvmlite does."""
    m = ir.Module("escapes")
    i32 = ir.IntType(32)
    fn = ir.Function(m, ir.FunctionType(i32, [i32]), "f")
    b = ir.IRBuilder(fn.append_basic_block("entry"))
    (x,) = fn.args
    a = b.add(x, x, name='q"uote')
    c = b.mul(a, x, name="back\\slash")
    d = b.sub(c, a)
    b.ret(b.add(d, d, name="plain"))
    expected = str(m)
    _clear(m)
    assert ir_text.module_text(m) == expected
    assert '%"q\\22uote"' in expected and '%"back\\5cslash"' in expected
