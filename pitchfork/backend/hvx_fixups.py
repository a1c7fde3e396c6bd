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
from collections.abc import Callable, Iterator

_OPERAND = r"(%[\w.$-]+|zeroinitializer|poison|undef|splat \(i1 (?:true|false)\)|<[^<>]*>)"
_PRED_SELECT = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = select (?P<ty><\d+ x i1>) " + _OPERAND.replace("(", "(?P<c>", 1)
    + r", (?P=ty) " + _OPERAND.replace("(", "(?P<a>", 1) + r", (?P=ty) " + _OPERAND.replace("(", "(?P<b>", 1)
    + r"\s*$",
    re.M,
)
# What every match of _PRED_SELECT contains, from its first fixed text on: searched first, because
# a line-anchored pattern is tried at every character of the module (4.7 ms on sobel3x3 hvx128's
# 356 KB, for each of the three checks below), while a pattern that starts with fixed text is found
# by scanning for that text. Only when the core occurs is the full pattern searched, so the answer is
# the full pattern's (each check below pairs its pattern with such a core).
_PRED_SELECT_CORE = re.compile(
    r" = select (<\d+ x i1>) " + _OPERAND + r", \1 " + _OPERAND + r", \1 " + _OPERAND)


def has_predicate_select(ir_text: str) -> bool:
    return _PRED_SELECT_CORE.search(ir_text) is not None and _PRED_SELECT.search(ir_text) is not None


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
_PRED_EXT_CORE = re.compile(r"ext <(\d+) x i1> %[\w.$-]+ to <\1 x i\d+>")  # in every match (_PRED_SELECT_CORE)


def has_wide_predicate_ext(ir_text: str) -> bool:
    if _PRED_EXT_CORE.search(ir_text) is None:
        return False
    return any(_split_lanes(m) for m in _PRED_EXT.finditer(ir_text))


def _split_lanes(m: re.Match[str]) -> int:
    """Lanes per register if this extension spans 2^k > 1 whole registers, else 0."""
    n, bits = int(m.group("n")), int(m.group("bits"))
    if bits not in (8, 16, 32) or n * bits <= 1024 or (n * bits) % 1024:
        return 0
    pieces = n * bits // 1024
    return 1024 // bits if pieces & (pieces - 1) == 0 else 0


def shuffle_mask(idx: range | list[int]) -> str:
    """The IR text of a shufflevector mask selecting lanes `idx` (the text-level rewrites' one spelling)."""
    return f"<{len(idx)} x i32> <" + ", ".join(f"i32 {i}" for i in idx) + ">"


def rewrite_wide_predicate_exts(ir_text: str) -> str:
    """Every multi-register `zext`/`sext <N x i1>` done one register at a time (see above)."""
    counter = iter(range(1 << 30))

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
            lines.append(f"{ind}{p} = shufflevector <{n} x i1> {c}, <{n} x i1> poison, {shuffle_mask(range(j * r, j * r + r))}")
            lines.append(f"{ind}{e} = {op} <{r} x i1> {p} to <{r} x i{bits}>")
            parts.append(e)
        width, level = r, 0
        while len(parts) > 1:
            nxt = []
            for j in range(0, len(parts), 2):
                name = dst if len(parts) == 2 else f"%pfx.qc.{k}.{level}.{j}"
                lines.append(f"{ind}{name} = shufflevector <{width} x i{bits}> {parts[j]}, <{width} x i{bits}> "
                             f"{parts[j + 1]}, {shuffle_mask(range(2 * width))}")
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
_PRED_TRUNC_CORE = re.compile(r"= trunc <(\d+) x i(?:16|32|64)> %[\w.$-]+ to <\1 x i1>")  # (_PRED_SELECT_CORE)


def has_wide_lane_predicate_trunc(ir_text: str) -> bool:
    return _PRED_TRUNC_CORE.search(ir_text) is not None and _PRED_TRUNC.search(ir_text) is not None


def rewrite_wide_lane_predicate_truncs(ir_text: str) -> str:
    """Every `trunc <N x iB> to <N x i1>` with B > 8 as `icmp ne (and x, 1), 0` (same value, see above)."""
    counter = iter(range(1 << 30))

    def expand(m: re.Match[str]) -> str:
        ind, dst, n, bits, x = m.group("ind", "dst", "n", "bits", "x")
        ty, a = f"<{n} x i{bits}>", f"%pfx.tb.{next(counter)}"
        return (f"{ind}{a} = and {ty} {x}, splat (i{bits} 1)\n"
                f"{ind}{dst} = icmp ne {ty} {a}, zeroinitializer")

    return _PRED_TRUNC.sub(expand, ir_text)


# The high half of a 64 x 64-bit unsigned product, `trunc(lshr(mul(zext a, zext b), 64))` on
# `<N x i128>` (or shifted further, by 64 + s: then hi >> s; truncated to i64 or narrower): LLVM 22's AggressiveInstCombine (foldMulHigh) forms it from the 32 x 32 -> 64-bit
# partial products our lowerings write for a 64-bit mul_shr / rounding_mul_shr (pitchfork.selection.lower's width
# convention: no i128 product). HVX has no 64-bit lanes, so the backend scalarises the i128 vector, and
# that code ran wrong under qemu-hexagon 7.2 (difftest hvx128 seed 21, both isels: a 48-lane
# rounding_mul_shr(i64 >> 3, extending_mul(i64, -2147483647), u64) beside 32-bit HVX code; lane 16 of
# every 48 saturated). The same optimised IR with the partial products put back runs right, as does
# the -O1 pipeline's IR (which never forms the i128). Whether LLVM or qemu is at fault is undecided;
# the partial products are right under both, so the product is written back in them:
#     hi(a * b) = a1*b1 + (a0*b1 >> 32) + (a1*b0 >> 32) + (((a0*b0 >> 32) + lo32(a0*b1) + lo32(a1*b0)) >> 32)
# with a = a1:a0, b = b1:b0 in 32-bit halves (the inner sum is below 3 * 2^32). Any other vector-of-i128
# computation the optimiser made is refused (`optimizer_i128_line`, pitchfork.backend.machine) rather than compiled.
_TRUNC_I128 = re.compile(
    r"^(?P<ind>\s*)(?P<dst>%[\w.$-]+) = trunc (?:nuw )?(?:nsw )?<(?P<n>\d+) x i128> (?P<s>%[\w.$-]+) to "
    r"<(?P=n) x i(?P<k>8|16|32|64)>\s*$",
    re.M,
)
_I128_VECTOR = re.compile(r"<(?:[2-9]|\d\d+) x i128>")
_NAME = r"%[\w.$-]+"


def _definition(ir_text: str, name: str) -> re.Match[str] | None:
    return re.search(rf"^\s*{re.escape(name)} = (?P<rhs>.*?)\s*$", ir_text, re.M)


def _mulh_operands(ir_text: str, n: str, shifted: str) -> tuple[str, str, int] | None:
    """The two i64 operands (names or `splat (i64 K)`) and the shift S if `shifted` is
    `lshr(mul(zext, zext), S)` with 64 <= S < 128 (a mul_shr by S - 64 more than the high half)."""
    d = _definition(ir_text, shifted)
    m = d and re.fullmatch(rf"lshr (?:exact )?<{n} x i128> ({_NAME}), splat \(i128 (\d+)\)", d["rhs"])
    if not m or not 64 <= int(m[2]) < 128:
        return None
    shift = int(m[2])
    d = _definition(ir_text, m[1])
    m = d and re.fullmatch(rf"mul (?:nuw )?(?:nsw )?<{n} x i128> (\S+), (.+)", d["rhs"])
    if not m:
        return None
    ops = []
    for op in (m[1], m[2]):
        k = re.fullmatch(r"splat \(i128 (\d+)\)", op)
        if k and int(k[1]) < 1 << 64:
            ops.append(f"splat (i64 {int(k[1]) - (1 << 64) if int(k[1]) >= 1 << 63 else int(k[1])})")
            continue
        d = _definition(ir_text, op) if re.fullmatch(_NAME, op) else None
        z = d and re.fullmatch(rf"zext (?:nneg )?<{n} x i64> ({_NAME}) to <{n} x i128>", d["rhs"])
        if not z:
            return None
        ops.append(z[1])
    return ops[0], ops[1], shift


def has_i128_mulh(ir_text: str) -> bool:
    """Whether some function has a high multiply `rewrite_i128_mulhs` takes back. Judged one function
    at a time (as the rewrite is): over a module of kernels that reuse value names, the lookups read
    another function's definitions, missed every shape, and the rewrite never ran (difftest batches)."""
    if " x i128> " not in ir_text:  # what every match of _TRUNC_I128 contains: no need to split the text
        return False
    found: list[bool] = []

    def check(text: str) -> str:
        found.append(any(_mulh_operands(text, m["n"], m["s"]) for m in _TRUNC_I128.finditer(text)))
        return text

    if each_function(ir_text, check) and not found:  # a fragment without definitions
        check(ir_text)
    return any(found)


def each_function(ir_text: str, rewrite: Callable[[str], str]) -> str:
    """`ir_text` with the text of every function definition (`define ... {` to `}`) replaced by
    `rewrite(text)`. Value names are local to a function, and a module may define several kernels that
    reuse them (the difftests put many in one module), so a rewrite that looks definitions up by name
    must see one function at a time."""
    lines = ir_text.split("\n")
    out: list[str] = []
    start = 0
    for i, ln in enumerate(lines):
        if ln.startswith("define "):
            out += lines[start:i]
            start = i
        elif ln.startswith("}") and start < i and lines[start].startswith("define "):
            out.append(rewrite("\n".join(lines[start:i + 1])))
            start = i + 1
    out += lines[start:]
    return "\n".join(out)


def rewrite_i128_mulhs(ir_text: str) -> str:
    """Every `<N x i128>` high multiply written in 32 x 32 -> 64-bit partial products (see above);
    the i128 instructions it leaves unused are deleted."""
    counter = iter(range(1 << 30))
    return each_function(ir_text, lambda text: _rewrite_i128_mulhs(text, counter))


def _rewrite_i128_mulhs(ir_text: str, counter: Iterator[int]) -> str:
    dead: list[str] = []

    def expand(m: re.Match[str]) -> str:
        ops = _mulh_operands(ir_text, m["n"], m["s"])
        if ops is None:
            return m[0]
        ind, dst, ty = m["ind"], m["dst"], f"<{m['n']} x i64>"
        k = next(counter)
        v = {s: f"%pfx.mh{k}.{s}" for s in ("a1", "b1", "a0", "b0", "hh", "lh", "hl", "ll", "llh", "lhl",
                                             "hll", "s1", "s2", "c", "lhh", "hlh", "t1", "t2")}
        (a, b, shift), lo = ops, "splat (i64 4294967295)"
        # The result is the i64 high part shifted by S - 64, truncated further when the optimiser
        # fused a narrowing cast into the i128 trunc (`trunc <N x i128> to <N x i8>`: a u8 of a
        # mul_shr(u64, u64, 73), difftest hvx128 seed 721).
        narrow = m["k"] != "64"
        hi = dst if shift == 64 and not narrow else f"%pfx.mh{k}.hi"
        wide = f"%pfx.mh{k}.w" if narrow else dst
        dead.append(m["s"])
        lines = [
            f"{v['a1']} = lshr {ty} {a}, splat (i64 32)", f"{v['b1']} = lshr {ty} {b}, splat (i64 32)",
            f"{v['a0']} = and {ty} {a}, {lo}", f"{v['b0']} = and {ty} {b}, {lo}",
            f"{v['hh']} = mul nuw {ty} {v['a1']}, {v['b1']}", f"{v['lh']} = mul nuw {ty} {v['a0']}, {v['b1']}",
            f"{v['hl']} = mul nuw {ty} {v['a1']}, {v['b0']}", f"{v['ll']} = mul nuw {ty} {v['a0']}, {v['b0']}",
            f"{v['llh']} = lshr {ty} {v['ll']}, splat (i64 32)", f"{v['lhl']} = and {ty} {v['lh']}, {lo}",
            f"{v['hll']} = and {ty} {v['hl']}, {lo}", f"{v['s1']} = add nuw nsw {ty} {v['llh']}, {v['lhl']}",
            f"{v['s2']} = add nuw nsw {ty} {v['s1']}, {v['hll']}", f"{v['c']} = lshr {ty} {v['s2']}, splat (i64 32)",
            f"{v['lhh']} = lshr {ty} {v['lh']}, splat (i64 32)", f"{v['hlh']} = lshr {ty} {v['hl']}, splat (i64 32)",
            f"{v['t1']} = add nuw {ty} {v['hh']}, {v['lhh']}", f"{v['t2']} = add nuw {ty} {v['t1']}, {v['hlh']}",
            f"{hi} = add nuw {ty} {v['t2']}, {v['c']}",
        ] + ([] if shift == 64 else [f"{wide} = lshr {ty} {hi}, splat (i64 {shift - 64})"])
        if narrow:
            lines.append(f"{dst} = trunc {ty} {hi if shift == 64 else wide} to <{m['n']} x i{m['k']}>")
        return "\n".join(ind + ln for ln in lines)

    text = _TRUNC_I128.sub(expand, ir_text)
    return _delete_unused(text, dead)


def _delete_unused(ir_text: str, names: list[str]) -> str:
    """Delete the definitions of `names`, and then of their operands, while nothing else uses them."""
    work = list(names)
    while work:
        name = work.pop()
        uses = re.findall(rf"{re.escape(name)}(?![\w.$-])", ir_text)
        d = _definition(ir_text, name)
        if d is None or len(uses) != 1:  # the definition itself is the one occurrence
            continue
        work.extend(re.findall(_NAME, d["rhs"]))
        ir_text = ir_text[: d.start()] + ir_text[d.end() + 1:]  # (+1: its newline)
    return ir_text


def i128_vector_line(ir_text: str) -> str | None:
    """The first line computing on a vector of i128 lanes, if any."""
    m = _I128_VECTOR.search(ir_text)
    if m is None:
        return None
    return ir_text[ir_text.rfind("\n", 0, m.start()) + 1: ir_text.find("\n", m.end())].strip()


def _function_texts(ir_text: str) -> dict[str, str]:
    """Function name -> its definition's text (`define ... {` to `}`), names unquoted."""
    out: dict[str, str] = {}

    def keep(text: str) -> str:
        m = re.search(r'@("[^"]+"|[\w.$-]+)\(', text.split("\n", 1)[0])
        out[m[1].strip('"') if m else ""] = text
        return text

    each_function(ir_text, keep)
    return out


def optimizer_i128_line(ir_text: str, optimized: str) -> str | None:
    """A line of `optimized` (after `rewrite_i128_mulhs`) computing on i128 vectors that the optimiser
    made in a function that had none: such a module is refused (pitchfork.backend.machine), since that
    scalarised code is the kind known to run wrong. A function whose term computes at 128 bits itself
    (the 64-bit widening ops) is left alone: we wrote those vectors, and they run right (test_hvx's
    every-op test). Judged function by function: in a module of several kernels (a difftest batch), one
    kernel's own i128 vectors must not wave through the optimiser's in another. Text without function
    definitions is judged as one piece."""
    if " x i128>" not in optimized:  # what every match of _I128_VECTOR contains: no line of it computes on i128
        return None
    before, after = _function_texts(ir_text), _function_texts(optimized)
    if not after:
        return None if i128_vector_line(ir_text) is not None else i128_vector_line(optimized)
    for name, text in after.items():
        if i128_vector_line(before.get(name, "")) is None:
            line = i128_vector_line(text)
            if line is not None:
                return line
    return None
