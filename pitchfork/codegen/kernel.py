"""Element-wise kernels: one LLVM function that evaluates an expression over whole buffers.

`void <name>(ptr out, ptr in_0, ..., ptr in_k, i64 n)` computes `lanes` elements per iteration for
n elements (n a multiple of `lanes`). On HVX, where `lanes` elements of some type of the term do not
fill whole vector registers and no lane is wider than 32 bits, it computes a whole-register block per
iteration instead and the last n mod block elements once more in a whole-register block on stack
copies (`_whole_register_loop`); then any n > 0 works. (A term with 64-bit lanes, which LLVM
scalarises on HVX anyway, computes each block of `lanes` at the whole-register width on zero-padded
operands.) An input read by a lane-combining op (`vector_reduce_add_x4`, udot)
has that many elements per output element (`input_factors`): the kernel reads lanes x factor of it per
iteration, so in_k holds n x factor elements. Inputs are the term's variables in `var_order`; u1 values are
stored one byte each. Loads and stores of vectors claim alignment 1: numpy buffers and qemu
harness buffers give no stronger guarantee, and on HVX an over-claimed alignment silently reads the
wrong bytes.
`offsets` maps a variable to (another variable, element offset): it takes no argument of its own and
reads the other variable's buffer `offset` elements on (in[i + offset]), so one buffer can feed a
sliding window (x, x+1, x+2 of one stream); that buffer then holds n + the largest offset elements.
The emitter is told these facts (`ExprEmitter.streams`), which instructions that read a window use.
Used by the `select` CLI, the differential tests and the benchmarks' expression-level reports.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Optional, Sequence

from llvmlite import ir

from fpir.ops import make
from fpir.opspec import OPS
from fpir.term import Term, var
from fpir.types import ScalarType
from pitchfork.codegen.expr import ExprEmitter, vec_type
from pitchfork.codegen.ir_constants import undef


def storage_type(t: ScalarType) -> ScalarType:
    return ScalarType(False, 8) if t.bits == 1 else t


def input_factors(term: Term) -> dict[str, int]:
    """Elements of each variable per element of the term (1 unless read through a lane-combining op)."""
    from pitchfork.codegen.expr import _schedule

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
    # The typed name, made fresh: a variable may already be called `c_u8` (text `c_u8_u8`).
    fresh: dict[tuple[str, object], str] = {}
    used = set(types)
    for n in sorted(clash):
        for t in sorted(types[n], key=str):
            name = f"{n}_{t}"
            while name in used:
                name += "_"
            used.add(name)
            fresh[(n, t)] = name

    def rename(v: Term) -> Term:
        return var(fresh[(v.name, v.type)], v.type, uniform=v.is_uniform_leaf) if v.name in clash else v

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
    """The lane count (at least `lanes`) at which every vector of `term` fills whole HVX registers.

    LLVM's Hexagon backend does not put vectors narrower than a register in HVX registers: it
    scalarises them and miscompiles some (wrong answers for variable shifts at 32 lanes of 8/16-bit
    values, a "Cannot select vselect" abort), so kernels compute in whole registers instead."""
    # u1 values (compare results) live in predicate registers that follow the data they select, so
    # they do not count; counting them as bytes would blow 64-bit lanes up 8x (which LLVM 22
    # miscompiles for mul_shr(i64, i64, 63) at 128 lanes).
    narrowest = min([t.type.bits for t in term.walk() if t.type.bits > 1] or [8])
    per_register = max(1, HVX_REGISTER_BITS // narrowest)
    total = lanes * narrowest
    regs = -(-total // HVX_REGISTER_BITS)
    return max(lanes, regs * per_register) if total % HVX_REGISTER_BITS else lanes


#: Library calls LLVM may not invent in a kernel: the tail's copy loops of a whole-register kernel
#: stay loops (LoopIdiomRecognize would call memcpy/memset, which only the qemu harness defines).
NO_BUILTINS = ("memcpy", "memmove", "memset")


@dataclass(frozen=True, slots=True)
class _Read:
    """One variable's vector read from a kernel argument: `param[index * factor + offset ...]`."""

    var: Term
    param: ir.Argument
    offset: int
    factor: int


@dataclass(frozen=True, slots=True)
class _Source:
    """Where a block of the loop reads an argument: element `index * factor + offset` of the argument
    is element `index * factor + offset + bias` of `ptr`, which is aligned to `align` bytes."""

    ptr: ir.Value
    bias: int
    align: int


def _elem_ptr(b: ir.IRBuilder, p: ir.Value, t: ScalarType) -> ir.Value:
    return b.bitcast(p, ir.PointerType(ir.IntType(storage_type(t).bits)))


def _compute(b: ir.IRBuilder, term: Term, width: int, reads: Sequence[_Read], uniform: frozenset[str],
             index: ir.Value, sources: Mapping[str, _Source], target: Optional[object],
             streams: Mapping[str, tuple[str, int]], loaded: Optional[int] = None) -> ir.Value:
    """The term over `width` lanes (elements index .. index + width), in storage type. With `loaded`
    (< width) only that many lanes are read, the others zero (`_pad`)."""
    loaded = loaded or width
    i64 = ir.IntType(64)
    env: dict[str, ir.Value] = {}
    for r in reads:
        st, f = storage_type(r.var.type), r.factor
        if r.var.name in uniform and r.var.type.bits > 1:
            one = b.insert_element(undef(vec_type(st, 1)),
                                   b.load(_elem_ptr(b, r.param, r.var.type), align=1), ir.Constant(ir.IntType(32), 0))
            env[r.var.name] = b.shuffle_vector(one, undef(one.type),
                                               ir.Constant(ir.VectorType(ir.IntType(32), width * f), [0] * (width * f)))
            continue
        src = sources[r.param.name]
        at = index if f == 1 else b.mul(index, ir.Constant(i64, f))
        at = b.add(at, ir.Constant(i64, r.offset + src.bias)) if r.offset + src.bias else at
        addr = b.gep(_elem_ptr(b, src.ptr, r.var.type), [at])
        shift = (r.offset + src.bias) * (st.bits // 8)
        align = math.gcd(src.align, shift) if shift else src.align
        val = _pad(b, b.load(b.bitcast(addr, ir.PointerType(vec_type(st, loaded * f))), align=align), width * f)
        if r.var.type.bits == 1:
            val = b.icmp_unsigned("!=", val, ir.Constant(val.type, [0] * (width * f)))
        env[r.var.name] = val
    result = ExprEmitter(b, width, env, target, streams).emit(term)
    if term.type.bits == 1:
        result = b.zext(result, vec_type(storage_type(term.type), width))
    return result


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
    return b.shuffle_vector(v, undef(v.type), ir.Constant(ir.VectorType(ir.IntType(32), lanes),
                                                                              list(range(lanes))))


def _copy_bytes(b: ir.IRBuilder, fn: ir.Function, dst: ir.Value, src: ir.Value, nbytes: ir.Value,
                name: str) -> None:
    """dst[0 .. nbytes) = src[0 .. nbytes) (nbytes > 0), one byte at a time: the tail of a
    whole-register kernel, so no vector narrower than a register is ever loaded or stored."""
    i8p = ir.PointerType(ir.IntType(8))
    i64 = ir.IntType(64)
    dst, src = b.bitcast(dst, i8p), b.bitcast(src, i8p)
    pre = b.block
    loop = fn.append_basic_block(f"{name}_copy")
    after = fn.append_basic_block(f"{name}_copied")
    b.branch(loop)
    b.position_at_end(loop)
    k = b.phi(i64, f"{name}_k")
    k.add_incoming(ir.Constant(i64, 0), pre)
    b.store(b.load(b.gep(src, [k]), align=1), b.gep(dst, [k]), align=1)
    nxt = b.add(k, ir.Constant(i64, 1))
    k.add_incoming(nxt, loop)
    b.cbranch(b.icmp_signed("<", nxt, nbytes), loop, after)
    b.position_at_end(after)


def add_expression_kernel(module: ir.Module, name: str, term: Term, lanes: int, var_order: Sequence[Term],
                          target: Optional[object] = None, uniform: frozenset[str] = frozenset(),
                          offsets: Optional[Mapping[str, tuple[str, int]]] = None) -> ir.Function:
    """The kernel computes `lanes` elements per iteration; on HVX (target hvx128, or a term with HVX
    instructions) in whole registers (`register_lanes`; `_whole_register_loop`, or padded blocks of
    `lanes` for terms with 64-bit lanes). Variables named
    in `uniform` are read once, from their buffer's first element, and splat (as a Halide Param or a
    value loaded once reaches an expression: what by-scalar instruction forms read). Variables named
    in `offsets` read another variable's buffer at an element offset (module docstring); they must
    not be in `var_order`."""
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
    factors = input_factors(term)
    params = {v.name: p for v, p in zip(var_order, in_ps)}
    by_name = {v.name: v for v in term.variables()}
    reads = [_Read(v, p, 0, factors.get(v.name, 1)) for v, p in zip(var_order, in_ps)]
    reads += [_Read(by_name[v], params[src], off, factors.get(v, 1)) for v, (src, off) in offsets.items()
              if v in by_name]
    streams = {src: (src, 0) for src, _ in offsets.values()}
    streams.update({v: (src, off) for v, (src, off) in offsets.items()})
    direct = {p.name: _Source(p, 0, 1) for p in in_ps}
    entry = fn.append_basic_block("entry")
    b = ir.IRBuilder(entry)
    if width == lanes or max(t.type.bits for t in term.walk()) > 32:
        # One block of `lanes` per iteration, computed at `width` lanes on zero-padded operands. HVX has
        # no 64-bit lanes: LLVM scalarises a term with them however its blocks are cut, so such a term
        # gains nothing from `_whole_register_loop` and keeps this code (a first version of that loop,
        # with a second copy of the body, made test_hvx_i128's seed-21 i64 term compile for over 15
        # minutes instead of 30 s).
        loop = fn.append_basic_block("loop")
        done = fn.append_basic_block("done")
        b.cbranch(b.icmp_signed(">", n, ir.Constant(i64, 0)), loop, done)
        b.position_at_end(loop)
        i = b.phi(i64, "i")
        i.add_incoming(ir.Constant(i64, 0), entry)
        result = _unpad(b, _compute(b, term, width, reads, uniform, i, direct, target, streams, lanes), lanes)
        addr = b.gep(_elem_ptr(b, out_p, term.type), [i])
        b.store(result, b.bitcast(addr, ir.PointerType(result.type)), align=1)
        nxt = b.add(i, ir.Constant(i64, lanes))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, n), loop, done)
        b.position_at_end(done)
        b.ret_void()
        return fn
    _whole_register_loop(fn, b, term, width, reads, uniform, direct, target, streams)
    return fn


def _whole_register_loop(fn: ir.Function, b: ir.IRBuilder, term: Term, width: int, reads: Sequence[_Read],
                         uniform: frozenset[str], direct: Mapping[str, _Source], target: Optional[object],
                         streams: Mapping[str, tuple[str, int]]) -> None:
    """A kernel whose vectors at `lanes` would be narrower than an HVX register (or fill registers
    only in part) computes `width` elements per iteration (`register_lanes`: every vector whole
    registers), directly from and to the buffers while `width` elements are left. The rest (fewer
    than `width`, possibly all of n) goes through the same loop body once more, on 128-aligned stack
    copies: the inputs' remaining elements copied byte by byte after zeros (a zero lane is a defined
    value for every op, undefined lanes are not: a division by an undefined lane may be undefined behaviour), the
    result's first elements copied out. One body for both phases: a second copy of it doubled the
    compile time of difftest modules (40 --families terms: 7.9 -> 14.4 s of CPU; one body: 7.6 s).
    So no vector narrower than a register reaches LLVM's Hexagon backend, which scalarises them lane
    by lane (~460 instructions for `c_u16 + widening_mul(a_u8, b_u8)` at 64 lanes, 135 loop packets
    per 64 elements, against 10 packets per 128 elements) and miscompiles some (variable byte
    shifts at 16/32 lanes; a `vselect` it cannot select). Lanes never move: lane k of every vector is
    element k of the block, in the main loop and in the tail alike."""
    for attr in NO_BUILTINS:  # string attributes are not in llvmlite's known set; LLVM reads them as written
        set.add(fn.attributes, f'"no-builtin-{attr}"')
    i64 = ir.IntType(64)
    out_p, n = fn.args[0], fn.args[-1]
    entry = b.block
    # Tail scratch: per argument read lane-wise, width x factor elements plus its offset window.
    windows: dict[str, tuple[ir.Argument, ScalarType, int, int, int]] = {}  # name -> (param, type, f, lo, hi)
    for r in reads:
        if r.var.name in uniform and r.var.type.bits > 1:
            continue
        p, t, f, lo, hi = windows.get(r.param.name, (r.param, r.var.type, r.factor, 0, 0))
        if f != r.factor or storage_type(t) != storage_type(r.var.type):
            raise ValueError(f"argument {r.param.name} is read at two element types or factors")
        windows[r.param.name] = (p, t, f, min(lo, r.offset), max(hi, r.offset))
    scratch: dict[str, ir.Value] = {}
    for key, (_, t, f, lo, hi) in windows.items():
        scratch[key] = b.alloca(ir.ArrayType(ir.IntType(storage_type(t).bits), width * f + hi - lo))
        scratch[key].align = 128
    rt = storage_type(term.type)
    out_scratch = b.alloca(ir.ArrayType(ir.IntType(rt.bits), width))
    out_scratch.align = 128
    main = fn.append_basic_block("loop")
    leave = fn.append_basic_block("loop_exit")
    tail_check = fn.append_basic_block("tail_check")
    tail = fn.append_basic_block("tail")
    tail_out = fn.append_basic_block("tail_out")
    done = fn.append_basic_block("done")
    w = ir.Constant(i64, width)
    i8p = ir.PointerType(ir.IntType(8))
    b.cbranch(b.icmp_signed(">=", n, w), main, tail_check)

    # One loop body serves both phases (its code is emitted, and compiled, once): the buffers while
    # `width` elements are left, then, entered once more from `tail`, the stack copies. The pointers,
    # the limit and the phase are loop-carried values that the main phase never changes.
    b.position_at_end(main)
    i = b.phi(i64, "i")
    limit = b.phi(i64, "limit")
    in_tail = b.phi(ir.IntType(1), "in_tail")
    start = b.phi(i64, "start")  # the tail's first element (0 in the main phase)
    bases = {key: b.phi(i8p, f"base{key.strip('.')}") for key in windows}
    out_base = b.phi(i8p, "out_base")
    for v, x in ((i, 0), (limit, n), (in_tail, ir.Constant(ir.IntType(1), 0)), (start, 0), (out_base, out_p)):
        v.add_incoming(ir.Constant(i64, x) if isinstance(x, int) else x, entry)
    for key, phi in bases.items():
        phi.add_incoming(windows[key][0], entry)
    sources = {**direct, **{key: _Source(phi, 0, 1) for key, phi in bases.items()}}
    result = _compute(b, term, width, reads, uniform, i, sources, target, streams)
    addr = b.gep(_elem_ptr(b, out_base, term.type), [i])
    b.store(result, b.bitcast(addr, ir.PointerType(result.type)), align=1)
    nxt = b.add(i, w)
    for v in (limit, in_tail, start, out_base, *bases.values()):
        v.add_incoming(v, b.block)
    i.add_incoming(nxt, b.block)
    b.cbranch(b.icmp_signed("<=", b.add(nxt, w), limit), main, leave)

    b.position_at_end(leave)
    b.cbranch(in_tail, tail_out, tail_check)

    b.position_at_end(tail_check)
    j = b.phi(i64, "j")
    j.add_incoming(ir.Constant(i64, 0), entry)
    j.add_incoming(nxt, leave)
    b.cbranch(b.icmp_signed("<", j, n), tail, done)

    b.position_at_end(tail)
    rem = b.sub(n, j)
    copies = {}
    for key, (p, t, f, lo, hi) in windows.items():
        st = storage_type(t)
        count = width * f + hi - lo
        b.store(ir.Constant(ir.VectorType(ir.IntType(st.bits), count), None),
                b.bitcast(scratch[key], ir.PointerType(ir.VectorType(ir.IntType(st.bits), count))), align=128)
        first = b.mul(j, ir.Constant(i64, f)) if f != 1 else j
        first = b.add(first, ir.Constant(i64, lo)) if lo else first
        elems = b.add(b.mul(rem, ir.Constant(i64, f)) if f != 1 else rem, ir.Constant(i64, hi - lo))
        _copy_bytes(b, fn, scratch[key], b.gep(_elem_ptr(b, p, t), [first]),
                    b.mul(elems, ir.Constant(i64, st.bits // 8)), f"in{key.strip('.')}")
        # element `off` of the block is at scratch[off - lo]: the body adds `off` to this pointer
        copies[key] = b.bitcast(b.gep(_elem_ptr(b, scratch[key], t), [ir.Constant(i64, -lo)]), i8p)
    for v, x in ((i, ir.Constant(i64, 0)), (limit, w), (in_tail, ir.Constant(ir.IntType(1), 1)), (start, j),
                 (out_base, b.bitcast(out_scratch, i8p))):
        v.add_incoming(x, b.block)
    for key, phi in bases.items():
        phi.add_incoming(copies[key], b.block)
    b.branch(main)

    b.position_at_end(tail_out)
    _copy_bytes(b, fn, b.gep(_elem_ptr(b, out_p, term.type), [start]), out_scratch,
                b.mul(b.sub(n, start), ir.Constant(i64, rt.bits // 8)), "out")
    b.branch(done)
    b.position_at_end(done)
    b.ret_void()


def new_module(name: str = "pitchfork") -> ir.Module:
    return ir.Module(name=name)
