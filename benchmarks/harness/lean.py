"""Issue 10's columns of the harness: is our generated code as lean as Halide's?

Per benchmark x ISA, from what the worker already measures:

* `hot_loop(...)`: the hot inner loop of a contender's code, found by the exact per-block counts of
  the static estimate's counted run (the innermost loop with the largest weighted cost; no heuristic
  on the text), with its instruction count and the distinct *vector* instructions it selects
  (instructions on vector registers, data movement left out: loads, stores, moves, broadcasts).
  "Both select the same vector instructions" means equal sets for ours (isel=pitchfork) and Halide 21.
* `time_public_call(...)` (x86): the end-to-end `prog(*values, size=...)` time (the public callable,
  zero-copy path: output array recycled once dropped, no copies of aligned inputs) interleaved with
  the bare kernel on the same arrays, output included (one ctypes call) at the timing size.
* `markdown_section(data, out_dir)`: the report's section: those columns per row, whether our loop is
  no longer than Halide's and our x86 time within 5% of Halide's where both select the same vector
  instructions, and the before/after figures `benchmarks/lean_codegen.py --write` recorded.

Nothing here changes what the other columns measure: the worker calls these after its own steps.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence

import numpy as np

from benchmarks.harness.asmblocks import Block
from benchmarks.harness.measure import paired_ratio

#: what counts as a vector register operand, per ISA
_VECTOR_REG = {
    "x86-avx2": re.compile(r"%[xyz]mm\d+"),
    "arm64": re.compile(r"\bv\d+\.\d*[bhsd]\b|\bq\d+\b"),
    "hvx128": re.compile(r"\b[vV]\d+(?::\d+)?\b|\bq[0-3]\b"),
}
#: data movement, not instruction selection: loads, stores, register moves, broadcasts
_MOVES = {
    "x86-avx2": re.compile(r"^(v?mov|vpbroadcast|vbroadcast|vzeroupper|vlddqu|prefetch|vmaskmov|vpmaskmov|lea)"),
    "arm64": re.compile(r"^(ld|st|mov|dup|ins|umov|fmov|prfm)"),
    "hvx128": re.compile(r"^(vmem|vmemu|transfer|vsplat|.*\(st\))$"),
}
WITHIN = 0.05  # "within 5%"


def vector_ops(instructions: Sequence[str], isa: str) -> list[str]:
    """Distinct mnemonics of the vector instructions in `instructions` (data movement excluded)."""
    from benchmarks.harness.static import mnemonic

    out = set()
    for inst in instructions:
        if not _VECTOR_REG[isa].search(inst):
            continue
        m = mnemonic(inst, isa)
        if not _MOVES[isa].match(m):
            out.add(m)
    return sorted(out)


def hot_loop(blocks: list[Block], counts: np.ndarray, estimate: Any, isa: str) -> Optional[dict[str, Any]]:
    """The hot vector loop of a run: among the innermost loops that ran and select vector
    instructions, the one with the largest weighted cost in `estimate` (static.Estimate); its header,
    instruction count, share of the total and vector instructions. When an innermost loop with no
    vector instruction weighs more (a lane-by-lane gather, say), it is reported as `hotter_scalar`."""
    found = []
    for lp in estimate.loops:
        if lp["innermost"] and lp["header_count"] > 0:
            first, last = lp["blocks"]
            insts = [x for i in range(first, last + 1) for x in blocks[i].instructions]
            found.append((lp, len(insts), vector_ops(insts, isa)))
    vec = [f for f in found if f[2]]
    if not vec:
        return None
    lp, n, ops = max(vec, key=lambda f: f[0]["weighted"])
    out = {"header": lp["header"], "instructions": n, "share": lp["share"], "iterations": lp["header_count"],
           "vector_ops": ops}
    top, tn, _ = max(found, key=lambda f: f[0]["weighted"])
    if top["weighted"] > lp["weighted"]:
        out["hotter_scalar"] = {"header": top["header"], "instructions": tn, "share": top["share"],
                                "iterations": top["header_count"]}
    return out


def time_public_call(progs: Mapping[str, Any], kernels: Mapping[str, Any], values: Sequence[Any],
                     out_size: Sequence[int], reps: int, rows: dict[str, dict[str, Any]]) -> None:
    """x86: time `prog(*values, size=out_size)` beside the bare kernel on the same arrays, interleaved;
    adds `prog_time`, `kernel_time_beside_prog` (Timing json) and `prog_over_kernel` (their paired
    ratio, `measure.paired_ratio`) to each isel's row. `kernels[isel]` (the harness's own kernel on
    aligned copies) checks the output.

    Same arrays on both sides, outputs included: the kernel's time depends on where its arrays lie
    (huge pages or not, alignment). The bare kernel is the ctypes call `prog.prepare(...)` makes,
    bound to the very output array `prog(...)` recycles from call to call (the call checking the
    output leaves it in the pipeline's pool, and only the pool keeps a reference to it, so every timed
    `prog(...)` call writes it again). With a separate output array for the kernel (session 3), the
    ratio moved with that array's placement: 1.07-1.12x for conv3x3a32, l2norm and gaussian5x5 while
    prog's own work (binding, ~25-60 µs a call) is well under 1% of those kernels."""
    from benchmarks.harness.measure import paired_ratio, time_interleaved

    runners: dict[str, Any] = {}
    for isel, k in kernels.items():
        prog = progs[isel]
        got = prog(*values, size=list(out_size))
        if not isinstance(got, np.ndarray) or not np.array_equal(got, k.outputs[0]):
            rows[isel]["prog_error"] = "prog(...) output differs from the kernel's"
            continue
        call = prog.prepare(*values, size=list(out_size), out=got)
        fn, args, _ = call._direct
        err = call._err
        address = got.ctypes.data
        del call, got  # the pool's reference is the only one left: the next prog(...) reuses the array

        def kernel(fn: Any = fn, args: tuple[Any, ...] = args, err: np.ndarray = err) -> None:
            fn(*args)
            if err[0]:
                raise RuntimeError(f"Halide assertion #{int(err[0])} failed in the bare kernel")

        def public(prog: Any = prog, address: int = address, isel: str = isel) -> None:
            out = prog(*values, size=list(out_size))
            if out.ctypes.data != address:  # the kernel would be timed on another array than prog
                rows[isel]["prog_error"] = "prog(...) did not reuse its output array"

        runners[f"{isel}.kernel"] = kernel
        runners[f"{isel}.prog"] = public
    if not runners:
        return
    t = time_interleaved(runners, max(reps, 5))
    for isel in kernels:
        if f"{isel}.prog" in t and "prog_error" not in rows[isel]:
            p, k = t[f"{isel}.prog"].to_json(), t[f"{isel}.kernel"].to_json()
            rows[isel]["prog_time"] = p
            rows[isel]["kernel_time_beside_prog"] = k
            rows[isel]["prog_over_kernel"] = paired_ratio(p, k)


# ---- report --------------------------------------------------------------------------------------

def _row(idx: Mapping[tuple[str, str, str], dict[str, Any]], b: str, isa: str, v: str) -> dict[str, Any]:
    return idx.get((b, isa, v)) or {}


def verdicts(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per benchmark x ISA: hot-loop lengths and vector instructions of ours and Halide 21's, and on
    x86 the times; `same_ops`, `loop_ok` (ours no longer) and `time_ok` (within 5% of Halide)."""
    from benchmarks.harness.tables import index_rows, labels

    idx = index_rows(data)  # keyed by case label: the benchmark, or `name p<k>` per parameter set
    out = []
    for b in labels(data):
        for isa in data["meta"]["isas"]:
            pf, hl = _row(idx, b, isa, "pitchfork"), _row(idx, b, isa, "halide21")
            ours, theirs = pf.get("hot_loop"), hl.get("hot_loop")
            v: dict[str, Any] = {"bench": b, "isa": isa, "ours": ours, "halide": theirs}
            if ours and theirs:
                a, c = set(ours["vector_ops"]), set(theirs["vector_ops"])
                v["same_ops"] = a == c
                v["only_ours"], v["only_halide"] = sorted(a - c), sorted(c - a)
                v["loop_ok"] = ours["instructions"] <= theirs["instructions"]
            if ours and ours.get("hotter_scalar"):
                v["hotter_scalar"] = ours["hotter_scalar"]
            if isa == "x86-avx2":
                tp, th = (pf.get("time") or {}).get("median_ms"), (hl.get("time") or {}).get("median_ms")
                v["kernel_ms"], v["halide_ms"] = tp, th
                if tp and th and pf.get("status") == "ok" and hl.get("status") == "ok":
                    v["time_ratio"] = paired_ratio(pf["time"], hl["time"])
                    v["time_ok"] = v["time_ratio"] <= 1 + WITHIN
                pt = pf.get("prog_time")
                if pt:
                    v["prog_ms"] = pt["median_ms"]
                    v["kernel_beside_prog_ms"] = (pf.get("kernel_time_beside_prog") or {}).get("median_ms")
                    v["prog_over_kernel"] = pf.get("prog_over_kernel")
            out.append(v)
    return out


def _yn(x: Optional[bool]) -> str:
    return "—" if x is None else ("yes" if x else "**no**")


def _ratio(x: Optional[float]) -> str:
    return "—" if not x else f"{x:.2f}x"


def _ms(x: Optional[float]) -> str:
    return "—" if not x else f"{x:.3f}"


def markdown_section(data: dict[str, Any], out_dir: Optional[Path] = None) -> list[str]:
    """The RESULTS.md section for issue 10 (see the module docstring)."""
    vs = verdicts(data)
    L = ["## Lean generated code (issue 10)", "",
         "Hot loop = among the innermost loops that select vector instructions, the one with the largest "
         "weighted cost in the counted run of the static estimate (exact per-block counts, static size); its "
         "instruction count and the distinct vector instructions it selects (data movement left out; `+` only "
         "ours, `−` only Halide's). A hotter innermost loop without vector instructions (lane-by-lane code) is "
         "noted. On x86: `kernel` = the bare kernel time (the x86 column above), `vs H21` = our kernel time / "
         "Halide 21's, the median of the per-repetition ratios (both timed in the same repetition on the same "
         "arrays; robust to the shared machine's bursts, unlike the ratio of the medians); `prog` = the public "
         "call `prog(*inputs, size=...)` (zero-copy path, output array recycled once dropped), over the bare "
         "kernel timed beside it on the same arrays, prog's recycled output included (paired the same way, "
         "interleaved, timing size).", "",
         "| benchmark | ISA | hot loop ours (insts) | Halide 21 | same vector instructions | ours no longer | "
         "kernel ms | vs H21 time | within 5% of H21 | prog ms | prog / kernel |",
         "|---|---|---|---|---|---|---|---|---|---|---|"]
    for v in vs:
        o, h = v["ours"], v["halide"]
        if "same_ops" in v:
            diff = "yes" if v["same_ops"] else "no (" + ", ".join(
                [f"+{m}" for m in v["only_ours"]] + [f"−{m}" for m in v["only_halide"]]) + ")"
        else:
            diff = "—"
        hs = v.get("hotter_scalar")
        note = f" (hotter scalar loop: {hs['instructions']} insts, {100 * hs['share']:.0f}%)" if hs else ""
        L.append(f"| {v['bench']} | {v['isa']} | {o['instructions'] if o else '—'}{note} | "
                 f"{h['instructions'] if h else '—'} | {diff} | {_yn(v.get('loop_ok'))} | "
                 f"{_ms(v.get('kernel_ms'))} | {_ratio(v.get('time_ratio'))} | {_yn(v.get('time_ok'))} | "
                 f"{_ms(v.get('prog_ms'))} | {_ratio(v.get('prog_over_kernel'))} |")
    same = [v for v in vs if v.get("same_ops")]
    L += ["", f"Where both select the same vector instructions ({len(same)} of "
              f"{sum(1 for v in vs if 'same_ops' in v)} benchmark x ISA pairs with both hot loops): "
              f"our loop no longer than Halide's in {sum(1 for v in same if v.get('loop_ok'))}; on x86, our "
              f"time within 5% of Halide's in {sum(1 for v in same if v.get('time_ok'))} of "
              f"{sum(1 for v in same if 'time_ok' in v)}. "
              f"prog(...) within 5% of the kernel: {sum(1 for v in vs if v.get('prog_over_kernel') and v['prog_over_kernel'] <= 1 + WITHIN)} of "
              f"{sum(1 for v in vs if v.get('prog_over_kernel'))} x86 rows."]
    L += [""] + before_after(out_dir)
    return L


LEAN_JSON = "lean_codegen.json"


def before_after(out_dir: Optional[Path]) -> list[str]:
    """The before/after table `python -m benchmarks.lean_codegen --write` left in `out_dir`."""
    home = Path(__file__).resolve().parent.parent  # benchmarks/, where lean_codegen.py writes
    path = next((d / LEAN_JSON for d in (Path(out_dir) if out_dir else home, home) if (d / LEAN_JSON).exists()),
                home / LEAN_JSON)
    if not path.exists():
        return ["Before/after figures: not recorded (run `python3 -m benchmarks.lean_codegen --write`)."]
    d = json.loads(path.read_text())
    L = ["### Before and after the issue-10 code generation (x86-avx2)", "",
         f"`{d['command']}` ({d['date']}; {d['size'][0]}x{d['size'][1]}, best of {d['repeat']}; load average "
         f"{d['load_average']:.1f}). Before = git {d['before']['git']} (the tree before the issue-10 codegen "
         f"commit), after = git {d['after']['git']}. Loop = steady-state vector loop length "
         "(`main_vector_loop`); prog = the public call; kernel = `prog.prepare(...)()` (absent before: no such "
         "path existed); H21 = Halide 21's JIT `realize`, same schedule.", "",
         "| pipeline | loop before | loop after | Halide 21 loop | prog ms before | prog ms after | kernel ms after "
         "| H21 ms |", "|---|---|---|---|---|---|---|---|"]
    before = {r["name"]: r for r in d["before"]["rows"]}
    for r in d["after"]["rows"]:
        b = before.get(r["name"], {})
        L.append(f"| {r['name']} | {b.get('loop_ours', '—')} | {r['loop_ours']} | {r['loop_halide']} | "
                 f"{_ms(b.get('prog_ms'))} | {_ms(r.get('prog_ms'))} | {_ms(r.get('kernel_ms'))} | "
                 f"{_ms(r.get('halide_ms'))} |")
    return L
