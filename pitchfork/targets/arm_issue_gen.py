"""Generator of the AArch64 issue-rate table (pitchfork/targets/arm_issue_rates.py) from llvm-mca.

The harness's arm64 static estimate is llvm-mca's steady-state cycles (benchmarks/harness/static.py:
`-mcpu=cortex-a76`, apple-m1 printed beside it). An instruction count misleads there: a Q-form `mla`
issues at one per 2 cycles on cortex-a76 where `smlal` issues at one per cycle and `add` at two per
cycle. This script asks llvm-mca (`--instruction-info`: the reciprocal throughput of each instruction
alone) about the assembly of every signature the instruction table declares (pitchfork/targets/arm.py,
both the plain and the `2` form of a widening or narrowing instruction) and of the instructions LLVM
selects for each generic primitive the lowering costs (primitive_cost.py), at every vector
arrangement, and writes the table as a Python module.

Usage: `python3 -m pitchfork.targets.arm_issue_gen -o DIR` writes DIR/arm_issue_rates.py (and the
assembly it measured, DIR/arm_issue_rates.s); `--refresh` rewrites the committed module in the
source tree instead (never by default). `--llvm-mca PATH` picks the tool (default: `llvm-mca` on PATH).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

#: the cores the table is measured for: the harness's primary model first, its second model after
CPUS = ("cortex-a76", "apple-m1")
MATTR = "+dotprod"  # udot/sdot (the compiler enables it: pitchfork/targets/target_strings.py)
TABLE_PATH = Path(__file__).resolve().parent / "arm_issue_rates.py"

#: Q-form (128-bit) and D-form (64-bit) arrangement of a lane width
Q = {8: "16b", 16: "8h", 32: "4s", 64: "2d"}
D = {8: "8b", 16: "4h", 32: "2s"}
#: which operand of an immediate-operand instruction is the immediate (arm.py's `immediate(...)` rows)
IMMEDIATE_ARG = {"ursra": 2, "srsra": 2}
#: pairwise long adds: no high-half (`2`) form
_NO_HIGH_FORM = frozenset({"uaddlp", "saddlp", "uadalp", "sadalp"})
#: register shifts by a constant amount: LLVM selects the immediate form (`sshl x, splat(6)` is
#: `shl #6`, `srshl x, splat(-4)` is `srshr #4`), which issues at its own rate: mnemonic -> the
#: left (`#l`: positive amount) and right (`#r`: negative amount) immediate instruction
REGISTER_SHIFT_IMMEDIATE = {"ushl": ("shl", "ushr"), "sshl": ("shl", "sshr"), "urshl": ("shl", "urshr"),
                            "srshl": ("shl", "srshr"), "uqshl": ("uqshl", "ushr"), "sqshl": ("sqshl", "sshr")}


def _bits(name: str) -> int:
    return int(name[1:])


def instruction_forms(mnemonic: str, args: list[str], result: str, combines: bool,
                      immediate: Optional[int]) -> list[str]:
    """The assembly of one signature of instruction table row `mnemonic` (operand type names `args`,
    result type name `result`): one line, or the plain and the `2` (high half) line of a widening or
    narrowing instruction. `immediate`: the operand that is an immediate (None: none)."""
    rb, ab = _bits(result), [_bits(a) for a in args]
    regs = [a for i, a in enumerate(ab) if i != immediate]
    imm = ", #1" if immediate is not None else ""
    if combines:
        if mnemonic in ("udot", "sdot"):
            return [f"{mnemonic} v0.4s, v1.16b, v2.16b"]
        if rb == ab[-1]:  # addp / umaxp ...: same type, two source registers
            return [f"{mnemonic} v0.{Q[rb]}, v1.{Q[rb]}, v2.{Q[rb]}"]
        return [f"{mnemonic} v0.{Q[rb]}, v1.{Q[ab[-1]]}"]  # uaddlp / uadalp
    narrow = min(regs)
    if rb < narrow:  # narrowing: 64-bit result half from 128-bit sources (and the `2` form)
        srcs = ", ".join(f"v{i + 1}.{Q[b]}" for i, b in enumerate(regs))
        return [f"{mnemonic} v0.{D[rb]}, {srcs}{imm}", f"{mnemonic}2 v0.{Q[rb]}, {srcs}{imm}"]
    if rb > narrow:  # widening: 128-bit result from 64-bit halves (and the `2` form)
        srcs = regs[1:] if len(regs) == 3 else regs  # umlal / uabal: the accumulator is the destination

        def ops(form: dict[int, str]) -> str:  # a wide operand (uaddw's) is a full register
            return ", ".join(f"v{i + 1}.{Q[b] if b == rb else form[b]}" for i, b in enumerate(srcs))

        return [f"{mnemonic} v0.{Q[rb]}, {ops(D)}{imm}", f"{mnemonic}2 v0.{Q[rb]}, {ops(Q)}{imm}"]
    # same width: an accumulator operand is the destination
    srcs = regs[1:] if len(regs) == 3 or mnemonic in ("ursra", "srsra") else regs
    return [f"{mnemonic} v0.{Q[rb]}, " + ", ".join(f"v{i + 1}.{Q[b]}" for i, b in enumerate(srcs)) + imm]


def generic_forms(op: str, operand: int, result: int, signed: bool) -> list[str]:
    """The instructions LLVM selects for generic primitive `op` (operand lane bits `operand`, result
    `result`, signedness of the operand) on 128-bit registers, for one register of the wider side; a
    cast k levels apart is costed per level by the model (pitchfork/targets/arm_issue.py), so only
    one-level casts are listed. An empty list: no vector instruction (LLVM scalarises it)."""
    a = Q.get(operand)
    s, u = ("s", "") if signed else ("u", "")
    three = f"v0.{a}, v1.{a}, v2.{a}"
    if op in ("add", "sub"):
        return [f"{op} {three}"]
    if op in ("and", "xor", "or"):
        return [f"{ {'and': 'and', 'xor': 'eor', 'or': 'orr'}[op]} v0.16b, v1.16b, v2.16b"]
    if op == "not":
        return ["mvn v0.16b, v1.16b"]
    if op == "mul":
        return [] if operand == 64 else [f"mul {three}"]
    if op in ("min", "max"):
        if operand == 64:  # no 64-bit min/max: a compare and a select
            return [f"cm{'gt' if signed else 'hi'} {three}", "bsl v0.16b, v1.16b, v2.16b"]
        return [f"{s or 'u'}{op} {three}"]
    if op == "abs":
        return [f"abs v0.{a}, v1.{a}"]
    if op == "eq":
        return [f"cmeq {three}"]
    if op == "ne":
        return [f"cmeq {three}", "mvn v0.16b, v1.16b"]
    if op in ("lt", "gt"):
        return [f"cm{'gt' if signed else 'hi'} {three}"]
    if op in ("le", "ge"):
        return [f"cm{'ge' if signed else 'hs'} {three}"]
    if op == "select":
        return ["bsl v0.16b, v1.16b, v2.16b"]
    if op == "shl":
        return [f"shl v0.{a}, v1.{a}, #1"]
    if op == "shr":
        return [f"{'s' if signed else 'u'}shr v0.{a}, v1.{a}, #1"]
    if op == "shl_var":  # a shift by a vector amount (either direction: the amount's sign)
        return [f"{'s' if signed else 'u'}shl {three}"]
    if op == "widen":  # one level: u8 -> u16 is ushll (uxtl) per result register
        return [f"{'s' if signed else 'u'}shll v0.{Q[result]}, v1.{D[operand]}, #0",
                f"{'s' if signed else 'u'}shll2 v0.{Q[result]}, v1.{Q[operand]}, #0"]
    if op == "narrow":  # one level: xtn per result half
        return [f"xtn v0.{D[result]}, v1.{Q[operand]}", f"xtn2 v0.{Q[result]}, v1.{Q[operand]}"]
    return []


#: the generic primitives the lowering costs (primitive_cost.py), measured at each lane width and
#: signedness; `widen` / `narrow` are the one-level casts, `shl_var` a shift by a vector amount
GENERIC_OPS = ("add", "sub", "mul", "and", "or", "xor", "not", "min", "max", "abs", "eq", "ne", "lt", "gt",
               "le", "ge", "select", "shl", "shr", "shl_var")


def generic_rows() -> dict[str, list[str]]:
    """Key `op:bits:s|u` (or `widen:a:b:s|u`, `narrow:a:b`) -> assembly lines."""
    rows: dict[str, list[str]] = {}
    for op in GENERIC_OPS:
        for bits in (8, 16, 32, 64):
            for signed in (False, True):
                lines = generic_forms(op, bits, bits, signed)
                if lines:
                    rows[f"{op}:{bits}:{'s' if signed else 'u'}"] = lines
    for bits in (8, 16, 32):
        for signed in (False, True):
            rows[f"widen:{bits}:{2 * bits}:{'s' if signed else 'u'}"] = generic_forms("widen", bits, 2 * bits, signed)
        rows[f"narrow:{2 * bits}:{bits}"] = generic_forms("narrow", 2 * bits, bits, False)
    return rows


def instruction_rows() -> dict[str, list[str]]:
    """Key `arm.<mnemonic> <signature>` (the instruction table's spelling) -> assembly lines."""
    import pitchfork.targets.arm as arm
    from fpir.opspec import spec

    rows: dict[str, list[str]] = {}
    for row in arm.TABLE:
        s = spec(f"arm.{row.mnemonic}")
        imm = IMMEDIATE_ARG.get(row.mnemonic, 1) if row.encodable is not None else None
        for sig in row.signatures:
            args, result = (p.strip() for p in sig.split("->"))
            names = [a.strip() for a in args.split(",")]
            lines = instruction_forms(row.mnemonic, names, result, s.combines_lanes, imm)
            if row.mnemonic in _NO_HIGH_FORM:
                lines = lines[:1]
            rows[f"arm.{row.mnemonic} {sig}"] = lines
            for side, mnemonic in zip(("#l", "#r"), REGISTER_SHIFT_IMMEDIATE.get(row.mnemonic, ())):
                arrangement = Q[_bits(result)]
                rows[f"arm.{row.mnemonic} {sig} {side}"] = [f"{mnemonic} v0.{arrangement}, v1.{arrangement}, #1"]
    return rows


_ROW = re.compile(r"^\s*\d+\s+\d+\s+([\d.]+)\s+(?:[*U]\s+)*(.+?)\s*$")


def measure(lines: list[str], cpu: str, mca: str) -> dict[str, float]:
    """llvm-mca's reciprocal throughput (cycles) of each distinct assembly line, for core `cpu`."""
    unique = sorted(set(lines))
    src = "\n".join(unique) + "\n"
    out = subprocess.run([mca, "-mtriple=aarch64", f"-mcpu={cpu}", f"-mattr={MATTR}", "--instruction-info",
                          "--resource-pressure=false", "--timeline=false", "-iterations=1"],
                         input=src, capture_output=True, text=True, check=True).stdout
    info = out.split("Instructions:\n", 1)[1].splitlines()
    got = [_ROW.match(line) for line in info if line.strip()]
    values = [float(m.group(1)) for m in got if m]
    if len(values) != len(unique):
        raise RuntimeError(f"llvm-mca ({cpu}) reported {len(values)} rows for {len(unique)} instructions")
    return dict(zip(unique, values))


def build(mca: str) -> tuple[str, str]:
    """The module text (rows: key -> cycles per register summed over a row's lines' mean per form) and
    the assembly measured."""
    inst, gen = instruction_rows(), generic_rows()
    every = [line for rows in (inst, gen) for lines in rows.values() for line in lines]
    tables = {cpu: measure(every, cpu, mca) for cpu in CPUS}

    def per_row(rows: dict[str, list[str]], rt: dict[str, float], mean: bool) -> dict[str, float]:
        # an instruction row's plain and `2` forms each do one register: their mean; a generic
        # primitive's lines run one after the other: their sum
        return {k: round(sum(rt[x] for x in v) / (len(v) if mean else 1), 3) for k, v in rows.items()}

    out = ['"""AArch64 issue rates: llvm-mca reciprocal throughput (cycles) per 128-bit register.',
           "",
           "GENERATED by `python3 -m pitchfork.targets.arm_issue_gen --refresh` (llvm-mca, -mattr=" + MATTR + ");",
           "do not edit by hand. INSTRUCTIONS: `arm.<mnemonic> <signature>` -> cycles of one instruction",
           "(the mean of the plain and the `2` form of a widening or narrowing one; a register shift's",
           "`#l` / `#r` row: its immediate form by a positive / negative constant); GENERIC: the",
           "instructions LLVM selects for a generic primitive (`op:bits:s|u`, one-level casts",
           "`widen:a:b:s|u` / `narrow:a:b`) -> their summed cycles. The model: pitchfork/targets/arm_issue.py.",
           '"""', "", "from __future__ import annotations", ""]
    for name, rows, mean in (("INSTRUCTIONS", inst, True), ("GENERIC", gen, False)):
        out.append(f"{name}: dict[str, dict[str, float]] = {{")
        for cpu in CPUS:
            out.append(f"    {cpu!r}: {{")
            out += [f"        {k!r}: {v!r}," for k, v in per_row(rows, tables[cpu], mean).items()]
            out.append("    },")
        out.append("}")
    return "\n".join(out) + "\n", "\n".join(sorted(set(every))) + "\n"


def main(argv: Optional[list[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("-o", "--output", type=Path, help="folder to write arm_issue_rates.py (and .s) into")
    where.add_argument("--refresh", action="store_true", help=f"rewrite the committed {TABLE_PATH.name}")
    p.add_argument("--llvm-mca", default="llvm-mca", help="the llvm-mca executable")
    args = p.parse_args(argv)
    mca = shutil.which(args.llvm_mca)
    if mca is None:
        print(f"arm_issue_gen: {args.llvm_mca} not found", file=sys.stderr)
        return 2
    text, asm = build(mca)
    if args.refresh:
        TABLE_PATH.write_text(text)
        print(f"wrote {TABLE_PATH}")
    else:
        args.output.mkdir(parents=True, exist_ok=True)
        (args.output / TABLE_PATH.name).write_text(text)
        (args.output / "arm_issue_rates.s").write_text(asm)
        print(f"wrote {args.output / TABLE_PATH.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
