"""One whole-register window per row for the sub-register dot-product operands of unrolled HVX loops.

After `dot_products` has grouped a dot product, each output vector of an unrolled x loop interleaves
f narrow rows (matmul's P update on hvx128: `interleave_vectors(B[r0 + c, 32 lanes], ..., B[r3 + c, 32
lanes])` for c = 0, 32, 64, 96, once per unrolled x step, and again for every unrolled y step). Emitted
one by one, every operand is a sub-register load (two aligned blocks + `valign`) and every interleave a
4-way byte shuffle of four partial registers (vshuff/vdeal/vdelta/vmux chains), and the address
arithmetic of 64 windows spilled registers (583 instructions in the hot loop, Halide 21: 290).

When the x steps of one straight-line loop body together read each row as whole registers (offsets
c0, c0 + n, ..., c0 + g*128 bytes - n: any unroll factor that is a multiple of 128 bytes / n, any
number f of rows), this pass loads each row once per register and interleaves the f rows once per
register (g windows; window k holds the steps reading bytes [c0 + 128k, c0 + 128(k+1))):

    let win = interleave_vectors(B[ramp(r0 + c0, 1, 128 bytes)], ..., B[ramp(r_{f-1} + c0, 1, 128 bytes)])

and makes each original interleave a slice of it (step j = lanes [f*n*j, f*n*(j+1))), which is the
same lanes: lane f*i + k of step j's interleave is row k's element c0 + n*j + i, which is lane
f*(n*j + i) + k of `win`. The whole-row loads read exactly the bytes the x steps read together (no
byte outside them), so they are as safe as the original loads; they are hoisted to the top of the
loop body, which is straight-line code (lets and unpredicated stores only) that does not store to the
row's buffer, so every original load executes there too and reads the same values.

Rows are compared after substituting the body's own lets (Halide names the same address once per
unrolled step), so only expressions of variables bound outside the body remain in the hoisted load.
"""

from __future__ import annotations

import dataclasses
from typing import Optional

from pitchfork.frontend import ir as H
from pitchfork.frontend.htypes import HType
from pitchfork.frontend.ir_walk import map_children, rewrite_values, split_const

REG_BYTES = 128


def rewrite_stmt(s: H.Stmt) -> H.Stmt:
    """`s` with the windows of every straight-line innermost loop body shared (`s` if none)."""
    if isinstance(s, H.For):
        body = rewrite_stmt(s.body)
        new = _share_windows(body, s.name)
        return dataclasses.replace(s, body=new) if new is not s.body else s
    return map_children(s, H.Stmt, rewrite_stmt)


def _straight_line(s: H.Stmt, lets: dict[str, H.Expr], stores: list[H.Store]) -> bool:
    """Collect the lets and stores of a body made of lets, blocks and unpredicated stores only."""
    stack = [s]
    while stack:
        n = stack.pop()
        if isinstance(n, H.LetStmt):
            if n.name in lets:
                return False
            lets[n.name] = n.value
            stack.append(n.body)
        elif isinstance(n, H.Block):
            stack.extend(reversed(n.stmts))
        elif isinstance(n, H.Store) and n.predicate is None:
            stores.append(n)
        else:
            return False
    return True


class _Expander:
    """Expressions with the body's let-bound variables replaced by their values (memoized)."""

    def __init__(self, lets: dict[str, H.Expr]) -> None:
        self.lets = lets
        self.memo: dict[str, H.Expr] = {}

    def __call__(self, e: H.Expr) -> Optional[H.Expr]:
        if isinstance(e, H.Let):
            return None  # a scoped name could shadow a body let: leave such rows alone
        if isinstance(e, H.Variable) and e.name in self.lets:
            if e.name not in self.memo:
                v = self(self.lets[e.name])
                if v is None:
                    return None
                self.memo[e.name] = v
            return self.memo[e.name]
        failed = False

        def sub(x: H.Expr) -> H.Expr:
            nonlocal failed
            y = self(x)
            if y is None:
                failed = True
                return x
            return y

        out = map_children(e, H.Expr, sub)
        return None if failed else out


def _rows(sh: H.Shuffle, expand: _Expander) -> Optional[tuple[tuple, int]]:
    """(key, c) if `sh` interleaves f dense sub-register loads of one buffer at bases r_k + c."""
    if sh.kind != "interleave" or len(sh.vectors) < 2:
        return None
    syms = []
    consts = set()
    first = sh.vectors[0]
    for v in sh.vectors:
        if not (isinstance(v, H.Load) and v.predicate is None and isinstance(v.index, H.Ramp)
                and isinstance(v.index.stride, H.IntImm) and v.index.stride.value == 1
                and v.buffer == first.buffer and v.type == first.type and v.type.is_integer
                and not v.type.is_bool and v.type.bits >= 8):
            return None
        base = expand(v.index.base)
        if base is None:
            return None
        sym, c = split_const(base)
        syms.append(sym)
        consts.add(c)
    nbytes = first.type.lanes * first.type.bits // 8
    if len(consts) != 1 or nbytes >= REG_BYTES or REG_BYTES % nbytes:
        return None
    return (first.buffer, first.type, first.index.type, tuple(syms)), consts.pop()


def _share_windows(body: H.Stmt, loop: str) -> H.Stmt:
    lets: dict[str, H.Expr] = {}
    stores: list[H.Store] = []
    if not _straight_line(body, lets, stores):
        return body
    expand = _Expander(lets)
    written = {st.buffer for st in stores}
    found: dict[tuple, set[int]] = {}
    where: dict[int, tuple[tuple, int]] = {}  # id(shuffle) -> (key, c)

    def visit(e: H.Expr) -> H.Expr:
        if isinstance(e, H.Shuffle):
            r = _rows(e, expand)
            if r is not None and r[0][0] not in written:
                found.setdefault(r[0], set()).add(r[1])
                where[id(e)] = r
                return e
        return map_children(e, H.Expr, visit)

    for st in stores:
        visit(st.value)
    wins: list[tuple[str, H.Expr]] = []
    plan: dict[tuple, tuple[int, int, list[tuple[str, HType]]]] = {}  # key -> (c0, n*m, windows in order)
    for key, cs in found.items():
        buf, t, it, syms = key
        n = t.lanes
        m = REG_BYTES // (n * t.bits // 8)
        c0 = min(cs)
        # any number of whole registers per row: the steps read c0 .. c0 + g*128 bytes, every one of them
        groups = (max(cs) - c0) // (n * m) + 1
        if cs != {c0 + n * j for j in range(m * groups)}:
            continue
        f = len(syms)
        wt = t.with_lanes(f * n * m)
        names = []
        for g in range(groups):
            cg = c0 + g * n * m
            rows = [H.Load(buf, H.Ramp(H.BinOp("+", s, H.IntImm(cg, it.with_lanes(1)), it.with_lanes(1)) if cg else s,
                                       H.IntImm(1, it.with_lanes(1)), n * m, it.with_lanes(n * m)), t.with_lanes(n * m))
                    for s in syms]
            name = f"{loop}.hvx_window{len(wins)}"
            wins.append((name, H.Shuffle("interleave", tuple(rows),
                                         tuple(k * n * m + i for i in range(n * m) for k in range(f)), wt)))
            names.append((name, wt))
        plan[key] = (c0, n * m, names)
    if not wins:
        return body

    def replace(e: H.Expr) -> H.Expr:
        if isinstance(e, H.Shuffle) and id(e) in where and where[id(e)][0] in plan:
            key, c = where[id(e)]
            c0, per, names = plan[key]
            f, n = len(e.vectors), key[1].lanes
            name, wt = names[(c - c0) // per]
            j = (c - c0) % per // n
            return H.Shuffle("slice", (H.Variable(name, wt),), tuple(range(f * n * j, f * n * (j + 1))), e.type)
        return map_children(e, H.Expr, replace)

    new_body = rewrite_values(body, replace)
    for name, value in reversed(wins):
        new_body = H.LetStmt(name, value, new_body)
    return new_body
