"""docs/COVERAGE.md: for every FPIR op x type x ISA, what PITCHFORK emits beside the reference's best.

    python -m pitchfork.selection.coverage            # (re)write docs/COVERAGE.md
    python -m pitchfork.selection.coverage --check    # exit 1 if docs/COVERAGE.md is stale
    python -m pitchfork.selection.coverage --stdout   # print instead of writing

What we emit is measured, never written down: each row's term (the op applied to variables, and to a
constant amount where instructions take an immediate) goes through `pitchfork.selection.lower.select_instructions`
for the ISA, exactly as a compiled expression does, and the row lists the target instructions of the
result. A result made only of primitive ops is either *compound* (an ISA lowering rule chose that
sequence, e.g. x86's absd as two saturating subtractions) or *generic* (the target-independent
expansion of rules/lower/generic.rules / the op's definition).

The reference column transcribes ISA_INTRINSICS.md section 2 (`REFERENCE`, "—" where it lists no
instruction). Invariant checked by tests/pitchfork/selection/test_coverage.py: no row where the reference names an
instruction and we emit the generic expansion, unless `REASONS` says why (the reason is printed in the
row); and the checked-in document equals `render()`.
"""

from __future__ import annotations

import itertools
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from fpir import markdown as md
from fpir.ops import FPIR_OPS, make
from fpir.opspec import OPS
from fpir.term import Term, const, var
from fpir.printer import to_text
from fpir.types import USER_TYPES, FPIRTypeError, ScalarType

DOC_PATH = Path(__file__).resolve().parents[2] / "docs" / "COVERAGE.md"
ISAS = ("x86-avx2", "arm64", "hvx128")
INT_TYPES = [t for t in USER_TYPES if t.bits > 1]
SHIFT_LIKE = {"widening_shl": 1, "widening_shr": 1, "rounding_shl": 1, "rounding_shr": 1, "saturating_shl": 1}
Q_OPS = ("mul_shr", "rounding_mul_shr")


@dataclass(frozen=True)
class Instance:
    """One row: an FPIR op at one type instance (and constant amount, where it matters)."""

    op: str
    term: Term
    a: ScalarType  # first operand type
    b: Optional[ScalarType]  # second operand type (None for unary ops)
    r: ScalarType  # result type
    q: Optional[int]  # the constant amount, or None for a variable one

    @property
    def label(self) -> str:
        return to_text(self.term)


def instances() -> list[Instance]:
    """Every FPIR op at every type instance its type rule accepts over 8..64-bit integer types."""
    out: list[Instance] = []
    for op in FPIR_OPS:
        s = OPS[op]
        if s.combines_lanes:
            continue
        for rt in (INT_TYPES if s.explicit_type else [None]):
            for ts in itertools.product(INT_TYPES, repeat=s.arity):
                if op in Q_OPS and ts[2] != ts[0].to_unsigned():
                    continue  # the amount's type only matters through its value
                try:
                    t = make(op, *[var("abc"[i], ty) for i, ty in enumerate(ts)], type=rt)
                except FPIRTypeError:
                    continue
                if t.op != op or t.type.bits > 64:
                    continue
                b = ts[1] if len(ts) > 1 else None
                if op in Q_OPS:
                    bits = ts[0].bits
                    for q in (bits - 1, bits):
                        out.append(Instance(op, make(op, t.args[0], t.args[1], const(q, ts[2])), ts[0], b, t.type, q))
                    continue
                out.append(Instance(op, t, ts[0], b, t.type, None))
                if op in SHIFT_LIKE and ts[1] == ts[0]:
                    out.append(Instance(op, make(op, t.args[0], const(3, ts[1])), ts[0], b, t.type, 3))
    return out


# ---------------------------------------------------------------------------------------------
# The reference (ISA_INTRINSICS.md section 2): op -> [(isa, applies to the instance?, instruction)]

Pred = Callable[[Instance], bool]


def _bits(*bs: int) -> Pred:
    return lambda i: i.a.bits in bs


def _types(*names: str) -> Pred:
    return lambda i: i.a.name in names


def _same_sign(p: Pred) -> Pred:
    return lambda i: (i.b is None or i.a.signed == i.b.signed) and p(i)


def _cast(*pairs: str) -> Pred:
    """saturating_cast source->result pairs, e.g. 'i16>u8'."""
    return lambda i: f"{i.a.name}>{i.r.name}" in pairs


def _q(pairs: dict[str, Sequence[int]]) -> Pred:
    return lambda i: i.q in pairs.get(i.a.name, ())


def _narrowing(i: Instance) -> bool:
    return i.r.bits < i.a.bits


def _const(p: Pred) -> Pred:
    return lambda i: i.q is not None and p(i)


def _var(p: Pred) -> Pred:
    return lambda i: i.q is None and p(i)


X86, ARM, HVX = ISAS
_8_32 = _bits(8, 16, 32)
REFERENCE: dict[str, list[tuple[str, Pred, str]]] = {
    "widening_add": [(ARM, _8_32, "uaddl / saddl"),
                     (HVX, _types("u8", "u16", "i16"), "vaddubh / vadduhw / vaddhw")],
    "widening_sub": [(ARM, _8_32, "usubl / ssubl"),
                     (HVX, _types("u8", "u16", "i16"), "vsububh / vsubuhw / vsubhw")],
    "widening_mul": [(X86, lambda i: i.a.name == "i16" and i.b is not None and i.b.name == "i16",
                      "vpmovzxwd + vpmaddwd"),
                     (ARM, _same_sign(_8_32), "umull / smull"),
                     (HVX, lambda i: {i.a.name, i.b.name if i.b else ""} in ({"u8"}, {"i8"}, {"u16"}, {"i16"},
                                                                           {"u8", "i8"}, {"i16", "u16"}),
                      "vmpyubv / vmpybv / vmpyuhv / vmpyhv / vmpybusv / vmpyhus")],
    "extending_add": [(ARM, lambda i: i.b is not None and i.b.bits <= 32 and i.a.signed == i.b.signed, "uaddw / saddw")],
    "extending_sub": [(ARM, lambda i: i.b is not None and i.b.bits <= 32 and i.a.signed == i.b.signed, "usubw / ssubw")],
    "widening_shl": [(ARM, _const(_8_32), "ushll / sshll #c")],
    "absd": [(X86, _types("u8", "u16"), "vpsubus x2 + vpor"),
             (X86, _types("i8", "i16", "i32"), "vpmaxs + vpmins + vpsub"),
             (ARM, _8_32, "uabd / sabd"),
             (HVX, _types("u8", "u16", "i16", "i32"), "vabsdiffub / uh / h / w")],
    "saturating_add": [(X86, _bits(8, 16), "vpadds / vpaddus"),
                       (ARM, lambda i: True, "sqadd / uqadd"),
                       (HVX, _bits(8, 16, 32), "vadd*sat")],
    "saturating_sub": [(X86, _bits(8, 16), "vpsubs / vpsubus"),
                       (ARM, lambda i: True, "sqsub / uqsub"),
                       (HVX, _bits(8, 16, 32), "vsub*sat")],
    "saturating_cast": [(X86, _cast("i16>i8", "i16>u8", "i32>i16", "i32>u16"), "vpacksswb / vpackuswb / vpackssdw / vpackusdw"),
                        (X86, _cast("u16>u8", "u16>i8", "u32>i16", "u32>u16"), "signed pack (+ vpminu when unbounded)"),
                        (X86, _cast("i32>u8", "i32>i8", "u32>i8", "u32>u8"), "two packs"),
                        (ARM, _narrowing, "sqxtn / uqxtn / sqxtun (one per halving)"),
                        (HVX, _cast("i16>u8", "i16>i8", "i32>i16", "i32>u16", "u32>u16"), "vpack*.sat / vsat*"),
                        (HVX, _cast("u16>u8", "u16>i8", "u32>i16"), "vmin + vpacke (signed pack when bounded)"),
                        (HVX, _cast("i32>u8", "i32>i8", "u32>u8", "u32>i8"), "two steps (i32 -> i16 sat, then -> 8 bit)")],
    "extending_mul": [(HVX, lambda i: i.a.bits == 32 and i.b is not None and i.b.bits == 16,
                       "vmpyiewuh / vmpyiowh pieces (vmpyie, vmpyio)")],
    "halving_add": [(ARM, _8_32, "uhadd / shadd"),
                    (HVX, _bits(8, 16, 32), "vavg*")],
    "halving_sub": [(X86, _types("u8", "u16"), "vpavg(a, ~b) + bias"),
                    (ARM, _8_32, "uhsub / shsub"),
                    (HVX, _types("u8", "i8", "i16", "i32"), "vnavg*")],
    "rounding_halving_add": [(X86, _types("u8", "u16"), "vpavgb / vpavgw"),
                             (X86, _types("i8", "i16"), "vpavg + sign-flip logic"),
                             (ARM, _8_32, "urhadd / srhadd"),
                             (HVX, _bits(8, 16, 32), "vavg*rnd")],
    "rounding_shr": [(X86, _const(_types("u8", "u16")), "vpavg + shift"),
                     (X86, _const(_types("i8", "i16")), "vpavg on sign-flipped values + shift"),
                     (X86, _var(_bits(32, 64)), "vpsrlv (variable shifts exist for 32/64-bit lanes)"),
                     (ARM, lambda i: True, "urshl / srshl by -b (urshr / srshr #c)")],
    "rounding_shl": [(ARM, lambda i: True, "urshl / srshl")],
    "mul_shr": [(X86, _q({"i16": (16,), "u16": (16,)}), "vpmulhw / vpmulhuw"),
                (ARM, _q({"i16": (15,), "i32": (31,)}), "sqdmulh"),
                (ARM, lambda i: i.a.bits <= 32 and i.q is not None, "smull / umull + narrowing shift"),
                (HVX, _q({"i32": (31, 32)}), "vmpyewuh + vmpyowh.sacc")],
    "rounding_mul_shr": [(X86, _q({"i16": (15,)}), "vpmulhrsw + fix-up"),
                         (ARM, _q({"i16": (15,), "i32": (31,)}), "sqrdmulh"),
                         (ARM, lambda i: i.a.bits <= 32 and i.q is not None, "smull / umull + rounding narrowing shift"),
                         (HVX, _q({"i16": (15,)}), "vmpyhvsrs"),
                         (HVX, _q({"i32": (31,)}), "vmpyewuh + vmpyowh.rnd.sacc")],
    "saturating_shl": [(ARM, lambda i: True, "sqshl / uqshl")],
}

# Why a row whose reference names an instruction is nevertheless the generic expansion:
# op -> [(isa, applies?, reason)]. The first that applies is printed in the row.
REASONS: dict[str, list[tuple[str, Pred, str]]] = {
    "rounding_shl": [(ARM, _var(lambda i: i.b is not None and not i.b.signed),
                      "an unsigned amount never rounds: the lifter makes it a plain `<<` (ushl)")],
    "saturating_cast": [(HVX, _cast("u32>i8"),
                         "vmin(x, 127) + two vpacke: as short as two saturating packs, which need the same "
                         "vmin first for an unsigned source (vsat_h reads words as signed)")],
    "extending_mul": [(HVX, lambda i: i.b is not None and i.b.name == "i16",
                       "LLVM selects the 32-bit multiply of the sign-extended halfword as vmpyieo + vmpyie.acc, "
                       "the reference's two pieces; no single instruction takes a signed halfword")],
    "mul_shr": [(HVX, _q({"i32": (32,)}),
                 "the reference's vasrw(vmpyowh.sacc result, 1) is off by one for MIN * MIN (the q = 31 step "
                 "saturates 2^31 first), so q = 32 is not lowered that way; the generic expansion's code is "
                 "vmpye + vmpyo all the same (LLVM forms the 64-bit product, pitchfork.backend.hvx_i64 computes "
                 "it with V6_vmpyewuh_64 / V6_vmpyowh_64_acc: 2 instructions, right for MIN * MIN)")],
}


def reference(isa: str, inst: Instance) -> Optional[str]:
    for where, applies, text in REFERENCE.get(inst.op, []):
        if where == isa and applies(inst):
            return text
    return None


def reason(isa: str, inst: Instance) -> Optional[str]:
    for where, applies, text in REASONS.get(inst.op, []):
        if where == isa and applies(inst):
            return text
    return None


# ---------------------------------------------------------------------------------------------
# What we emit


@dataclass(frozen=True)
class Emitted:
    kind: str  # "instructions", "compound" or "generic"
    instructions: tuple[str, ...]  # target instructions (mnemonics without the ISA prefix)
    primitives: tuple[str, ...]  # primitive ops of the result
    rules: tuple[str, ...]  # lowering rules that fired

    def cell(self) -> str:
        if self.kind == "instructions":
            return " + ".join(f"`{m}`" for m in self.instructions)
        ops = ", ".join(self.primitives) or "none"
        if self.kind == "compound":
            return f"compound `{'`, `'.join(self.rules)}` ({ops})"
        return f"generic ({ops})"


def emitted(isa: str, inst: Instance) -> Emitted:
    from pitchfork.selection.lower import select_instructions

    sel = select_instructions(inst.term, isa)
    ins: list[str] = []
    prims: list[str] = []
    for t in sel.final.walk():
        if not t.args:
            continue
        kind = OPS[t.op].kind
        name = t.op.split(".", 1)[1] if kind == "target" else t.op
        bucket = ins if kind == "target" else prims
        if name not in bucket and name != "reinterpret":
            bucket.append(name)
    rules = tuple(sorted(n for n, c in (sel.lower_stats.fired.items() if sel.lower_stats else ()) if c))
    kind = "instructions" if ins else ("compound" if rules else "generic")
    return Emitted(kind, tuple(ins), tuple(prims), rules)


@dataclass(frozen=True)
class Row:
    inst: Instance
    cells: tuple[tuple[Emitted, Optional[str], Optional[str]], ...]  # per ISA: (emitted, reference, reason)


def rows() -> list[Row]:
    out = []
    for inst in instances():
        out.append(Row(inst, tuple((emitted(isa, inst), reference(isa, inst), reason(isa, inst)) for isa in ISAS)))
    return out


def stale_reasons(table: Sequence[Row]) -> list[str]:
    """Reasons given for rows that are not (or no longer) generic with a reference instruction."""
    return [f"{isa}: {row.inst.label}: {em.cell()}" for row in table
            for isa, (em, ref, why) in zip(ISAS, row.cells)
            if why is not None and (em.kind != "generic" or ref is None)]


def violations(table: Sequence[Row]) -> list[str]:
    """Rows where the reference lists an instruction, we emit the generic expansion and no reason says why."""
    bad = []
    for row in table:
        for isa, (em, ref, why) in zip(ISAS, row.cells):
            if ref is not None and em.kind == "generic" and why is None:
                bad.append(f"{isa}: {row.inst.label}: reference {ref!r}, we emit {em.cell()}")
    return bad


# ---------------------------------------------------------------------------------------------
# The document

HEADER = """\
# Instruction coverage: FPIR op x type x ISA

<!-- Generated by `python -m pitchfork.selection.coverage` (pitchfork/selection/coverage.py). Do not edit by hand;
     tests/pitchfork/selection/test_coverage.py fails when this file is stale. -->

Each row is one FPIR op at one type instance (a constant amount `3`, or `q` = bits - 1 and bits for the
multiply-shifts, where instructions need an immediate). **We emit** is measured: the term went through
`select_instructions` (lifting, the ISA's lowering rules, generic expansion) and the cell lists the target
instructions in the result. A result of primitive ops only is *compound* (an ISA rule chose the sequence;
the rule is named) or *generic* (the target-independent expansion; LLVM selects from it). **Reference**
is the best instruction ISA_INTRINSICS.md section 2 lists ("—": none). A generic row whose reference names
an instruction says why (**note**); the test fails on a row without one.
"""


def render(table: Optional[Sequence[Row]] = None) -> str:
    table = rows() if table is None else table
    out = [HEADER]
    counts = {isa: {"instructions": 0, "compound": 0, "generic": 0} for isa in ISAS}
    for row in table:
        for isa, (em, _, _) in zip(ISAS, row.cells):
            counts[isa][em.kind] += 1
    out.extend(md.table(("ISA", "rows with instructions", "compound", "generic"),
                        ((isa, *(str(counts[isa][k]) for k in ("instructions", "compound", "generic")))
                         for isa in ISAS)))
    ops = list(dict.fromkeys(r.inst.op for r in table))
    for op in ops:
        out.append(f"\n## {op}\n")
        lines = []
        for row in (r for r in table if r.inst.op == op):
            cells = [f"`{md.escape(row.inst.label)}`"]
            for em, ref, why in row.cells:
                cell = em.cell()
                if why is not None and em.kind == "generic" and ref is not None:
                    cell += f"; **note**: {why}"
                cells += [md.escape(cell), md.escape(ref or "—")]
            lines.append(cells)
        out.extend(md.table(("instance", *(h for isa in ISAS for h in (f"{isa}: we emit", "reference"))), lines))
    return "\n".join(out).rstrip() + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    def make() -> tuple[str, bool]:
        table = rows()
        bad = violations(table)
        for line in bad:
            print(f"no reason given: {line}", file=sys.stderr)
        return render(table), bool(bad)

    return md.generated_doc_main(argv, prog="python -m pitchfork.selection.coverage",
                                 description=__doc__.splitlines()[0],
                                 default_path=DOC_PATH, render=make)


if __name__ == "__main__":
    sys.exit(main())
