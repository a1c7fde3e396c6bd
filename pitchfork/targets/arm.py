"""AArch64 Neon instruction table (see ISA_INTRINSICS.md section 2.2)."""

from __future__ import annotations

from llvmlite import ir

from pitchfork.targets.base import target_op


def _binary(op: str):  # type: ignore[no-untyped-def]
    """A same-type binary Neon intrinsic `llvm.aarch64.neon.<op>.v<n>i<bits>` on 128-bit registers."""

    def emit(em, args, t):  # type: ignore[no-untyped-def]
        bits = t.args[0].type.bits
        lanes = 128 // bits
        vt = ir.VectorType(ir.IntType(bits), lanes)
        return em.map_chunks(args, lanes, lambda a, b: em.call(f"llvm.aarch64.neon.{op}.v{lanes}i{bits}", vt, [a, b]))

    return emit


target_op("arm.uabd", ["u8, u8 -> u8", "u16, u16 -> u16", "u32, u32 -> u32"], "absd(x, y)", _binary("uabd"),
          llvm="llvm.aarch64.neon.uabd")
