"""x86-64 AVX2 instruction table (see ISA_INTRINSICS.md section 2.1).

Each instruction is declared once: signatures, lane-wise semantics (FPIR text over x, y, z), cost,
and an emitter that works for any lane count (split to 256-bit registers, fix pack lane order).
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.targets.base import target_op


def _pavg(em, args, t):  # type: ignore[no-untyped-def]
    bits = t.type.bits
    lanes = 256 // bits
    name = "llvm.x86.avx2.pavg.b" if bits == 8 else "llvm.x86.avx2.pavg.w"
    vt = ir.VectorType(ir.IntType(bits), lanes)
    return em.map_chunks(args, lanes, lambda a, b: em.call(name, vt, [a, b]))


target_op("x86.pavg", ["u8, u8 -> u8", "u16, u16 -> u16"], "rounding_halving_add(x, y)", _pavg, cost=1,
          llvm="llvm.x86.avx2.pavg.b / pavg.w")


def _pack(name: str, src_bits: int):  # type: ignore[no-untyped-def]
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        n_in = 256 // src_bits  # lanes per source register
        dst_bits = src_bits // 2
        out_t = ir.VectorType(ir.IntType(dst_bits), 2 * n_in)
        quarter = n_in // 2
        # vpack works per 128-bit half: pack(x, y) = [x0..q, y0..q, xq..2q, yq..2q]; restore order.
        order = list(range(quarter)) + list(range(2 * quarter, 3 * quarter)) + \
            list(range(quarter, 2 * quarter)) + list(range(3 * quarter, 4 * quarter))
        mask = ir.Constant(ir.VectorType(ir.IntType(32), 2 * n_in), order)

        def pair(lo, hi):  # type: ignore[no-untyped-def]
            packed = em.call(name, out_t, [lo, hi])
            return em.b.shuffle_vector(packed, ir.Constant(out_t, ir.Undefined), mask)

        chunks = em.split(args[0], n_in)
        if len(chunks) % 2:
            chunks.append(chunks[-1])
        outs = [pair(chunks[i], chunks[i + 1]) for i in range(0, len(chunks), 2)]
        return em.concat(outs)

    return emit


target_op("x86.packuswb", ["i16 -> u8"], "saturating_cast<u8>(x)", _pack("llvm.x86.avx2.packuswb", 16), cost=1,
          llvm="llvm.x86.avx2.packuswb (+ lane-order shuffle)")
