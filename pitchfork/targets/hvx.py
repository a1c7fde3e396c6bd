"""Hexagon HVX (128-byte mode) instruction table (see ISA_INTRINSICS.md section 2.3).

Every instruction the HVX lowering rules (rules/lower/hvx.rules) use is declared here once: its
operand/result types, its lane-wise semantics as FPIR text over x, y, z, w, its cost, and an emitter.
Instructions are grouped by assembly mnemonic (`vabsdiff`, `vmpy`, `vasr ...:rnd:sat`); a family with
several element types lists one signature per type and picks the `llvm.hexagon.V6.<name>.128B`
intrinsic from the operand types. Narrowing families whose semantics names the result type carry
it in the name (`hvx.vsat_ub`: `.ub = vsat/vpack(.h)`). The lane-combining dot products live in
hvx_dot.py and vasl.acc in hvx_shift.py, imported at their place in the table.

The emitter factories, the IR helpers and the lane-layout analysis the declarations are built from
(and the HVX lane-order conventions every emitter keeps: results in natural lane order) are in
hvx_emit.py; the names are re-exported here so `from pitchfork.targets.hvx import ...` keeps working.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from llvmlite import ir

from fpir.ops import expansion
from fpir.term import Term
from pitchfork.targets.base import Signature
# The helpers the declarations use (some re-exported for `from pitchfork.targets.hvx import ...`).
from pitchfork.targets.hvx_emit import (DEINT, ONE, PAIR, REG_BITS, Table, _accumulate,  # noqa: F401
                                        _const, _declare, _deinterleave, _fallback, _halves, _i32,
                                        _interleave, _join, _key, _lanewise, _layout, _layouts,
                                        _narrowing, _replicate, _scalar_or_fallback, _shift_amount,
                                        _shuffle, _sigs, _unsigned, _vec, _vmpa, _wide_name, _widening)

# ---- same-width lane-wise ----------------------------------------------------------------------

_ABSDIFF = {("u8", "u8"): "vabsdiffub", ("u16", "u16"): "vabsdiffuh", ("i16", "i16"): "vabsdiffh",
            ("i32", "i32"): "vabsdiffw"}
_declare("hvx.vabsdiff", _sigs(_ABSDIFF, lambda k: _unsigned(k[0])), "absd(x, y)", _lanewise(_ABSDIFF), ONE,
         "vabsdiffub / vabsdiffuh / vabsdiffh / vabsdiffw", "lanewise")


def _by_type(fmt: str, types: Sequence[str], names: Sequence[str]) -> dict[tuple[str, str], str]:
    return {(t, t): fmt.format(n) for t, n in zip(types, names)}


_ALL6 = ("u8", "i8", "u16", "i16", "u32", "i32")
_SFX6 = ("ub", "b", "uh", "h", "uw", "w")
_ADDSAT = _by_type("vadd{}sat", _ALL6, _SFX6)
_SUBSAT = _by_type("vsub{}sat", _ALL6, _SFX6)
_AVG = _by_type("vavg{}", _ALL6, _SFX6)
_AVGRND = _by_type("vavg{}rnd", _ALL6, _SFX6)
_NAVG = {("u8", "u8"): "vnavgub", ("i8", "i8"): "vnavgb", ("i16", "i16"): "vnavgh", ("i32", "i32"): "vnavgw"}
_declare("hvx.vadd_sat", _sigs(_ADDSAT, lambda k: k[0]), "saturating_add(x, y)", _lanewise(_ADDSAT, pairs=True), ONE,
         "vadd{ub,b,uh,h,uw,w}sat", "lanewise")
_declare("hvx.vsub_sat", _sigs(_SUBSAT, lambda k: k[0]), "saturating_sub(x, y)", _lanewise(_SUBSAT, pairs=True), ONE,
         "vsub{ub,b,uh,h,uw,w}sat", "lanewise")
_declare("hvx.vavg", _sigs(_AVG, lambda k: k[0]), "halving_add(x, y)", _lanewise(_AVG), ONE,
         "vavg{ub,b,uh,h,uw,w}", "lanewise")
_declare("hvx.vavg_rnd", _sigs(_AVGRND, lambda k: k[0]), "rounding_halving_add(x, y)", _lanewise(_AVGRND), ONE,
         "vavg{ub,b,uh,h,uw,w}rnd", "lanewise")
# vnavg(.ub,.ub) returns .b = floor((a - b) / 2), whose bits are the u8 halving_sub (which wraps).
_declare("hvx.vnavg", _sigs(_NAVG, lambda k: k[0]), "halving_sub(x, y)", _lanewise(_NAVG), ONE,
         "vnavgub / vnavgb / vnavgh / vnavgw", "lanewise")
# vmpy(Vu.h, Vv.h):<<1:rnd:sat = sat16((2ab + 2^15) >> 16) = the Q15 rounding multiply.
_VMPYHVSRS = {("i16", "i16"): "vmpyhvsrs"}


def _vmpyhvsrs(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """vmpy(Vu.h, Vv.h):<<1:rnd:sat; by a constant, the scalar form vmpy(Vu.h, Rt.h):<<1:rnd:sat (vmpyhsrs,
    Halide's choice: no splat register)."""
    if t.args[1].is_const:
        return _scalar_or_fallback("vmpyhsrs", 16)(em, args, t)
    return _lanewise(_VMPYHVSRS)(em, args, t)


_declare("hvx.vmpyhvsrs", ["i16, i16 -> i16"], "rounding_mul_shr(x, y, 15)", _vmpyhvsrs, ONE,
         "vmpyhvsrs (vmpyhsrs by a constant Rt.h)", "lanewise")


# ---- widening (de-interleaved pair results) ------------------------------------------------------

_VADDW = {("u8", "u8"): "vaddubh", ("u16", "u16"): "vadduhw", ("i16", "i16"): "vaddhw"}
_VSUBW = {("u8", "u8"): "vsububh", ("u16", "u16"): "vsubuhw", ("i16", "i16"): "vsubhw"}
_declare("hvx.vadd_w", _sigs(_VADDW, lambda k: _wide_name(k[0])), "widening_add(x, y)", _widening(_VADDW), PAIR,
         "vaddubh / vadduhw / vaddhw", DEINT)
_declare("hvx.vsub_w", _sigs(_VSUBW, lambda k: "i" + _wide_name(k[0])[1:]), "widening_sub(x, y)",
         _widening(_VSUBW), PAIR, "vsububh / vsubuhw / vsubhw", DEINT)

_VMPY = {("u8", "u8"): "vmpyubv", ("i8", "i8"): "vmpybv", ("u8", "i8"): "vmpybusv", ("i8", "u8"): ("vmpybusv", True),
         ("u16", "u16"): "vmpyuhv", ("i16", "i16"): "vmpyhv", ("i16", "u16"): "vmpyhus",
         ("u16", "i16"): ("vmpyhus", True)}
_VMPY_SCALAR = {("u8", "u8"): ("vmpyub", 8), ("u8", "i8"): ("vmpybus", 8), ("u16", "u16"): ("vmpyuh", 16),
                ("i16", "i16"): ("vmpyh", 16)}


def _mul_result(k: tuple[str, ...]) -> str:
    signed = any(x.startswith("i") for x in k[-2:])
    return f"{'i' if signed else 'u'}{int(k[-1][1:]) * 2}"


_declare("hvx.vmpy", _sigs(_VMPY, _mul_result), "widening_mul(x, y)", _widening(_VMPY, _VMPY_SCALAR), PAIR,
         "vmpyubv / vmpybv / vmpybusv / vmpyuhv / vmpyhv / vmpyhus; by a constant: vmpyub / vmpybus / "
         "vmpyuh / vmpyh", DEINT)

_VMPY_ACC = {(_mul_result(k), *k): ((v[0] + ".acc", True) if isinstance(v, tuple) else v + ".acc")
             for k, v in _VMPY.items()}
# vmpyh.acc (Vxx.w += vmpy(Vu.h, Rt.h), no saturation) is HVX v65+ (we target v66).
_VMPY_ACC_SCALAR = {(_mul_result(k), *k): (n + ".acc", b) for k, (n, b) in _VMPY_SCALAR.items()}
# A signed accumulator of unsigned products (Halide's i16 sums of u8 pixels): the same instructions,
# the accumulation wraps modulo 2^bits either way.
_VMPY_ACC.update({("i16", "u8", "u8"): "vmpyubv.acc", ("i32", "u16", "u16"): "vmpyuhv.acc"})
_VMPY_ACC_SCALAR.update({("i16", "u8", "u8"): ("vmpyub.acc", 8), ("i32", "u16", "u16"): ("vmpyuh.acc", 16)})


def _acc_semantics(op: str) -> Callable[[Signature], str]:
    def text(sg: Signature) -> str:
        if sg.args[1].signed or sg.args[2].signed or not sg.result.signed:
            return f"x + {op}(y, z)"
        return f"x + reinterpret<{sg.result.name}>({op}(y, z))"

    return text


_declare("hvx.vmpy_acc", _sigs(_VMPY_ACC, lambda k: k[0]), _acc_semantics("widening_mul"),
         _accumulate(_VMPY_ACC, _VMPY_ACC_SCALAR), PAIR,
         "vmpyubv.acc / vmpybv.acc / vmpybusv.acc / vmpyuhv.acc / vmpyhv.acc / vmpyhus.acc; by a constant: "
         "vmpyub.acc / vmpybus.acc / vmpyuh.acc", DEINT)

_VADDW_ACC = {(_wide_name(k[0]), *k): f"{v}.acc" for k, v in _VADDW.items()}
_VADDW_ACC.update({("i16", "u8", "u8"): "vaddubh.acc", ("i32", "u16", "u16"): "vadduhw.acc"})
_declare("hvx.vadd_w_acc", _sigs(_VADDW_ACC, lambda k: k[0]), _acc_semantics("widening_add"), _accumulate(_VADDW_ACC),
         PAIR, "vaddubh.acc / vadduhw.acc / vaddhw.acc", DEINT)

# vmpa(Vuu, Rt): lo.h[i] = x[2i] * Rt.b[0] + y[2i] * Rt.b[1], hi.h[i] = x[2i+1] * Rt.b[2] + y[2i+1] * Rt.b[3].
_VMPA = {("u8", "u8"): "vmpabuu", ("u8", "i8"): "vmpabus", ("u16", "i8"): "vmpauhb", ("i16", "i8"): "vmpahb"}
_VMPA_SIGS = [f"{x}, {x}, {c}, {c} -> {'i' if x[0] == 'i' or c[0] == 'i' else 'u'}{int(x[1:]) * 2}"
              for (x, c) in _VMPA]


def _vmpa_semantics(sg: Signature) -> str:
    x, c = sg.args[0], sg.args[2]
    if x.bits == c.bits:
        return "widening_mul(x, z) + widening_mul(y, w)"
    return f"widening_mul(x, i{x.bits}(z)) + widening_mul(y, i{x.bits}(w))"  # i8 taps, 16-bit data


_declare("hvx.vmpa", _VMPA_SIGS, _vmpa_semantics, _vmpa(_VMPA), PAIR,
         "vmpabuu / vmpabus / vmpauhb / vmpahb (taps z, w constants or runtime scalars)", DEINT)
# The accumulating form on a de-interleaved accumulator (8-bit data: vmpabuu.acc / vmpabus.acc); an i16
# accumulator of u8 x u8 products wraps like the u16 one.
_VMPA_ACC_SIGS = ["u16, u8, u8, u8, u8 -> u16", "i16, u8, u8, u8, u8 -> i16", "i16, u8, u8, i8, i8 -> i16",
                  "i32, i16, i16, i8, i8 -> i32"]


def _vmpa_acc_semantics(sg: Signature) -> str:
    if sg.args[1].bits == 16:  # vmpahb.acc: i16 data by i8 taps into i32 (Vxx.w += vmpa(Vuu.h, Rt.b))
        return "x + (widening_mul(y, i16(w)) + widening_mul(z, i16(a)))"
    if sg.result.signed and not sg.args[3].signed:
        return "x + reinterpret<i16>(widening_mul(y, w) + widening_mul(z, a))"
    return "x + (widening_mul(y, w) + widening_mul(z, a))"


_declare("hvx.vmpa_acc", _VMPA_ACC_SIGS, _vmpa_acc_semantics, _vmpa(_VMPA, acc=True), PAIR,
         "vmpabuu.acc / vmpabus.acc / vmpahb.acc (taps constants or runtime scalars)", DEINT)

# ---- saturating narrowing ------------------------------------------------------------------------
# vpack(Vu, Vv):sat keeps lane order; vsat / vasr(Vu, Vv, #0):sat interleave.

_declare("hvx.vsat_ub", ["i16 -> u8"], "saturating_cast<u8>(x)",
         _narrowing({"i16": "vpackhub.sat"}, {"i16": "vsathub"}), ONE, "vpackhub.sat / vsathub")
_declare("hvx.vsat_b", ["i16 -> i8"], "saturating_cast<i8>(x)",
         _narrowing({"i16": "vpackhb.sat"}, {"i16": ("vasrhbsat", 0)}), ONE, "vpackhb.sat / vasrhbsat with Rt = 0")
_declare("hvx.vsat_h", ["i32 -> i16"], "saturating_cast<i16>(x)",
         _narrowing({"i32": "vpackwh.sat"}, {"i32": "vsatwh"}), ONE, "vpackwh.sat / vsatwh")
_declare("hvx.vsat_uh", ["i32 -> u16", "u32 -> u16"], "saturating_cast<u16>(x)",
         _narrowing({"i32": "vpackwuh.sat"}, {"i32": ("vasrwuhsat", 0), "u32": "vsatuwuh"}), ONE,
         "vpackwuh.sat / vasrwuhsat with Rt = 0; u32: vsatuwuh")

# ---- narrowing shifts with saturation (and rounding) ---------------------------------------------
# Shift amounts the hardware honours (found by running every amount under qemu-hexagon): Rt is read
# modulo the output width, so vasr(...):sat is exact for 0 <= Rt < out bits and vasr(...):rnd:sat for
# 1 <= Rt < out bits; a shift by exactly the output width is vround. Other amounts (and non-constant
# ones) are emitted from the semantics.


def _half_width_round(names: Mapping[str, str]) -> Callable[[Term, int], str | None]:
    def special(t: Term, sh: int) -> str | None:
        return names.get(t.args[0].type.name) if sh == t.type.bits else None

    return special


def _vasr_family(suffix: str, out: str, ins: Mapping[str, str], rnd: Mapping[str, str],
                 rounds: Mapping[str, str]) -> None:
    ibits = int(out[1:]) * 2
    sigs = [f"{x}, {a}{ibits} -> {out}" for x in ins for a in ("i", "u")]
    _declare(f"hvx.vasr_sat_{suffix}", sigs, f"saturating_cast<{out}>(x >> y)",
             _narrowing({}, ins, _shift_amount(0, ibits // 2 - 1)), ONE,
             " / ".join(ins.values()) + " (Rt = constant y)")
    rsigs = [f"{x}, {a}{ibits} -> {out}" for x in rnd for a in ("i", "u")]
    _declare(f"hvx.vasr_rnd_sat_{suffix}", rsigs, f"saturating_cast<{out}>(rounding_shr(x, y))",
             _narrowing({}, rnd, _shift_amount(1, ibits // 2, (0, ibits // 2 - 1)),
                        _half_width_round(rounds)), ONE,
             " / ".join(rnd.values()) + " (Rt = constant y); " + " / ".join(rounds.values()) + " for y = "
             + str(ibits // 2))


_vasr_family("ub", "u8", {"i16": "vasrhubsat", "u16": "vasruhubsat"},
             {"i16": "vasrhubrndsat", "u16": "vasruhubrndsat"}, {"i16": "vroundhub", "u16": "vrounduhub"})
_vasr_family("b", "i8", {"i16": "vasrhbsat"}, {"i16": "vasrhbrndsat"}, {"i16": "vroundhb"})
_vasr_family("uh", "u16", {"i32": "vasrwuhsat", "u32": "vasruwuhsat"},
             {"i32": "vasrwuhrndsat", "u32": "vasruwuhrndsat"}, {"i32": "vroundwuh", "u32": "vrounduwuh"})
_vasr_family("h", "i16", {"i32": "vasrwhsat"}, {"i32": "vasrwhrndsat"}, {"i32": "vroundwh"})


def _vmpyhss(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    """vmpy(Vu.h, Rt.h):<<1:sat = sat16((2ab) >> 16) for a constant b; for a vector b the exact
    two-instruction form vmpy(Vu.h, Vv.h) + vasr(.w, .w, #15):sat."""
    if t.args[1].is_const:
        return _scalar_or_fallback("vmpyhss", 16)(em, args, t)
    from fpir.ops import make
    from fpir.term import const
    from fpir.types import i32

    return em.emit(make("hvx.vasr_sat_h", make("hvx.vmpy", t.args[0], t.args[1]), const(15, i32)))


_declare("hvx.vmpyhss", ["i16, i16 -> i16"], "mul_shr(x, y, 15)", _vmpyhss, ONE,
         "vmpyhss (Rt.h = constant y); else vmpyhv + vasrwhsat #15")


# ---- dot products: vrmpy, vdmpy / vrmpy by constant taps, vtmpy (pitchfork/targets/hvx_dot.py) -----
# Imported here, not at the top: its declarations take this place in the table, and it uses the
# helpers defined above.
from pitchfork.targets import hvx_dot  # noqa: E402,F401


# ---- 32 x 32 high multiplies (the requantize multiply) --------------------------------------------
# A 32-bit product's high word from two 32 x 16 multiplies: b = bh * 2^16 + bl (bh signed, bl unsigned),
# so (a * b) >> 31 = (a * bh + ((a * bl) >> 16)) >> 15 exactly (the floors compose). vmpye gives the
# inner term, vmpyo's shift-accumulate form adds a * bh to it and shifts (saturating: only
# tmin * tmin overflows); the :rnd form adds 2^14 first, which is rounding_mul_shr(a, b, 31).
_VMPYE = {("i32", "i32"): "vmpyewuh"}
_declare("hvx.vmpye", ["i32, i32 -> i32"], "i32((i64(x) * i64(y & 65535)) >> 16)", _lanewise(_VMPYE), ONE,
         "vmpyewuh: Vd.w = vmpye(Vu.w, Vv.uh) (the even, unsigned halfword of each word of Vv)", "lanewise")
_VMPYO = {("i32", "i32"): "vmpyowh"}
_declare("hvx.vmpyo", ["i32, i32 -> i32"], "saturating_cast<i32>((i64(x) * i64(y >> 16)) >> 15)",
         _lanewise(_VMPYO), ONE, "vmpyowh: Vd.w = vmpyo(Vu.w, Vv.h):<<1:sat (the odd halfword)", "lanewise")
_VMPYO_RND = {("i32", "i32"): "vmpyowh.rnd"}
_declare("hvx.vmpyo_rnd", ["i32, i32 -> i32"], "saturating_cast<i32>((i64(x) * i64(y >> 16) + 16384) >> 15)",
         _lanewise(_VMPYO_RND), ONE, "vmpyowh.rnd: Vd.w = vmpyo(Vu.w, Vv.h):<<1:rnd:sat", "lanewise")
_VMPYO_SACC = {("i32", "i32", "i32"): "vmpyowh.sacc"}
_declare("hvx.vmpyo_sacc", ["i32, i32, i32 -> i32"], "saturating_cast<i32>((i64(x) + i64(y) * i64(z >> 16)) >> 15)",
         _lanewise(_VMPYO_SACC), ONE, "vmpyowh.sacc: Vx.w += vmpyo(Vu.w, Vv.h):<<1:sat:shift", "lanewise")
_VMPYO_RND_SACC = {("i32", "i32", "i32"): "vmpyowh.rnd.sacc"}
_declare("hvx.vmpyo_rnd_sacc", ["i32, i32, i32 -> i32"],
         "saturating_cast<i32>((i64(x) + i64(y) * i64(z >> 16) + 16384) >> 15)",
         _lanewise(_VMPYO_RND_SACC), ONE, "vmpyowh.rnd.sacc: Vx.w += vmpyo(Vu.w, Vv.h):<<1:rnd:sat:shift",
         "lanewise")


# ---- the unsigned 32 x 32 high word from the signed Q31 product (sequences of the instructions above) ----
# HVX's 32-bit multiplies are signed in the word operand. For u32 bits read as i32 (xs, ys),
# u*u = s*s + 2^32 * ((xs < 0 ? y : 0) + (ys < 0 ? x : 0)) mod 2^64, so the unsigned high word is the
# signed one plus that correction. q = vmpyo_sacc(vmpye(xs, ys), xs, ys) is floor(s*s / 2^31)
# (saturated only for xs = ys = -2^31, to 2^31 - 1 for 2^31): vmpy_uw_hi is (q >> 1) + correction, the
# high word (2^30 - 1 for 2^30 at x = y = 2^31); vmpy_uw_hi_rnd is (q + 1) >> 1 (vavg:rnd) + correction,
# round(u*u / 2^32) exactly (the correction is even in Q31 units). Like rounding_shl_b these are
# sequences, not instructions: the semantics is the sequence, the emitter writes it (a constant operand's
# sign test folds: 7 instructions, else 9). Cost 5 / 6, below the 8 of rounding_mul_shr left for the
# generic expansion they replace (16-bit partial products, ~25 instructions when one factor is a
# constant; hvx_i64's 64-bit code for the unlifted spelling, 12-14 packets): rules vmpyo_sacc_rnd*_u32.
def _sequence(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    return _fallback(em, t)  # the declared semantics, a sequence of declared instructions


_UW_CORRECTION = ("(reinterpret<u32>(reinterpret<i32>(x) >> 31) & y) + (reinterpret<u32>(reinterpret<i32>(y) >> 31) & x)")
_Q31_OF_BITS = ("hvx.vmpyo_sacc(hvx.vmpye(reinterpret<i32>(x), reinterpret<i32>(y)), reinterpret<i32>(x), "
                "reinterpret<i32>(y))")
_declare("hvx.vmpy_uw_hi", ["u32, u32 -> u32"], f"reinterpret<u32>({_Q31_OF_BITS} >> 1) + {_UW_CORRECTION}",
         _sequence, 5, "vmpye, vmpyo:<<1:sat:shift, vasr, and the sign correction (vasr, vand, vadd x2)")
_declare("hvx.vmpy_uw_hi_rnd", ["u32, u32 -> u32"],
         f"reinterpret<u32>(hvx.vavg_rnd({_Q31_OF_BITS}, 0)) + {_UW_CORRECTION}",
         _sequence, 6, "vmpye, vmpyo:<<1:sat:shift, vavg:rnd, and the sign correction (vasr, vand, vadd x2)")


# ---- zero-point subtraction scaled by a shift: (widen(x) - z) << c as one by-scalar multiply-accumulate --
# x * 2^c accumulated onto -(z << c): vmpyub.acc / vmpyuh.acc with Rt = 2^c. For a splat zero point (the
# quantized add / mul benchmarks) the accumulator is loop-invariant, so the loop has one instruction (and
# a register copy) where the plain form needs an unpack, a pair subtraction and a shift per register.
_VMPY_ACC_ZP = {("u8", "i16"): ("vmpyub.acc", 8), ("u16", "i32"): ("vmpyuh.acc", 16),
                ("u8", "u8"): ("vmpyub.acc", 8), ("u16", "u16"): ("vmpyuh.acc", 16)}


def _vmpy_acc_zp(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
    c = _const(t.args[2])
    bits = t.args[0].type.bits
    if c is None or not 0 <= c < bits:
        return _fallback(em, t)
    name, rbits = _VMPY_ACC_ZP[_key(t)[:2]]
    n = REG_BITS // bits
    out = _vec(2 * bits, n)
    y = args[1]
    wide = ir.VectorType(ir.IntType(t.type.bits), y.type.count)
    if y.type != wide:  # a zero point of the data's type: zero-extend it
        y = em.b.zext(y, wide)
    acc = em.b.sub(ir.Constant(y.type, None), em.b.shl(y, ir.Constant(y.type, [c] * y.type.count)))
    rt = _replicate(1 << c, rbits)

    def one(a: ir.Value, x: ir.Value) -> ir.Value:
        return _interleave(em, em.hvx_call(name, [_deinterleave(em, a), x, rt], out, True, (True, False)))

    return em.map_chunks([acc, args[0]], n, one)


_declare("hvx.vmpy_acc_zp", ["u8, i16, i16 -> i16", "u16, i32, i32 -> i32", "u8, u8, i16 -> i16", "u16, u16, i32 -> i32"],
         lambda sg: f"(cast<{sg.result.name}>(x) - cast<{sg.result.name}>(y)) << z", _vmpy_acc_zp, PAIR,
         "vmpyub.acc / vmpyuh.acc by Rt = 2^z onto -(y << z) (constant z below the narrow width)", DEINT)

# ---- non-widening multiplies (vmpyi): the low half of the product, by a vector or a scalar Rt ------
# vmpyi(Vu.h, Rt.b) / vmpyi(Vu.w, Rt.b) / vmpyi(Vu.w, Rt.h) multiply every lane by a byte or halfword
# of Rt (replicated, so the selection of the byte does not matter); the halfword vector form vmpyih
# takes any multiplier. A 32-bit product by a vector or a constant wider than 16 bits has no single
# instruction: the emitter then writes the product itself (LLVM's vmpyieo / vmpyie sequence).
_VMPYI_SCALAR = {16: (("vmpyihb", 8),), 32: (("vmpyiwb", 8), ("vmpyiwh", 16))}
_VMPYI_VECTOR = {16: "vmpyih"}


def _follow_layout(em: Any, t: Term, args: Sequence[ir.Value], n: int,
                   f: Callable[..., ir.Value]) -> ir.Value:
    """Apply the one-register, lane-wise `f` to `args` in the lane order `t` is cheapest in: on a
    de-interleaved operand (a widening instruction's pair) `f` runs on the two de-interleaved halves
    and the result is re-interleaved, so LLVM cancels the shuffles against the neighbours' and a chain
    widening op -> vmpyi -> accumulate keeps its pairs de-interleaved (as `_lanewise` does)."""
    if _layout(t, _layouts(em)) != DEINT:
        return em.map_chunks(args, n, f)

    def pairwise(*ps: ir.Value) -> ir.Value:
        halves = [_halves(em, _deinterleave(em, p)) for p in ps]
        return _interleave(em, _join(em, f(*[h[0] for h in halves]), f(*[h[1] for h in halves])))

    return em.map_chunks(args, 2 * n, pairwise)


def _vmpyi(acc: bool) -> Callable[..., ir.Value]:
    """x * y (acc: x + y * z), every lane modulo 2^bits; signedness does not change the low bits.
    Lane-wise, so it follows its operands' lane order (`_follow_layout`)."""

    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        bits = t.type.bits
        n = REG_BITS // bits
        rt = _vec(bits, n)
        first = 1 if acc else 0
        sfx = ".acc" if acc else ""
        head = [args[0]] if acc else []
        for c_at, v_at in ((first + 1, first), (first, first + 1)):
            c = _const(t.args[c_at])
            if c is None:
                continue
            sc = ((c + (1 << (bits - 1))) % (1 << bits)) - (1 << (bits - 1))  # as a signed lane value
            for name, rbits in _VMPYI_SCALAR[bits]:
                if -(1 << (rbits - 1)) <= sc < 1 << (rbits - 1):
                    r = _replicate(sc, rbits)
                    return _follow_layout(em, t, [*head, args[v_at]], n,
                                          lambda *xs, name=name, r=r: em.hvx_call(name + sfx, [*xs, r], rt))
        if bits in _VMPYI_VECTOR:
            name = _VMPYI_VECTOR[bits] + sfx
            return _follow_layout(em, t, [*head, args[first], args[first + 1]], n,
                                  lambda *xs: em.hvx_call(name, xs, rt))
        return _fallback(em, t)

    return emit


_VMPYI_SIGS = ["i16, i16 -> i16", "u16, u16 -> u16", "i32, i32 -> i32", "u32, u32 -> u32"]
_declare("hvx.vmpyi", _VMPYI_SIGS, "x * y", _vmpyi(False), ONE,
         "vmpyih (16-bit vectors); by a constant: vmpyihb (Rt.b), vmpyiwb (Rt.b), vmpyiwh (Rt.h)", "lanewise")
_declare("hvx.vmpyi_acc", [f"{a.split(',')[0]}, {a}" for a in _VMPYI_SIGS], "x + y * z", _vmpyi(True), ONE,
         "vmpyih.acc; by a constant: vmpyihb.acc, vmpyiwb.acc, vmpyiwh.acc", "lanewise")

# vmpyie(Vu.w, Vv.uh): each word times the (unsigned) even halfword of the other operand's word.
_VMPYIE = {("i32", "i32"): "vmpyiewuh", ("u32", "u32"): "vmpyiewuh"}
_declare("hvx.vmpyie", ["i32, i32 -> i32", "u32, u32 -> u32"], "x * (y & 65535)", _lanewise(_VMPYIE), ONE,
         "vmpyiewuh: Vd.w = vmpyie(Vu.w, Vv.uh)", "lanewise")


# ---- truncating narrowing by even / odd selection ------------------------------------------------
# vpacke / vpacko keep the even (low) or odd (high) half of every lane of an in-order pair, in order;
# vshuffe / vshuffo do the same on a de-interleaved pair and interleave (even lanes from Vv = lo).


def _select_half(pack: Mapping[int, str], shuffle: Mapping[int, str]) -> Callable[..., ir.Value]:
    def emit(em: Any, args: Sequence[ir.Value], t: Term) -> ir.Value:
        obits = t.type.bits
        n = REG_BITS // obits
        rt = _vec(obits, n)
        if _layout(t.args[0], _layouts(em)) == DEINT:
            name = shuffle[obits]

            def interleaving(x: ir.Value) -> ir.Value:
                lo, hi = _halves(em, _deinterleave(em, x))
                return em.hvx_call(name, [hi, lo], rt)

            return em.map_chunks([args[0]], n, interleaving)
        pname = pack[obits]

        def packed(x: ir.Value) -> ir.Value:
            lo, hi = _halves(em, x)
            return em.hvx_call(pname, [hi, lo], rt)

        return em.map_chunks([args[0]], n, packed)

    return emit


_NARROW_SIGS = ["u16 -> u8", "i16 -> i8", "u32 -> u16", "i32 -> i16"]
_declare("hvx.vpacke", _NARROW_SIGS, lambda sg: f"cast<{sg.result.name}>(x)",
         _select_half({8: "vpackeb", 16: "vpackeh"}, {8: "vshuffeb", 16: "vshufeh"}), ONE,
         "vpackeb / vpackeh (in order); vshuffeb / vshufeh (de-interleaved operand)")
_declare("hvx.vpacko", _NARROW_SIGS, lambda sg: f"cast<{sg.result.name}>(x >> {sg.result.bits})",
         _select_half({8: "vpackob", 16: "vpackoh"}, {8: "vshuffob", 16: "vshufoh"}), ONE,
         "vpackob / vpackoh (in order); vshuffob / vshufoh (de-interleaved operand)")

# vasr(Vu.w, Vv.w, Rt): truncating narrowing shift (interleaving); exact for Rt < 16 (Rt is read
# modulo 16), where the 16 result bits lie inside the word, so arithmetic and logical shifts agree.
_declare("hvx.vasr_trunc_h", ["i32, i32 -> i16", "i32, u32 -> i16", "u32, i32 -> u16", "u32, u32 -> u16"],
         lambda sg: f"cast<{sg.result.name}>(x >> y)",
         _narrowing({}, {"i32": "vasrwh", "u32": "vasrwh"}, _shift_amount(0, 15)), ONE, "vasrwh (Rt = constant y)")


# ---- shift and accumulate: vasl.acc (pitchfork/targets/hvx_shift.py) ---------------------------------
from pitchfork.targets import hvx_shift  # noqa: E402,F401


def instruction_names() -> list[str]:
    from pitchfork.targets.base import target_ops

    return sorted(s.name for s in target_ops("hvx"))

