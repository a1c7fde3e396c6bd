"""Hexagon HVX dot-product instructions: the lane-combining vrmpy and vdmpy-by-a-tap (pair sums), the
vdmpy / vrmpy by constant taps and the 3-tap vtmpy (ISA_INTRINSICS.md section 2.3.4).

Part of the HVX instruction table (pitchfork/targets/hvx.py; lane order, emitter helpers and costs
are described in hvx_emit.py); kept in its own module because these instructions read several input lanes per
output lane, so their emitters interleave data and recognise scalar operands in ways the lane-wise
families do not. Imported by hvx.py at the point where these declarations belong in its table, so
the table's declaration order is unchanged.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir

from fpir.term import Term
from pitchfork.targets.base import Signature, immediate, target_op
from pitchfork.targets.hvx_emit import (DEINT, ONE, PAIR, REG_BITS, Table, _const, _declare, _fallback, _i32,
                                        _interleave, _join, _shuffle, _vec)
from pitchfork.trs.predicate import is_stream


# ---- dot products (lane-combining): acc[j] + sum_k y[4j+k] * z[4j+k] -------------------------------
_VRMPY = {("u32", "u8", "u8"): "vrmpyubv.acc", ("i32", "u8", "u8"): "vrmpyubv.acc",
          ("i32", "i8", "i8"): "vrmpybv.acc", ("i32", "u8", "i8"): "vrmpybusv.acc"}


# The vector x scalar forms (Vx.w += vrmpy(Vu.ub, Rt.ub / Rt.b)) where one operand repeats one 32-bit
# word in every lane group: its data side must be the unsigned one (there is no Vu.b x Rt form).
_VRMPY_BY_WORD = {("u8", "u8"): "vrmpyub.acc", ("u8", "i8"): "vrmpybus.acc"}


def _word_splat(v: ir.Value) -> ir.Value | None:
    """The i32 `w` if `v` is a splat of one 32-bit word (any lane type), else None: a constant whose
    words are all equal, or the IR the Halide codegen writes for a repeated short vector (`_repeat`:
    bitcast(shufflevector(insertelement(undef, w, 0), undef, zeroinitializer)))."""
    if isinstance(v, ir.Constant) and isinstance(v.type, ir.VectorType) and isinstance(v.constant, list) \
            and isinstance(v.type.element, ir.IntType):
        bits = v.type.element.width
        if 32 % bits or any(not isinstance(c.constant, int) for c in v.constant):
            return None
        per = 32 // bits
        vals = [c.constant & ((1 << bits) - 1) for c in v.constant]
        if len(vals) % per or vals != vals[:per] * (len(vals) // per):
            return None
        return _i32(sum(x << (bits * k) for k, x in enumerate(vals[:per])))
    if isinstance(v, ir.CastInstr) and v.opname == "bitcast":
        v = v.operands[0]
    if not (isinstance(v, ir.ShuffleVector) and isinstance(v.type.element, ir.IntType)
            and v.type.element.width == 32):
        return None
    vec, _, mask = v.operands
    if not (isinstance(mask, ir.Constant) and all(getattr(c, "constant", c) == 0 for c in mask.constant)):
        return None
    if isinstance(vec, ir.InsertElement) and isinstance(vec.operands[2], ir.Constant) \
            and vec.operands[2].constant == 0:
        return vec.operands[1]
    return None


def _vrmpy(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """vrmpy accumulate forms, one register of 32 words per 128 bytes of each data operand: by a
    scalar register where an operand repeats one word (matmul's broadcast row of A), else vector x
    vector."""
    rt = _vec(32, REG_BITS // 32)
    types = tuple(a.type.name for a in t.args[1:])
    # Into a constant 0, the plain form (Vd.w = vrmpy(..)): no zero register per output register,
    # which LLVM kept live across conv3x3a32's loop and spilled.
    zero = _const(t.args[0]) == 0

    def call(name: str, a: ir.Value, ops: list[ir.Value]) -> ir.Value:
        return em.hvx_call(name[:-len(".acc")], ops, rt) if zero else em.hvx_call(name, [a, *ops], rt)

    for data, word in ((1, 2), (2, 1)):
        name = _VRMPY_BY_WORD.get((t.args[data].type.name, t.args[word].type.name))
        w = _word_splat(args[word]) if name is not None else None
        if w is not None:
            accs, ys = em.split(args[0], REG_BITS // 32), em.split(args[data], REG_BITS // 8)
            return em.concat([call(name, a, [y, w]) for a, y in zip(accs, ys)], em.lanes)
    name = _VRMPY[(t.args[0].type.name, *types)]
    accs, ys, zs = (em.split(a, REG_BITS // b) for a, b in zip(args, (32, 8, 8)))
    return em.concat([call(name, a, [y, z]) for a, y, z in zip(accs, ys, zs)], em.lanes)


def _vrmpy_semantics(sg: Signature) -> str:
    return f"x + vector_reduce_add_x4({sg.result.name}(widening_mul(y, z)))"


target_op("hvx.vrmpy", [f"{a}, {y}, {z} -> {a}" for a, y, z in _VRMPY], _vrmpy_semantics, _vrmpy, cost=ONE,
          llvm="llvm.hexagon.V6.vrmpyubv.acc / vrmpybv.acc / vrmpybusv.acc", lanes=(1, 4, 4))


# ---- dot products by constant taps: the vector x scalar vdmpy / vrmpy ------------------------------
# vdmpy(Vu, Rt): out[i] = u[2i] * Rt.b[0] + u[2i+1] * Rt.b[1] (Rt = [c0 c1 c0 c1], wrapping), and
# vrmpy(Vu, Rt): out[i] = sum_k u[4i+k] * Rt.b[k]. Declared lane-wise over their de-interleaved operands
# (the taps' data as separate vectors, as Halide's add trees write them): the emitter interleaves the
# data into one register and passes the taps as Rt, so results come out in natural lane order.
_VDMPY = {("u8", "i8"): "vdmpybus", ("i16", "i8"): "vdmpyhb"}
_VRMPY_TAPS = {("u8", "i8", "i32"): "vrmpybus", ("u8", "u8", "u32"): "vrmpyub", ("u8", "u8", "i32"): "vrmpyub"}


def _taps_rt(cs: Sequence[int]) -> ir.Constant:
    reps = [cs[k % len(cs)] & 0xFF for k in range(4)]
    return _i32(reps[0] | reps[1] << 8 | reps[2] << 16 | reps[3] << 24)


def _interleave_n(em: Any, vs: Sequence[ir.Value]) -> ir.Value:
    """interleave_vectors(vs): lane f*i + k = vs[k] lane i."""
    f, n = len(vs), vs[0].type.count
    whole = em.concat(list(vs), f * n)
    return _shuffle(em, whole, [k * n + i for i in range(n) for k in range(f)])


def _taps(table: Table, f: int, acc: bool) -> Callable[..., ir.Value]:
    """(acc,) x_0..x_{f-1}, c_0..c_{f-1} -> one vdmpy/vrmpy(.acc) per register of interleaved data."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        cs = [_const(a) for a in t.args[first + f:first + 2 * f]]
        if any(c is None for c in cs):
            return _fallback(em, t)
        data = t.args[first].type
        key = (data.name, t.args[first + f].type.name) + ((t.type.name,) if f == 4 else ())
        name = table[key] + (".acc" if acc else "")
        per_reg = REG_BITS // data.bits // f  # result lanes per register of interleaved data
        out = _vec(t.type.bits, per_reg)
        rt = _taps_rt([c for c in cs if c is not None])

        def one(*vs: ir.Value) -> ir.Value:
            x = _interleave_n(em, vs[first:first + f])
            return em.hvx_call(name, ([vs[0]] if acc else []) + [x, rt], out)

        return em.map_chunks(args[:first + f], per_reg, one)

    return emit


def _taps_semantics(f: int, acc: bool) -> Callable[[Signature], str]:
    def sem(sg: Signature) -> str:
        first = 1 if acc else 0
        ps = ["x", "y", "z", "w", "a", "b", "c", "d", "e"]
        data, taps = ps[first:first + f], ps[first + f:first + 2 * f]
        x, c, r = sg.args[first], sg.args[first + f], sg.result.name
        terms = []
        for d, k in zip(data, taps):
            tap = k if x.bits == c.bits else f"i{x.bits}({k})"  # i8 taps of 16-bit data
            terms.append(f"widening_mul({d}, {tap})" if f == 2 else f"{r}(widening_mul({d}, {tap}))")
        return ("x + " if acc else "") + " + ".join(terms)

    return sem


_VDMPY_SIGS = [f"{x}, {x}, {c}, {c} -> {'i' if x[0] == 'i' or c[0] == 'i' else 'u'}{int(x[1:]) * 2}"
               for (x, c) in _VDMPY]
# Costs count the interleaving shuffles of the data (one vshuff for two operands, three for four).
_declare("hvx.vdmpy", _VDMPY_SIGS, _taps_semantics(2, False), _taps(_VDMPY, 2, False), PAIR,
         "vdmpybus / vdmpyhb on the interleaved data (taps z, w constants)")
_declare("hvx.vdmpy_acc", [f"{s.split('-> ')[1]}, {s}" for s in _VDMPY_SIGS], _taps_semantics(2, True),
         _taps(_VDMPY, 2, True), PAIR + ONE, "vdmpybus.acc / vdmpyhb.acc on the interleaved data (taps constants)")
_VRMPY_TAPS_SIGS = [f"{x}, {x}, {x}, {x}, {c}, {c}, {c}, {c} -> {r}" for (x, c, r) in _VRMPY_TAPS]
# (Without an accumulator, u8 x u8 has one signature: the operand types select the semantics.)
_declare("hvx.vrmpy_taps", [t for t in _VRMPY_TAPS_SIGS if not t.endswith("u8 -> i32")], _taps_semantics(4, False), _taps(_VRMPY_TAPS, 4, False), 4 * ONE,
         "vrmpybus / vrmpyub (vector x scalar) on the interleaved data (taps constants)")
_declare("hvx.vrmpy_taps_acc", [f"{s.split('-> ')[1]}, {s}" for s in _VRMPY_TAPS_SIGS], _taps_semantics(4, True),
         _taps(_VRMPY_TAPS, 4, True), 4 * ONE,
         "vrmpybus.acc / vrmpyub.acc (vector x scalar) on the interleaved data (taps constants)")


# ---- four-way dot products of two vector sets: vrmpy(Vu, Vv) on both sets interleaved ----------------
# sum_k x_k * a_k over four separate byte vectors x_0..x_3 and a_0..a_3 (Halide's vrmpy(v.ub, v.ub) check:
# u32(x) * u32(x) + u32(y) * u32(y) + ...): per four registers of each set, the set interleaved by two
# levels of vshuff (bytes, then halfwords: four vshuff; LLVM shares them when the sets are the same
# vectors), then one vector x vector vrmpy per register, results in natural lane order. Declared lane-wise
# over the de-interleaved operands, like vrmpy_taps.
def _interleave_pair(em: Any, x: ir.Value, y: ir.Value, bits: int) -> ir.Value:
    """The `bits`-wide elements of two equal byte vectors interleaved (x first): one vshuff per register pair."""
    t = ir.VectorType(ir.IntType(bits), x.type.count * 8 // bits)
    p = _interleave(em, _join(em, em.bitcast(x, t), em.bitcast(y, t)))
    return em.bitcast(p, ir.VectorType(ir.IntType(8), 2 * x.type.count))


def _vv(acc: bool) -> Callable[..., ir.Value]:
    """Per four data registers: bytes of (x, y) and of (z, w) interleaved, then halfwords of the two
    results (Halide's vshuff sequence: four vshuff per operand set), one vrmpy per register."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        key = (t.type.name, t.args[first].type.name, t.args[first + 4].type.name)
        name = _VRMPY[key] if acc else _VRMPY[key][:-len(".acc")]
        per_reg = REG_BITS // 32
        out = _vec(32, per_reg)

        def quad(vs: Sequence[ir.Value]) -> list[ir.Value]:
            whole = _interleave_pair(em, _interleave_pair(em, vs[0], vs[1], 8), _interleave_pair(em, vs[2], vs[3], 8), 16)
            return em.split(whole, REG_BITS // 8)

        def four(*vs: ir.Value) -> ir.Value:
            xs, ys = quad(vs[first:first + 4]), quad(vs[first + 4:first + 8])
            accs = em.split(vs[0], per_reg) if acc else [None] * len(xs)
            return em.concat([em.hvx_call(name, ([a] if acc else []) + [x, y], out) for a, x, y in zip(accs, xs, ys)],
                             4 * per_reg)

        return em.map_chunks(list(args), 4 * per_reg, four)

    return emit


_VRMPY_VV_SIGS = ["u8, u8, u8, u8, u8, u8, u8, u8 -> u32", "i8, i8, i8, i8, i8, i8, i8, i8 -> i32"]
_declare("hvx.vrmpy_vv", _VRMPY_VV_SIGS, _taps_semantics(4, False), _vv(False), 7 * ONE,
         "vrmpyubv / vrmpybv on both operand sets interleaved (six shuffles, one vrmpy per register)")
_declare("hvx.vrmpy_vv_acc", [f"{s.split('-> ')[1]}, {s}" for s in _VRMPY_VV_SIGS], _taps_semantics(4, True), _vv(True),
         7 * ONE, "vrmpyubv.acc / vrmpybv.acc on both operand sets interleaved")


# ---- pairwise dot products by a constant tap: vdmpy as a reduction ----------------------------------
# vdmpy(Vu, Rt) with every byte of Rt = c: out[i] = u[2i] * c + u[2i+1] * c (wrapping in the result width),
# i.e. Halide's vector_reduce_add by 2 of widening products by a splat (a pairwise widening sum for c = 1,
# HVX's uaddlp). One instruction per register of data, results in natural lane order; .acc adds to Vx.
_VDMPY_PAIRS = {"u8": "vdmpybus", "i16": "vdmpyhb"}


def _pairs_semantics(acc: bool) -> Callable[[Signature], str]:
    def sem(sg: Signature) -> str:
        x = sg.args[1 if acc else 0]
        tap = "z" if acc else "y"
        product = f"widening_mul({'y' if acc else 'x'}, {tap if x.bits == 8 else f'i{x.bits}({tap})'})"
        return ("x + " if acc else "") + f"vector_reduce_add_x2({product})"

    return sem


def _pairs(acc: bool) -> Callable[..., ir.Value]:
    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        first = 1 if acc else 0
        c = _const(t.args[first + 1])
        if c is None:
            return _fallback(em, t)
        bits = t.args[first].type.bits
        name = _VDMPY_PAIRS[t.args[first].type.name] + (".acc" if acc else "")
        rt = _taps_rt([c, c])
        out = _vec(2 * bits, REG_BITS // (2 * bits))
        xs = em.split(args[first], REG_BITS // bits)
        accs = em.split(args[0], REG_BITS // (2 * bits)) if acc else [None] * len(xs)
        return em.concat([em.hvx_call(name, ([a] if acc else []) + [x, rt], out) for a, x in zip(accs, xs)],
                         em.lanes)

    return emit


target_op("hvx.vdmpy_pairs", ["u8, i8 -> i16", "i16, i8 -> i32"], _pairs_semantics(False), _pairs(False),
          cost=ONE, llvm="llvm.hexagon.V6.vdmpybus / vdmpyhb (Rt = the tap in every byte)", lanes=(2, 2),
          encodable=immediate(1, -128, lambda _: 127))
target_op("hvx.vdmpy_pairs_acc", ["i16, u8, i8 -> i16", "i32, i16, i8 -> i32"], _pairs_semantics(True),
          _pairs(True), cost=ONE, llvm="llvm.hexagon.V6.vdmpybus.acc / vdmpyhb.acc (Rt = the tap in every byte)",
          lanes=(1, 2, 2), encodable=immediate(2, -128, lambda _: 127))


# ---- pairwise 16 x 16 dot product of two vectors: vdmpy(Vu.h, Vv.h):sat ---------------------------------
# out[i] = sat32(u[2i] * v[2i] + u[2i+1] * v[2i+1]) (vdmpyhvsat), natural lane order. The two products
# of i16 lanes each fit i32; only (-32768)^2 + (-32768)^2 = 2^31 exceeds it, and saturates. So it is
# Halide's saturating vector_reduce by 2 of the widening products exactly, and the wrapping one where
# bounds exclude that single input (a lane other than -32768 in one operand).


def _vdmpyhvsat(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    out = _vec(32, REG_BITS // 32)
    xs, ys = (em.split(a, REG_BITS // 16) for a in args)
    return em.concat([em.hvx_call("vdmpyhvsat", [x, y], out) for x, y in zip(xs, ys)], em.lanes)


target_op("hvx.vdmpyhvsat", ["i16, i16 -> i32"], "vector_reduce_saturating_add_x2(widening_mul(x, y))", _vdmpyhvsat,
          cost=ONE, llvm="llvm.hexagon.V6.vdmpyhvsat (Vd.w = vdmpy(Vu.h, Vv.h):sat)", lanes=(2, 2))


# ---- 3-tap filter: vtmpy ------------------------------------------------------------------------
# Lane semantics, confirmed under qemu-hexagon (impulse responses of every input lane, and random
# data with random Rt for vtmpybus, vtmpyb, vtmpyhb and vtmpybus.acc, 0 mismatches): for the pair
# Vuu = (A = low register, B = high register) of n data lanes each and Rt bytes r0..r3, i < n/2,
#   lo[i] = A[2i]   * r[2i % 4] + A[2i+1] * r[(2i+1) % 4] + B[2i]
#   hi[i] = A[2i+1] * r[2i % 4] + B[2i]   * r[(2i+1) % 4] + B[2i+1]
# wrapping in the result width (.h for byte data, .w for vtmpyhb); .acc adds to Vxx wrapping. With
# Rt = [c0 c1 c0 c1], A = d[k .. k+n) and B = d[k+2 .. k+2+n) of one stream d, that is the 3-tap
# filter out[j] = c0 * d[k+j] + c1 * d[k+j+1] + d[k+j+2] with lo = even j, hi = odd j.
# The pair holds two data lanes per result lane but the filter reads three, so the instruction
# computes c0*x + c1*y + z only when y and z are x's stream one and two lanes on (the middle tap
# comes from A for even j and from B for odd j). It is declared lane-wise over x, y, z; the emitter
# uses the instruction only when the emitter's stream facts (`ExprEmitter.streams`, from the Halide
# frontend or the kernel builder: the leaves' memory) say x, y, z read one stream at element offsets
# o, o+1, o+2, and the vectors have an even number of lanes (so the last real result lane is odd and
# reads its middle tap from B, not from padding). For other operands, or non-constant taps, it falls
# back to the declared semantics, so they hold for every operand. Lowering selects it only under the
# same facts (`stream(x, y, z)` in rules/lower/hvx.rules).
_VTMPY = {("u8", "i8"): "vtmpybus", ("i8", "i8"): "vtmpyb", ("i16", "i8"): "vtmpyhb"}


def _vtmpy(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """x, y, z, c0, c1 -> c0*x + c1*y + z: one vtmpy per register of x (A) and of z (B)."""
    c0, c1 = _const(t.args[3]), _const(t.args[4])
    if c0 is None or c1 is None or not is_stream(t.args[:3], em.streams) or args[0].type.count % 2:
        return _fallback(em, t)
    bits = t.args[0].type.bits
    n = REG_BITS // bits
    out = _vec(2 * bits, n)
    rt = _taps_rt([c0, c1])

    def one(a: ir.Value, b: ir.Value) -> ir.Value:
        pair = em.hvx_call(_VTMPY[(t.args[0].type.name, t.args[3].type.name)], [_join(em, a, b), rt], out,
                           True, (True,))
        return _interleave(em, pair)

    return em.map_chunks([args[0], args[2]], n, one)


def _vtmpy_semantics(sg: Signature) -> str:
    x, r = sg.args[0], sg.result.name
    tap = (lambda k: k) if x.bits == 8 else (lambda k: f"i{x.bits}({k})")  # i8 taps of 16-bit data
    return f"widening_mul(x, {tap('w')}) + widening_mul(y, {tap('a')}) + {r}(z)"


_declare("hvx.vtmpy", [f"{x}, {x}, {x}, {c}, {c} -> {'i' if x[0] == 'i' or c[0] == 'i' else 'u'}{int(x[1:]) * 2}"
                       for (x, c) in _VTMPY], _vtmpy_semantics, _vtmpy, PAIR,
         "vtmpybus / vtmpyb / vtmpyhb on x and z (y = x one lane on, z two; taps w, a constants)", DEINT)
