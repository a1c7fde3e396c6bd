"""Hexagon HVX (128-byte mode) instruction table (ISA_INTRINSICS.md section 2.3): every instruction the HVX
lowering rules (rules/lower/hvx.rules) may emit, declared once.

Each row of `TABLE` (a `base.Inst`, declared by `base.declare` as `hvx.<mnemonic>`) gives the signatures
the instruction exists for, its lane-wise meaning as FPIR text over x, y, z, w, a, ... (or a function
of the signature), its cost, its LLVM spelling, its emitter and, where the emitters choose a form by
it, the lane order its result is cheapest in (`layout`: DEINT for a widening instruction's
de-interleaved pair, LANEWISE for a same-width lane-wise instruction that follows its operands;
pitchfork/targets/hvx_lanes.py). Instructions are grouped by assembly mnemonic (`vabsdiff`, `vmpy`,
`vasr ...:rnd:sat`); a family with several element types has one signature per type, and its emitter
picks the `llvm.hexagon.V6.<name>.128B` intrinsic from the operand types through the maps above the
table (`_ABSDIFF`, `_VMPY`, ...: operand type names -> intrinsic). Narrowing families whose
semantics names the result type carry it in the name (`hvx.vsat_ub`: `.ub = vsat/vpack(.h)`).
Emitters are built by the shape factories of pitchfork/targets/hvx_emit.py from those maps.

Cost model: one packet slot per instruction writing one register (ONE), two for a register pair
(PAIR: widening instructions, accumulations); a sequence of instructions costs their count. Generic
primitives cost the instructions LLVM emits for them (1 where HVX has one; pitchfork/targets/primitive_cost.py
where it has none: a 32-bit multiply 2, a cast u8 -> i32 3), FPIR ops left to the generic expansion 8
(pitchfork.targets.target_cost).

Hardware facts encoded in the meanings were found by running every case under qemu-hexagon
(tests/pitchfork/targets/test_hvx.py runs every instruction at every signature against its
semantics): shift amounts are read modulo the lane width, `vnavg(.ub)` returns the wrapping u8
halving_sub, `vtmpy`'s pair lanes are spelled out below.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from fpir.ops import make
from fpir.term import Term, const
from fpir.types import i32
from pitchfork.targets.base import Inst, Signature, declare, immediate, target_ops
from pitchfork.targets.hvx_emit import (Table, accumulate, amount_encodable, dot_vv, half_width_round, lanewise,
                                        narrowing, pair_dot, pairs, scalar_or_sequence, select_half, shift_acc,
                                        shift_amount, taps, vector_or_scalar, vmpa, vmpyi, vrmpy, vtmpy, widening,
                                        zero_point_acc)
from pitchfork.targets.hvx_lanes import DEINT_RESULT as DEINT
from pitchfork.targets.hvx_lanes import LANEWISE, declared_meaning

ONE, PAIR = 1, 2

# ---------------------------------------------------------------------------------------------
# Signature and semantics helpers


def _sigs(table: Table, result: Callable[[tuple[str, ...]], str]) -> list[str]:
    """One signature per key of an intrinsic map: its operand types -> result(key)."""
    return [f"{', '.join(k)} -> {result(k)}" for k in table]


def _wide_name(name: str) -> str:
    return f"{name[0]}{int(name[1:]) * 2}"


def _unsigned(name: str) -> str:
    return "u" + name[1:]


def _by_type(fmt: str, types: Sequence[str], names: Sequence[str]) -> dict[tuple[str, str], str]:
    return {(t, t): fmt.format(n) for t, n in zip(types, names)}


def _mul_result(k: tuple[str, ...]) -> str:
    signed = any(x.startswith("i") for x in k[-2:])
    return f"{'i' if signed else 'u'}{int(k[-1][1:]) * 2}"


def _pair_result(x: str, c: str) -> str:
    """The result of data x by taps c: twice x's width, signed if either is."""
    return f"{'i' if x[0] == 'i' or c[0] == 'i' else 'u'}{int(x[1:]) * 2}"


def _acc_semantics(op: str) -> Callable[[Signature], str]:
    def text(sg: Signature) -> str:
        if sg.args[1].signed or sg.args[2].signed or not sg.result.signed:
            return f"x + {op}(y, z)"
        return f"x + reinterpret<{sg.result.name}>({op}(y, z))"

    return text


def _vmpa_semantics(sg: Signature) -> str:
    x, c = sg.args[0], sg.args[2]
    if x.bits == c.bits:
        return "widening_mul(x, z) + widening_mul(y, w)"
    return f"widening_mul(x, i{x.bits}(z)) + widening_mul(y, i{x.bits}(w))"  # i8 taps, 16-bit data


def _vmpa_acc_semantics(sg: Signature) -> str:
    if sg.args[1].bits == 16:  # vmpahb.acc: i16 data by i8 taps into i32 (Vxx.w += vmpa(Vuu.h, Rt.b))
        return "x + (widening_mul(y, i16(w)) + widening_mul(z, i16(a)))"
    if sg.result.signed and not sg.args[3].signed:
        return "x + reinterpret<i16>(widening_mul(y, w) + widening_mul(z, a))"
    return "x + (widening_mul(y, w) + widening_mul(z, a))"


def _vrmpy_semantics(sg: Signature) -> str:
    return f"x + vector_reduce_add_x4({sg.result.name}(widening_mul(y, z)))"


def _taps_semantics(f: int, acc: bool) -> Callable[[Signature], str]:
    """(acc +) the sum of f data operands times f taps (i8 taps of 16-bit data sign-extended)."""

    def sem(sg: Signature) -> str:
        first = 1 if acc else 0
        ps = ["x", "y", "z", "w", "a", "b", "c", "d", "e"]
        data, tap_names = ps[first:first + f], ps[first + f:first + 2 * f]
        x, c, r = sg.args[first], sg.args[first + f], sg.result.name
        terms = []
        for d, k in zip(data, tap_names):
            tap = k if x.bits == c.bits else f"i{x.bits}({k})"  # i8 taps of 16-bit data
            terms.append(f"widening_mul({d}, {tap})" if f == 2 else f"{r}(widening_mul({d}, {tap}))")
        return ("x + " if acc else "") + " + ".join(terms)

    return sem


def _pairs_semantics(acc: bool) -> Callable[[Signature], str]:
    def sem(sg: Signature) -> str:
        x = sg.args[1 if acc else 0]
        tap = "z" if acc else "y"
        product = f"widening_mul({'y' if acc else 'x'}, {tap if x.bits == 8 else f'i{x.bits}({tap})'})"
        return ("x + " if acc else "") + f"vector_reduce_add_x2({product})"

    return sem


def _vtmpy_semantics(sg: Signature) -> str:
    x, r = sg.args[0], sg.result.name
    tap = (lambda k: k) if x.bits == 8 else (lambda k: f"i{x.bits}({k})")  # i8 taps of 16-bit data
    return f"widening_mul(x, {tap('w')}) + widening_mul(y, {tap('a')}) + {r}(z)"


def _with_acc(sigs: Sequence[str]) -> list[str]:
    """The accumulating twins of signatures: the result type as a first operand."""
    return [f"{s.split('-> ')[1]}, {s}" for s in sigs]


# ---------------------------------------------------------------------------------------------
# Intrinsics by operand types (the emitters' tables)

# ---- same-width lane-wise
_ABSDIFF = {("u8", "u8"): "vabsdiffub", ("u16", "u16"): "vabsdiffuh", ("i16", "i16"): "vabsdiffh",
            ("i32", "i32"): "vabsdiffw"}
_ALL6 = ("u8", "i8", "u16", "i16", "u32", "i32")
_SFX6 = ("ub", "b", "uh", "h", "uw", "w")
_ADDSAT = _by_type("vadd{}sat", _ALL6, _SFX6)
_SUBSAT = _by_type("vsub{}sat", _ALL6, _SFX6)
_AVG = _by_type("vavg{}", _ALL6, _SFX6)
_AVGRND = _by_type("vavg{}rnd", _ALL6, _SFX6)
_NAVG = {("u8", "u8"): "vnavgub", ("i8", "i8"): "vnavgb", ("i16", "i16"): "vnavgh", ("i32", "i32"): "vnavgw"}
# vmpy(Vu.h, Vv.h):<<1:rnd:sat = sat16((2ab + 2^15) >> 16) = the Q15 rounding multiply.
_VMPYHVSRS = {("i16", "i16"): "vmpyhvsrs"}

# ---- widening (de-interleaved pair results); (name, True): the intrinsic takes the operands swapped
_VADDW = {("u8", "u8"): "vaddubh", ("u16", "u16"): "vadduhw", ("i16", "i16"): "vaddhw"}
_VSUBW = {("u8", "u8"): "vsububh", ("u16", "u16"): "vsubuhw", ("i16", "i16"): "vsubhw"}
_VMPY = {("u8", "u8"): "vmpyubv", ("i8", "i8"): "vmpybv", ("u8", "i8"): "vmpybusv", ("i8", "u8"): ("vmpybusv", True),
         ("u16", "u16"): "vmpyuhv", ("i16", "i16"): "vmpyhv", ("i16", "u16"): "vmpyhus",
         ("u16", "i16"): ("vmpyhus", True)}
# by a scalar Rt: (name, Rt lane bits), keyed (vector operand, scalar operand)
_VMPY_SCALAR = {("u8", "u8"): ("vmpyub", 8), ("u8", "i8"): ("vmpybus", 8), ("u16", "u16"): ("vmpyuh", 16),
                ("i16", "i16"): ("vmpyh", 16)}
_VMPY_ACC = {(_mul_result(k), *k): ((v[0] + ".acc", True) if isinstance(v, tuple) else v + ".acc")
             for k, v in _VMPY.items()}
# vmpyh.acc (Vxx.w += vmpy(Vu.h, Rt.h), no saturation) is HVX v65+ (we target v66).
_VMPY_ACC_SCALAR = {(_mul_result(k), *k): (n + ".acc", b) for k, (n, b) in _VMPY_SCALAR.items()}
# A signed accumulator of unsigned products (Halide's i16 sums of u8 pixels): the same instructions,
# the accumulation wraps modulo 2^bits either way.
_VMPY_ACC.update({("i16", "u8", "u8"): "vmpyubv.acc", ("i32", "u16", "u16"): "vmpyuhv.acc"})
_VMPY_ACC_SCALAR.update({("i16", "u8", "u8"): ("vmpyub.acc", 8), ("i32", "u16", "u16"): ("vmpyuh.acc", 16)})
_VADDW_ACC = {(_wide_name(k[0]), *k): f"{v}.acc" for k, v in _VADDW.items()}
_VADDW_ACC.update({("i16", "u8", "u8"): "vaddubh.acc", ("i32", "u16", "u16"): "vadduhw.acc"})
# vmpa(Vuu, Rt): lo.h[i] = x[2i] * Rt.b[0] + y[2i] * Rt.b[1], hi.h[i] = x[2i+1] * Rt.b[2] + y[2i+1] * Rt.b[3].
_VMPA = {("u8", "u8"): "vmpabuu", ("u8", "i8"): "vmpabus", ("u16", "i8"): "vmpauhb", ("i16", "i8"): "vmpahb"}
_VMPA_SIGS = [f"{x}, {x}, {c}, {c} -> {_pair_result(x, c)}" for (x, c) in _VMPA]
# The accumulating form on a de-interleaved accumulator (8-bit data: vmpabuu.acc / vmpabus.acc); an i16
# accumulator of u8 x u8 products wraps like the u16 one.
_VMPA_ACC_SIGS = ["u16, u8, u8, u8, u8 -> u16", "i16, u8, u8, u8, u8 -> i16", "i16, u8, u8, i8, i8 -> i16",
                  "i32, i16, i16, i8, i8 -> i32"]

# ---- narrowing shifts with saturation (and rounding), by the input type; vround for a shift by
# half the width
#: vasrwh's shift Rt (vasr_trunc_h): a constant, or a uniform runtime amount, in [0, 15]
_VASRWH = shift_amount(0, 15)
_VASR_SAT = {"ub": {"i16": "vasrhubsat", "u16": "vasruhubsat"}, "b": {"i16": "vasrhbsat"},
             "uh": {"i32": "vasrwuhsat", "u32": "vasruwuhsat"}, "h": {"i32": "vasrwhsat"}}
_VASR_RND_SAT = {"ub": {"i16": "vasrhubrndsat", "u16": "vasruhubrndsat"}, "b": {"i16": "vasrhbrndsat"},
                 "uh": {"i32": "vasrwuhrndsat", "u32": "vasruwuhrndsat"}, "h": {"i32": "vasrwhrndsat"}}
_VROUND = {"ub": {"i16": "vroundhub", "u16": "vrounduhub"}, "b": {"i16": "vroundhb"},
           "uh": {"i32": "vroundwuh", "u32": "vrounduwuh"}, "h": {"i32": "vroundwh"}}

# ---- dot products: acc[j] + sum_k y[4j+k] * z[4j+k]
_VRMPY = {("u32", "u8", "u8"): "vrmpyubv.acc", ("i32", "u8", "u8"): "vrmpyubv.acc",
          ("i32", "i8", "i8"): "vrmpybv.acc", ("i32", "u8", "i8"): "vrmpybusv.acc"}
# The vector x scalar forms (Vx.w += vrmpy(Vu.ub, Rt.ub / Rt.b)) where one operand repeats one 32-bit
# word in every lane group: its data side must be the unsigned one (there is no Vu.b x Rt form).
_VRMPY_BY_WORD = {("u8", "u8"): "vrmpyub.acc", ("u8", "i8"): "vrmpybus.acc"}
# by constant taps: vdmpy(Vu, Rt): out[i] = u[2i] * Rt.b[0] + u[2i+1] * Rt.b[1] (Rt = [c0 c1 c0 c1],
# wrapping), and vrmpy(Vu, Rt): out[i] = sum_k u[4i+k] * Rt.b[k]. Declared lane-wise over their
# de-interleaved operands (the taps' data as separate vectors, as Halide's add trees write them): the
# emitter interleaves the data into one register and passes the taps as Rt, so results come out in
# natural lane order.
_VDMPY = {("u8", "i8"): "vdmpybus", ("i16", "i8"): "vdmpyhb"}
_VDMPY_SIGS = [f"{x}, {x}, {c}, {c} -> {_pair_result(x, c)}" for (x, c) in _VDMPY]
_VRMPY_TAPS = {("u8", "i8", "i32"): "vrmpybus", ("u8", "u8", "u32"): "vrmpyub", ("u8", "u8", "i32"): "vrmpyub"}
_VRMPY_TAPS_SIGS = [f"{x}, {x}, {x}, {x}, {c}, {c}, {c}, {c} -> {r}" for (x, c, r) in _VRMPY_TAPS]
# four-way dot products of two vector sets: sum_k x_k * a_k over four separate byte vectors x_0..x_3 and
# a_0..a_3 (Halide's vrmpy(v.ub, v.ub) check: u32(x) * u32(x) + u32(y) * u32(y) + ...): per four
# registers of each set, the set interleaved by two levels of vshuff (bytes, then halfwords: four
# vshuff; LLVM shares them when the sets are the same vectors), then one vector x vector vrmpy per
# register, results in natural lane order. Declared lane-wise over the de-interleaved operands.
_VRMPY_VV_SIGS = ["u8, u8, u8, u8, u8, u8, u8, u8 -> u32", "i8, i8, i8, i8, i8, i8, i8, i8 -> i32"]
# pairwise dot products by a constant tap: vdmpy(Vu, Rt) with every byte of Rt = c: out[i] = u[2i] * c +
# u[2i+1] * c (wrapping in the result width), i.e. Halide's vector_reduce_add by 2 of widening products by
# a splat (a pairwise widening sum for c = 1, HVX's uaddlp). One instruction per register of data.
_VDMPY_PAIRS = {"u8": "vdmpybus", "i16": "vdmpyhb"}
# 3-tap filter. Lane semantics, confirmed under qemu-hexagon (impulse responses of every input lane, and
# random data with random Rt for vtmpybus, vtmpyb, vtmpyhb and vtmpybus.acc, 0 mismatches): for the pair
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

# ---- 32 x 32 high multiplies (the requantize multiply): a 32-bit product's high word from two 32 x 16
# multiplies: b = bh * 2^16 + bl (bh signed, bl unsigned), so (a * b) >> 31 = (a * bh + ((a * bl) >> 16))
# >> 15 exactly (the floors compose). vmpye gives the inner term, vmpyo's shift-accumulate form adds
# a * bh to it and shifts (saturating: only tmin * tmin overflows); the :rnd form adds 2^14 first,
# which is rounding_mul_shr(a, b, 31).
_VMPYE = {("i32", "i32"): "vmpyewuh"}
_VMPYO = {("i32", "i32"): "vmpyowh"}
_VMPYO_RND = {("i32", "i32"): "vmpyowh.rnd"}
_VMPYO_SACC = {("i32", "i32", "i32"): "vmpyowh.sacc"}
_VMPYO_RND_SACC = {("i32", "i32", "i32"): "vmpyowh.rnd.sacc"}
# The unsigned 32 x 32 high word from the signed Q31 product (sequences of the instructions above).
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
_UW_CORRECTION = ("(reinterpret<u32>(reinterpret<i32>(x) >> 31) & y) + (reinterpret<u32>(reinterpret<i32>(y) >> 31) & x)")
_Q31_OF_BITS = ("hvx.vmpyo_sacc(hvx.vmpye(reinterpret<i32>(x), reinterpret<i32>(y)), reinterpret<i32>(x), "
                "reinterpret<i32>(y))")

# ---- zero-point subtraction scaled by a shift: (widen(x) - z) << c as one by-scalar multiply-accumulate:
# x * 2^c accumulated onto -(z << c), vmpyub.acc / vmpyuh.acc with Rt = 2^c. For a splat zero point (the
# quantized add / mul benchmarks) the accumulator is loop-invariant, so the loop has one instruction (and
# a register copy) where the plain form needs an unpack, a pair subtraction and a shift per register.
_VMPY_ACC_ZP = {("u8", "i16"): ("vmpyub.acc", 8), ("u16", "i32"): ("vmpyuh.acc", 16),
                ("u8", "u8"): ("vmpyub.acc", 8), ("u16", "u16"): ("vmpyuh.acc", 16)}

# ---- non-widening multiplies (vmpyi): the low half of the product, by a vector or a scalar Rt.
# vmpyi(Vu.h, Rt.b) / vmpyi(Vu.w, Rt.b) / vmpyi(Vu.w, Rt.h) multiply every lane by a byte or halfword
# of Rt (replicated, so the selection of the byte does not matter); the halfword vector form vmpyih
# takes any multiplier. A 32-bit product by a vector or a constant wider than 16 bits has no single
# instruction: the emitter then writes the product itself (LLVM's vmpyieo / vmpyie sequence).
_VMPYI_SCALAR = {16: (("vmpyihb", 8),), 32: (("vmpyiwb", 8), ("vmpyiwh", 16))}
_VMPYI_VECTOR = {16: "vmpyih"}
_VMPYI_SIGS = ["i16, i16 -> i16", "u16, u16 -> u16", "i32, i32 -> i32", "u32, u32 -> u32"]
# vmpyie(Vu.w, Vv.uh): each word times the (unsigned) even halfword of the other operand's word.
_VMPYIE = {("i32", "i32"): "vmpyiewuh", ("u32", "u32"): "vmpyiewuh"}

# ---- truncating narrowing by even / odd selection: vpacke / vpacko keep the even (low) or odd (high)
# half of every lane of an in-order pair, in order; vshuffe / vshuffo do the same on a de-interleaved
# pair and interleave (even lanes from Vv = lo).
_NARROW_SIGS = ["u16 -> u8", "i16 -> i8", "u32 -> u16", "i32 -> i16"]

# ---- shift and accumulate: `x + (y << c)` is a stencil tap by a power of two added to a running sum
# (gaussian5x5's `4 * rows[x + 1]`, lifted to `<< 2`): one instruction where the shift and the add were
# two, as Halide's HVX backend selects it (vaslw.acc, and vaslh.acc from v65); the arithmetic right
# shift accumulated likewise (vasrw.acc; vasrh.acc from v65), signed lanes only.
_VASL_ACC = {"i16": "vaslh.acc", "u16": "vaslh.acc", "i32": "vaslw.acc", "u32": "vaslw.acc"}
_VASR_ACC = {"i16": "vasrh.acc", "i32": "vasrw.acc"}
# Vd.h = vasl(Vu.h, Vv.h) reads the amount as the sign-extended low 5 bits of each lane (checked under
# qemu-hexagon for every amount in [-64, 63]): 0..15 shift left, -16..-1 shift right arithmetically by
# the magnitude (-16 gives the sign fill), which is FPIR's `<<` by a negative amount.
_VASLV = {("i16", "i16"): "vaslhv"}


def _vasr_family(suffix: str, out: str) -> tuple[Inst, Inst]:
    """vasr(Vu, Vv, Rt):sat and vasr(Vu, Vv, Rt):rnd:sat into `out` lanes. Amounts the hardware honours
    (found by running every amount under qemu-hexagon): Rt is read modulo the output width, so
    vasr(...):sat is exact for 0 <= Rt < out bits and vasr(...):rnd:sat for 1 <= Rt < out bits; a shift
    by exactly the output width is vround. Other amounts (and non-constant ones) are emitted from the
    semantics."""
    ins, rnd, rounds = _VASR_SAT[suffix], _VASR_RND_SAT[suffix], _VROUND[suffix]
    ibits = int(out[1:]) * 2
    sigs = [f"{x}, {a}{ibits} -> {out}" for x in ins for a in ("i", "u")]
    rsigs = [f"{x}, {a}{ibits} -> {out}" for x in rnd for a in ("i", "u")]
    sat, rnd_sat = shift_amount(0, ibits // 2 - 1), shift_amount(1, ibits // 2, (0, ibits // 2 - 1))
    return (
        Inst(f"vasr_sat_{suffix}", sigs, f"saturating_cast<{out}>(x >> y)",
             narrowing({}, ins, sat), " / ".join(ins.values()) + " (Rt = constant y)",
             ONE, encodable=amount_encodable(sat)),
        Inst(f"vasr_rnd_sat_{suffix}", rsigs, f"saturating_cast<{out}>(rounding_shr(x, y))",
             narrowing({}, rnd, rnd_sat, half_width_round(rounds)),
             " / ".join(rnd.values()) + " (Rt = constant y); " + " / ".join(rounds.values()) + " for y = "
             + str(ibits // 2), ONE, encodable=amount_encodable(rnd_sat)),
    )


def _vmpyhv_then_vasr(t: Term) -> Term:
    """vmpyhss by a vector: the exact two-instruction form vmpy(Vu.h, Vv.h) + vasr(.w, .w, #15):sat."""
    return make("hvx.vasr_sat_h", make("hvx.vmpy", t.args[0], t.args[1]), const(15, i32))


def _rounding_shl_b(clamp: bool) -> Callable[[Signature], str]:
    """rounding_shl of bytes by a signed per-lane amount (HVX has no byte shifts): the doubled value widened
    to 16 bits, shifted both ways at once by vaslhv by the amount (clamped to [-9, 8]), then halved with
    rounding (vavg(v, 0):rnd) and truncated back: for y >= 0, ((2x << y) + 1) >> 1 = x << y (its low
    byte, which is what wraps); for y = -k < 0, (floor(2x / 2^k) + 1) >> 1 = floor((x + 2^(k-1)) / 2^k),
    the rounding right shift. Past the clamp every result is 0 either way (a byte shifted left by 8 or
    more; rounded right by 9 or more, also for u8), so the clamp changes nothing; an amount known to lie
    in [-9, 8] needs none (any other is read by vaslhv modulo 32, as the semantics says). The semantics
    is that sequence of declared instructions, so `pitchfork verify` proves the lowering rules against
    rounding_shl itself, and the emitter writes exactly that sequence."""
    amount = "max(min(y, 8), -9)" if clamp else "y"
    return lambda sg: (f"reinterpret<{sg.result.name}>(hvx.vpacke(hvx.vavg_rnd(hvx.vasl_v("
                       f"reinterpret<i16>(hvx.vmpy(x, 2)), hvx.vmpy({amount}, 1)), 0)))")


def _constants(first: int, count: int) -> Callable[[Term], bool]:
    """`encodable` for an instruction whose operands first .. first + count - 1 (its taps) go into the
    scalar register Rt: its emitter (hvx_emit.taps, vtmpy) builds Rt from constants only and emits the
    declared meaning for any other operand, so the cost model must not charge the instruction there
    (a synthesized `hvx.vmpy(a, t0) + hvx.vmpy(b, t1) -> hvx.vdmpy(a, b, t0, t1)` with runtime taps
    t0, t1 was costed 2 and emitted as unpacks and 32-bit multiplies: hvx128 conv3x3a16 50,964 packets
    against 44,437 without it)."""

    def check(t: Term) -> bool:
        return all(a.is_const for a in t.args[first:first + count])

    return check


# ---------------------------------------------------------------------------------------------
# The instruction table: one row per instruction (mnemonic, signatures, meaning, emitter, LLVM
# spelling, cost, operand lanes, encodable immediates, layout).

TABLE: tuple[Inst, ...] = (
    # ---- Same-width lane-wise
    Inst("vabsdiff", _sigs(_ABSDIFF, lambda k: _unsigned(k[0])), "absd(x, y)", lanewise(_ABSDIFF),
         "vabsdiffub / vabsdiffuh / vabsdiffh / vabsdiffw", ONE, layout=LANEWISE),
    Inst("vadd_sat", _sigs(_ADDSAT, lambda k: k[0]), "saturating_add(x, y)", lanewise(_ADDSAT, pairs=True),
         "vadd{ub,b,uh,h,uw,w}sat", ONE, layout=LANEWISE),
    Inst("vsub_sat", _sigs(_SUBSAT, lambda k: k[0]), "saturating_sub(x, y)", lanewise(_SUBSAT, pairs=True),
         "vsub{ub,b,uh,h,uw,w}sat", ONE, layout=LANEWISE),
    Inst("vavg", _sigs(_AVG, lambda k: k[0]), "halving_add(x, y)", lanewise(_AVG), "vavg{ub,b,uh,h,uw,w}", ONE,
         layout=LANEWISE),
    Inst("vavg_rnd", _sigs(_AVGRND, lambda k: k[0]), "rounding_halving_add(x, y)", lanewise(_AVGRND),
         "vavg{ub,b,uh,h,uw,w}rnd", ONE, layout=LANEWISE),
    # vnavg(.ub,.ub) returns .b = floor((a - b) / 2), whose bits are the u8 halving_sub (which wraps).
    Inst("vnavg", _sigs(_NAVG, lambda k: k[0]), "halving_sub(x, y)", lanewise(_NAVG),
         "vnavgub / vnavgb / vnavgh / vnavgw", ONE, layout=LANEWISE),
    Inst("vmpyhvsrs", ["i16, i16 -> i16"], "rounding_mul_shr(x, y, 15)", vector_or_scalar(_VMPYHVSRS, "vmpyhsrs", 16),
         "vmpyhvsrs (vmpyhsrs by a constant Rt.h)", ONE, layout=LANEWISE),
    # ---- Widening (de-interleaved pair results)
    Inst("vadd_w", _sigs(_VADDW, lambda k: _wide_name(k[0])), "widening_add(x, y)", widening(_VADDW),
         "vaddubh / vadduhw / vaddhw", PAIR, layout=DEINT),
    Inst("vsub_w", _sigs(_VSUBW, lambda k: "i" + _wide_name(k[0])[1:]), "widening_sub(x, y)", widening(_VSUBW),
         "vsububh / vsubuhw / vsubhw", PAIR, layout=DEINT),
    Inst("vmpy", _sigs(_VMPY, _mul_result), "widening_mul(x, y)", widening(_VMPY, _VMPY_SCALAR),
         "vmpyubv / vmpybv / vmpybusv / vmpyuhv / vmpyhv / vmpyhus; by a constant: vmpyub / vmpybus / "
         "vmpyuh / vmpyh", PAIR, layout=DEINT),
    Inst("vmpy_acc", _sigs(_VMPY_ACC, lambda k: k[0]), _acc_semantics("widening_mul"),
         accumulate(_VMPY_ACC, _VMPY_ACC_SCALAR),
         "vmpyubv.acc / vmpybv.acc / vmpybusv.acc / vmpyuhv.acc / vmpyhv.acc / vmpyhus.acc; by a constant: "
         "vmpyub.acc / vmpybus.acc / vmpyuh.acc", PAIR, layout=DEINT),
    Inst("vadd_w_acc", _sigs(_VADDW_ACC, lambda k: k[0]), _acc_semantics("widening_add"), accumulate(_VADDW_ACC),
         "vaddubh.acc / vadduhw.acc / vaddhw.acc", PAIR, layout=DEINT),
    Inst("vmpa", _VMPA_SIGS, _vmpa_semantics, vmpa(_VMPA),
         "vmpabuu / vmpabus / vmpauhb / vmpahb (taps z, w constants or runtime scalars)", PAIR, layout=DEINT),
    Inst("vmpa_acc", _VMPA_ACC_SIGS, _vmpa_acc_semantics, vmpa(_VMPA, acc=True),
         "vmpabuu.acc / vmpabus.acc / vmpahb.acc (taps constants or runtime scalars)", PAIR, layout=DEINT),
    # ---- Saturating narrowing: vpack(Vu, Vv):sat keeps lane order; vsat / vasr(Vu, Vv, #0):sat interleave
    Inst("vsat_ub", ["i16 -> u8"], "saturating_cast<u8>(x)", narrowing({"i16": "vpackhub.sat"}, {"i16": "vsathub"}),
         "vpackhub.sat / vsathub", ONE),
    Inst("vsat_b", ["i16 -> i8"], "saturating_cast<i8>(x)",
         narrowing({"i16": "vpackhb.sat"}, {"i16": ("vasrhbsat", 0)}), "vpackhb.sat / vasrhbsat with Rt = 0", ONE),
    Inst("vsat_h", ["i32 -> i16"], "saturating_cast<i16>(x)", narrowing({"i32": "vpackwh.sat"}, {"i32": "vsatwh"}),
         "vpackwh.sat / vsatwh", ONE),
    Inst("vsat_uh", ["i32 -> u16", "u32 -> u16"], "saturating_cast<u16>(x)",
         narrowing({"i32": "vpackwuh.sat"}, {"i32": ("vasrwuhsat", 0), "u32": "vsatuwuh"}),
         "vpackwuh.sat / vasrwuhsat with Rt = 0; u32: vsatuwuh", ONE),
    # ---- Narrowing shifts with saturation (and rounding)
    *_vasr_family("ub", "u8"),
    *_vasr_family("b", "i8"),
    *_vasr_family("uh", "u16"),
    *_vasr_family("h", "i16"),
    Inst("vmpyhss", ["i16, i16 -> i16"], "mul_shr(x, y, 15)", scalar_or_sequence("vmpyhss", 16, _vmpyhv_then_vasr),
         "vmpyhss (Rt.h = constant y); else vmpyhv + vasrwhsat #15", ONE),
    # ---- Dot products (lane-combining): acc[j] + sum_k y[4j+k] * z[4j+k]
    Inst("vrmpy", [f"{a}, {y}, {z} -> {a}" for a, y, z in _VRMPY], _vrmpy_semantics, vrmpy(_VRMPY, _VRMPY_BY_WORD),
         "llvm.hexagon.V6.vrmpyubv.acc / vrmpybv.acc / vrmpybusv.acc", ONE, lanes=(1, 4, 4)),
    # ---- Dot products by constant taps (costs count the interleaving shuffles of the data: one vshuff
    # for two operands, three for four). vdmpy on two data registers is the vshuff that interleaves them
    # (a register pair, PAIR) and one vdmpy per register of the pair (PAIR): twice vmpa's cost on the same
    # operands (one instruction writing a pair). Declared as vmpa's PAIR, synthesis took vdmpy where vmpa
    # does the same and lost gaussian5x5 / gaussian3x3 to the shuffles (hvx128 bring-up, session 21).
    Inst("vdmpy", _VDMPY_SIGS, _taps_semantics(2, False), taps(_VDMPY, 2, False),
         "vdmpybus / vdmpyhb on the interleaved data (taps z, w constants)", PAIR + PAIR,
         encodable=_constants(2, 2)),
    Inst("vdmpy_acc", _with_acc(_VDMPY_SIGS), _taps_semantics(2, True), taps(_VDMPY, 2, True),
         "vdmpybus.acc / vdmpyhb.acc on the interleaved data (taps constants)", PAIR + PAIR,
         encodable=_constants(3, 2)),
    # (Without an accumulator, u8 x u8 has one signature: the operand types select the semantics.)
    Inst("vrmpy_taps", [t for t in _VRMPY_TAPS_SIGS if not t.endswith("u8 -> i32")], _taps_semantics(4, False),
         taps(_VRMPY_TAPS, 4, False), "vrmpybus / vrmpyub (vector x scalar) on the interleaved data (taps constants)",
         4 * ONE, encodable=_constants(4, 4)),
    Inst("vrmpy_taps_acc", _with_acc(_VRMPY_TAPS_SIGS), _taps_semantics(4, True), taps(_VRMPY_TAPS, 4, True),
         "vrmpybus.acc / vrmpyub.acc (vector x scalar) on the interleaved data (taps constants)", 4 * ONE,
         encodable=_constants(5, 4)),
    # ---- Four-way dot products of two vector sets
    Inst("vrmpy_vv", _VRMPY_VV_SIGS, _taps_semantics(4, False), dot_vv(_VRMPY, False),
         "vrmpyubv / vrmpybv on both operand sets interleaved (six shuffles, one vrmpy per register)", 7 * ONE),
    Inst("vrmpy_vv_acc", _with_acc(_VRMPY_VV_SIGS), _taps_semantics(4, True), dot_vv(_VRMPY, True),
         "vrmpyubv.acc / vrmpybv.acc on both operand sets interleaved", 7 * ONE),
    # ---- Pairwise dot products by a constant tap (lane-combining by 2)
    Inst("vdmpy_pairs", ["u8, i8 -> i16", "i16, i8 -> i32"], _pairs_semantics(False), pairs(_VDMPY_PAIRS, False),
         "llvm.hexagon.V6.vdmpybus / vdmpyhb (Rt = the tap in every byte)", ONE, lanes=(2, 2),
         encodable=immediate(1, -128, lambda _: 127)),
    Inst("vdmpy_pairs_acc", ["i16, u8, i8 -> i16", "i32, i16, i8 -> i32"], _pairs_semantics(True),
         pairs(_VDMPY_PAIRS, True), "llvm.hexagon.V6.vdmpybus.acc / vdmpyhb.acc (Rt = the tap in every byte)", ONE,
         lanes=(1, 2, 2), encodable=immediate(2, -128, lambda _: 127)),
    # ---- Pairwise 16 x 16 dot product of two vectors: out[i] = sat32(u[2i] * v[2i] + u[2i+1] * v[2i+1]).
    # The two products of i16 lanes each fit i32; only (-32768)^2 + (-32768)^2 = 2^31 exceeds it, and
    # saturates: Halide's saturating vector_reduce by 2 of the widening products exactly, and the wrapping
    # one where bounds exclude that single input (a lane other than -32768 in one operand).
    Inst("vdmpyhvsat", ["i16, i16 -> i32"], "vector_reduce_saturating_add_x2(widening_mul(x, y))",
         pair_dot("vdmpyhvsat"), "llvm.hexagon.V6.vdmpyhvsat (Vd.w = vdmpy(Vu.h, Vv.h):sat)", ONE, lanes=(2, 2)),
    # ---- 3-tap filter (lane semantics above _VTMPY)
    Inst("vtmpy", [f"{x}, {x}, {x}, {c}, {c} -> {_pair_result(x, c)}" for (x, c) in _VTMPY], _vtmpy_semantics,
         vtmpy(_VTMPY), "vtmpybus / vtmpyb / vtmpyhb on x and z (y = x one lane on, z two; taps w, a constants)",
         PAIR, layout=DEINT, encodable=_constants(3, 2)),
    # ---- 32 x 32 high multiplies
    Inst("vmpye", ["i32, i32 -> i32"], "i32((i64(x) * i64(y & 65535)) >> 16)", lanewise(_VMPYE),
         "vmpyewuh: Vd.w = vmpye(Vu.w, Vv.uh) (the even, unsigned halfword of each word of Vv)", ONE, layout=LANEWISE),
    Inst("vmpyo", ["i32, i32 -> i32"], "saturating_cast<i32>((i64(x) * i64(y >> 16)) >> 15)", lanewise(_VMPYO),
         "vmpyowh: Vd.w = vmpyo(Vu.w, Vv.h):<<1:sat (the odd halfword)", ONE, layout=LANEWISE),
    Inst("vmpyo_rnd", ["i32, i32 -> i32"], "saturating_cast<i32>((i64(x) * i64(y >> 16) + 16384) >> 15)",
         lanewise(_VMPYO_RND), "vmpyowh.rnd: Vd.w = vmpyo(Vu.w, Vv.h):<<1:rnd:sat", ONE, layout=LANEWISE),
    Inst("vmpyo_sacc", ["i32, i32, i32 -> i32"], "saturating_cast<i32>((i64(x) + i64(y) * i64(z >> 16)) >> 15)",
         lanewise(_VMPYO_SACC), "vmpyowh.sacc: Vx.w += vmpyo(Vu.w, Vv.h):<<1:sat:shift", ONE, layout=LANEWISE),
    Inst("vmpyo_rnd_sacc", ["i32, i32, i32 -> i32"],
         "saturating_cast<i32>((i64(x) + i64(y) * i64(z >> 16) + 16384) >> 15)", lanewise(_VMPYO_RND_SACC),
         "vmpyowh.rnd.sacc: Vx.w += vmpyo(Vu.w, Vv.h):<<1:rnd:sat:shift", ONE, layout=LANEWISE),
    # ---- The unsigned 32 x 32 high word (sequences, above _UW_CORRECTION)
    Inst("vmpy_uw_hi", ["u32, u32 -> u32"], f"reinterpret<u32>({_Q31_OF_BITS} >> 1) + {_UW_CORRECTION}",
         declared_meaning, "vmpye, vmpyo:<<1:sat:shift, vasr, and the sign correction (vasr, vand, vadd x2)", 5),
    Inst("vmpy_uw_hi_rnd", ["u32, u32 -> u32"],
         f"reinterpret<u32>(hvx.vavg_rnd({_Q31_OF_BITS}, 0)) + {_UW_CORRECTION}", declared_meaning,
         "vmpye, vmpyo:<<1:sat:shift, vavg:rnd, and the sign correction (vasr, vand, vadd x2)", 6),
    # ---- Zero-point subtraction scaled by a shift
    Inst("vmpy_acc_zp", ["u8, i16, i16 -> i16", "u16, i32, i32 -> i32", "u8, u8, i16 -> i16", "u16, u16, i32 -> i32"],
         lambda sg: f"(cast<{sg.result.name}>(x) - cast<{sg.result.name}>(y)) << z", zero_point_acc(_VMPY_ACC_ZP),
         "vmpyub.acc / vmpyuh.acc by Rt = 2^z onto -(y << z) (constant z below the narrow width)", PAIR,
         layout=DEINT, encodable=immediate(2, 0, lambda bits: bits - 1)),
    # ---- Non-widening multiplies
    Inst("vmpyi", _VMPYI_SIGS, "x * y", vmpyi(_VMPYI_SCALAR, _VMPYI_VECTOR, False),
         "vmpyih (16-bit vectors); by a constant: vmpyihb (Rt.b), vmpyiwb (Rt.b), vmpyiwh (Rt.h)", ONE,
         layout=LANEWISE),
    Inst("vmpyi_acc", [f"{a.split(',')[0]}, {a}" for a in _VMPYI_SIGS], "x + y * z",
         vmpyi(_VMPYI_SCALAR, _VMPYI_VECTOR, True), "vmpyih.acc; by a constant: vmpyihb.acc, vmpyiwb.acc, vmpyiwh.acc",
         ONE, layout=LANEWISE),
    Inst("vmpyie", ["i32, i32 -> i32", "u32, u32 -> u32"], "x * (y & 65535)", lanewise(_VMPYIE),
         "vmpyiewuh: Vd.w = vmpyie(Vu.w, Vv.uh)", ONE, layout=LANEWISE),
    # ---- Truncating narrowing by even / odd selection
    Inst("vpacke", _NARROW_SIGS, lambda sg: f"cast<{sg.result.name}>(x)",
         select_half({8: "vpackeb", 16: "vpackeh"}, {8: "vshuffeb", 16: "vshufeh"}),
         "vpackeb / vpackeh (in order); vshuffeb / vshufeh (de-interleaved operand)", ONE),
    Inst("vpacko", _NARROW_SIGS, lambda sg: f"cast<{sg.result.name}>(x >> {sg.result.bits})",
         select_half({8: "vpackob", 16: "vpackoh"}, {8: "vshuffob", 16: "vshufoh"}),
         "vpackob / vpackoh (in order); vshuffob / vshufoh (de-interleaved operand)", ONE),
    # vasr(Vu.w, Vv.w, Rt): truncating narrowing shift (interleaving); exact for Rt < 16 (Rt is read
    # modulo 16), where the 16 result bits lie inside the word, so arithmetic and logical shifts agree.
    Inst("vasr_trunc_h", ["i32, i32 -> i16", "i32, u32 -> i16", "u32, i32 -> u16", "u32, u32 -> u16"],
         lambda sg: f"cast<{sg.result.name}>(x >> y)",
         narrowing({}, {"i32": "vasrwh", "u32": "vasrwh"}, _VASRWH), "vasrwh (Rt = constant y)", ONE,
         encodable=amount_encodable(_VASRWH)),
    # ---- Shift and accumulate (Rt = constant amount in [0, bits))
    Inst("vasl_acc", [f"{k}, {k}, {k} -> {k}" for k in _VASL_ACC], "x + (y << z)", shift_acc(_VASL_ACC),
         "vaslh.acc / vaslw.acc: Vx += vasl(Vu, Rt) (Rt = constant z in [0, bits))", ONE, layout=LANEWISE,
         encodable=immediate(2, 0, lambda bits: bits - 1)),
    Inst("vasr_acc", [f"{k}, {k}, {k} -> {k}" for k in _VASR_ACC], "x + (y >> z)", shift_acc(_VASR_ACC),
         "vasrh.acc / vasrw.acc: Vx += vasr(Vu, Rt) (Rt = constant z in [0, bits))", ONE, layout=LANEWISE,
         encodable=immediate(2, 0, lambda bits: bits - 1)),
    # ---- Shift by a signed per-lane amount, both directions
    Inst("vasl_v", ["i16, i16 -> i16"], "x << ((y << 11) >> 11)", lanewise(_VASLV),
         "vaslhv: Vd.h = vasl(Vu.h, Vv.h) (amount: the sign-extended low 5 bits; negative shifts right)", ONE,
         layout=LANEWISE),
    # ---- rounding_shl of bytes by a signed per-lane amount (sequences: `_rounding_shl_b`)
    Inst("rounding_shl_b", ["i8, i8 -> i8", "u8, i8 -> u8"], _rounding_shl_b(clamp=True), declared_meaning,
         "vmaxb, vminb (clamp), vmpy by 2 and by 1 (widen: de-interleaved pairs), "
         "vaslhv, vavghrnd, vshuffeb: 9 instructions per 128 lanes", 6),
    Inst("rounding_shl_b_in_range", ["i8, i8 -> i8", "u8, i8 -> u8"], _rounding_shl_b(clamp=False), declared_meaning,
         "vmpy by 2 and by 1 (widen: de-interleaved pairs), vaslhv, vavghrnd, vshuffeb: "
         "7 instructions per 128 lanes", 5),
)

declare("hvx", TABLE)


def instruction_names() -> list[str]:
    return sorted(s.name for s in target_ops("hvx"))

