"""Instruction selection for single expressions, as the `pitchfork select` command runs it.

`select_expression(text, target, ...)` parses one FPIR/integer expression, selects instructions
(pitchfork.lower.select_instructions) and, on request, emits an element-wise kernel over vectors of
`lanes` lanes (pitchfork.emit.kernel) and compiles it (pitchfork.emit.machine), returning one
JSON-ready record: {"input", "lanes", "fpir", "lowered", "final", "llvm", "asm", "error", "seconds"}.
Any failure is recorded in "error" (with the stage that failed); nothing is raised, so a batch of
thousands of expressions runs in one process (`run_batch`).

Default lane count: one native vector register of the expression's RESULT element type (for a u1
result: of its widest input type), e.g. 32 lanes for a u8 result on x86-avx2, 8 for u16 on arm64,
64 for u16 on hvx128.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import asdict, dataclass
from typing import IO, Iterable, Optional

from fpir.term import Term
from fpir.text import parse
from pitchfork.emit.machine import get_target
from pitchfork.targets import canonical

EMITS = ("fpir", "llvm", "asm")
ISELS = ("pitchfork", "llvm")
KERNEL = "kernel"


@dataclass
class SelectRecord:
    input: str
    lanes: Optional[int] = None
    fpir: Optional[str] = None
    lowered: Optional[str] = None
    final: Optional[str] = None
    llvm: Optional[str] = None
    asm: Optional[str] = None
    error: Optional[str] = None
    seconds: float = 0.0

    def to_json(self) -> str:
        return json.dumps(asdict(self))


def natural_lanes(term: Term, target: str) -> int:
    """One native register of the result element type (u1 results: of the widest input type)."""
    t = get_target(canonical(target))
    bits = term.type.bits
    if bits == 1:
        bits = max([v.type.bits for v in term.variables() if v.type.bits > 1], default=8)
    return t.natural_lanes(max(bits, 8))


def kernel_variables(term: Term) -> list[Term]:
    """Kernel inputs: the term's variables, sorted by name (the kernel's argument order after out)."""
    return sorted(term.variables(), key=lambda v: (v.name, v.type.bits, v.type.signed))


def select_expression(text: str, target: str, lanes: Optional[int] = None, isel: str = "pitchfork",
                      emit: str = "fpir", isolate: bool = False) -> SelectRecord:
    from pitchfork.emit.kernel import add_expression_kernel, new_module
    from pitchfork.emit.machine import compile_module
    from pitchfork.lower import select_instructions

    t0 = time.perf_counter()
    rec = SelectRecord(input=text.strip(), lanes=lanes)
    stage = "parse"
    try:
        target = canonical(target)
        term = parse(text)
        stage = "select"
        sel = select_instructions(term, target, isel)
        rec.fpir, rec.lowered, rec.final = str(sel.fpir), str(sel.lowered), str(sel.final)
        if rec.lanes is None:
            rec.lanes = natural_lanes(term, target)
        if rec.lanes <= 0:
            raise ValueError(f"lanes must be positive, got {rec.lanes}")
        if emit in ("llvm", "asm"):
            stage = "emit"
            module = new_module()
            add_expression_kernel(module, KERNEL, sel.final, rec.lanes, kernel_variables(sel.final), target)
            ir_text = str(module)
            if emit == "llvm":
                rec.llvm = ir_text
            else:
                stage = "compile"
                cm = compile_module(ir_text, target, isolate=isolate)
                rec.asm = cm.function_asm(KERNEL)
        elif emit != "fpir":
            raise ValueError(f"emit must be one of {', '.join(EMITS)}")
    except Exception as e:  # noqa: BLE001 - one record per input line, errors included
        rec.error = f"{stage}: {type(e).__name__}: {e}"
    rec.seconds = round(time.perf_counter() - t0, 6)
    return rec


_LANES_PREFIX = re.compile(r"^\s*(\d+)\s+(\S.*)$")


def split_line(line: str) -> tuple[Optional[int], str]:
    """'<lanes> <expression>' or '<expression>'. A leading integer is a lane count only when the rest
    of the line parses on its own (so '3 * x_u8' is an expression)."""
    m = _LANES_PREFIX.match(line)
    if m:
        try:
            parse(m.group(2))
            return int(m.group(1)), m.group(2).strip()
        except Exception:  # noqa: BLE001
            pass
    return None, line.strip()


@dataclass
class BatchStats:
    lines: int = 0
    errors: int = 0
    seconds: float = 0.0

    @property
    def per_second(self) -> float:
        return self.lines / self.seconds if self.seconds > 0 else 0.0


def run_batch(lines: Iterable[str], out: IO[str], target: str, lanes: Optional[int] = None,
              isel: str = "pitchfork", emit: str = "asm", isolate: bool = False) -> BatchStats:
    """One JSON object per non-blank, non-comment input line (a line's own lane count wins)."""
    stats = BatchStats()
    t0 = time.perf_counter()
    for line in lines:
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        own, text = split_line(line)
        rec = select_expression(text, target, own if own is not None else lanes, isel, emit, isolate)
        out.write(rec.to_json() + "\n")
        stats.lines += 1
        stats.errors += rec.error is not None
    out.flush()
    stats.seconds = time.perf_counter() - t0
    return stats
