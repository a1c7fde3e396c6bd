"""Hexagon HVX (128-byte mode) instruction table (see ISA_INTRINSICS.md section 2.3).

HVX intrinsics take <32 x i32> (one register) or <64 x i32> (a pair); typed vectors are bitcast.
"""

from __future__ import annotations

from llvmlite import ir

from pitchfork.targets.base import target_op


def _same_width(name: str):  # type: ignore[no-untyped-def]
    def emit(em, args, t):  # type: ignore[no-untyped-def]
        bits = t.type.bits
        lanes = 1024 // bits
        vt = ir.VectorType(ir.IntType(bits), lanes)
        return em.map_chunks(args, lanes, lambda *xs: em.hvx_call(name, xs, vt))

    return emit


target_op("hvx.vabsdiffuh", ["u16, u16 -> u16"], "absd(x, y)", _same_width("vabsdiffuh"),
          llvm="llvm.hexagon.V6.vabsdiffuh.128B")
