"""64-bit-lane vector code built on a 32 x 32 -> 64-bit product, written in 32-bit halves (hvx128 only).

Our lowerings of a 32-bit `mul_shr` / `rounding_mul_shr` compute on 32-bit lanes only (16-bit partial
products), but LLVM 22's O3 pipeline (AggressiveInstCombine's foldMulHigh, then InstCombine) folds them
back into `mul <N x i64> (zext a), (zext b)` and keeps computing on the 64-bit product: a shift by 31 or
33..63, a test of bit 63 for the saturation. HVX has no 64-bit lanes; the Hexagon backend selects only
the exact high-half idiom `trunc(lshr(p, 32))` as a vector multiply and scalarises the rest (64 scalar
`mpyu` for `mul_shr(u32, u32, 31)` at 32 lanes), and a module with any `<N x i64>` vector is emitted
without VLIW packets (`machine._emission_options`).

This pass, run after the optimiser, takes every connected group of 64-bit-lane values that starts from
such products (or from `zext`/`sext` of <= 32-bit lanes and splat constants) and ends in 32-bit or
narrower lanes or in compares, and computes it on (hi, lo) pairs of 32-bit vectors:

- the product of two 32-bit values is HVX's full 64-bit product, `vmpye(a, b.uh)` then
  `+= vmpyo(a, b.h)` (`V6_vmpyewuh_64`, `V6_vmpyowh_64_acc`; signed x signed), plus
  `(a < 0 ? b : 0) + (b < 0 ? a : 0)` in the high half for unsigned x unsigned;
- add / sub carry between the halves; and / or / xor / select act on each half; shifts by a constant
  move bits between the halves; compares compare the high halves, then the low ones (unsigned);
- `trunc` to 32 bits is the low half.

The intrinsics are opaque to any later folding, and the group's 64-bit instructions are deleted.
A group with any other instruction (a phi, a load, a store, a variable shift, a product of two 64-bit
values, ...) is left exactly as it was. Invariant: the module computes the same values lane for lane.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from pitchfork.backend.hvx_fixups import each_function, shuffle_mask

_NAME = r"%[\w.$-]+"
_LINE = re.compile(rf"^(?P<ind>\s*)(?P<dst>{_NAME}) = (?P<rhs>.*?)\s*$")
_I64V = re.compile(r"<(?P<n>\d+) x i64>")
_OPERAND = rf"(?:{_NAME}|splat \(i64 -?\d+\)|zeroinitializer)"
_MUL64 = re.compile(r"= mul (?:nuw )?(?:nsw )?<\d+ x i64> ")

_EXT = re.compile(rf"(?P<op>zext|sext) (?:nneg )?<(?P<n>\d+) x i(?P<bits>\d+)> (?P<x>{_NAME}) to <(?P=n) x i64>")
_BIN = re.compile(rf"(?P<op>mul|add|sub|and|or|xor) (?:(?:nuw|nsw|disjoint) )*<(?P<n>\d+) x i64> "
                  rf"(?P<x>{_OPERAND}), (?P<y>{_OPERAND})")
_SHIFT = re.compile(rf"(?P<op>lshr|ashr|shl) (?:(?:exact|nuw|nsw) )*<(?P<n>\d+) x i64> (?P<x>{_OPERAND}), "
                    r"splat \(i64 (?P<s>\d+)\)")
_TRUNC = re.compile(rf"trunc (?:(?:nuw|nsw) )*<(?P<n>\d+) x i64> (?P<x>{_OPERAND}) to <(?P=n) x i(?P<bits>\d+)>")
_ICMP = re.compile(rf"icmp (?:samesign )?(?P<pred>eq|ne|[us][lg][te]) <(?P<n>\d+) x i64> "
                   rf"(?P<x>{_OPERAND}), (?P<y>{_OPERAND})")
_SELECT = re.compile(rf"select <(?P<n>\d+) x i1> (?P<c>{_NAME}), <(?P=n) x i64> (?P<x>{_OPERAND}), "
                     rf"<(?P=n) x i64> (?P<y>{_OPERAND})")

_EWUH = "llvm.hexagon.V6.vmpyewuh.64.128B"
_OWH = "llvm.hexagon.V6.vmpyowh.64.acc.128B"
_DECLS = (f"declare <64 x i32> @{_EWUH}(<32 x i32>, <32 x i32>)",
          f"declare <64 x i32> @{_OWH}(<64 x i32>, <32 x i32>, <32 x i32>)")
_HVX_LANES = 32  # i32 lanes of one 128-byte register


@dataclass(frozen=True, slots=True)
class Pair:
    """A 64-bit-lane value as two 32-bit-lane operands. `kind`: 'u' if `hi` is 0 (a zero-extended
    32-bit value), 's' if `hi` is `lo`'s sign (sign-extended), '' otherwise."""

    hi: str
    lo: str
    kind: str = ""


def has_i64_products(ir_text: str) -> bool:
    return _MUL64.search(ir_text) is not None


def _i32(v: int) -> str:
    v &= 0xFFFFFFFF
    return "zeroinitializer" if v == 0 else f"splat (i32 {v - (1 << 32) if v >= 1 << 31 else v})"


def _const(op: str) -> int | None:
    """The unsigned value of a splat / zero operand (i32 or i64), else None."""
    if op == "zeroinitializer":
        return 0
    m = re.fullmatch(r"splat \(i(32|64) (-?\d+)\)", op)
    return int(m[2]) % (1 << int(m[1])) if m else None


def _const_pair(op: str) -> Pair | None:
    k = _const(op)
    if k is None:
        return None
    kind = ("u" if k < 1 << 32 else "") + ("s" if k < 1 << 31 or k >= (1 << 64) - (1 << 31) else "")
    return Pair(_i32(k >> 32), _i32(k), kind)


class _Group:
    """One connected group of 64-bit-lane values and the instructions that leave it (`exits`: truncs
    to <= 32 bits and compares). `ok` is False if any value of the group is made or read otherwise."""

    def __init__(self, defs: dict[str, str], users: dict[str, list[str]], root: str) -> None:
        self.members: set[str] = set()
        self.exits: set[str] = set()
        self.ok = True
        work = [root]
        while work and self.ok:
            name = work.pop()
            if name in self.members or name in self.exits:
                continue
            rhs = defs.get(name)
            kind = _classify(rhs) if rhs is not None else None
            if kind is None:
                self.ok = False
                break
            (self.exits if kind in ("trunc", "icmp") else self.members).add(name)
            work += [op for op in _i64_operands(rhs) if op not in self.members]
            if kind not in ("trunc", "icmp"):
                work += users.get(name, [])


def _i64_operands(rhs: str) -> list[str]:
    """The named 64-bit-lane operands of an instruction `_classify` accepts."""
    for pat in (_BIN, _SHIFT, _TRUNC, _ICMP, _SELECT):
        m = pat.fullmatch(rhs)
        if m:
            return [op for op in (m["x"], m.groupdict().get("y")) if op is not None and op.startswith("%")]
    return []


def _classify(rhs: str) -> str | None:
    for kind, pat in (("ext", _EXT), ("bin", _BIN), ("shift", _SHIFT), ("trunc", _TRUNC), ("icmp", _ICMP),
                      ("select", _SELECT)):
        m = pat.fullmatch(rhs)
        if m:
            if kind == "ext" and int(m["bits"]) > 32:
                return None
            if kind == "trunc" and int(m["bits"]) > 32:
                return None
            return kind
    return None


class _Writer:
    """Emits the 32-bit instructions of one group; `emit` returns fresh names."""

    def __init__(self, n: int, counter: Callable[[], int]) -> None:
        self.n = n
        self.ty = f"<{n} x i32>"
        self.bty = f"<{n} x i1>"
        self.lines: list[str] = []
        self._next = counter
        self.products: list[tuple[str, str, str]] = []  # (factor, factor, low half) of each product

    def emit(self, rhs: str) -> str:
        name = f"%pfx.w{self._next()}"
        self.lines.append(f"{name} = {rhs}")
        return name

    def op(self, opc: str, x: str, y: str) -> str:
        return self.emit(f"{opc} {self.ty} {x}, {y}")

    def cmp(self, pred: str, x: str, y: str) -> str:
        return self.emit(f"icmp {pred} {self.ty} {x}, {y}")

    def sel(self, c: str, x: str, y: str) -> str:
        return self.emit(f"select {self.bty} {c}, {self.ty} {x}, {self.ty} {y}")

    def logic(self, opc: str, x: str, y: str) -> str:
        return self.emit(f"{opc} {self.bty} {x}, {y}")

    # -- the product -----------------------------------------------------------------------------

    def _chunks(self, x: str) -> list[str]:
        """`x` as <32 x i32> operands (padded with lane 0 when N is not a multiple of 32)."""
        if _const(x) is not None:
            return [x] * max(1, -(-self.n // _HVX_LANES))
        out = []
        for start in range(0, self.n, _HVX_LANES):
            idx = [start + i if start + i < self.n else 0 for i in range(_HVX_LANES)]
            if self.n == _HVX_LANES:
                return [x]
            out.append(self.emit(f"shufflevector {self.ty} {x}, {self.ty} poison, {shuffle_mask(idx)}"))
        return out

    def _concat(self, parts: list[str], width: int) -> str:
        """<width x i32> pieces joined, then cut to N lanes."""
        while len(parts) > 1:
            nxt = []
            for j in range(0, len(parts), 2):
                if j + 1 == len(parts):  # odd count: pair with itself (the copy is cut off below)
                    parts.append(parts[j])
                nxt.append(self.emit(f"shufflevector <{width} x i32> {parts[j]}, <{width} x i32> {parts[j + 1]}, "
                                     f"{shuffle_mask(range(2 * width))}"))
            parts, width = nxt, 2 * width
        if width == self.n:
            return parts[0]
        return self.emit(f"shufflevector <{width} x i32> {parts[0]}, <{width} x i32> poison, {shuffle_mask(range(self.n))}")

    def product(self, a: Pair, b: Pair) -> Pair | None:
        if "s" in a.kind and "s" in b.kind and not ("u" in a.kind and "u" in b.kind):
            signed = True
        elif "u" in a.kind and "u" in b.kind:
            signed = False
        else:
            return None  # a mixed-sign or 64-bit factor: not a 32 x 32 product
        if _const(a.lo) is not None:
            a, b = b, a
        if _const(a.lo) is not None:
            return None  # constant x constant: the optimiser folds it
        his, los = [], []
        for x, y in zip(self._chunks(a.lo), self._chunks(b.lo)):
            e = self.emit(f"call <64 x i32> @{_EWUH}(<32 x i32> {x}, <32 x i32> {y})")
            p = self.emit(f"call <64 x i32> @{_OWH}(<64 x i32> {e}, <32 x i32> {x}, <32 x i32> {y})")
            los.append(self.emit(f"shufflevector <64 x i32> {p}, <64 x i32> poison, {shuffle_mask(range(32))}"))
            his.append(self.emit(f"shufflevector <64 x i32> {p}, <64 x i32> poison, {shuffle_mask(range(32, 64))}"))
        lo, hi = self._concat(los, 32), self._concat(his, 32)
        self.products.append((a.lo, b.lo, lo))
        if not signed:  # hi(u x u) = hi(s x s) + (a < 0 ? b : 0) + (b < 0 ? a : 0)
            for x, y in ((a.lo, b.lo), (b.lo, a.lo)):
                k = _const(x)
                if k is None:
                    hi = self.op("add", hi, self.sel(self.cmp("slt", x, "zeroinitializer"), y, "zeroinitializer"))
                elif k >= 1 << 31:
                    hi = self.op("add", hi, y)
        return Pair(hi, lo)

    # -- other operations ------------------------------------------------------------------------

    def add(self, a: Pair, b: Pair, sub: bool) -> Pair:
        if sub:
            lo = self.op("sub", a.lo, b.lo)
            borrow = self.emit(f"zext {self.bty} {self.cmp('ult', a.lo, b.lo)} to {self.ty}")
            return Pair(self.op("sub", self.op("sub", a.hi, b.hi), borrow), lo)
        lo = self.op("add", a.lo, b.lo)
        carry = self.emit(f"zext {self.bty} {self.cmp('ult', lo, a.lo)} to {self.ty}")
        return Pair(self.op("add", self.op("add", a.hi, b.hi), carry), lo)

    def shift(self, opc: str, a: Pair, s: int) -> Pair:
        if s == 0:
            return a
        if opc == "shl":
            if s >= 32:
                return Pair(self.op("shl", a.lo, _i32(s - 32)) if s > 32 else a.lo, "zeroinitializer")
            hi = self.op("or", self.op("shl", a.hi, _i32(s)), self.op("lshr", a.lo, _i32(32 - s)))
            return Pair(hi, self.op("shl", a.lo, _i32(s)))
        fill = "zeroinitializer" if opc == "lshr" else self.op("ashr", a.hi, _i32(31))
        if s >= 32:
            return Pair(fill, self.op(opc, a.hi, _i32(s - 32)) if s > 32 else a.hi)
        lo = self.op("or", self.op("lshr", a.lo, _i32(s)), self.op("shl", a.hi, _i32(32 - s)))
        return Pair(self.op(opc, a.hi, _i32(s)), lo)

    def _lo_cmp(self, pred: str, x: str, y: str) -> str:
        """Unsigned compare of low halves, folded when one side is the constant that decides it."""
        kx, ky = _const(x), _const(y)
        if pred == "ult" and (ky == 0 or kx == 0xFFFFFFFF):
            return "false"
        if pred == "ule" and (ky == 0xFFFFFFFF or kx == 0):
            return "true"
        return self.cmp(pred, x, y)

    def compare(self, pred: str, a: Pair, b: Pair) -> str:
        if pred in ("eq", "ne"):
            both = (self.cmp(pred, a.hi, b.hi), self.cmp(pred, a.lo, b.lo))
            return self.logic("and" if pred == "eq" else "or", *both)
        if pred[1] == "g":  # x > y is y < x; x >= y is y <= x
            a, b, pred = b, a, pred[0] + "l" + pred[2]
        sign, strict = pred[0], pred[2] == "t"
        lo = self._lo_cmp("ult" if strict else "ule", a.lo, b.lo)
        hi_lt = self.cmp(f"{sign}lt", a.hi, b.hi)
        if lo == "false":
            return hi_lt
        if lo == "true":
            return self.cmp(f"{sign}le", a.hi, b.hi)
        return self.logic("or", hi_lt, self.logic("and", self.cmp("eq", a.hi, b.hi), lo))


def rewrite_i64_products(ir_text: str) -> str:
    """Every group of 64-bit-lane values grown from a 32 x 32-bit product computed on 32-bit halves
    (see the module doc). Returns `ir_text` itself when no group qualifies."""
    counter = iter(range(1 << 30))
    text = each_function(ir_text, lambda f: "\n".join(_rewrite_function(f.split("\n"), counter)))
    if text == ir_text:
        return ir_text
    for decl in _DECLS:
        name = decl.split("@")[1].split("(")[0]
        if f"declare <64 x i32> @{name}(" not in text:
            text = text.rstrip("\n") + "\n\n" + decl + "\n"
    return text


def _rewrite_function(lines: list[str], counter: Iterator[int]) -> list[str]:
    defs: dict[str, str] = {}
    at: dict[str, int] = {}
    for i, ln in enumerate(lines):
        m = _LINE.match(ln)
        if m:
            defs[m["dst"]], at[m["dst"]] = m["rhs"], i
    users: dict[str, list[str]] = {}  # (a line defining nothing, e.g. a store, is `#<index>`: no group takes it)
    for i, ln in enumerate(lines):
        m = _LINE.match(ln)
        user, rhs = (m["dst"], m["rhs"]) if m else (f"#{i}", ln)
        for op in set(re.findall(_NAME, rhs)):
            users.setdefault(op, []).append(user)
    done: set[str] = set()
    groups: list[_Group] = []
    for name, rhs in defs.items():
        m = _BIN.fullmatch(rhs)
        if m and m["op"] == "mul" and name not in done:
            g = _Group(defs, users, name)
            done |= g.members
            if g.ok and _translatable(g, defs, at):
                groups.append(g)
    if not groups:
        return lines
    replace: dict[int, list[str]] = {}
    products: list[tuple[str, str, str, int]] = []
    for g in groups:
        pairs: dict[str, Pair] = {}
        for name in sorted(g.members | g.exits, key=at.__getitem__):
            rhs = defs[name]
            n = int(re.search(r"<(\d+) x i", rhs)[1])
            w = _Writer(n, lambda: next(counter))
            out = _translate(w, name, rhs, pairs)
            ind = _LINE.match(lines[at[name]])["ind"]
            if out is not None:  # an exit: its 32-bit / i1 result keeps its name
                w.lines.append(f"{name} = {out}")
            replace[at[name]] = [ind + ln for ln in w.lines]
            products += [(x, y, lo, at[name]) for x, y, lo in w.products]
    _reuse_low_halves(lines, products, replace)
    return [ln for i, src in enumerate(lines) for ln in replace.get(i, [src])]


_MUL32 = re.compile(rf"^(?P<ind>\s*)(?P<dst>{_NAME}) = mul (?:(?:nuw|nsw) )*<(?P<n>\d+) x i32> (?P<x>{_NAME}|splat \(i32 -?\d+\)), "
                    rf"(?P<y>{_NAME}|splat \(i32 -?\d+\))\s*$")


def _reuse_low_halves(lines: list[str], products: list[tuple[str, str, str, int]],
                      replace: dict[int, list[str]]) -> None:
    """A 32-bit `mul` of the same two factors as a rewritten product (InstCombine keeps `a * b` for the
    low bits beside the 64-bit product) is the product's low half, already computed (saves HVX's two
    instructions of a 32-bit multiply). Only a `mul` after the product in the same block is replaced,
    so that the low half is defined before it."""
    for x, y, lo, at in products:
        for i in range(at + 1, len(lines)):
            if i in replace:
                continue
            ln = lines[i]
            if re.match(r"^[\w.$-]+:", ln) or ln.startswith("}"):  # the next block starts
                break
            m = _MUL32.match(ln)
            if m and {m["x"], m["y"]} == {x, y} and (m["x"], m["y"]) in ((x, y), (y, x)):
                ty = f"<{m['n']} x i32>"
                replace[i] = [f"{m['ind']}{m['dst']} = bitcast {ty} {lo} to {ty}"]


def _translatable(g: _Group, defs: dict[str, str], at: dict[str, int]) -> bool:
    """Every product in the group is of two 32-bit values (a dry run of the kinds)."""
    kinds: dict[str, str] = {}

    def kind(op: str) -> str | None:
        c = _const_pair(op)
        return c.kind if c is not None else kinds.get(op)

    for name in sorted(g.members, key=at.__getitem__):
        rhs = defs[name]
        m = _EXT.fullmatch(rhs)
        if m:
            kinds[name] = "u" + ("s" if int(m["bits"]) < 32 else "") if m["op"] == "zext" else "s"
            continue
        m = _BIN.fullmatch(rhs)
        if m and m["op"] == "mul":
            ka, kb = kind(m["x"]), kind(m["y"])
            if ka is None or kb is None:
                return False
            if not (("u" in ka and "u" in kb) or ("s" in ka and "s" in kb)):
                return False
            if _const(m["x"]) is not None and _const(m["y"]) is not None:
                return False
        kinds[name] = ""
    return True


def _translate(w: _Writer, name: str, rhs: str, pairs: dict[str, Pair]) -> str | None:
    """Emit `name`'s instruction on halves into `w`; record a member's pair in `pairs`, or return the
    right-hand side that defines an exit's (32-bit or i1) result."""

    def pair(op: str) -> Pair:
        c = _const_pair(op)
        return c if c is not None else pairs[op]

    m = _EXT.fullmatch(rhs)
    if m:
        x, bits = m["x"], int(m["bits"])
        if bits < 32:
            x = w.emit(f"{m['op']} <{w.n} x i{bits}> {x} to {w.ty}")
        if m["op"] == "zext":
            pairs[name] = Pair("zeroinitializer", x, "u" + ("s" if bits < 32 else ""))
        else:
            pairs[name] = Pair(w.op("ashr", x, _i32(31)), x, "s")
        return None
    m = _BIN.fullmatch(rhs)
    if m:
        a, b, op = pair(m["x"]), pair(m["y"]), m["op"]
        if op == "mul":
            p = w.product(a, b)
            assert p is not None  # checked by _translatable
            pairs[name] = p
        elif op in ("add", "sub"):
            pairs[name] = w.add(a, b, op == "sub")
        else:
            pairs[name] = Pair(w.op(op, a.hi, b.hi), w.op(op, a.lo, b.lo))
        return None
    m = _SHIFT.fullmatch(rhs)
    if m:
        pairs[name] = w.shift(m["op"], pair(m["x"]), int(m["s"]) & 63)
        return None
    m = _SELECT.fullmatch(rhs)
    if m:
        a, b = pair(m["x"]), pair(m["y"])
        pairs[name] = Pair(w.sel(m["c"], a.hi, b.hi), w.sel(m["c"], a.lo, b.lo))
        return None
    m = _TRUNC.fullmatch(rhs)
    if m:
        lo, bits = pair(m["x"]).lo, int(m["bits"])
        return f"bitcast {w.ty} {lo} to {w.ty}" if bits == 32 else f"trunc {w.ty} {lo} to <{w.n} x i{bits}>"
    m = _ICMP.fullmatch(rhs)
    assert m is not None
    res = w.compare(m["pred"], pair(m["x"]), pair(m["y"]))
    if res in ("true", "false"):
        return f"bitcast {w.bty} splat (i1 {res}) to {w.bty}"
    return f"bitcast {w.bty} {res} to {w.bty}"
