"""Hexagon HVX shift-and-accumulate: `Vx.h += vasl(Vu.h, Rt)` / `Vx.w += vasl(Vu.w, Rt)`, and the
arithmetic right-shift twins `Vx.h += vasr(Vu.h, Rt)` / `Vx.w += vasr(Vu.w, Rt)` (signed lanes).

Part of the HVX instruction table (pitchfork/targets/hvx.py; lane order, emitter helpers and costs
are described in hvx_emit.py), imported at the end of it. `x + (y << c)` is a stencil tap by a power of two
added to a running sum (gaussian5x5's `4 * rows[x + 1]`, lifted to `<< 2`): one instruction where the
shift and the add were two, as Halide's HVX backend selects it (ISA_INTRINSICS.md 2.3.2: vaslw.acc,
and vaslh.acc from v65, which our hexagonv66 target has).

The instruction reads its amount from the low bits of Rt (modulo the lane width), so only constant
amounts in [0, bits) are passed as Rt; any other amount emits the declared semantics. The
instruction is lane-wise and of one width, so it follows its operands' lane order (`_layout`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from llvmlite import ir

from fpir.term import Term
from pitchfork.targets.hvx_emit import (DEINT, ONE, REG_BITS, _const, _declare, _deinterleave, _fallback,
                                        _halves, _i32, _interleave, _join, _lanewise, _layout, _layouts, _vec)

_VASL_ACC = {"i16": "vaslh.acc", "u16": "vaslh.acc", "i32": "vaslw.acc", "u32": "vaslw.acc"}
# the arithmetic right shift accumulated (vasrw.acc; vasrh.acc from v65), signed lanes only
_VASR_ACC = {"i16": "vasrh.acc", "i32": "vasrw.acc"}


def _vasl_acc(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    return _shift_acc(em, args, t, _VASL_ACC)


def _vasr_acc(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    return _shift_acc(em, args, t, _VASR_ACC)


def _shift_acc(em: Any, args: Sequence[ir.Value], t: Term, names: dict[str, str]) -> ir.Value:
    bits = t.type.bits
    c = _const(t.args[2])
    if c is None or not 0 <= c < bits:
        return _fallback(em, t)
    name = names[t.type.name]
    n = REG_BITS // bits
    rt = _vec(bits, n)
    amount = _i32(c)
    if _layout(t, _layouts(em)) == DEINT:
        def pairwise(x: ir.Value, y: ir.Value) -> ir.Value:
            (xl, xh), (yl, yh) = _halves(em, _deinterleave(em, x)), _halves(em, _deinterleave(em, y))
            lo = em.hvx_call(name, [xl, yl, amount], rt)
            hi = em.hvx_call(name, [xh, yh, amount], rt)
            return _interleave(em, _join(em, lo, hi))

        return em.map_chunks(list(args[:2]), 2 * n, pairwise)
    return em.map_chunks(list(args[:2]), n, lambda x, y: em.hvx_call(name, [x, y, amount], rt))


_declare("hvx.vasl_acc", [f"{k}, {k}, {k} -> {k}" for k in _VASL_ACC], "x + (y << z)", _vasl_acc, ONE,
         "vaslh.acc / vaslw.acc: Vx += vasl(Vu, Rt) (Rt = constant z in [0, bits))", "lanewise")
_declare("hvx.vasr_acc", [f"{k}, {k}, {k} -> {k}" for k in _VASR_ACC], "x + (y >> z)", _vasr_acc, ONE,
         "vasrh.acc / vasrw.acc: Vx += vasr(Vu, Rt) (Rt = constant z in [0, bits))", "lanewise")


# ---- shift by a signed per-lane amount, both directions: vaslhv ------------------------------------
# Vd.h = vasl(Vu.h, Vv.h) reads the amount as the sign-extended low 5 bits of each lane (checked under
# qemu-hexagon for every amount in [-64, 63]): 0..15 shift left, -16..-1 shift right arithmetically by
# the magnitude (-16 gives the sign fill), which is FPIR's `<<` by a negative amount. One instruction
# where the generic code for a signed runtime amount shifts both ways and selects.
_VASLV = {("i16", "i16"): "vaslhv"}
_declare("hvx.vasl_v", ["i16, i16 -> i16"], "x << ((y << 11) >> 11)", _lanewise(_VASLV), ONE,
         "vaslhv: Vd.h = vasl(Vu.h, Vv.h) (amount: the sign-extended low 5 bits; negative shifts right)",
         "lanewise")


# ---- rounding_shl of bytes by a signed per-lane amount ----------------------------------------------
# HVX has no byte shifts. The doubled value widened to 16 bits, shifted both ways at once by vaslhv by
# the amount clamped to [-9, 8], then halved with rounding (vavg(v, 0):rnd) and truncated back:
# for y >= 0, ((2x << y) + 1) >> 1 = x << y (its low byte, which is what wraps); for y = -k < 0,
# (floor(2x / 2^k) + 1) >> 1 = floor((x + 2^(k-1)) / 2^k), the rounding right shift. Past the clamp
# every result is 0 either way (a byte shifted left by 8 or more; rounded right by 9 or more, also
# for u8), so the clamp changes nothing. The semantics below is that sequence of declared
# instructions, so `pitchfork verify` proves the lowering rule (rules/lower/hvx.rules:
# rounding_shl_b_var) against rounding_shl itself, and the emitter writes exactly that sequence.
def _rounding_shl_b(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    return _fallback(em, t)


_declare("hvx.rounding_shl_b", ["i8, i8 -> i8", "u8, i8 -> u8"],
         lambda sg: f"reinterpret<{sg.result.name}>(hvx.vpacke(hvx.vavg_rnd(hvx.vasl_v("
                    f"reinterpret<i16>(hvx.vmpy(x, 2)), hvx.vmpy(max(min(y, 8), -9), 1)), 0)))",
         _rounding_shl_b, 6, "vmaxb, vminb (clamp), vmpy by 2 and by 1 (widen: de-interleaved pairs), "
         "vaslhv, vavghrnd, vshuffeb: 9 instructions per 128 lanes")
# An amount already known to lie in [-9, 8] (Halide's clamped spellings) needs no clamp: the same
# sequence without vmaxb/vminb (rule rounding_shl_b_var_in_range; any other amount is read by vaslhv
# modulo 32, as the semantics says).
_declare("hvx.rounding_shl_b_in_range", ["i8, i8 -> i8", "u8, i8 -> u8"],
         lambda sg: f"reinterpret<{sg.result.name}>(hvx.vpacke(hvx.vavg_rnd(hvx.vasl_v("
                    f"reinterpret<i16>(hvx.vmpy(x, 2)), hvx.vmpy(y, 1)), 0)))",
         _rounding_shl_b, 5, "vmpy by 2 and by 1 (widen: de-interleaved pairs), vaslhv, vavghrnd, vshuffeb: "
         "7 instructions per 128 lanes")

