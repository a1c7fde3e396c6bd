"""Selection parity with Halide's own SIMD op checks: does our selected assembly contain the instruction
Halide's simd_op_check tests expect, per ISA?

The cases are our own extraction (benchmarks/parity/<isa>.txt: lanes ; expected pattern ; FPIR expression).
Each case is compiled with `pitchfork select --batch` (Halide's facts on: --assume-no-overflow,
--assume-shifts-in-range, as the Halide frontend states them) and passes when some line of its assembly
matches the expected pattern the way Halide's check matches it (`*` = any text, spaces optional).

`python3 -m benchmarks.parity -o DIR [--isa I ...] [--jobs N]` writes DIR/parity.md (the per-ISA table and
every failing case, with the measured reason of benchmarks/parity/notes.txt where one is recorded) and
DIR/parity.json (every case); nothing is written into the source tree.
Invariant: a case whose compilation fails counts as a miss, never as skipped.

The share is given twice: strict (Halide's instruction in our assembly), and counting as well the misses
notes.txt records as `shorter` (our inner loop has fewer instructions than Halide 21's for that
expression, both counted: issue 27 keeps our choice where Halide's is slower). A `shorter` note never
turns a miss into a pass in parity.json or in the strict figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Optional, Sequence

DATA = Path(__file__).resolve().parent
ISAS = ("x86-avx2", "arm64", "hvx128")
FILES = {"x86-avx2": "x86.txt", "arm64": "arm64.txt", "hvx128": "hvx128.txt"}
NOTES = DATA / "notes.txt"


class ParityDataError(ValueError):
    """A malformed line of an expectation file (file:line: message)."""


@dataclass(frozen=True, slots=True)
class Case:
    isa: str
    lanes: int
    expected: str
    expr: str
    source: str  # file:line

    @property
    def key(self) -> str:
        # parenthesised, so an expression starting with '-' is never read as part of the lane count
        return f"{self.lanes} ({self.expr})"


@dataclass(frozen=True, slots=True)
class Outcome:
    case: Case
    ok: bool
    final: Optional[str]
    error: Optional[str]


def load_cases(isa: str, path: Optional[Path] = None) -> list[Case]:
    """The cases of one ISA's expectation file, one per (line, lane count)."""
    path = path or DATA / FILES[isa]
    cases: list[Case] = []
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(";")]
        if len(parts) != 3 or not all(parts):
            raise ParityDataError(f"{path}:{n}: expected 'lanes ; pattern ; expression'")
        lanes_text, expected, expr = parts
        try:
            lane_counts = [int(x) for x in lanes_text.split(",")]
        except ValueError:
            raise ParityDataError(f"{path}:{n}: lanes must be a comma list of integers, got {lanes_text!r}")
        for lanes in lane_counts:
            cases.append(Case(isa, lanes, expected, expr, f"{path.name}:{n}"))
    return cases


def load_notes(path: Path = NOTES) -> dict[tuple[str, str], str]:
    """(isa, expression) -> "kind: note" for the misses benchmarks/parity/notes.txt explains."""
    notes: dict[tuple[str, str], str] = {}
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        parts = [p.strip() for p in line.split(" ; ", 3)]
        if len(parts) != 4 or parts[0] not in FILES or parts[2] not in ("shorter", "same", "longer"):
            raise ParityDataError(f"{path}:{n}: expected 'isa ; expression ; shorter|same|longer ; note'")
        notes[(parts[0], parts[1])] = f"{parts[2]}: {parts[3]}"
    return notes


def pattern_regex(pattern: str) -> re.Pattern[str]:
    """Halide's wildcard match: `*` matches any text; spaces in the pattern are optional."""
    parts = []
    for ch in pattern:
        if ch == "*":
            parts.append(".*")
        elif ch.isspace():
            parts.append(r"\s*")
        else:
            parts.append(re.escape(ch))
    return re.compile("".join(parts))


def asm_matches(asm: str, pattern: str) -> bool:
    rx = pattern_regex(pattern)
    for line in asm.splitlines():
        code = line.split("//")[0].split("#")[0] if not line.lstrip().startswith(".") else ""
        if code.strip() and rx.search(code):
            return True
    return False


def select_batch(isa: str, cases: Sequence[Case], jobs: int) -> dict[str, dict]:
    """Compile every distinct (lanes, expression) once; records keyed by `lanes expr`."""
    keys = sorted({c.key for c in cases})
    with tempfile.TemporaryDirectory() as tmp:
        inp, out = Path(tmp) / "in.txt", Path(tmp) / "out.jsonl"
        inp.write_text("\n".join(keys) + "\n")
        cmd = [sys.executable, "-m", "pitchfork", "select", "--batch", str(inp), "-t", isa, "-o", str(out),
               "--emit", "asm", "--allow-errors", "--assume-no-overflow", "--assume-shifts-in-range",
               "-j", str(jobs)]
        proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
        if proc.returncode != 0 or not out.exists():
            raise RuntimeError(f"pitchfork select failed for {isa}: {proc.stderr.strip()[-2000:]}")
        records = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    if len(records) != len(keys):
        raise RuntimeError(f"{isa}: {len(keys)} expressions sent, {len(records)} records back")
    return dict(zip(keys, records))


def evaluate(isa: str, cases: Sequence[Case], jobs: int) -> list[Outcome]:
    records = select_batch(isa, cases, jobs)
    outcomes = []
    for c in cases:
        r = records[c.key]
        asm = r.get("asm") or ""
        ok = r.get("error") is None and asm_matches(asm, c.expected)
        outcomes.append(Outcome(c, ok, r.get("final"), r.get("error")))
    return outcomes


def summary(outcomes: Sequence[Outcome]) -> tuple[int, int]:
    return sum(o.ok for o in outcomes), len(outcomes)


def shorter_misses(isa: str, outcomes: Sequence[Outcome], notes: Optional[dict[tuple[str, str], str]]) -> int:
    """Misses whose notes.txt entry says our inner loop is the shorter one (measured)."""
    return sum(1 for o in outcomes if not o.ok and o.error is None
               and (notes or {}).get((isa, o.case.expr), "").startswith("shorter:"))


def report(results: dict[str, list[Outcome]], notes: Optional[dict[tuple[str, str], str]] = None) -> str:
    lines = ["# Selection parity with Halide's SIMD op checks", "",
             "Share of cases (benchmarks/parity/<isa>.txt, one per lane count) whose selected assembly "
             "contains the instruction Halide's simd_op_check expects.", "",
             "The last two columns count as well the misses where our inner loop is shorter than Halide 21's "
             "(benchmarks/parity/notes.txt, `shorter`, with both instruction counts).", "",
             "| ISA | cases | pass | share | ours shorter | share with them |", "|---|---|---|---|---|---|"]
    for isa, outs in results.items():
        p, n = summary(outs)
        k = shorter_misses(isa, outs, notes)
        lines.append(f"| {isa} | {n} | {p} | {100.0 * p / max(n, 1):.1f}% | {k} | {100.0 * (p + k) / max(n, 1):.1f}% |")
    for isa, outs in results.items():
        misses = [o for o in outs if not o.ok]
        lines += ["", f"## {isa}: {len(misses)} misses", ""]
        for o in misses:
            why = f"error: {o.error.splitlines()[0][:160]}" if o.error else f"selected `{o.final}`"
            note = (notes or {}).get((isa, o.case.expr))
            lines.append(f"- {o.case.source} lanes {o.case.lanes}, expected `{o.case.expected}`: "
                         f"`{o.case.expr}` -> {why}" + (f" ({note})" if note else ""))
    return "\n".join(lines) + "\n"


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.parity", description=__doc__.split("\n\n")[0])
    ap.add_argument("-o", "--output", required=True, help="output folder (parity.md, parity.json)")
    ap.add_argument("--isa", action="append", choices=ISAS, help="ISA(s) to check (default: all)")
    ap.add_argument("--jobs", "-j", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args(argv)
    try:
        results = {isa: evaluate(isa, load_cases(isa), args.jobs) for isa in (args.isa or ISAS)}
        notes = load_notes()
    except (ParityDataError, RuntimeError) as e:
        print(f"benchmarks.parity: {e}", file=sys.stderr)
        return 2
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    (out / "parity.md").write_text(report(results, notes))
    (out / "parity.json").write_text(json.dumps(
        {isa: [dict(asdict(o.case), ok=o.ok, final=o.final, error=o.error) for o in outs]
         for isa, outs in results.items()}, indent=1))
    for isa, outs in results.items():
        p, n = summary(outs)
        k = shorter_misses(isa, outs, notes)
        print(f"{isa}: {p}/{n} = {100.0 * p / max(n, 1):.1f}%"
              + (f" (with {k} misses where ours is shorter, notes.txt: {p + k}/{n} = {100.0 * (p + k) / max(n, 1):.1f}%)"
                 if k else ""))
    return 0
