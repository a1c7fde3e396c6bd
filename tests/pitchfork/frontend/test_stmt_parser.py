"""Parsing Halide statement text into the typed loop-nest AST (no Halide compiles: golden files)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest

from pitchfork.frontend import ir
from pitchfork.frontend.htypes import INT32, Bool, Float, HType, Int, UInt
from pitchfork.frontend.printer import to_text
from pitchfork.frontend.stmt import HalideParseError, HalideTypeError, parse_expr, parse_stmt

DATA = Path(__file__).with_name("data")
INDEX: dict[str, dict] = json.loads((DATA / "captures.json").read_text())
SOBEL_LANES = {"x86-avx2": 32, "arm64": 16, "hvx128": 256}


def golden_text(name: str) -> str:
    return (DATA / f"{name}.stmt").read_text()


@cache
def parse_golden(name: str, *, with_buffers: bool = True) -> ir.Stmt:
    buffers = {k: HType.parse(v) for k, v in INDEX[name]["buffers"].items()} if with_buffers else None
    return parse_stmt(golden_text(name), buffers=buffers)


def exprs(node: ir.Node) -> list[ir.Expr]:
    return [n for n in ir.walk(node) if isinstance(n, ir.Expr)]


def calls(node: ir.Node, name: str) -> list[ir.Call]:
    return [n for n in ir.walk(node) if isinstance(n, ir.Call) and n.name == name]


def loop(stmt: ir.Stmt, prefix: str) -> ir.For:
    """The innermost loop whose name starts with `prefix`."""
    found = [f for f in ir.innermost_loops(stmt) if f.name.startswith(prefix)]
    assert found, f"no innermost loop {prefix}*"
    return found[0]


# ---- every golden statement ------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(INDEX))
def test_golden_parses_and_every_vector_node_is_consistently_typed(name: str) -> None:
    stmt = parse_golden(name)
    for e in exprs(stmt):
        assert isinstance(e.type, HType) and e.type.lanes >= 1
        match e:
            case ir.Ramp(base=b, count=n):
                assert e.lanes == b.lanes * n and e.elem == b.elem
            case ir.Broadcast(value=v, count=n):
                assert e.lanes == v.lanes * n and e.elem == v.elem
            case ir.Load(index=i):
                assert e.lanes == i.lanes and i.elem == INT32
            case ir.BinOp(op=op, a=a, b=b):
                assert a.type == b.type
                assert e.type == (Bool(a.lanes) if op in ir.CMP_OPS else a.type)
            case ir.Cast(value=v):
                assert e.lanes == v.lanes
    for s in ir.stores(stmt):
        assert s.value.lanes == s.index.lanes


@pytest.mark.parametrize("name", sorted(INDEX))
def test_golden_needs_no_buffer_types_for_assert_checked_buffers(name: str) -> None:
    """Halide checks `b.type == (uint32)N` for each buffer argument; the parser reads the type there."""
    assert parse_golden(name, with_buffers=False) == parse_golden(name)


@pytest.mark.parametrize("name", sorted(INDEX))
def test_printing_reproduces_halides_text(name: str) -> None:
    text = golden_text(name)
    stmt = parse_stmt(text)
    printed = to_text(stmt)
    assert parse_stmt(printed) == stmt
    for theirs, ours in zip(text.splitlines(), printed.splitlines(), strict=True):
        if theirs.lstrip().startswith("allocate ") and " + " in theirs:
            continue  # padded allocation: `(a * b + pad)` is kept as one extent expression
        assert theirs.rstrip() == ours


# ---- the paper's Sobel -------------------------------------------------------------------------


@pytest.mark.parametrize("isa", sorted(SOBEL_LANES))
def test_sobel_inner_loop(isa: str) -> None:
    lanes = SOBEL_LANES[isa]
    stmt = parse_golden(f"sobel_{isa}")
    assert INDEX[f"sobel_{isa}"]["target"].startswith(
        {"x86-avx2": "x86", "arm64": "arm", "hvx128": "hexagon"}[isa]
    )
    inner = loop(stmt, "sobel.s0.x")
    assert inner.kind == "serial" and inner.min == ir.IntImm(0, INT32)
    stores = ir.stores(inner)
    assert len(stores) == 4  # the 4 unrolled rows of the tile
    u8v, u16v = UInt(8, lanes), UInt(16, lanes)
    for st in stores:
        assert st.buffer == "sobel" and isinstance(st.index, ir.Ramp) and st.index.count == lanes
        value = st.value
        assert value.type == u8v
        # uint8xV(min(absd(..) + absd(..), xV((uint16)255)))
        assert isinstance(value, ir.Cast) and isinstance(value.value, ir.BinOp) and value.value.op == "min"
        total, cap = value.value.a, value.value.b
        assert cap == ir.Broadcast(ir.IntImm(255, UInt(16)), lanes, u16v)
        assert isinstance(total, ir.BinOp) and total.op == "+"
        assert [type(x) for x in (total.a, total.b)] == [ir.Call, ir.Call]
        assert len(calls(value, "absd")) == 2 and all(c.type == u16v for c in calls(value, "absd"))
        loads = ir.loads(value)
        assert loads and all(ld.buffer == "repeat_edge" and ld.type == u8v for ld in loads)
        vector_vars = [n for n in ir.walk(value) if isinstance(n, ir.Variable) and n.lanes > 1]
        assert vector_vars and all(
            v.name.endswith(".s") and v.type == u8v for v in vector_vars
        )  # CSE'd loads
    lets = [n for n in ir.walk(inner) if isinstance(n, ir.LetStmt) and n.name.endswith(".s")]
    assert lets and all(isinstance(n.value, ir.Load) and n.value.type == u8v for n in lets)


def test_sobel_repeat_edge_is_allocated_per_tile_row() -> None:
    stmt = parse_golden("sobel_arm64")
    outer = [f for f in ir.loops(stmt) if f.name == "sobel.s0.y.y"]
    assert len(outer) == 1
    allocs = [n for n in ir.walk(outer[0]) if isinstance(n, ir.Allocate)]
    assert [(a.name, a.type, len(a.extents)) for a in allocs] == [("repeat_edge", UInt(8), 2)]
    assert ir.find_producer(stmt, "repeat_edge").is_producer
    frees = [n for n in ir.walk(outer[0]) if isinstance(n, ir.Free)]
    assert [f.name for f in frees] == ["repeat_edge"]


# ---- the other pipelines -------------------------------------------------------------------------


def test_blur_u16_divides_by_three_in_both_passes() -> None:
    stmt = parse_golden("blur3x3_x86-avx2")
    allocs = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    assert allocs["blur_x"].type == UInt(16)
    for name in ("blur_x", "blur_y"):
        stores = [s for s in ir.stores(stmt) if s.buffer == name]
        assert stores and all(s.value.type == UInt(16, 32) for s in stores)
        divs = [n for s in stores for n in ir.walk(s.value) if isinstance(n, ir.BinOp) and n.op == "/"]
        assert divs and all(d.b == ir.Broadcast(ir.IntImm(3, UInt(16)), 32, UInt(16, 32)) for d in divs)


def test_reduction_computed_at_root() -> None:
    stmt = parse_golden("box_sum_reduction_arm64")
    allocs = {n.name: n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)}
    assert allocs["box_sum"].type == UInt(16) and allocs["col_sum"].type == UInt(32)
    for name in ("box_sum", "col_sum", "reduced"):
        assert ir.find_producer(stmt, name)
    update = [f for f in ir.loops(stmt) if f.name.startswith("col_sum.s1.ry")]
    assert update and update[0].extent == ir.IntImm(8, INT32)
    col = [s for s in ir.stores(stmt) if s.buffer == "col_sum" and s.value.lanes == 16]
    assert col and all(s.value.type == UInt(32, 16) for s in col)
    out = [s for s in ir.stores(stmt) if s.buffer == "reduced"]
    assert out and all(s.value.type == UInt(8, 16) for s in out)


def test_clamped_boundary_select_and_runtime_scalar() -> None:
    stmt = parse_golden("clamped_boundary_x86-avx2")
    stores = [s for s in ir.stores(stmt) if s.buffer == "clamped"]
    assert stores and all(s.value.type == Int(8, 16) for s in stores)
    sat = calls(stmt, "saturating_cast")
    assert sat and all(c.type == Int(8, 16) for c in sat)
    k = [n for n in ir.walk(stmt) if isinstance(n, ir.Variable) and n.name == "k"]
    assert k and all(v.type == Int(16) for v in k)  # printed `(int16)k`: an unbound scalar parameter
    exterior = ir.Broadcast(ir.IntImm(-5, Int(16)), 16, Int(16, 16))
    assert any(isinstance(n, ir.Select) and exterior in (n.true_value, n.false_value) for n in ir.walk(stmt))
    ifs = [n for n in ir.walk(stmt) if isinstance(n, ir.IfThenElse) and n.else_case is not None]
    assert ifs  # GuardWithIf tails


def test_async_producer_fork_and_semaphores() -> None:
    stmt = parse_golden("async_fork_x86-avx2")
    (fork,) = [n for n in ir.walk(stmt) if isinstance(n, ir.Fork)]
    acquires = [n for n in ir.walk(fork) if isinstance(n, ir.Acquire)]
    assert len(acquires) == 2
    assert any(isinstance(n, ir.For) and n.kind == "parallel" for n in ir.walk(stmt))
    evaluated = [n.value for n in ir.walk(stmt) if isinstance(n, ir.Evaluate)]
    names = {e.name for e in evaluated if isinstance(e, ir.Call)}
    assert names >= {"halide_semaphore_init", "halide_semaphore_release"}
    sem = [n for n in ir.walk(stmt) if isinstance(n, ir.Call) and n.name == "alloca"]
    assert sem and sem[0].type == HType("handle", 64, 1, "struct halide_semaphore_t *")


def test_shuffles() -> None:
    stmt = parse_golden("shuffles_arm64")
    shuffles = [n for n in ir.walk(stmt) if isinstance(n, ir.Shuffle)]
    kinds = {s.kind for s in shuffles}
    assert {"interleave", "slice"} <= kinds
    inter = next(s for s in shuffles if s.kind == "interleave" and len(s.vectors) == 3)
    assert inter.type == UInt(8, 24) and inter.indices[:4] == (0, 8, 16, 1)
    sl = next(s for s in shuffles if s.kind == "slice")
    assert sl.indices == tuple(range(sl.indices[0], sl.indices[0] + 3 * 8, 3)) and sl.lanes == 8


def test_slice_of_several_vectors() -> None:
    """Halide prints any strided Shuffle as slice_vectors, also one over several vectors (the schedule
    fuzzer's most frequent fallback): the lanes come from their concatenation, kept as a general shuffle."""
    e = parse_expr("slice_vectors(ramp(0, 1, 4), ramp(10, 1, 4), 1, 2, 3)")
    assert isinstance(e, ir.Shuffle) and e.kind == "shuffle" and len(e.vectors) == 2
    assert e.indices == (1, 3, 5) and e.type == INT32.with_lanes(3)
    one = parse_expr("slice_vectors(ramp(0, 1, 8), 1, 2, 3)")
    assert isinstance(one, ir.Shuffle) and one.kind == "slice" and one.indices == (1, 3, 5)
    assert "out of range" in str(_error("let a = slice_vectors(x4(1), x4(2), 2, 2, 4)\n"))
    assert "of int32x4 and uint8x4" in str(_error("let a = slice_vectors(x4(1), x4((uint8)2), 0, 1, 4)\n"))


def test_vector_reduce() -> None:
    stmt = parse_golden("vector_reduce_x86-avx2")
    (vr,) = [n for n in ir.walk(stmt) if isinstance(n, ir.VectorReduce)]
    assert vr.op == "add" and vr.type == UInt(32) and vr.value.type == UInt(32, 16)


def test_tuple_outputs_and_float_constants() -> None:
    stmt = parse_golden("tuple_output_arm64")
    by_buffer = {s.buffer: s.value.type for s in ir.stores(stmt)}
    assert by_buffer == {"tup.0": Int(32, 8), "tup.1": Float(32, 8)}
    assert ir.FloatImm(0.25, Float(32)) in exprs(stmt)


def test_specializations_give_an_else_if_chain() -> None:
    stmt = parse_golden("specialized_x86-avx2")
    top = [
        n for n in ir.walk(stmt) if isinstance(n, ir.IfThenElse) and isinstance(n.else_case, ir.IfThenElse)
    ]
    assert top
    chain = top[0].else_case
    assert isinstance(chain, ir.IfThenElse) and chain.else_case is not None
    p = ir.Variable("p", INT32)
    assert top[0].cond == ir.BinOp("<", ir.IntImm(3, INT32), p, Bool())
    assert chain.cond == ir.BinOp("==", p, ir.IntImm(0, INT32), Bool())


def test_wide_constants_bitwise_calls_and_predicates() -> None:
    stmt = parse_golden("wide_constants_x86-avx2")
    values = {(n.value, str(n.type)) for n in exprs(stmt) if isinstance(n, ir.IntImm)}
    assert {(-7, "int64"), (18000000000000000000, "uint64"), (1099511627776, "int64"), (-3, "int16")} & values
    assert (-7, "int64") in values and (18000000000000000000, "uint64") in values
    for name in ("bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_right"):
        assert all(c.type == Int(16, 8) for c in calls(stmt, name)), name
    assert calls(stmt, "bitwise_not")
    p8 = [n for n in ir.walk(stmt) if isinstance(n, ir.Variable) and n.name == "p8"]
    assert p8 and p8[0].type == UInt(8)
    predicates = [s.predicate for s in ir.stores(stmt) if s.predicate is not None]
    assert predicates and all(p.type == Bool(8) for p in predicates)
    assert any(isinstance(n, ir.Load) and n.predicate is not None for n in ir.walk(stmt))
    assert any(isinstance(n, ir.For) and n.kind == "parallel" for n in ir.walk(stmt))


def test_stack_allocation_gather_and_predicated_loads() -> None:
    stmt = parse_golden("lut_predicated_arm64")
    (g,) = [n for n in ir.walk(stmt) if isinstance(n, ir.Allocate)]
    assert g.memory_type == "Stack" and g.type == UInt(8)
    lut_loads = [ld for ld in ir.loads(stmt) if ld.buffer == "lut"]
    assert lut_loads and all(ld.type == UInt(16, 8) and not isinstance(ld.index, ir.Ramp) for ld in lut_loads)
    assert any(ld.predicate is not None for ld in lut_loads)


def test_hexagon_offload_loop() -> None:
    stmt = parse_golden("sobel_offload_x86-hvx")
    offload = [f for f in ir.loops(stmt) if f.device_api]
    assert [(f.name, f.device_api, f.extent) for f in offload] == [
        ("sobel.s0.__outermost", "Hexagon", ir.IntImm(1, INT32))
    ]


# ---- type inference on small snippets ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("5", ir.IntImm(5, INT32)),
        ("-1", ir.IntImm(-1, INT32)),
        ("(uint16)2", ir.IntImm(2, UInt(16))),
        ("(int64)-7", ir.IntImm(-7, Int(64))),
        ("(uint64)18446744073709551615", ir.IntImm(2**64 - 1, UInt(64))),
        ("(uint1)1", ir.IntImm(1, Bool())),
        ("0.500000f", ir.FloatImm(0.5, Float(32))),
        ("1.250000", ir.FloatImm(1.25, Float(64))),
        ("-2.000000f", ir.FloatImm(-2.0, Float(32))),
        ("(uint8)p", ir.Variable("p", UInt(8))),
        ("p", ir.Variable("p", INT32)),
        ('"a \\"b\\""', ir.StringImm('a "b"')),
        (
            "(struct halide_buffer_t *)input.buffer",
            ir.Variable("input.buffer", HType.parse("(struct halide_buffer_t *)")),
        ),
    ],
)
def test_literal_and_variable_types(text: str, expected: ir.Expr) -> None:
    assert parse_expr(text) == expected


def test_vector_expression_types() -> None:
    e = parse_expr(
        "uint8x16(min((uint16x16)absd(uint16x16(in[ramp(t, 1, 16)]), x16((uint16)3)), x16((uint16)255)))"
    )
    assert e.type == UInt(8, 16)
    inner = e.value  # type: ignore[attr-defined]
    assert inner.op == "min" and inner.type == UInt(16, 16)
    (load,) = ir.loads(e)
    assert load.type == INT32.with_lanes(16)  # unbound, unprefixed buffer: the printer's int32 rule
    typed = parse_expr("in[ramp(t, 1, 16) aligned(16, 0)]", buffers={"in": UInt(8)})
    assert typed == ir.Load(
        "in",
        ir.Ramp(ir.Variable("t", INT32), ir.IntImm(1, INT32), 16, INT32.with_lanes(16)),
        UInt(8, 16),
        (16, 0),
    )
    assert parse_expr("ramp(x8(t), x8(1), 2)").type == INT32.with_lanes(16)
    cmp = parse_expr("(x8((int16)3) < v) && !(v == x8((int16)4))", variables={"v": Int(16, 8)})
    assert cmp.type == Bool(8) and isinstance(cmp, ir.BinOp) and isinstance(cmp.b, ir.Not)
    sel = parse_expr("select(c, a, b)", variables={"c": Bool(), "a": Float(32, 4), "b": Float(32, 4)})
    assert sel.type == Float(32, 4)
    let = parse_expr("(let t = (uint16)7 in t*t)")
    assert let == ir.Let(
        "t",
        ir.IntImm(7, UInt(16)),
        ir.BinOp("*", ir.Variable("t", UInt(16)), ir.Variable("t", UInt(16)), UInt(16)),
        UInt(16),
    )
    assert parse_expr("reinterpret<uint64>((struct halide_buffer_t *)b.buffer)").type == UInt(64)
    assert parse_expr("(uint16)vector_reduce_add(v)", variables={"v": UInt(16, 32)}).type == UInt(16)
    pred = parse_expr("in[ramp(0, 1, 4)] if (ramp(0, 1, 4) < x4(n))", buffers={"in": Int(8)})
    assert isinstance(pred, ir.Load) and pred.predicate is not None and pred.type == Int(8, 4)
    cat = parse_expr("concat_vectors(a, b)", variables={"a": UInt(8, 4), "b": UInt(8, 4)})
    assert cat.type == UInt(8, 8) and cat.indices == tuple(range(8))  # type: ignore[attr-defined]
    assert parse_expr("extract_element(a, 3)", variables={"a": UInt(8, 4)}).type == UInt(8)
    shuf = parse_expr("shuffle(a, 3, 2, 1, 0)", variables={"a": UInt(8, 4)})
    assert shuf.indices == (3, 2, 1, 0) and shuf.type == UInt(8, 4)  # type: ignore[attr-defined]


def test_statement_scoping_and_folding() -> None:
    text = """\
allocate buf[uint16 * 16] in Stack
let v = buf[ramp(0, 1, 8)]
for (i, 0, 4) {
 let w = v + x8((uint16)1)
 buf[ramp(i*8, 1, 8) aligned(8, 0)] = w
}
predicate (ramp(0, 1, 8) < x8(n))
 out[ramp(0, 1, 8)] = uint8x8(v)
free buf
"""
    stmt = parse_stmt(text)
    assert isinstance(stmt, ir.Allocate) and stmt.memory_type == "Stack" and stmt.line == 1
    let = stmt.body
    assert isinstance(let, ir.LetStmt) and let.value.type == UInt(16, 8)
    block = let.body
    assert isinstance(block, ir.Block) and [type(s) for s in block.stmts] == [ir.For, ir.Store, ir.Free]
    loop_, out, free = block.stmts
    assert loop_.line == 3 and out.line == 7 and free.line == 9  # type: ignore[attr-defined]
    assert isinstance(out, ir.Store) and out.value.type == UInt(8, 8) and out.predicate is not None
    assert to_text(stmt) == text


def test_mutex_array_allocation_and_atomic_with_mutex() -> None:
    """An atomic() update Halide guards with a lock: the mutex array is a custom allocation
    (`custom_new` / `custom_delete`) and the atomic block names producer and mutex."""
    text = """\
allocate h.mutex[(void *) * 1] in Stack
 custom_new { (void *)halide_mutex_array_create(uint64(h.extent.0)) }
 custom_delete { halide_mutex_array_destroy(h.mutex); }
atomic (h, h.mutex) {
 halide_mutex_array_lock(h.mutex, k)
 h[k] = max(h[k], 3)
 halide_mutex_array_unlock(h.mutex, k)
}
free h.mutex
"""
    stmt = parse_stmt(text, buffers={"h": INT32})
    assert isinstance(stmt, ir.Allocate) and stmt.free_function == "halide_mutex_array_destroy"
    assert isinstance(stmt.new_expr, ir.Call) and stmt.new_expr.name == "halide_mutex_array_create"
    atomic = stmt.body.stmts[0]  # type: ignore[attr-defined]
    assert isinstance(atomic, ir.Atomic) and (atomic.producer_name, atomic.mutex_name) == ("h", "h.mutex")
    assert to_text(stmt) == text


def test_else_if_chain_and_evaluate() -> None:
    text = """\
if (a < 1) {
 halide_print(0)
} else if (a < 2) {
 (uint8)f(1)
} else {
 assert(a == 7, halide_error_unknown("x"))
}
"""
    stmt = parse_stmt(text)
    assert isinstance(stmt, ir.IfThenElse) and isinstance(stmt.else_case, ir.IfThenElse)
    assert isinstance(stmt.else_case.else_case, ir.AssertStmt)
    assert stmt.else_case.then_case == ir.Evaluate(ir.Call("f", (ir.IntImm(1, INT32),), UInt(8)))
    assert to_text(stmt) == text


# ---- errors ------------------------------------------------------------------------------------------


def _error(text: str, **kw: object) -> HalideParseError:
    with pytest.raises(HalideParseError) as info:
        parse_stmt(text, **kw)  # type: ignore[arg-type]
    return info.value


def test_unknown_statement_construct_quotes_line_and_column() -> None:
    e = _error("let a = 1\nfor (x, 0, a) {\n prefetch input(x, 0, 4)\n}\n")
    assert (e.line, e.column) == (3, 11)
    assert "'input'" in str(e) and "prefetch input(x, 0, 4)" in str(e)
    assert str(e).startswith("line 3, column 11:")


def test_unknown_character_construct() -> None:
    e = _error("let a = 1\nf[a] = a @ 2\n")
    assert (e.line, e.column) == (2, 10)
    assert "'@'" in str(e) and "f[a] = a @ 2" in str(e) and "^" in str(e)


def test_custom_delete_of_another_allocation_is_an_error() -> None:
    e = _error("allocate f[uint8 * 16]\n custom_new { g() }\n custom_delete { h(k); }\nfree f\n")
    assert e.line == 3 and "custom_delete of f frees k" in str(e)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("for (x, 0, 4) {\n f[x] = 1\n", 2, "end of text"),  # unclosed block
        ("for (x, 0) {\n}\n", 1, "')'"),  # missing extent
        ("f[x = 1\n", 1, "'='"),  # unclosed index
        ("let = 3\n", 1, "'='"),
        ("f[ramp(0, 1, 4)] = x4((uint16)1\n", 1, "newline"),
    ],
)
def test_malformed_text(text: str, line: int, fragment: str) -> None:
    e = _error(text)
    assert e.line == line and fragment in str(e)


@pytest.mark.parametrize(
    ("text", "column", "fragment"),
    [
        ("let a = (uint8)p + 1\n", 9, "operands of '+' have types uint8 and int32"),
        ("let a = select(x, 1, 2)\n", 9, "select condition of type int32"),
        ("let a = (uint8)300\n", 16, "does not fit uint8"),
        ("let a = 2147483648\n", 9, "literal 2147483648 does not fit int32"),
        ("let a = -2147483649\n", 9, "literal -2147483649 does not fit int32"),
        ("let a = uint8x4(x8(1))\n", 9, "cast of int32x8 to uint8x4"),
        ("let a = slice_vectors(x4(1), 0, 2, 4)\n", 9, "out of range"),
        ("if (1) {\n}\n", 5, "expected a boolean"),
        ("f[ramp(0, 1, 4)] = x8(1)\n", 1, "store of int32x8 through a 4-lane index"),
        ("let h = (void *)host(0)\nlet v = h[0]\n", 9, "element type of buffer 'h' unknown"),
    ],
)
def test_type_errors(text: str, column: int, fragment: str) -> None:
    e = _error(text)
    assert isinstance(e, HalideTypeError)
    assert e.column == column and fragment in str(e)


def test_ramp_lanes_must_be_constant() -> None:
    e = _error("let a = ramp(0, 1, n)\n")
    assert (e.line, e.column) == (1, 9) and "argument 2 of ramp must be a constant" in str(e)


def test_store_must_match_the_buffer_type() -> None:
    e = _error("f[0] = (uint8)1\n", buffers={"f": UInt(16)})
    assert isinstance(e, HalideTypeError) and "store of uint8 into buffer 'f' of uint16" in str(e)


# ---- types ----------------------------------------------------------------------------------------


def test_htype_spelling_and_conversions() -> None:
    for s in ("uint8", "int32x16", "uint1", "float32x8", "(void *)", "(struct halide_buffer_t *)"):
        assert str(HType.parse(s)) == s
    t = HType.parse("uint16x32")
    assert (t.code, t.bits, t.lanes, t.elem, t.short) == ("uint", 16, 32, UInt(16), "u16x32")
    assert HType.from_halide_type_code(67585) == UInt(8)  # what Halide compares `input.type` against
    assert HType.from_halide_type_code(1 << 16 | 16 << 8 | 0) == Int(16)
    assert (Int(8).min, Int(8).max, UInt(16).max) == (-128, 127, 65535)
    with pytest.raises(ValueError, match="not a Halide type"):
        HType.parse("u8")
    fpir_types = pytest.importorskip("fpir.types")
    assert UInt(16, 8).to_fpir() == fpir_types.ScalarType(False, 16)
    assert Int(32).to_fpir() == fpir_types.ScalarType(True, 32)


def test_fork_of_three_branches_round_trips() -> None:
    """Halide prints nested forks as one: `fork {a} {b} {c}` is Fork(a, Fork(b, c))."""
    text = "fork {\n f[0] = 1\n} {\n f[1] = 2\n} {\n f[2] = 3\n}\n"
    stmt = parse_stmt(text, buffers={"f": Int(32)})
    assert isinstance(stmt, ir.Fork) and isinstance(stmt.rest, ir.Fork) and not isinstance(stmt.rest.rest, ir.Fork)
    assert [s.value.value for s in (stmt.first, stmt.rest.first, stmt.rest.rest)] == [1, 2, 3]
    assert to_text(stmt) == text
