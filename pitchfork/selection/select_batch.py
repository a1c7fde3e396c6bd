"""Instruction selection for single expressions, as the `pitchfork select` command runs it.

`select_expression(text, target, ...)` parses one FPIR/integer expression, selects instructions
(pitchfork.selection.lower.select_instructions) and, on request, emits an element-wise kernel over vectors of
`lanes` lanes (pitchfork.codegen.kernel) and compiles it (pitchfork.backend.machine), returning one
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
from pitchfork.backend.machine import get_target
from pitchfork.limits import check_lanes
from pitchfork.targets import canonical
from pitchfork.targets.target_strings import machine_target, parse_target

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
                      emit: str = "fpir", isolate: bool = True, no_overflow: bool = False,
                      shifts_in_range: bool = False) -> SelectRecord:
    """`no_overflow`: Halide's overflow rule, `nsw` on every signed >= 32-bit add/sub/mul/shl;
    `shifts_in_range`: Halide's shift rule, `inrange` on every shl/shr (fpir.flags)."""
    rec, module = _select_and_emit(text, target, lanes, isel, emit, no_overflow=no_overflow,
                                   shifts_in_range=shifts_in_range)
    if module is not None:
        _compile_group([(rec, module)], target, isolate)
    return rec


def _select_and_emit(text: str, target: str, lanes: Optional[int], isel: str, emit: str,
                     kernel: str = KERNEL, no_overflow: bool = False,
                     shifts_in_range: bool = False) -> tuple[SelectRecord, Optional[object]]:
    """Selection (and the kernel's IR module when assembly is wanted); errors go into the record."""
    from pitchfork.codegen.kernel import add_expression_kernel, new_module
    from pitchfork.selection.lower import select_instructions

    t0 = time.perf_counter()
    rec = SelectRecord(input=text.strip(), lanes=lanes)
    stage = "parse"
    module = None
    try:
        if emit not in EMITS:
            raise ValueError(f"emit must be one of {', '.join(EMITS)}")
        spec = parse_target(target)  # a short name or a Halide target string (its features honoured)
        target = spec.isa
        term = parse(text)
        if no_overflow or shifts_in_range:
            from fpir.ops import with_halide_overflow

            term = with_halide_overflow(term, shifts=shifts_in_range, overflow=no_overflow)
        stage = "select"
        sel = select_instructions(term, target, isel, unavailable=spec.unavailable)
        rec.fpir, rec.lowered, rec.final = str(sel.fpir), str(sel.lowered), str(sel.final)
        if rec.lanes is None:
            rec.lanes = natural_lanes(term, target)
        check_lanes(rec.lanes)  # before emission: a huge count would exhaust memory (pitchfork/limits.py)
        if emit in ("llvm", "asm"):
            stage = "emit"
            module = new_module()
            add_expression_kernel(module, kernel, sel.final, rec.lanes, kernel_variables(sel.final), target)
            if emit == "llvm":
                rec.llvm = str(module)
                module = None
    except Exception as e:  # noqa: BLE001 - one record per input line, errors included
        rec.error = f"{stage}: {type(e).__name__}: {e}"
        module = None
    rec.seconds = round(time.perf_counter() - t0, 6)
    return rec, module


def _compile_group(items: list[tuple[SelectRecord, object]], target: str, isolate: bool) -> None:
    """Compile the kernels of several records in one module (LLVM's per-module cost is most of the
    time); if that fails, compile them one by one so that each record gets its own error."""
    from pitchfork.backend.machine import compile_module

    t0 = time.perf_counter()
    target = machine_target(parse_target(target))  # (the LLVM CPU and features of a Halide target string)
    if len(items) > 1:
        names = [f"{KERNEL}_{j}" for j in range(len(items))]
        texts = [str(m).replace(f'@"{KERNEL}"(', f'@"{name}"(') for (_, m), name in zip(items, names)]
        try:
            cm = compile_module(_merge_ir(texts), target, isolate=isolate)
        except Exception:  # noqa: BLE001 - retry one by one for per-record errors
            for item in items:
                _compile_group([item], target, isolate)
            return
        share = (time.perf_counter() - t0) / len(items)
        for (rec, _), name in zip(items, names):
            rec.asm = cm.function_asm(name).replace(name, KERNEL)
            rec.seconds = round(rec.seconds + share, 6)
        return
    rec, module = items[0]
    try:
        cm = compile_module(str(module), target, isolate=isolate)
        rec.asm = cm.function_asm(KERNEL)
    except Exception as e:  # noqa: BLE001
        rec.error = f"compile: {type(e).__name__}: {e}"
    rec.seconds = round(rec.seconds + time.perf_counter() - t0, 6)


def _merge_ir(texts: list[str]) -> str:
    """Concatenate llvmlite module texts into one module, declaring each intrinsic once."""
    out: list[str] = []
    declared: set[str] = set()
    for k, text in enumerate(texts):
        for line in text.splitlines():
            if line.startswith(("; ModuleID", "target triple", "target datalayout")):
                if k == 0:
                    out.append(line)
                continue
            if line.startswith("declare "):
                if line in declared:
                    continue
                declared.add(line)
            out.append(line)
    return "\n".join(out) + "\n"


_LANES_PREFIX = re.compile(r"^\s*(\d+)\s+(\S.*)$")


def split_line(line: str) -> tuple[Optional[int], str]:
    """'<lanes> <expression>' or '<expression>'. A line that parses as an expression on its own is
    one ('3 * x_u8', '7 - x_u8'); otherwise a leading integer followed by an expression is a lane
    count ('16 ~x_u8', '8 absd(a_u8, b_u8)')."""
    m = _LANES_PREFIX.match(line)
    if m:
        try:
            parse(line)
            return None, line.strip()
        except Exception:  # noqa: BLE001
            pass
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
              isel: str = "pitchfork", emit: str = "asm", isolate: bool = True, group: int = 64,
              jobs: Optional[int] = None, no_overflow: bool = False, shifts_in_range: bool = False) -> BatchStats:
    """One JSON object per non-blank, non-comment input line (a line's own lane count wins), in input
    order. Kernels are compiled `group` at a time in one module; with isolation (the default) up to
    `jobs` groups (default: the CPU count) compile at once, each in its own forked child."""
    import os
    from concurrent.futures import Future, ThreadPoolExecutor

    stats = BatchStats()
    t0 = time.perf_counter()
    jobs = max(1, jobs or os.cpu_count() or 1) if isolate else 1
    queue: list[tuple[list[tuple[SelectRecord, Optional[object]]], Optional[Future]]] = []

    def write(recs: list[tuple[SelectRecord, Optional[object]]]) -> None:
        for rec, _ in recs:
            out.write(rec.to_json() + "\n")
            stats.lines += 1
            stats.errors += rec.error is not None

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        def submit(recs: list[tuple[SelectRecord, Optional[object]]]) -> None:
            todo = [(r, m) for r, m in recs if m is not None]
            fut = pool.submit(_compile_group, todo, target, isolate) if todo else None
            queue.append((recs, fut))
            while len(queue) > jobs or (queue and queue[0][1] is not None and queue[0][1].done()):
                done, f = queue.pop(0)
                if f is not None:
                    f.result()
                write(done)

        pending: list[tuple[SelectRecord, Optional[object]]] = []
        for lineno, line in enumerate(lines, 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            if "\ufffd" in line:  # read with errors="replace": the line was not UTF-8
                pending.append((SelectRecord(input=line.strip(), error=f"line {lineno}: not UTF-8 text"), None))
                continue
            own, text = split_line(line)
            pending.append(_select_and_emit(text, target, own if own is not None else lanes, isel, emit,
                                            no_overflow=no_overflow, shifts_in_range=shifts_in_range))
            if len(pending) >= group:
                submit(pending)
                pending = []
        if pending:
            submit(pending)
        for recs, f in queue:
            if f is not None:
                f.result()
            write(recs)
    out.flush()
    stats.seconds = time.perf_counter() - t0
    return stats
