"""Rewrites of optimised LLVM IR that LLVM 22's Hexagon backend cannot select (HVX only).

`select <N x i1> %c, <N x i1> %a, <N x i1> %b` -- a choice between two *predicate* vectors -- aborts
instruction selection with "Cannot select: vN i1 = vselect" when N spans several HVX predicate
registers (the predicates of i32 compares concatenated to steer an i8 select). Our emitters never
write such a select, but InstCombine creates one from `select(c, x, y) > z` when one arm of the
compare folds (a saturating clamp compared with a bound). The rewrite is the same boolean function
in and/xor/or, which the backend handles on predicate registers:

    select(c, a, b) == (c & a) | ((c ^ true) & b)

It runs after the optimisation pipeline (nothing folds it back; code generation does not re-form
a predicate select from the logic ops) and changes nothing else: the module is returned as is when
no such select occurs. Invariant: the rewritten module computes the same values lane for lane.
"""

from __future__ import annotations

import re

_OPERAND = r"(%[\w.$-]+|zeroinitializer|poison|undef|splat \(i1 (?:true|false)\)|<[^<>]*>)"
_PRED_SELECT = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = select (?P<ty><\d+ x i1>) " + _OPERAND.replace("(", "(?P<c>", 1)
    + r", (?P=ty) " + _OPERAND.replace("(", "(?P<a>", 1) + r", (?P=ty) " + _OPERAND.replace("(", "(?P<b>", 1)
    + r"\s*$",
    re.M,
)


def has_predicate_select(ir_text: str) -> bool:
    return _PRED_SELECT.search(ir_text) is not None


def rewrite_predicate_selects(ir_text: str) -> str:
    """Every `select` between two `<N x i1>` vectors rewritten as and/xor/or (see the module doc)."""
    counter = iter(range(1 << 30))

    def expand(m: re.Match[str]) -> str:
        ind, dst, ty, c, a, b = m.group("ind", "dst", "ty", "c", "a", "b")
        k = next(counter)
        t, n, f = f"%pfx.selt.{k}", f"%pfx.seln.{k}", f"%pfx.self.{k}"
        return (f"{ind}{t} = and {ty} {c}, {a}\n"
                f"{ind}{n} = xor {ty} {c}, splat (i1 true)\n"
                f"{ind}{f} = and {ty} {n}, {b}\n"
                f"{ind}{dst} = or {ty} {t}, {f}")

    return _PRED_SELECT.sub(expand, ir_text)


# `zext`/`sext` of a predicate vector spanning several HVX registers: with a shift by the lane width
# minus one after it (`zext(x > -1) << 31`, from a rounding shift's sign fix-up), LLVM 22's DAG combiner
# turns the pair into a predicate-to-vector conversion of a register *pair*, and HexagonISelDAGToDAG's
# SelectQ2V asserts (vector length) or, in the release llc, Post-RA pseudo expansion crashes. Extending
# one register's worth of predicate at a time and concatenating the results avoids it.
_PRED_EXT = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = (?P<op>zext|sext) <(?P<n>\d+) x i1> (?P<c>%[\w.$-]+) to "
    r"<(?P=n) x i(?P<bits>\d+)>\s*$",
    re.M,
)


def has_wide_predicate_ext(ir_text: str) -> bool:
    return any(_split_lanes(m) for m in _PRED_EXT.finditer(ir_text))


def _split_lanes(m: re.Match[str]) -> int:
    """Lanes per register if this extension spans 2^k > 1 whole registers, else 0."""
    n, bits = int(m.group("n")), int(m.group("bits"))
    if bits not in (8, 16, 32) or n * bits <= 1024 or (n * bits) % 1024:
        return 0
    pieces = n * bits // 1024
    return 1024 // bits if pieces & (pieces - 1) == 0 else 0


def rewrite_wide_predicate_exts(ir_text: str) -> str:
    """Every multi-register `zext`/`sext <N x i1>` done one register at a time (see above)."""
    counter = iter(range(1 << 30))

    def mask(idx: range | list[int]) -> str:
        return f"<{len(idx)} x i32> <" + ", ".join(f"i32 {i}" for i in idx) + ">"

    def expand(m: re.Match[str]) -> str:
        r = _split_lanes(m)
        if not r:
            return m.group(0)
        ind, dst, op, c = m.group("ind", "dst", "op", "c")
        n, bits = int(m.group("n")), int(m.group("bits"))
        k = next(counter)
        lines, parts = [], []
        for j in range(n // r):
            p, e = f"%pfx.qp.{k}.{j}", f"%pfx.qe.{k}.{j}"
            lines.append(f"{ind}{p} = shufflevector <{n} x i1> {c}, <{n} x i1> poison, {mask(range(j * r, j * r + r))}")
            lines.append(f"{ind}{e} = {op} <{r} x i1> {p} to <{r} x i{bits}>")
            parts.append(e)
        width, level = r, 0
        while len(parts) > 1:
            nxt = []
            for j in range(0, len(parts), 2):
                name = dst if len(parts) == 2 else f"%pfx.qc.{k}.{level}.{j}"
                lines.append(f"{ind}{name} = shufflevector <{width} x i{bits}> {parts[j]}, <{width} x i{bits}> "
                             f"{parts[j + 1]}, {mask(range(2 * width))}")
                nxt.append(name)
            parts, width, level = nxt, 2 * width, level + 1
        return "\n".join(lines)

    return _PRED_EXT.sub(expand, ir_text)


# `trunc <N x i16|i32> %x to <N x i1>` (InstCombine's form of `(x & 1) != 0`, e.g. from `(x & 1) * z`
# -> `select(trunc x, z, 0)`): LLVM 22's Hexagon backend lowers it as `q = vand(v, #0x01010101)`, which
# tests bit 0 of EVERY BYTE of each lane, so a 32-bit lane of 256 counts as odd and the byte-wise vmux
# that follows mixes bytes (difftest hvx128 seed 13; `(x_u32 & 1) * z_u32` gave z for x = 256). The
# spelled-out `icmp ne (and x, 1), 0` is lowered correctly (vand with a splat of 1, then vcmp.eq).
# 8-bit lanes are right as LLVM does them and are left alone.
_PRED_TRUNC = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = trunc <(?P<n>\d+) x i(?P<bits>16|32|64)> (?P<x>%[\w.$-]+) to "
    r"<(?P=n) x i1>\s*$",
    re.M,
)


def has_wide_lane_predicate_trunc(ir_text: str) -> bool:
    return _PRED_TRUNC.search(ir_text) is not None


def rewrite_wide_lane_predicate_truncs(ir_text: str) -> str:
    """Every `trunc <N x iB> to <N x i1>` with B > 8 as `icmp ne (and x, 1), 0` (same value, see above)."""
    counter = iter(range(1 << 30))

    def expand(m: re.Match[str]) -> str:
        ind, dst, n, bits, x = m.group("ind", "dst", "n", "bits", "x")
        ty, a = f"<{n} x i{bits}>", f"%pfx.tb.{next(counter)}"
        return (f"{ind}{a} = and {ty} {x}, splat (i{bits} 1)\n"
                f"{ind}{dst} = icmp ne {ty} {a}, zeroinitializer")

    return _PRED_TRUNC.sub(expand, ir_text)
