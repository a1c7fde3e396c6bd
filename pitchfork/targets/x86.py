"""x86-64 AVX2 instruction table (see ISA_INTRINSICS.md section 2.1).

Each instruction is declared once, as a `base.Inst` row (declared next to its emitters): signatures,
lane-wise semantics (FPIR text over x, y, z, w), cost and an emitter that works for any lane count. Emitters split operands into 256-bit (ymm) chunks, call
the intrinsic (or the generic `llvm.*` intrinsic LLVM selects the instruction from) and restore lane
order where the hardware does not keep it (the packs work per 128-bit half; pmaddwd/pmaddubsw read
adjacent lane pairs, so their lane-wise forms interleave their operands first).

Cost = fused-domain uops per 256-bit result register on Haswell/Skylake (Intel optimisation manual,
uops.info), including the lane-order fix-ups the emitter adds (a pack is vpack + vpermq, so 2). The
generic cost model prices a primitive op at 1 and an FPIR op left for the generic expansion at 8.

The horizontal forms `x86.pmaddwd_pairs` / `x86.pmaddubsw_pairs` are the instructions as the hardware
defines them: lane j of the result combines operand lanes 2j and 2j+1 (declared with
`vector_reduce_*_x2` and operand lanes (2, 2)), so a Halide `vector_reduce_add` of products lowers to one
instruction per register with no interleave; `x86.psadbw` sums eight absolute byte differences into each
u64 lane. vphaddw is not declared.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from llvmlite import ir

from pitchfork.codegen.ir_constants import mask, undef, vector
from pitchfork.codegen.lane_order import pack_order_registers
from pitchfork.targets.base import Inst, declare, register_by_register

VECTOR_BITS = 256

Emit = Callable[[Any, Sequence[Any], Any], Any]


def _vt(bits: int, lanes: int) -> ir.VectorType:
    return ir.VectorType(ir.IntType(bits), lanes)


def _mask(idx: Sequence[int]) -> ir.Constant:
    return mask(idx)  # shared (pitchfork/codegen/ir_constants.py)


def _same_width(name: Callable[[int, int], str]) -> Emit:
    """A same-type lane-wise intrinsic on full ymm registers; `name(bits, lanes)` spells it (the shape
    every ISA shares, base.register_by_register)."""
    return register_by_register(lambda t, n: name(t.type.bits, n), lambda em, t: VECTOR_BITS // t.type.bits)


def _generic_sat(op: str) -> Emit:
    """`llvm.{s,u}{add,sub}.sat`: the generic spelling LLVM turns into vpadd(u)s / vpsub(u)s."""
    return _same_width(lambda bits, lanes: f"llvm.{op}.sat.v{lanes}i{bits}")


def _avx2(name_by_bits: dict[int, str]) -> Emit:
    return _same_width(lambda bits, lanes: f"llvm.x86.avx2.{name_by_bits[bits]}")


# ---- saturating add / sub -------------------------------------------------------------------------
declare("x86", (
    Inst("padds", ["i8, i8 -> i8", "i16, i16 -> i16"], "saturating_add(x, y)", _generic_sat("sadd"),
         "llvm.sadd.sat.v32i8 / v16i16 (vpaddsb / vpaddsw)"),
    Inst("paddus", ["u8, u8 -> u8", "u16, u16 -> u16"], "saturating_add(x, y)", _generic_sat("uadd"),
         "llvm.uadd.sat.v32i8 / v16i16 (vpaddusb / vpaddusw)"),
    Inst("psubs", ["i8, i8 -> i8", "i16, i16 -> i16"], "saturating_sub(x, y)", _generic_sat("ssub"),
         "llvm.ssub.sat.v32i8 / v16i16 (vpsubsb / vpsubsw)"),
    Inst("psubus", ["u8, u8 -> u8", "u16, u16 -> u16"], "saturating_sub(x, y)", _generic_sat("usub"),
         "llvm.usub.sat.v32i8 / v16i16 (vpsubusb / vpsubusw)"),
    # ---- averages -----------------------------------------------------------------------------------
    Inst("pavg", ["u8, u8 -> u8", "u16, u16 -> u16"], "rounding_halving_add(x, y)",
         _avx2({8: "pavg.b", 16: "pavg.w"}), "llvm.x86.avx2.pavg.b / pavg.w"),
))


# ---- saturating packs ---------------------------------------------------------------------------
def _pack(name: str, src_bits: int) -> Emit:
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        n_in = VECTOR_BITS // src_bits  # lanes per source register
        out_t = _vt(src_bits // 2, 2 * n_in)
        q = n_in // 2
        # vpack works per 128-bit half: pack(x, y) = [x0..q, y0..q, xq..2q, yq..2q]; restore order
        # (LLVM turns this shuffle into vpermq $0xD8).
        order = [*range(q), *range(2 * q, 3 * q), *range(q, 2 * q), *range(3 * q, 4 * q)]

        def pair(lo, hi):  # type: ignore[no-untyped-def]
            packed = em.call(name, out_t, [lo, hi])
            return em.b.shuffle_vector(packed, undef(out_t), _mask(order))

        if src_bits == 32 and em.lane_order:
            # the operand computed in the order the in-lane pack consumes: no vpermq (codegen/lane_order.py)
            regs = pack_order_registers(em, t.args[0])
            if regs is not None:
                return em.concat([em.call(name, out_t, [regs[i], regs[i + 1]]) for i in range(0, len(regs), 2)])
        chunks = em.split(args[0], n_in)
        if len(chunks) % 2:
            chunks.append(chunks[-1])
        return em.concat([pair(chunks[i], chunks[i + 1]) for i in range(0, len(chunks), 2)])

    return emit


declare("x86", (
    Inst("packsswb", ["i16 -> i8"], "saturating_cast<i8>(x)", _pack("llvm.x86.avx2.packsswb", 16),
         "llvm.x86.avx2.packsswb (+ vpermq lane-order fix)", cost=2),
    Inst("packuswb", ["i16 -> u8"], "saturating_cast<u8>(x)", _pack("llvm.x86.avx2.packuswb", 16),
         "llvm.x86.avx2.packuswb (+ vpermq lane-order fix)", cost=2),
    Inst("packssdw", ["i32 -> i16"], "saturating_cast<i16>(x)", _pack("llvm.x86.avx2.packssdw", 32),
         "llvm.x86.avx2.packssdw (+ vpermq lane-order fix)", cost=2),
    Inst("packusdw", ["i32 -> u16"], "saturating_cast<u16>(x)", _pack("llvm.x86.avx2.packusdw", 32),
         "llvm.x86.avx2.packusdw (+ vpermq lane-order fix)", cost=2),
    # ---- 16-bit high multiplies ---------------------------------------------------------------------
    Inst("pmulhw", ["i16, i16 -> i16"], "i16((i32(x) * i32(y)) >> 16)", _avx2({16: "pmulh.w"}),
         "llvm.x86.avx2.pmulh.w"),
    Inst("pmulhuw", ["u16, u16 -> u16"], "u16((u32(x) * u32(y)) >> 16)", _avx2({16: "pmulhu.w"}),
         "llvm.x86.avx2.pmulhu.w"),
    # Truncating, not saturating: -32768 * -32768 gives -32768 (ISA_INTRINSICS 2.1.3).
    Inst("pmulhrsw", ["i16, i16 -> i16"], "i16((i32(x) * i32(y) + 16384) >> 15)", _avx2({16: "pmul.hr.sw"}),
         "llvm.x86.avx2.pmul.hr.sw"),
))



# Q31 high multiplies of 32-bit lanes (quantized ML's requantize, gemmlowp's "saturating rounding
# doubling high multiply"): AVX2 multiplies 32-bit lanes into 64-bit products only in even lanes
# (vpmuldq), so the odd lanes are moved down first (vpshufd) and multiplied too; the even products'
# results are their bits 31..62 moved down (vpsrlq 31), the odd ones' moved up into the high half
# (vpaddq p, p), and one vpblendd interleaves them: no widening of the operands, no narrowing of the
# products (LLVM alone: 4 vpmovsxdq, and vshufps + vpermpd). The only product past the i32 range is
# MIN * MIN (2^31, which wraps to MIN, the one result that cannot occur otherwise): flipping its bits
# gives MAX (vpcmpeqd + vpxor). Rounding adds 2^30 to both products first. ~11 instructions per 8
# lanes; priced below the unlowered FPIR op (8) they replace (LLVM alone: ~22).
def _q31_high(rounding: bool) -> Emit:
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        v64, v32 = _vt(64, 4), _vt(32, 8)

        def c64(v: int) -> ir.Constant:
            return vector(64, [v] * 4)  # ir.Constant(v64, [v] * 4), shared (ir_constants)

        def sext_even(v):  # type: ignore[no-untyped-def]
            q = em.b.bitcast(v, v64)
            return em.b.ashr(em.b.shl(q, c64(32)), c64(32))

        def odd_down(v):  # type: ignore[no-untyped-def]
            return em.b.shuffle_vector(v, undef(v32), _mask([1, 1, 3, 3, 5, 5, 7, 7]))

        def one(x, y):  # type: ignore[no-untyped-def]
            # the sign-extended even lanes of each operand, and of its odd lanes moved down (vpshufd; a
            # 64-bit ashr by 32 instead loses LLVM's sign-bit facts on a broadcast operand, which then
            # gets the three-vpmuludq 64-bit multiply): LLVM selects vpmuldq for both products
            even = em.b.mul(sext_even(x), sext_even(y))
            odd = em.b.mul(sext_even(odd_down(x)), sext_even(odd_down(y)))
            if rounding:
                even, odd = em.b.add(even, c64(1 << 30)), em.b.add(odd, c64(1 << 30))
            lo = em.b.bitcast(em.b.lshr(even, c64(31)), v32)
            hi = em.b.bitcast(em.b.add(odd, odd), v32)
            r = em.b.shuffle_vector(lo, hi, _mask([0, 9, 2, 11, 4, 13, 6, 15]))
            wrapped = em.b.sext(em.b.icmp_signed("==", r, ir.Constant(v32, [-(1 << 31)] * 8)), v32)
            return em.b.xor(r, wrapped)

        return em.map_chunks(args, 8, one)

    return emit


declare("x86", (
    Inst("pmuldq_q31", ["i32, i32 -> i32"], "mul_shr(x, y, 31)", _q31_high(False),
         "vpshufd x2, vpmuldq x2, vpsrlq 31, vpaddq, vpblendd, vpcmpeqd + vpxor (MIN * MIN)", cost=6),
    Inst("pmuldq_q31_round", ["i32, i32 -> i32"], "rounding_mul_shr(x, y, 31)",
         _q31_high(True), "vpshufd x2, vpmuldq x2, vpaddq 2^30 x2, vpsrlq 31, vpaddq, vpblendd, vpcmpeqd + vpxor",
         cost=6),
))

# ---- multiply-add of adjacent pairs ----------------------------------------------------------------
def _interleave(em, a, b):  # type: ignore[no-untyped-def]
    """[a0, b0, a1, b1, ...] from two vectors of n lanes."""
    n = a.type.count
    return em.b.shuffle_vector(a, b, _mask([k for i in range(n) for k in (i, n + i)]))


def _pmaddwd_widen(em, args, t):  # type: ignore[no-untyped-def]
    # Zero-extend each i16 into the low half of an i32 lane: the pair sum is x*y + 0*0.
    def one(x, y):  # type: ignore[no-untyped-def]
        w = [em.bitcast(em.b.zext(v, _vt(32, 8)), _vt(16, 16)) for v in (x, y)]
        return em.call("llvm.x86.avx2.pmadd.wd", _vt(32, 8), w)

    return em.map_chunks(args, 8, one)


def _pair_dot(intrinsic: str, bits: int) -> Emit:
    """out[i] = x[i]*y[i] + z[i]*w[i] through an instruction summing adjacent lane pairs: interleave
    (x, z) and (y, w), one full register of each operand at a time, and feed each half to it."""
    n = VECTOR_BITS // bits  # operand lanes per register = output lanes per two instructions

    def emit(em, args, t):  # type: ignore[no-untyped-def]
        out_t = _vt(2 * bits, n // 2)

        def one(x, y, z, w):  # type: ignore[no-untyped-def]
            xz, yw = _interleave(em, x, z), _interleave(em, y, w)
            halves = [[em.b.shuffle_vector(v, undef(v.type), _mask(range(h * n, (h + 1) * n)))
                       for v in (xz, yw)] for h in (0, 1)]
            lo, hi = (em.call(intrinsic, out_t, pair) for pair in halves)
            return em.b.shuffle_vector(lo, hi, _mask(range(n)))

        return em.map_chunks(args, n, one)

    return emit


declare("x86", (
    Inst("wmul_pmaddwd", ["i16, i16 -> i32"], "widening_mul(x, y)", _pmaddwd_widen,
         "vpmovzxwd x2 + llvm.x86.avx2.pmadd.wd (upper halves zero)", cost=3),
    # Lane-wise 2-way dot products: cost 5 = 2 unpacks + 2 vperm2i128 + the multiply-add per register.
    Inst("pmaddwd", ["i16, i16, i16, i16 -> i32"], "widening_mul(x, y) + widening_mul(z, w)",
         _pair_dot("llvm.x86.avx2.pmadd.wd", 16), "operand interleave + llvm.x86.avx2.pmadd.wd", cost=5),
    Inst("pmaddubsw", ["u8, i8, u8, i8 -> i16"], "saturating_add(widening_mul(x, y), widening_mul(z, w))",
         _pair_dot("llvm.x86.avx2.pmadd.ub.sw", 8), "operand interleave + llvm.x86.avx2.pmadd.ub.sw", cost=5),
))


def _pairs(intrinsic: str, bits: int) -> Emit:
    """The horizontal pair instruction itself: operands arrive with twice the result's lanes."""
    n = VECTOR_BITS // bits  # operand lanes per register

    def emit(em, args, t):  # type: ignore[no-untyped-def]
        out_t = _vt(2 * bits, n // 2)
        xs, ys = em.split(args[0], n), em.split(args[1], n)
        return em.concat([em.call(intrinsic, out_t, [x, y]) for x, y in zip(xs, ys)], em.lanes)

    return emit


declare("x86", (
    Inst("pmaddwd_pairs", ["i16, i16 -> i32"], "vector_reduce_add_x2(widening_mul(x, y))",
         _pairs("llvm.x86.avx2.pmadd.wd", 16), "llvm.x86.avx2.pmadd.wd", lanes=(2, 2)),
    Inst("pmaddubsw_pairs", ["u8, i8 -> i16"], "vector_reduce_saturating_add_x2(widening_mul(x, y))",
         _pairs("llvm.x86.avx2.pmadd.ub.sw", 8), "llvm.x86.avx2.pmadd.ub.sw", lanes=(2, 2)),
))


def _psadbw(em, args, t):  # type: ignore[no-untyped-def]
    xs, ys = em.split(args[0], 32), em.split(args[1], 32)
    return em.concat([em.call("llvm.x86.avx2.psad.bw", _vt(64, 4), [x, y]) for x, y in zip(xs, ys)], em.lanes)


declare("x86", (
    Inst("psadbw", ["u8, u8 -> u64"], "vector_reduce_add_x8(u64(absd(x, y)))", _psadbw,
         "llvm.x86.avx2.psad.bw", lanes=(8, 8)),
))


# ---- variable per-lane shifts (AVX2: 32/64-bit lanes only) ------------------------------------------
# The amount is read as unsigned; 32/64 or more gives 0 (vpsllv*/vpsrlv*) or the sign fill (vpsravd),
# exactly FPIR's shift definition for an unsigned amount, so no clamp or select is needed. A signed
# amount register is read the same way (its semantics say so; rules use it when the amount is provably
# non-negative). AVX2 has no vpsravq.
def _shift_semantics(op: str) -> Callable[[Any], str]:
    return lambda s: f"x {op} y" if not s.args[1].signed else f"x {op} reinterpret<u{s.args[1].bits}>(y)"


def _variable_shift(stem: str) -> Emit:
    return _same_width(lambda bits, lanes: f"llvm.x86.avx2.{stem}.{'d' if bits == 32 else 'q'}.256")


declare("x86", (
    Inst("psllv", [f"{t}{b}, {a}{b} -> {t}{b}" for b in (32, 64) for t in "ui" for a in "ui"],
         _shift_semantics("<<"), _variable_shift("psllv"),
         "llvm.x86.avx2.psllv.d.256 / psllv.q.256 (vpsllvd / vpsllvq)"),
    Inst("psrlv", [f"u{b}, {a}{b} -> u{b}" for b in (32, 64) for a in "ui"], _shift_semantics(">>"),
         _variable_shift("psrlv"), "llvm.x86.avx2.psrlv.d.256 / psrlv.q.256 (vpsrlvd / vpsrlvq)"),
    Inst("psrav", ["i32, u32 -> i32", "i32, i32 -> i32"], _shift_semantics(">>"), _variable_shift("psrav"),
         "llvm.x86.avx2.psrav.d.256 (vpsravd)"),
))



# 64-bit arithmetic shift by a vector amount (AVX-512's vpsravq; AVX2 has none): with m = x's sign mask
# (vpcmpgtq), (x ^ m) is non-negative, so its logical shift (vpsrlvq: 0 for amounts of 64 or more) ^ m
# is the arithmetic shift, sign fill included. 4 instructions (the sign mask is shared by shifts of the
# same x); priced at 1 like the widened 16-bit shifts below, under the generic runtime shift it
# replaces (targets.RUNTIME_SHIFT_COST, 2), which LLVM emits as 2 vpsrlvq + vpxor + vpsubq plus the
# emitter's clamp of large amounts (vpxor + vpcmpgtq + vblendvpd): 7.
def _psrav_q(em, args, t):  # type: ignore[no-untyped-def]
    v64 = _vt(64, 4)

    def one(x, y):  # type: ignore[no-untyped-def]
        m = em.b.sext(em.b.icmp_signed("<", x, ir.Constant(v64, None)), v64)
        r = em.call("llvm.x86.avx2.psrlv.q.256", v64, [em.b.xor(x, m), y])
        return em.b.xor(r, m)

    return em.map_chunks(args, 4, one)


declare("x86", (
    Inst("psrav_q", ["i64, u64 -> i64", "i64, i64 -> i64"], _shift_semantics(">>"), _psrav_q,
         "vpcmpgtq (sign mask m) + vpxor + llvm.x86.avx2.psrlv.q.256 + vpxor m"),
))

# 16-bit lanes: no variable shift on AVX2. Shift the 32-bit extension (an amount of 16 or more
# already empties the kept bits, or fills them with the sign) and truncate, one ymm of 8 lanes at a
# time; LLVM packs the truncations. Cost 1 like the primitive shift it replaces: the cost model prices
# every shift at 1, and the primitive's own emission is this same widening plus a compare and a blend
# (measured, 32 lanes of u16 >> u16: 25 loop instructions against 33). 8-bit lanes are not widened:
# LLVM's own vpsllw + vpblendvb ladder is shorter (20 against 30).
def _widened_shift(stem: str) -> Emit:
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        signed = t.type.signed and stem == "psrav"

        def one(x, y):  # type: ignore[no-untyped-def]
            x32 = (em.b.sext if signed else em.b.zext)(x, _vt(32, 8))
            r = em.call(f"llvm.x86.avx2.{stem}.d.256", _vt(32, 8), [x32, em.b.zext(y, _vt(32, 8))])
            return em.b.trunc(r, _vt(t.type.bits, 8))

        return em.map_chunks(args, 8, one)

    return emit


declare("x86", (
    Inst("psllv_widened", ["u16, u16 -> u16", "i16, u16 -> i16"], "x << y", _widened_shift("psllv"),
         "zext/sext to i32 + llvm.x86.avx2.psllv.d.256 + trunc"),
    Inst("psrlv_widened", ["u16, u16 -> u16"], "x >> y", _widened_shift("psrlv"),
         "zext to i32 + llvm.x86.avx2.psrlv.d.256 + trunc"),
    Inst("psrav_widened", ["i16, u16 -> i16"], "x >> y", _widened_shift("psrav"),
         "sext to i32 + llvm.x86.avx2.psrav.d.256 + trunc"),
))


# rounding_shl of 8/16-bit lanes by a signed per-lane amount (a negative amount is a rounding right
# shift). AVX2 shifts 32-bit lanes only, and the generic code shifts both ways at the narrow width and
# selects (i16 x 16 lanes: 59 loop instructions), which made lifting Halide's widened spelling worse
# than leaving it (44). Here, per 8 lanes widened to 32 bits, the two directions are computed so that
# each is 0 for the other's amounts and or'ed (no compare, no blend): vpsllvd(x, y), 0 for y < 0
# (read as unsigned, >= 32); and the rounding right shift by k = -y as ceil(a / 2) = a - (a >> 1),
# a = vpsravd / vpsrlvd(x, ~y) = x >> (k - 1), which is the sign fill or 0 for y >= 0 (~y reads as
# >= 2^31) and so rounds to 0, as it does past the width. The low 8/16 bits of x << y are the narrow
# result. (The same on 32/64-bit lanes is a rule: rounding_shl_psllv_psrav in x86_avx2.rules.) Priced
# below the unlowered FPIR op (8) that it replaces: 7 instructions per 8 lanes, ~16 per 16-lane
# result register, against ~30 for that op's generic code.
# The forms with an amount twice as wide take Halide's amount as it comes (its wide spelling shifts by
# an i16 / i32 amount, which the lifted op narrows): sign-extending it from there spares LLVM a pack of
# the amount and its unpacking (5 of 33 loop instructions at i16); any amount past the width rounds
# to 0 or shifts everything out, hence saturating_cast in their semantics.
def _rounding_shl_widened(em, args, t):  # type: ignore[no-untyped-def]
    signed = t.type.signed
    v32 = _vt(32, 8)
    ones = ir.Constant(v32, [-1] * 8)

    def one_chunk(x, y):  # type: ignore[no-untyped-def]
        x32 = (em.b.sext if signed else em.b.zext)(x, v32)
        y32 = y if y.type.element.width == 32 else em.b.sext(y, v32)
        left = em.call("llvm.x86.avx2.psllv.d.256", v32, [x32, y32])
        a = em.call(f"llvm.x86.avx2.{'psrav' if signed else 'psrlv'}.d.256", v32, [x32, em.b.xor(y32, ones)])
        right = em.b.sub(a, (em.b.ashr if signed else em.b.lshr)(a, ir.Constant(v32, [1] * 8)))
        return em.b.trunc(em.b.or_(left, right), _vt(t.type.bits, 8))

    return em.map_chunks(args, 8, one_chunk)


declare("x86", (
    Inst("rounding_shl_widened", ["i8, i8 -> i8", "u8, i8 -> u8", "i16, i16 -> i16", "u16, i16 -> u16",
                                  "i8, i16 -> i8", "u8, i16 -> u8", "i16, i32 -> i16", "u16, i32 -> u16"],
         lambda s: "rounding_shl(x, y)" if s.args[1].bits == s.args[0].bits else
         f"rounding_shl(x, saturating_cast<i{s.args[0].bits}>(y))", _rounding_shl_widened,
         "sext/zext to i32, vpsllvd by y | ceil-half of vpsravd/vpsrlvd by ~y (vpsrad/vpsrld 1, vpsubd), "
         "trunc", cost=6),
))


# rounding_shr of 16-bit lanes by a per-lane amount, in the 32-bit lanes. The result lies in the
# 16-bit type, so the two halves narrow with one saturating pack (vpackssdw / vpackusdw: nothing
# saturates) where a truncation masks first (2 vpblendw). Two forms, by the amount's width:
# * a 16-bit amount (unsigned, read as such): x goes to the high half of each 32-bit lane and the
#   amount to the low half with in-lane unpacks (vpunpck[lh]wd against zero, the order the pack
#   restores: no vpermq), S = (x << 16) >> y (vpsravd / vpsrlvd), and (S + 2^15) >> 16 is the rounded
#   shift: floor((x 2^(16-y) + 2^15) / 2^16) = floor((x + 2^(y-1)) / 2^y), x at y = 0, 0 past the
#   width (S is then 0 or -1); S + 2^15 cannot wrap. 11 instructions per 16-lane register.
# * a 32-bit amount (Halide's wide spelling computes it there; read as unsigned like the hardware,
#   amounts past 65535 act as 65535: all shift everything out), in natural lane order: per 8 lanes,
#   2x shifted by y (of the sign/zero extension) is x >> (y - 1) for y >= 1 and 2x for y = 0, and one
#   more rounding halving ((v + 1) >> 1, |v| <= 2^16) gives the rounded shift; pack + vpermq. 12
#   instructions per 16-lane register.
# The widened shifts of rounding_shr_psrlv_widened with their masked truncations take 18, plus the
# amount's narrowing from 32 bits (Halide's u16 spelling with an Int(32) amount: 28 loop instructions
# lifted against 22 unlifted). Priced 5, below those forms' 6 model units.
def _rounding_shr_widened(em, args, t):  # type: ignore[no-untyped-def]
    signed = t.type.signed
    shift = f"llvm.x86.avx2.{'psrav' if signed else 'psrlv'}.d.256"
    pack = "llvm.x86.avx2.packssdw" if signed else "llvm.x86.avx2.packusdw"
    v32, out_t = _vt(32, 8), _vt(16, 16)
    down = em.b.ashr if signed else em.b.lshr

    if args[1].type.element.width == 16:
        zero = ir.Constant(out_t, [0] * 16)
        halves = [[k + i for k in (0, 8) for i in r] for r in (range(4), range(4, 8))]
        half_word, sixteen = ir.Constant(v32, [1 << 15] * 8), ir.Constant(v32, [16] * 8)

        def register(x, y):  # type: ignore[no-untyped-def]
            out = []
            for h in halves:
                xs = em.b.bitcast(em.b.shuffle_vector(zero, x, _mask([j for i in h for j in (i, 16 + i)])), v32)
                ys = em.b.bitcast(em.b.shuffle_vector(y, zero, _mask([j for i in h for j in (i, 16 + i)])), v32)
                out.append(down(em.b.add(em.call(shift, v32, [xs, ys]), half_word), sixteen))
            return em.call(pack, out_t, out)

        return em.map_chunks(args, 16, register)

    one = ir.Constant(v32, [1] * 8)

    def one_chunk(x, y):  # type: ignore[no-untyped-def]
        x32 = (em.b.sext if signed else em.b.zext)(x, v32)
        return down(em.b.add(em.call(shift, v32, [em.b.add(x32, x32), y]), one), one)

    wide = em.map_chunks(args, 8, one_chunk, lanes=-(-em.lanes // 8) * 8)
    order = [*range(4), *range(8, 12), *range(4, 8), *range(12, 16)]
    chunks = em.split(wide, 8)
    if len(chunks) % 2:
        chunks.append(chunks[-1])
    return em.concat([em.b.shuffle_vector(em.call(pack, out_t, [chunks[i], chunks[i + 1]]),
                                          undef(out_t), _mask(order))
                      for i in range(0, len(chunks), 2)])


declare("x86", (
    Inst("rounding_shr_widened", ["i16, u16 -> i16", "u16, u16 -> u16", "i16, u32 -> i16", "u16, u32 -> u16"],
         lambda s: "rounding_shr(x, y)" if s.args[1].bits == 16 else "rounding_shr(x, saturating_cast<u16>(y))",
         _rounding_shr_widened,
         "16-bit amount: vpunpck[lh]wd, vpsravd/vpsrlvd, (S + 2^15) >> 16, vpackssdw/vpackusdw; 32-bit amount: "
         "sext/zext to i32, doubled, vpsravd/vpsrlvd, (v + 1) >> 1, vpackssdw/vpackusdw + vpermq", cost=5),
))


# ---- shifts by one count for every lane (vpsllw/vpsrlw/vpsraw, vpslld/vpsrld/vpsrad, vpsllq/vpsrlq) ---
# The count is the low 64 bits of an xmm register, taken here from lane 0 of the amount operand (zero-
# extended), so these read the amount at lane 0 only (`lane0`): rules select them when the amount is
# uniform (`is_uniform`, a broadcast of a scalar). A count of the lane width or more gives 0 (logical
# shifts) or the sign fill (arithmetic), which is FPIR's shift definition for an unsigned amount, so the
# semantics are the plain shifts. One instruction per register, as Halide 21 (LLVM's lowering of a shift
# by a splat) selects for a scalar shift amount; the variable-shift forms above need vpsrav + widening/
# packing on 16-bit lanes, and a signed amount costs a compare and a blend there. AVX2 has no vpsraq.
# Bytes (no x86 byte shift): the 16-bit shift of the same register, with the bits that crossed from
# the neighbouring byte masked off (the mask is 0xFF shifted by the count, 0 past 7; scalar, hoisted),
# and for the arithmetic shift the sign restored by (v ^ m) - m with m = 0x80 >> c (count clamped to
# 7): 2 / 4 instructions per register, where LLVM's generic i8 shift is a 3-step vpsraw+vpblendvb
# ladder on both unpacked halves (22 loop instructions for one ymm of i8 >> n). The arithmetic and
# signed-amount byte forms are priced at the generic runtime shift they replace
# (targets.RUNTIME_SHIFT_COST / _SIGNED, 2 and 4), not at their 4 and 8 uops: the generic cost model
# prices every runtime shift alike, and x86's generic byte shift is the far longer ladder.
def _count_xmm(em, count: ir.Value, bits: int) -> ir.Value:  # type: ignore[no-untyped-def]
    """An i64 count in the low 64 bits of an xmm register, typed as the shift intrinsics take it."""
    xmm = em.b.insert_element(ir.Constant(_vt(64, 2), None), count, ir.Constant(ir.IntType(32), 0))
    return em.b.bitcast(xmm, _vt(bits, 128 // bits))


def _lane0_i64(em, y: ir.Value, signed: bool) -> ir.Value:  # type: ignore[no-untyped-def]
    c = em.b.extract_element(y, ir.Constant(ir.IntType(32), 0))
    return (em.b.sext if signed else em.b.zext)(c, ir.IntType(64))


def _splat_scalar(em, v: ir.Value, lanes: int) -> ir.Value:  # type: ignore[no-untyped-def]
    one = em.b.insert_element(ir.Constant(ir.VectorType(v.type, lanes), None), v, ir.Constant(ir.IntType(32), 0))
    return em.b.shuffle_vector(one, ir.Constant(ir.VectorType(v.type, lanes), None), _mask([0] * lanes))


def _shift_register(em, stem: str, v: ir.Value, count: ir.Value, bits: int) -> ir.Value:  # type: ignore[no-untyped-def]
    """One ymm register of `bits`-bit lanes shifted by the i64 `count` (unsigned): stem psll/psrl/psra."""
    lanes = VECTOR_BITS // bits
    if bits >= 16:
        name = f"llvm.x86.avx2.{stem}.{ {16: 'w', 32: 'd', 64: 'q'}[bits]}"
        return em.call(name, _vt(bits, lanes), [v, _count_xmm(em, count, bits)])
    i64 = ir.IntType(64)
    big = em.b.icmp_unsigned(">", count, ir.Constant(i64, 7))
    if stem == "psra":
        count = em.b.select(big, ir.Constant(i64, 7), count)
    vw = em.b.bitcast(v, _vt(16, 16))
    moved = em.call(f"llvm.x86.avx2.{'psll' if stem == 'psll' else 'psrl'}.w", _vt(16, 16),
                    [vw, _count_xmm(em, count, 16)])
    ff = ir.Constant(i64, 0xFF)
    kept = (em.b.shl if stem == "psll" else em.b.lshr)(ff, count)
    if stem != "psra":
        kept = em.b.select(big, ir.Constant(i64, 0), kept)
    mask = _splat_scalar(em, em.b.trunc(kept, ir.IntType(8)), lanes)
    r = em.b.and_(em.b.bitcast(moved, _vt(8, lanes)), mask)
    if stem != "psra":
        return r
    sign = _splat_scalar(em, em.b.trunc(em.b.lshr(ir.Constant(i64, 0x80), count), ir.IntType(8)), lanes)
    return em.b.sub(em.b.xor(r, sign), sign)


def _uniform_shift(stem: str) -> Emit:
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        bits = t.type.bits
        x, y = args
        count = _lane0_i64(em, y, False)
        return em.map_chunks([x], VECTOR_BITS // bits, lambda c: _shift_register(em, stem, c, count, bits))

    return emit


def _uniform_signed_shl(em, args, t):  # type: ignore[no-untyped-def]
    """x << y for a signed count (lane 0 of y): a negative count shifts right. Left by max(y, 0), then
    right by -min(y, 0) (computed in 64 bits: -(-32768) does not wrap); the unused direction shifts by
    0. The count arithmetic is scalar and loop-invariant for a broadcast parameter."""
    bits = t.type.bits
    x, y = args
    c = _lane0_i64(em, y, True)
    zero = ir.Constant(ir.IntType(64), 0)
    neg = em.b.icmp_signed("<", c, zero)
    left = em.b.select(neg, zero, c)
    right = em.b.select(neg, em.b.sub(zero, c), zero)
    back = "psra" if t.type.signed else "psrl"
    return em.map_chunks([x], VECTOR_BITS // bits, lambda v: _shift_register(
        em, back, _shift_register(em, "psll", v, left, bits), right, bits))


_WIDE = (16, 32, 64)
declare("x86", (
    Inst("psll_uniform", [f"{t}{b}, u{b} -> {t}{b}" for b in _WIDE for t in "ui"], "x << y",
         _uniform_shift("psll"), "llvm.x86.avx2.psll.w / .d / .q (vpsllw / vpslld / vpsllq ymm, ymm, xmm)",
         lane0=(1,)),
    Inst("psrl_uniform", [f"u{b}, u{b} -> u{b}" for b in _WIDE], "x >> y", _uniform_shift("psrl"),
         "llvm.x86.avx2.psrl.w / .d / .q (vpsrlw / vpsrld / vpsrlq ymm, ymm, xmm)", lane0=(1,)),
    Inst("psra_uniform", ["i16, u16 -> i16", "i32, u32 -> i32"], "x >> y", _uniform_shift("psra"),
         "llvm.x86.avx2.psra.w / .d (vpsraw / vpsrad ymm, ymm, xmm)", lane0=(1,)),
    Inst("psll_uniform_signed", [f"{t}{b}, i{b} -> {t}{b}" for b in (16, 32) for t in "iu"], "x << y",
         _uniform_signed_shl, "vpsllw / vpslld by max(y, 0) then vpsraw / vpsrlw (d) by -min(y, 0) (counts in xmm)",
         cost=2, lane0=(1,)),
    Inst("psll_uniform_bytes", ["u8, u8 -> u8", "i8, u8 -> i8"], "x << y", _uniform_shift("psll"),
         "vpsllw ymm, ymm, xmm + vpand (0xFF << c) (bytes)", cost=2, lane0=(1,)),
    Inst("psrl_uniform_bytes", ["u8, u8 -> u8"], "x >> y", _uniform_shift("psrl"),
         "vpsrlw ymm, ymm, xmm + vpand (0xFF >> c) (bytes)", cost=2, lane0=(1,)),
    Inst("psra_uniform_bytes", ["i8, u8 -> i8"], "x >> y", _uniform_shift("psra"),
         "vpsrlw ymm, ymm, xmm + vpand + vpxor + vpsubb (0x80 >> c) (bytes, count clamped to 7)", cost=2,
         lane0=(1,)),
    Inst("psll_uniform_signed_bytes", ["i8, i8 -> i8", "u8, i8 -> u8"], "x << y", _uniform_signed_shl,
         "psll_uniform_bytes by max(y, 0) then psra / psrl_uniform_bytes by -min(y, 0)", cost=4, lane0=(1,)),
))
