"""Groups of strided stores that together fill a dense range, as one dense store of their interleave.

An rfactor intermediate whose vectorized dimension is not innermost in storage (fully_connected's
`sum_filter_intm` on hvx128: `buf[ramp(j, 4, 32)] = v_j` for j = 0..3, once per reduction step) is
written by f consecutive stores at stride f and base offsets b0, b0 + 1, ..., b0 + f - 1. Each one alone
is a scatter; on HVX every lane of a scatter goes through memory (a 32-iteration lane loop per store:
the benchmark's hottest loop). Together they write every element of `[b0, b0 + f*n)` exactly once, so

    buf[ramp(b0, 1, f*n)] = interleave_vectors(v_0, ..., v_{f-1})

stores the same values. The merged store happens where the last one did, so the values of stores
j' > j are now evaluated before store j writes. That is only the same if no value reads an element an
earlier store of the group writes. This pass merges only when every read of `buf` in v_j' is a
`slice_vectors` of a dense load (or a strided load) at stride f whose elements are all at residues
>= j' modulo f from b0 (store j writes residue j only). Those reads are also rewritten as slices of the
one dense load `buf[ramp(b0, 1, f*n)]` (the range the merged store writes, so in bounds), which LLVM
loads once for the whole group instead of one unaligned multi-register load per store.

Only constant offsets between the stores are recognised (`b0 + j` with the same symbolic part). The
pass is applied on hvx128 (pitchfork/api.py); on arm64/x86 such short scatters are
straight-line and LLVM's SLP vectorizer already keeps them in registers.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from pitchfork.frontend import ir as H
from pitchfork.frontend.ir_walk import map_children

#: Halide's aligned(m, r) for a constant index: any modulus holds, this one is large enough for every
#: vector size
_CONST_MODULUS = 1 << 16


def rewrite_stmt(s: H.Stmt) -> H.Stmt:
    """`s` with every mergeable group of consecutive strided stores merged (`s` itself if none)."""
    if isinstance(s, H.Block):
        stmts = tuple(rewrite_stmt(x) for x in s.stmts)
        merged = _merge_runs(stmts)
        if merged != stmts or any(a is not b for a, b in zip(stmts, s.stmts)):
            return dataclasses.replace(s, stmts=merged)
        return s
    return map_children(s, H.Stmt, rewrite_stmt)


def _split(e: H.Expr) -> tuple[Optional[H.Expr], int]:
    """`e` as (symbolic part or None for a constant, constant addend)."""
    c = 0
    while isinstance(e, H.BinOp) and e.op in ("+", "-") and isinstance(e.b, H.IntImm):
        c += e.b.value if e.op == "+" else -e.b.value
        e = e.a
    if isinstance(e, H.IntImm):
        return None, c + e.value
    return e, c


def _strided(s: H.Stmt) -> Optional[tuple[str, Optional[H.Expr], int, int, int]]:
    """(buffer, symbolic base, constant base, stride, lanes) of an unpredicated constant-stride store."""
    if not isinstance(s, H.Store) or s.predicate is not None or not isinstance(s.index, H.Ramp):
        return None
    r = s.index
    if not isinstance(r.stride, H.IntImm) or r.stride.value < 2:
        return None
    sym, c = _split(r.base)
    return s.buffer, sym, c, r.stride.value, r.count


def _merge_runs(stmts: tuple[H.Stmt, ...]) -> tuple[H.Stmt, ...]:
    out: list[H.Stmt] = []
    i = 0
    while i < len(stmts):
        head = _strided(stmts[i])
        if head is not None:
            buf, sym, c0, f, n = head
            run = stmts[i:i + f]
            if len(run) == f and all(_strided(x) == (buf, sym, c0 + j, f, n) for j, x in enumerate(run)):
                merged = _merge(run, buf, c0, f, n)  # type: ignore[arg-type]
                if merged is not None:
                    out.append(merged)
                    i += f
                    continue
        out.append(stmts[i])
        i += 1
    return tuple(out)


def _merge(run: tuple[H.Store, ...], buf: str, c0: int, f: int, n: int) -> Optional[H.Store]:
    first = run[0]
    whole = H.Ramp(first.index.base, first.index.stride, f * n, first.index.type.with_lanes(f * n))  # type: ignore[attr-defined]
    whole = dataclasses.replace(whole, stride=H.IntImm(1, first.index.stride.type))  # type: ignore[attr-defined]
    sym = _split(first.index.base)[0]  # type: ignore[attr-defined]
    et = first.value.type
    dense = H.Load(buf, whole, et.with_lanes(f * n), (_CONST_MODULUS, c0) if sym is None and c0 >= 0 else None)
    values = []
    for j, st in enumerate(run):
        v = _reads_rewritten(st.value, buf, sym, c0, f, n, j, dense)
        if v is None:
            return None
        values.append(v)
    value = H.Shuffle("interleave", tuple(values), tuple(k * n + i for i in range(n) for k in range(f)),
                      et.with_lanes(f * n))
    return H.Store(buf, whole, value, dense.alignment, None, first.line)


def _reads_rewritten(e: H.Expr, buf: str, sym: Optional[H.Expr], c0: int, f: int, n: int, j: int,
                     dense: H.Load) -> Optional[H.Expr]:
    """`e` with its reads of `buf` made slices of `dense`, or None if one may read what stores 0..j-1 of
    the group write (or is not a read this pass understands)."""
    failed = False

    def lanes_of(load: H.Load, picks: tuple[int, ...]) -> Optional[tuple[int, ...]]:
        """Offsets from c0 of the elements `picks` (lanes of `load`) address, if all are at residues >= j."""
        if load.predicate is not None or not isinstance(load.index, H.Ramp):
            return None
        r = load.index
        if not isinstance(r.stride, H.IntImm):
            return None
        s, c = _split(r.base)
        if s != sym:
            return None
        offs = tuple(c - c0 + r.stride.value * p for p in picks)
        if any(o < 0 or o >= f * n or o % f < j for o in offs):
            return None
        return offs

    def visit(x: H.Expr) -> H.Expr:
        nonlocal failed
        if failed:
            return x
        if isinstance(x, H.Shuffle) and x.kind == "slice" and len(x.vectors) == 1 \
                and isinstance(x.vectors[0], H.Load) and x.vectors[0].buffer == buf:
            offs = lanes_of(x.vectors[0], x.indices)
            if offs is None:
                failed = True
                return x
            return H.Shuffle("slice", (dense,), offs, x.type)
        if isinstance(x, H.Load) and x.buffer == buf:
            offs = lanes_of(x, tuple(range(x.type.lanes)))
            if offs is None or x.type.lanes == 1:
                failed = True
                return x
            return H.Shuffle("slice", (dense,), offs, x.type)
        if isinstance(x, H.Variable) and x.name == buf:  # the buffer's handle escapes: unknown reads
            failed = True
            return x
        return map_children(x, H.Expr, visit)

    out = visit(e)
    return None if failed else out
