"""Element-wise kernels: one LLVM function that evaluates an expression over whole buffers.

`void <name>(ptr out, ptr in_0, ..., ptr in_k, i64 n)` computes `lanes` elements per iteration for
n elements (n a multiple of `lanes`). An input read by a lane-combining op (`vector_reduce_add_x4`, udot)
has that many elements per output element (`input_factors`): the kernel reads lanes x factor of it per
iteration, so in_k holds n x factor elements. Inputs are the term's variables in `var_order`; u1 values are
stored one byte each. Loads and stores claim alignment 1: numpy buffers and qemu harness buffers give
no stronger guarantee, and on HVX an over-claimed alignment silently reads the wrong bytes.
`offsets` maps a variable to (another variable, element offset): it takes no argument of its own and
reads the other variable's buffer `offset` elements on (in[i + offset]), so one buffer can feed a
sliding window (x, x+1, x+2 of one stream); that buffer then holds n + the largest offset elements.
The emitter is told these facts (`ExprEmitter.streams`), which instructions that read a window use.
Used by the `select` CLI, the differential tests and the benchmarks' expression-level reports.
"""

from __future__ import annotations

from typing import Mapping, Optional, Sequence

from llvmlite import ir

from fpir.ops import OPS, make
from fpir.term import Term, var
from fpir.types import ScalarType
from pitchfork.emit.expr import ExprEmitter, vec_type


def storage_type(t: ScalarType) -> ScalarType:
    return ScalarType(False, 8) if t.bits == 1 else t


def input_factors(term: Term) -> dict[str, int]:
    """Elements of each variable per element of the term (1 unless read through a lane-combining op)."""
    from pitchfork.emit.expr import _schedule

    out: dict[str, int] = {}
    for t, lanes in _schedule(term, 1):
        if t.is_var:
            if out.setdefault(t.name, lanes) != lanes:
                raise ValueError(f"variable {t.name} is read at {out[t.name]} and {lanes} lanes per result lane")
    return out


def distinct_variables(term: Term, var_order: Sequence[Term]) -> tuple[Term, list[Term]]:
    """`v1_i16` and `v1_i32` are two variables (in FPIR text the type is part of a variable's name),
    but the emitter binds operand values by name: give variables whose names clash their typed names."""
    types: dict[str, set[object]] = {}
    for t in [*term.walk(), *var_order]:
        if t.op == "var":
            types.setdefault(t.name, set()).add(t.type)
    clash = {n for n, ts in types.items() if len(ts) > 1}
    if not clash:
        return term, list(var_order)

    def rename(v: Term) -> Term:
        return var(f"{v.name}_{v.type.name}", v.type, uniform=v.is_uniform_leaf) if v.name in clash else v

    memo: dict[int, Term] = {}
    for t in term.walk():
        if t.op == "var":
            memo[id(t)] = rename(t)
        elif t.args:
            memo[id(t)] = make(t.op, *[memo[id(a)] for a in t.args], type=t.type if OPS[t.op].explicit_type else None)
        else:
            memo[id(t)] = t
    return memo[id(term)], [rename(v) for v in var_order]


HVX_REGISTER_BITS = 1024


def is_hvx(term: Term, target: Optional[object]) -> bool:
    name = getattr(target, "name", target)
    return name in ("hvx128", "hvx", "hexagon") or any(t.op.startswith("hvx.") for t in term.walk())


def register_lanes(term: Term, lanes: int) -> int:
    """The lane count at which every vector of `term` fills whole HVX registers (a multiple of lanes).

    LLVM's Hexagon backend does not put vectors narrower than a register in HVX registers and
    miscompiles some of them (wrong answers for variable shifts at 32 lanes of 8/16-bit values, a
    "Cannot select vselect" abort), so kernels compute on padded whole registers instead."""
    # u1 values (compare results) live in predicate registers that follow the data they select, so
    # they do not count; counting them as bytes would blow 64-bit lanes up 8x (which LLVM 22
    # miscompiles for mul_shr(i64, i64, 63) at 128 lanes).
    narrowest = min([t.type.bits for t in term.walk() if t.type.bits > 1] or [8])
    per_register = max(1, HVX_REGISTER_BITS // narrowest)
    total = lanes * narrowest
    regs = -(-total // HVX_REGISTER_BITS)
    return max(lanes, regs * per_register) if total % HVX_REGISTER_BITS else lanes


def _pad(b: ir.IRBuilder, v: ir.Value, lanes: int) -> ir.Value:
    """v's lanes followed by zero lanes, `lanes` in all."""
    n = v.type.count
    if n == lanes:
        return v
    mask = ir.Constant(ir.VectorType(ir.IntType(32), lanes), [min(i, n) for i in range(lanes)])
    return b.shuffle_vector(v, ir.Constant(v.type, None), mask)


def _unpad(b: ir.IRBuilder, v: ir.Value, lanes: int) -> ir.Value:
    if v.type.count == lanes:
        return v
    return b.shuffle_vector(v, ir.Constant(v.type, ir.Undefined), ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                                              list(range(lanes))))


def add_expression_kernel(module: ir.Module, name: str, term: Term, lanes: int, var_order: Sequence[Term],
                          target: Optional[object] = None, uniform: frozenset[str] = frozenset(),
                          offsets: Optional[Mapping[str, tuple[str, int]]] = None) -> ir.Function:
    """The kernel computes `lanes` elements per iteration; on HVX (target hvx128, or a term with HVX
    instructions) in padded whole registers (`register_lanes`), loads and stores keeping `lanes`.
    Variables named in `uniform` are read once, from their buffer's first element, and splat (as a
    Halide Param or a value loaded once reaches an expression: what by-scalar instruction forms read).
    Variables named in `offsets` read another variable's buffer at an element offset (module docstring);
    they must not be in `var_order`."""
    term, var_order = distinct_variables(term, var_order)
    offsets = dict(offsets or {})
    args = {v.name for v in var_order}
    types = {v.name: v.type for v in term.variables()}
    for v, (src, _) in offsets.items():
        if v in args or src not in args or types.get(v) != types.get(src):
            raise ValueError(f"offsets: {v} must be a variable of the term, not an argument, reading the "
                             f"argument {src} of its own type")
    width = register_lanes(term, lanes) if is_hvx(term, target) else lanes
    ptr = ir.PointerType(ir.IntType(8))
    i64 = ir.IntType(64)
    fn = ir.Function(module, ir.FunctionType(ir.VoidType(), [ptr] * (1 + len(var_order)) + [i64]), name=name)
    out_p, *in_ps, n = fn.args
    entry = fn.append_basic_block("entry")
    loop = fn.append_basic_block("loop")
    done = fn.append_basic_block("done")
    b = ir.IRBuilder(entry)
    b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
    b.position_at_end(loop)
    i = b.phi(i64, "i")
    i.add_incoming(ir.Constant(i64, 0), entry)
    env = {}
    factors = input_factors(term)
    params = {v.name: p for v, p in zip(var_order, in_ps)}
    reads = [(v, p, 0) for v, p in zip(var_order, in_ps)]
    by_name = {v.name: v for v in term.variables()}
    reads += [(by_name[v], params[src], off) for v, (src, off) in offsets.items() if v in by_name]
    for v, p, off in reads:
        st = storage_type(v.type)
        f = factors.get(v.name, 1)
        if v.name in uniform and v.type.bits > 1:
            one = b.insert_element(ir.Constant(vec_type(st, 1), ir.Undefined),
                                   b.load(b.bitcast(p, ir.PointerType(ir.IntType(st.bits))), align=1),
                                   ir.Constant(ir.IntType(32), 0))
            env[v.name] = b.shuffle_vector(one, ir.Constant(one.type, ir.Undefined),
                                           ir.Constant(ir.VectorType(ir.IntType(32), width * f), [0] * (width * f)))
            continue
        at = i if f == 1 else b.mul(i, ir.Constant(i64, f))
        at = b.add(at, ir.Constant(i64, off)) if off else at
        addr = b.gep(b.bitcast(p, ir.PointerType(ir.IntType(st.bits))), [at])
        val = b.load(b.bitcast(addr, ir.PointerType(vec_type(st, lanes * f))), align=1)
        val = _pad(b, val, width * f)
        if v.type.bits == 1:
            val = b.icmp_unsigned("!=", val, ir.Constant(val.type, [0] * (width * f)))
        env[v.name] = val
    streams = {src: (src, 0) for src, _ in offsets.values()}
    streams.update({v: (src, off) for v, (src, off) in offsets.items()})
    em = ExprEmitter(b, width, env, target, streams)
    result = em.emit(term)
    rt = storage_type(term.type)
    if term.type.bits == 1:
        result = b.zext(result, vec_type(rt, width))
    result = _unpad(b, result, lanes)
    addr = b.gep(b.bitcast(out_p, ir.PointerType(ir.IntType(rt.bits))), [i])
    b.store(result, b.bitcast(addr, ir.PointerType(vec_type(rt, lanes))), align=1)
    nxt = b.add(i, ir.Constant(i64, lanes))
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
    b.position_at_end(done)
    b.ret_void()
    return fn


def new_module(name: str = "pitchfork") -> ir.Module:
    return ir.Module(name=name)
