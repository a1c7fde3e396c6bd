"""Generate docs/FPIR.md from the op table.

    python -m fpir.docs            # (re)write docs/FPIR.md
    python -m fpir.docs --check    # exit 1 if docs/FPIR.md is stale
    python -m fpir.docs --stdout   # print instead of writing

Everything in the document is derived from `fpir.ops.OPS` (primitive and FPIR rows only; target
instructions depend on which targets are imported): each op's kind, arity and syntax, a summary of its
type rule obtained by asking the rule about every user type, its doc string, and for FPIR ops the
definition printed as a term over placeholder arguments x, y, z at representative types (through
`fpir.ops.template` and `fpir.text.to_text`, the very definitions the interpreter and Z3 use).
"""

from __future__ import annotations

import itertools
import sys
from collections import defaultdict
from pathlib import Path
from typing import Optional, Sequence

from fpir.markdown import generated_doc_main, table
from fpir.ops import FLAGS, template
from fpir.opspec import OPS, OpSpec
from fpir.term import Term, intern
from fpir.printer import to_text
from fpir.types import INT_TYPES, USER_TYPES, FPIRTypeError, ScalarType, u1

DOC_PATH = Path(__file__).resolve().parent.parent / "docs" / "FPIR.md"
PLACEHOLDERS = ("x", "y", "z")
# (argument types, written type of a conversion, result type)
Instance = tuple[tuple[ScalarType, ...], Optional[ScalarType], ScalarType]


def instances(s: OpSpec) -> list[Instance]:
    """Every (argument types, written type, result type) over user types that the op's type rule accepts."""
    out: list[Instance] = []
    for explicit in (USER_TYPES if s.explicit_type else (None,)):
        for ts in itertools.product(USER_TYPES, repeat=s.arity):
            try:
                rt = s.type_rule(list(ts), explicit)
            except FPIRTypeError:
                continue
            if s.explicit_type and ts[0] == explicit:
                continue  # identity conversions vanish at construction
            out.append((ts, explicit, explicit if s.explicit_type and explicit is not None else rt))
    return out


def _relative(t: ScalarType, base: ScalarType) -> str:
    """Name t relative to base (T): T, U(T), S(T), W(T), N(T), ... or the concrete name."""
    if t == u1:
        return "u1"
    forms: list[tuple[str, Optional[ScalarType]]] = [("T", base)]
    wide = base.widen() if base.bits < 256 else None
    narrow = base.narrow() if base.bits > 8 else None
    for name, x in (("W(T)", wide), ("N(T)", narrow)):
        forms.append((name, x))
    for name, x in (("T", base), ("W(T)", wide), ("N(T)", narrow)):
        if x is not None:
            forms += [(f"U({name})", x.to_unsigned()), (f"S({name})", x.to_signed())]
    for name, x in forms:
        if x == t:
            return name
    return t.name


def _type_list(ts: Sequence[ScalarType]) -> str:
    names = [t.name for t in ts]
    if set(ts) == set(INT_TYPES):
        return "any integer type"
    if set(ts) == set(USER_TYPES):
        return "any type"
    return ", ".join(names)


def type_summary(s: OpSpec) -> list[str]:
    """One line per signature shape, e.g. `(T, T) -> W(T)` for T in u8, i8, ..."""
    insts = instances(s)
    if s.explicit_type:
        pairs = {(ts[0], t) for ts, t, _ in insts}
        srcs = sorted({p[0] for p in pairs}, key=USER_TYPES.index)
        dsts = sorted({p[1] for p in pairs}, key=USER_TYPES.index)
        full = {(a, b) for a in srcs for b in dsts if a != b}
        same_bits = {(a, b) for a, b in full if a.bits == b.bits}
        if pairs == full:
            return [f"`(T) -> t` for T in {_type_list(srcs)}; t in {_type_list(dsts)}"]
        if pairs == same_bits:
            return [f"`(T) -> t` for T, t in {_type_list(srcs)} with bits(T) = bits(t)"]
        return [f"`({a}) -> {b}`" for a, b in sorted(pairs, key=lambda p: (USER_TYPES.index(p[0]),
                                                                          USER_TYPES.index(p[1])))]
    groups: dict[str, list[ScalarType]] = defaultdict(list)
    for ts, _, rt in insts:
        base = next((t for t in ts if t != u1), rt)
        shape = "(" + ", ".join(_relative(t, base) for t in ts) + ") -> " + _relative(rt, base)
        if base not in groups[shape]:
            groups[shape].append(base)
    return [f"`{shape}`" + (f" for T in {_type_list(bases)}" if "T" in shape else "")
            for shape, bases in groups.items()]


def _rename(t: Term, names: dict[str, str]) -> Term:
    """The same term with placeholder variables renamed (structure kept exactly, hence `intern`)."""
    if t.is_var:
        return intern("var", t.type, (), (names.get(t.name, t.name),))
    return intern(t.op, t.type, tuple(_rename(a, names) for a in t.args), t.attrs) if t.args else t


def representative(s: OpSpec) -> list[Instance]:
    """Instances at which to show a definition: the first unsigned and the first signed one (u8/i8 first)."""
    insts = instances(s)
    if s.explicit_type:  # the narrowing conversions are the interesting ones
        insts = [i for i in insts if i[0][0].bits == 2 * i[2].bits and i[2].bits == 8] or insts
    insts.sort(key=lambda i: ([t.bits for t in i[0]], len(set(i[0])), [t.signed for t in i[0]]))
    chosen: list[Instance] = []
    for signed in (False, True):
        for i in insts:
            first = i[0][0] if i[0][0] != u1 else i[0][1]
            if first.signed == signed and (not s.explicit_type or i[2].signed == signed):
                chosen.append(i)
                break
    return chosen or insts[:1]


def definition_text(op: str, inst: Instance) -> tuple[str, str]:
    """(call, definition) as FPIR text at one type instance, e.g. ('halving_add(x_u8, y_u8)', 'u8(...)')."""
    ts, explicit, rt = inst
    body, names = template(op, ts, rt)
    rename = dict(zip(names, PLACEHOLDERS))
    args = ", ".join(f"{p}_{t.name}" for p, t in zip(PLACEHOLDERS, ts))
    call = f"{op}<{explicit}>({args})" if explicit is not None else f"{op}({args})"
    return call, to_text(_rename(body, rename))


def syntax(s: OpSpec) -> str:
    args = PLACEHOLDERS[: s.arity]
    if s.name == "not":
        return "`~x`"
    if s.symbol is not None:
        return f"`x {s.symbol} y`"
    if s.name == "cast":
        return "`t(x)`, e.g. `u16(x_u8)`"
    if s.explicit_type:
        return f"`{s.name}<t>({', '.join(args)})`"
    return f"`{s.name}({', '.join(args)})`"


HEADER = """\
# FPIR operations

<!-- Generated by `python -m fpir.docs` from the op table in fpir/ops.py. Do not edit by hand. -->

FPIR terms are typed and lane-agnostic: a term's type is an element type `u1` (bool), `u8`, `i8`, `u16`,
`i16`, `u32`, `i32`, `u64` or `i64`; the lane count is chosen when compiling, and constants are broadcasts.
Wider types (`u128` ... `i256`) only occur inside definitions, so that widening ops on 64-bit operands stay
exact.

In the type rules, `T` is the type of the first (non-`u1`) operand and `t` the written type of a conversion;
`W(T)` / `N(T)` have twice / half the bits of `T` with the same signedness, `S(...)` / `U(...)` are the
signed / unsigned type of the same width.

* **primitive** ops are Halide's integer IR; their numpy, Z3 and interval semantics are written once in the
  table. Division and modulo are Euclidean and `x / 0 = x % 0 = 0`; a negative (signed) shift amount shifts
  the other way; shift amounts of at least the bit width give 0 (or -1 for a negative value shifted right).
  Halide does not define those shifts (its documentation is silent and its code differs between schedules:
  `i8(-25) << 9` realizes to 0 scalar and to -50 vectorized on x86, where the amount is taken modulo 8).
  PITCHFORK's Halide frontend translates Halide's `<<`, `>>`, `shift_left` and `shift_right` to `shl`/`shr`
  with the definition above, so for those inputs a compiled pipeline gives 0 / -1 where `realize()` may
  give something else; both are executions of a program whose result Halide leaves undefined.
* **lane-combining** primitives `vector_reduce_<op>_x<f>` (op = add, min, max, saturating_add; f = 2 ... 256,
  e.g. `vector_reduce_add_x4(x)`) are Halide's `VectorReduce`: the operand has f times the lanes of the
  result, and result lane j is the left fold of the lane-wise op over operand lanes fj .. fj+f-1. The factor
  is part of the name, so a rule states the grouping it matches. Their only semantics is that (op, f) pair:
  the interpreter folds the last array axis, Z3 encodes lane 0 over f independent lane symbols per input
  (`x`, `x@1`, ...: proving lane 0 proves every lane), bounds fold the op's interval. Target instructions that
  combine lanes (udot, vrmpy, pmaddwd) are defined with these ops. Factors 2 and 4 are listed below.
* **fpir** ops are the fixed-point instructions of the paper's Table 1 (plus `saturating_shl`, section 8.4).
  Each one is *defined* as a term over earlier ops; the definitions below are printed from the very templates
  the interpreter, the Z3 encoding and the bounds analysis expand.
* **flags** are facts a node may carry, written after a dot: `add.nsw(x, y)`. They never change the value
  (the interpreter and the generated code compute the op as usual); they restrict the inputs the term is
  meant for, like LLVM's `nsw`. The Halide frontend puts `nsw` on every signed 32-bit and wider
  add/sub/mul (Halide treats their overflow as impossible; 8- and 16-bit arithmetic wraps), and lifting
  keeps it on the averaging and rounding-shift ops it makes from them (`halving_add.nsw`: x + y fits),
  so a target without the instruction can lower them back to the short wrapping form; FPIR text
  carries it only where written (or with `--assume-no-overflow`). Shifts: the frontend also puts
  `inrange` on every shl/shr (|y| < bits: Halide leaves other shifts undefined) and `nsw` on signed
  32-bit and wider shl (Halide reads x << y as x * 2^y); lifting keeps both on `widening_shl`, which
  lets ARM select one sqshl for a saturated widening shift; FPIR text has `inrange` only where written
  (or with `pitchfork lift --assume-shifts-in-range`). A rule whose left side says
  `add.nsw(...)` matches only flagged nodes and is verified assuming the fact; a flag on a right side is
  proved from the left side's facts; bounds use the exact range of a flagged node; the differential
  tests draw inputs on which every fact holds. Flags are listed at the end of this document.
"""


def render() -> str:
    # Reduction factors beyond DOCUMENTED_FACTORS are registered on first use: not part of the document.
    specs = [s for s in OPS.values() if s.kind in ("primitive", "fpir") and s.meta.get("documented", True)]
    out = [HEADER]
    out.extend(table(("op", "kind", "arity", "syntax"),
                     ((f"[`{s.name}`](#{s.name})", s.kind, str(s.arity), syntax(s)) for s in specs)))
    for kind, title in (("primitive", "Primitive ops"), ("fpir", "FPIR instructions")):
        out.append(f"\n## {title}\n")
        for s in specs:
            if s.kind != kind:
                continue
            out.append(f"### {s.name}\n")
            out.append(f"{s.doc}\n")
            out.append(f"* kind: {s.kind}; arity: {s.arity}; syntax: {syntax(s)}")
            out.append("* types:")
            out.extend(f"  * {line}" for line in type_summary(s))
            if s.definition is not None:
                out.append("* definition:")
                out.append("")
                out.append("  ```")
                for inst in representative(s):
                    call, body = definition_text(s.name, inst)
                    out.append(f"  {call} =")
                    out.append(f"      {body}")
                out.append("  ```")
            out.append("")
    out.append("\n## Flags\n")
    flags = ((f"`{flag}`", f"`{o}.{flag}`", OPS[o].flags[flag].doc) for flag, ops in FLAGS.items() for o in ops)
    out.extend(table(("flag", "op", "fact (the value is computed as without the flag)"), flags))
    return "\n".join(out).rstrip() + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    return generated_doc_main(argv, prog="python -m fpir.docs", description=__doc__.splitlines()[0],
                              default_path=DOC_PATH, render=lambda: (render(), False))


if __name__ == "__main__":
    sys.exit(main())
