"""Compile-time benchmark: the selector alone, and `pitchfork.compile` per phase beside LLVM alone and Halide 21.

    python -m benchmarks.compile_time [-o OUT] [--quick] [--bench NAME ...] [--isa ISA ...] [--skip-compile]
                                      [--skip-selection] [--write-results]

Selection (in this process unless said otherwise; CPU seconds from `time.process_time`, wall from
`time.perf_counter`; the machine may be shared, so both are reported):

* cold `pitchfork lift EXPR`: N fresh interpreters (after one warm-up run, so the rule cache on disk and the
  bytecode cache are warm: the children write bytecode to OUT/pycache whatever PYTHONDONTWRITEBYTECODE says,
  `_timed_run`);
* `pitchfork lift --batch FILE` over 1,000 idiom expressions (the micro_lift corpus, variables renamed per
  line so no two lines are the same term), in a fresh interpreter: expressions per second;
* lift + lower per expression (each ISA), per rule count (the corpus lifted with the first 25/50/100% of the
  lifting rules), per term size (sums of 80 ... 640 widening terms, two shapes; the 640/80 ratio);
* peak memory of lifting one 20,000-term sum, in a child process: tracemalloc's peak during the lift (Python
  allocations only) and the growth of max RSS over the lift (the parse and imports before it excluded).

Compile (`--skip-compile` to leave out): per benchmark x ISA one child process compiles, interleaved and
repeated, `pitchfork.compile` with isel=pitchfork and with isel=llvm ("LLVM alone"), reading the per-phase
split from `CompiledPipeline.stats` (capture / selection / codegen incl. loop passes / LLVM), and Halide 21's own
compile of the same pipeline, all three with one Halide target string per ISA (`HALIDE_TARGETS`: on hvx128
`no_asserts-no_bounds_query`, so no contender compiles argument checks there) (x86: `compile_jit`; arm64: `compile_to_assembly`; hvx128: `compile_to_llvm_assembly`
+ llc -O3 to an object with the harness's command, `halide21.llc_command`: our target machine and every backend
option ours gets, `machine.backend_options`; Halide's bundled LLVM aborts on sobel3x3's HVX code). The first compile of each kind in the child is a
warm-up and not counted: figures are a long-running process's compile time, as in a build compiling many
generators. Each contender compiles `--repeat` times (default 3) after the warm-up. Per compile also the waits
beside wall and CPU (`WAITS`, `_Waits`): the compiling process's run-queue delay (schedstat) and the host's
steal (/proc/stat), so that wall - CPU - run delay tells the host's steal from waiting for a core. Medians over the benchmarks per ISA, and beside them the same comparison on the
benchmarks both contenders compiled (`paired`: medians over that set and the median per-benchmark ratio). A contender that kills the child (an assertion of
llvmlite's assertion-enabled LLVM aborts the process) is a one-line failure of that contender, and the
child is run again without it, so the benchmark's other contenders are still measured (`run_child`).

Outputs go to the folder given with -o (default ./compile-time-out): results.json, compile_time.md,
compile_time.png. `--write-results` also puts compile_time.md into
benchmarks/RESULTS_COMPILE_TIME.md, between the marks `write_results` owns (the previous generated run
is replaced; the sessions' hand-written sections are left alone; never without the flag). Works on older checkouts too (module paths before and after the issue 23
restructure), so one command measures before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SMALL_EXPR = "u8(min(u16(a_u8) + u16(b_u8), 255))"
SIZES = (80, 160, 320, 640)
SHAPES = {"widen": lambda i: f"u16(a{i}_u8)", "mac": lambda i: f"i32(a{i}_i16) * i32(b{i}_i16)"}
ISAS = ("x86-avx2", "arm64", "hvx128")


def _selection_module(name: str) -> Any:
    """pitchfork.selection.<name>, or pitchfork.<name> in a checkout from before the issue 23 restructure
    (decided by the checkout's own files: an editable install of another checkout could supply the other)."""
    import importlib

    import pitchfork

    moved = (Path(pitchfork.__file__).parent / "selection" / f"{name}.py").exists()
    return importlib.import_module(f"pitchfork.selection.{name}" if moved else f"pitchfork.{name}")


def _lift_module() -> Any:
    return _selection_module("lift")


def _lower_module() -> Any:
    return _selection_module("lower")


def batch_lines(n: int = 1000) -> list[str]:
    from benchmarks.micro_lift import CORPUS, SOBEL

    exprs = [SOBEL, *CORPUS]
    rename = re.compile(r"\b([a-l])_(u8|i8|u16|i16|u32|i32)\b")
    return [rename.sub(lambda m: f"{m.group(1)}{i}_{m.group(2)}", exprs[i % len(exprs)]) for i in range(n)]


def sum_expr(n: int, shape: str) -> str:
    return " + ".join(SHAPES[shape](i) for i in range(n))


def _timed_run(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall, CPU of the child, stdout) of one command. The child reads compiled bytecode, as an installed
    package's process does: it writes it under `cwd`/pycache (PYTHONPYCACHEPREFIX, never the source tree)
    in the caller's warm-up run, whatever PYTHONDONTWRITEBYTECODE says in the calling shell. Otherwise a
    module whose __pycache__ entry is missing or older than its source is compiled again in every timed
    run, which makes the figure depend on when the checkout's __pycache__ was last written (session 20:
    /work/main's stale fpir/text.py, flags.py and opspec.py alone cost ~35-50 ms of each cold lift)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(PYTHONPATH=str(ROOT), PYTHONPYCACHEPREFIX=str(cwd / "pycache"))
    r0 = os.times()
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd, env=env)
    wall = time.perf_counter() - t0
    r1 = os.times()
    if p.returncode:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed: {p.stderr[-400:]}")
    return wall, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system), p.stdout


def cold_lift(out: Path, runs: int) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "pitchfork", "lift", SMALL_EXPR]
    _timed_run(cmd, out)  # warm-up: fills the rule cache on disk
    rows = [_timed_run(cmd, out) for _ in range(runs)]
    return {"runs": runs, "wall_median": statistics.median(r[0] for r in rows), "wall_min": min(r[0] for r in rows),
            "cpu_median": statistics.median(r[1] for r in rows), "output": rows[0][2].strip()}


def batch_rate(out: Path) -> dict[str, Any]:
    f = out / "batch1000.txt"
    f.write_text("\n".join(batch_lines()) + "\n")
    cmd = [sys.executable, "-m", "pitchfork", "lift", "--batch", str(f), "-o", str(out / "batch1000.jsonl")]
    _timed_run(cmd, out)  # warm-up
    wall, cpu, _ = _timed_run(cmd, out)
    return {"expressions": 1000, "wall": wall, "cpu": cpu, "per_second_wall": 1000 / wall, "per_second_cpu": 1000 / cpu}


def _cpu(fn: Any, repeat: int = 5) -> tuple[float, float, Any]:
    """Median CPU and wall seconds of `repeat` calls of fn (the first call also warms the caches)."""
    cpus, walls = [], []
    for _ in range(repeat):
        c0, t0 = time.process_time(), time.perf_counter()
        r = fn()
        cpus.append(time.process_time() - c0)
        walls.append(time.perf_counter() - t0)
    return statistics.median(cpus), statistics.median(walls), r


def selection(quick: bool) -> dict[str, Any]:
    from benchmarks.micro_lift import CORPUS, SOBEL
    from fpir import parse
    from fpir.term import Term

    lift, lower = _lift_module(), _lower_module()
    rules = lift.lift_rules()
    exprs = [parse(e) for e in [SOBEL, *CORPUS]]
    for isa in ISAS:  # load every rule set outside the timed regions
        lower.select_instructions(exprs[0], isa, "pitchfork")
    per_isa = {}
    for isa in ISAS:
        cpu, wall, _ = _cpu(lambda: [lower.select_instructions(e, isa, "pitchfork") for e in exprs])
        per_isa[isa] = {"cpu_per_expr": cpu / len(exprs), "wall_per_expr": wall / len(exprs)}
    per_rules = {}
    from pitchfork.trs.rules import RuleSet

    for frac in (0.25, 0.5, 1.0):
        sub = RuleSet(rules.rules[: max(1, int(len(rules.rules) * frac))])
        cpu, wall, _ = _cpu(lambda: [lift.lift(e, sub) for e in exprs])
        per_rules[str(len(sub.rules))] = {"cpu_per_expr": cpu / len(exprs), "wall_per_expr": wall / len(exprs)}
    per_size: dict[str, dict[str, float]] = {}
    for shape in SHAPES:
        for n in SIZES if not quick else SIZES[:1] + SIZES[-1:]:
            t: Term = parse(sum_expr(n, shape))
            cpu, wall, _ = _cpu(lambda: lift.lift(t, rules))
            per_size.setdefault(shape, {})[str(n)] = cpu
    ratios = {s: v[str(SIZES[-1])] / v[str(SIZES[0])] for s, v in per_size.items()}
    return {"lift_rules": len(rules.rules), "expressions": len(exprs), "select_per_isa": per_isa,
            "lift_per_rule_count": per_rules, "lift_cpu_by_sum_size": per_size, "ratio_640_over_80": ratios}


_MEMORY_CHILD = r"""
import resource, sys, time, tracemalloc
sys.path.insert(0, sys.argv[3])
from benchmarks.compile_time import _lift_module, sum_expr
from fpir import parse
lift = _lift_module()
rules = lift.lift_rules()
t = parse(sum_expr(int(sys.argv[1]), sys.argv[2]))
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
c0 = time.process_time()
tracemalloc.start()
out = lift.lift(t, rules)
peak = tracemalloc.get_traced_memory()[1]
tracemalloc.stop()
cpu = time.process_time() - c0
rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(peak, (rss1 - rss0) * 1024, rss1 * 1024, cpu)
"""


def memory(n: int, shape: str) -> dict[str, Any]:
    p = subprocess.run([sys.executable, "-c", _MEMORY_CHILD, str(n), shape, str(ROOT)], capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    if p.returncode:
        return {"error": p.stderr[-400:]}
    peak, grow, rss, cpu = p.stdout.split()
    return {"terms": n, "shape": shape, "tracemalloc_peak_mb": int(peak) / 1e6,
            "maxrss_growth_during_lift_mb": int(grow) / 1e6, "maxrss_total_mb": int(rss) / 1e6,
            "lift_cpu_under_tracemalloc": float(cpu)}


# ---------------------------------------------------------------------------------------------
# pitchfork.compile per phase vs LLVM alone vs Halide 21 (one child process per benchmark x ISA)

PHASES = ("capture", "selection", "codegen", "llvm")
#: the LLVM phase split (CompileStats.llvm_phases; checkouts from issue 26's one-emission change on)
LLVM_PHASES = ("llvm_parse", "llvm_verify", "llvm_O3", "llvm_print", "llvm_fixups", "llvm_parse_optimized",
               "llvm_emit_object", "llvm_emit_assembly")
#: CPU of the capture's lowering child, and the compile's CPU with it (CompileStats.capture_child_cpu_seconds)
CPU_CAPTURE = ("cpu_capture_child", "cpu_with_capture")
#: the codegen split (CompileStats.codegen_phases)
CODEGEN_PHASES = ("codegen_parse", "codegen_loop_passes", "codegen_ir_build", "codegen_ir_print",
                  "codegen_ir_free")


#: per compile, what of its wall was neither its CPU nor waiting for a core: `run_delay` (seconds runnable but
#: not running, the second field of /proc/self/task/*/schedstat, summed over the compiling process's
#: threads, with ours' capture child's where the checkout reports it; reaped subprocesses such as Halide's
#: hvx128 llc not counted), `steal`
#: (the host's steal over the compile, /proc/stat, summed over its CPUs) and `rest` (wall - CPU - run_delay)
WAITS = ("run_delay", "steal", "rest")


def schedstat_run_delay_ns(text: str) -> int:
    """The run-queue delay in a /proc/.../schedstat text: its second field, nanoseconds the task was
    runnable but waiting for a CPU (the first is nanoseconds on a CPU, the third the number of timeslices)."""
    return int(text.split()[1])


def stat_steal_ticks(text: str) -> int:
    """The host's steal in a /proc/stat text: the 8th value of the aggregate `cpu` line (user nice system
    idle iowait irq softirq steal ...), in USER_HZ ticks summed over the CPUs; 0 where a kernel too old
    to have the column leaves it out."""
    for line in text.splitlines():
        f = line.split()
        if f and f[0] == "cpu":
            return int(f[8]) if len(f) > 8 else 0
    raise ValueError("no aggregate `cpu` line in the /proc/stat text")


def _thread_run_delays() -> dict[str, int]:
    """tid -> run-queue delay (ns) of this process's live threads; {} where /proc has no schedstat. A
    thread that exits between the listing and the read is left out (its delay is lost, unless read inside it: `_Waits`)."""
    out: dict[str, int] = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                out[tid] = schedstat_run_delay_ns(f.read())
        except (OSError, ValueError, IndexError):
            continue
    return out


def _thread_run_delays_self() -> int:
    """The calling thread's run-queue delay (ns); 0 where it cannot be read."""
    try:
        with open("/proc/thread-self/schedstat") as f:
            return schedstat_run_delay_ns(f.read())
    except (OSError, ValueError, IndexError):
        return 0


def _steal_seconds() -> float | None:
    try:
        with open("/proc/stat") as f:
            return stat_steal_ticks(f.read()) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError):
        return None


class _Waits:
    """The run-queue delay and host steal over one compile (`WAITS`). The process's threads are read
    before and after; a thread the compile starts and ends -- pitchfork.compile's frontend thread
    (`run_deep`) -- is gone by the end, so its own delay is read inside it, by wrapping `run_deep` as
    `pitchfork.api` calls it for the duration (checkouts without it: that thread is not counted)."""

    def __init__(self) -> None:
        self.frontend_ns = 0
        self.frontend_tids: set[str] = set()  # read inside: not again from the listing, should it linger

    def __enter__(self) -> "_Waits":
        self.api = sys.modules.get("pitchfork.api")
        self.orig = getattr(self.api, "run_deep", None)
        if self.orig is not None:
            orig = self.orig

            def run_deep(fn: Any) -> Any:
                def counted() -> Any:
                    import threading

                    self.frontend_tids.add(str(threading.get_native_id()))
                    d0 = _thread_run_delays_self()
                    try:
                        return fn()
                    finally:
                        self.frontend_ns += _thread_run_delays_self() - d0
                return orig(counted)
            self.api.run_deep = run_deep  # type: ignore[union-attr]
        self.delays0, self.steal0 = _thread_run_delays(), _steal_seconds()
        return self

    def __exit__(self, *exc: Any) -> None:
        delays1, steal1 = _thread_run_delays(), _steal_seconds()
        if self.orig is not None:
            self.api.run_deep = self.orig  # type: ignore[union-attr]
        self.run_delay = (None if not delays1 else
                          (sum(d - self.delays0.get(t, 0) for t, d in delays1.items() if t not in self.frontend_tids)
                           + self.frontend_ns) / 1e9)
        self.steal = None if steal1 is None or self.steal0 is None else steal1 - self.steal0

    def add_to(self, row: dict[str, Any], cpu: float, child_delay: float | None = None) -> None:
        """`run_delay` (with `child_delay`, a child's the process did not count, where known), `steal` and
        `rest` (wall `total` - `cpu` - run_delay) into a compile's row."""
        if self.run_delay is not None:
            row["run_delay"] = self.run_delay + (child_delay or 0.0)
            row["rest"] = row["total"] - cpu - row["run_delay"]
        if self.steal is not None:
            row["steal"] = self.steal


def _ours(bench: Any, isa: str, isel: str) -> dict[str, float]:
    import pitchfork

    from benchmarks.common import HALIDE_TARGETS

    out, args = bench.build(isa, bench.param_sets[0])
    with _Waits() as waits:
        t0, c0, ch0 = time.perf_counter(), time.process_time(), os.times()
        # The Halide target string Halide 21's compile gets (`_halide`), so every contender compiles the
        # same features: on hvx128 `no_asserts-no_bounds_query` (argument checks left out), elsewhere the
        # ISA's own string, which is what the short name means.
        prog = pitchfork.compile(out, args, target=HALIDE_TARGETS[isa], isel=isel, name=f"{bench.name}_{isel}",
                                 fallback=False)
        total, ch1 = time.perf_counter() - t0, os.times()
    # with the CPU of a child the compile forked and reaped (isel=llvm on hvx128 under an assertion-enabled
    # LLVM compiles there: pitchfork.compile's isolate); the capture worker is not reaped, so not counted
    cpu = (time.process_time() - c0 + (ch1.children_user - ch0.children_user)
           + (ch1.children_system - ch0.children_system))
    s = prog.stats
    row = {"total": total, "capture": s.capture_seconds, "selection": s.selection_seconds,
           "codegen": s.codegen_seconds, "llvm": s.llvm_seconds, "cpu": cpu}
    child = getattr(s, "capture_child_cpu_seconds", None)  # checkouts from session 27 on
    if child is not None:  # the capture's lowering, in the capture worker's child: not in `cpu`
        row["cpu_capture_child"] = child
        row["cpu_with_capture"] = cpu + child
    for phase, secs in getattr(s, "llvm_phases", {}).items():  # checkouts from issue 26's one-emission change on
        row[phase] = secs
    for phase, secs in getattr(s, "codegen_phases", {}).items():  # and from its phase split on
        row[f"codegen_{phase}"] = secs
    # the capture child's CPU and run-queue delay are wall of ours too (checkouts from session 29 on)
    waits.add_to(row, row.get("cpu_with_capture", cpu), getattr(s, "capture_child_run_delay_seconds", None))
    return row


def _halide(bench: Any, isa: str) -> dict[str, float]:
    import tempfile

    import halide as hl

    from benchmarks.common import HALIDE_TARGETS

    out, args = bench.build(isa, bench.param_sets[0])
    pipe = out if isinstance(out, hl.Pipeline) else hl.Pipeline(out)
    with tempfile.TemporaryDirectory(prefix="pf-ct-") as d, _Waits() as waits:
        t0, c0, ch0 = time.perf_counter(), time.process_time(), os.times()
        if isa == "x86-avx2":
            pipe.compile_jit(hl.Target(HALIDE_TARGETS[isa]))
            how = "compile_jit"
        elif isa == "arm64":
            pipe.compile_to_assembly(os.path.join(d, "f.s"), list(args), "f", hl.Target(HALIDE_TARGETS[isa] + "-no_runtime"))
            how = "compile_to_assembly"
        else:  # Halide's bundled LLVM aborts on some HVX code (sobel3x3): its IR + llc 22, as the harness does
            from benchmarks.harness.halide21 import llc_command

            ll = os.path.join(d, "f.ll")
            pipe.compile_to_llvm_assembly(ll, list(args), "f", hl.Target(HALIDE_TARGETS[isa] + "-no_runtime"))
            # the harness's llc command: our target machine and every backend option ours is compiled
            # with (machine.backend_options), emitting an object as our compile does
            subprocess.run([*llc_command(ll, os.path.join(d, "f.o"), isa), "-filetype=obj"],
                           check=True, capture_output=True)
            how = "compile_to_llvm_assembly + llc -O3"
        total, ch1 = time.perf_counter() - t0, os.times()
        cpu = (time.process_time() - c0 + (ch1.children_user - ch0.children_user)
               + (ch1.children_system - ch0.children_system))  # llc's CPU included (hvx128)
    row = {"total": total, "cpu": cpu, "how": how}
    waits.add_to(row, cpu)
    return row  # type: ignore[return-value]


#: what the child writes to stderr before each contender's compile: a contender that kills the child
#: (an assertion in llvmlite's assertion-enabled LLVM aborts the process) is named by the last one
CONTENDER_MARK = "compile_time: contender"
KINDS = ("pitchfork", "llvm", "halide21")


def child(name: str, isa: str, repeat: int, skip: tuple[str, ...] = ()) -> dict[str, Any]:
    """One benchmark x ISA: every contender but those in `skip`, warmed up, then `repeat` timed rounds."""
    from benchmarks.registry import get

    bench = get(name)
    every = [("pitchfork", lambda: _ours(bench, isa, "pitchfork")), ("llvm", lambda: _ours(bench, isa, "llvm")),
             ("halide21", lambda: _halide(bench, isa))]
    kinds = [(k, f) for k, f in every if k not in skip]
    runs: dict[str, list] = {k: [] for k, _ in kinds}
    errors: dict[str, str] = {}
    load0 = os.getloadavg()[0]
    for r in range(repeat + 1):  # round 0 is the warm-up
        order = kinds[r % len(kinds):] + kinds[:r % len(kinds)]  # rotate who goes first: load drifts hit all alike
        for k, f in order:
            if k in errors:
                continue
            print(f"{CONTENDER_MARK} {k}", file=sys.stderr, flush=True)
            try:
                res = f()
            except Exception as e:  # noqa: BLE001 - a failed contender is a row, not a crash
                errors[k] = f"{type(e).__name__}: {' '.join(str(e).split())[:300]}"
                continue
            if r:
                runs[k].append(res)
    med: dict[str, Any] = {}
    for k, rows in runs.items():
        if rows:
            med[k] = {p: statistics.median(x[p] for x in rows) for p in rows[0] if p != "how"}
            if "how" in rows[0]:
                med[k]["how"] = rows[0]["how"]
    return {"bench": name, "isa": isa, "median": med, "errors": errors,
            "load": [round(load0, 1), round(os.getloadavg()[0], 1)]}  # 1-minute load at start and end


def crash_line(returncode: int, stderr: str) -> str:
    """One line for a child that died: how (signal or exit status) and the last message that says why
    (LLVM's assertion or fatal error where there is one; the source path shortened to llvm/...)."""
    how = (f"killed by {signal.Signals(-returncode).name}" if returncode < 0 and -returncode in signal.valid_signals()
           else f"exit status {returncode}")
    lines = [ln.strip() for ln in stderr.splitlines() if ln.strip() and not ln.startswith(CONTENDER_MARK)]
    why = next((ln for ln in reversed(lines) if "Assertion" in ln or "LLVM ERROR" in ln),
               lines[-1] if lines else "")
    why = re.sub(r"\S*/(llvm/(?:lib|include)/)", r"\1", why, count=1)
    return f"{how}: {why}"[:400]


def run_child(cmd: list[str], cwd: Path, env: dict[str, str], attempts: int = len(KINDS)) -> dict[str, Any]:
    """The JSON row a child command (`child`'s, or one printing a row of that shape last) prints.

    A contender that kills the child -- e.g. an LLVM assertion under llvmlite's PyPI wheel, whose LLVM
    has them on (isel=llvm on depthwise_conv hvx128: LLVM's Hexagon IfConverter asks for the register
    class of a reversed vector pair, which has none on v66; the release LLVM scripts/install.sh builds
    llvmlite against compiles it, and pitchfork.compile itself now runs that case in a forked child under
    an assertion-enabled LLVM, so it is a CompileError) -- becomes a one-line error of that contender,
    and the child is run again without it
    (`--skip KIND`), so the other contenders of the benchmark are measured as in any other child: no
    contender's compile is moved into a process of its own. Which contender died is the last
    `CONTENDER_MARK` line on the child's stderr; a death no contender can be blamed for is the row's
    "child" error, as before."""
    skip: list[str] = []
    errors: dict[str, str] = {}
    for _ in range(attempts):
        p = subprocess.run(cmd + [a for k in skip for a in ("--skip", k)], capture_output=True, text=True,
                           cwd=cwd, env=env)
        if p.returncode == 0:
            row = json.loads(p.stdout.strip().splitlines()[-1])
            row["errors"] = {**row.get("errors", {}), **errors}
            return row
        marks = [ln.split()[-1] for ln in p.stderr.splitlines() if ln.startswith(CONTENDER_MARK)]
        kind = marks[-1] if marks else None
        line = crash_line(p.returncode, p.stderr)
        if kind is None or kind in skip:
            errors["child"] = line
            break
        errors[kind] = line
        skip.append(kind)
    return {"median": {}, "errors": errors}


def compile_rows(benches: list[str], isas: list[str], repeat: int, roots: list[Path],
                 progress: Any = None) -> list[dict[str, Any]]:
    """One child per benchmark x ISA x checkout; `progress(rows)` is called after each (partial reports)."""
    rows: list[dict[str, Any]] = []
    for name in benches:
        for isa in isas:
            for root in roots:  # before/after side by side: same benchmark, one after the other
                cmd = [sys.executable, "-m", "benchmarks.compile_time", "--child", name, isa, "--repeat", str(repeat)]
                row = run_child(cmd, root, {**os.environ, "PYTHONPATH": str(root), "HL_NUM_THREADS": "1"})
                row.update(bench=name, isa=isa, root=str(root))
                rows.append(row)
                print(f"{name:16s} {isa:9s} {root.name:14s} " + "  ".join(
                    f"{k} {v['total']:.2f}s" for k, v in row["median"].items()), flush=True)
                if progress is not None:
                    progress(rows)
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """root -> isa -> {kind.phase: median over benchmarks}."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for root in sorted({r["root"] for r in rows}):
        for isa in ISAS:
            sel = [r for r in rows if r["root"] == root and r["isa"] == isa]
            if not sel:
                continue
            cell: dict[str, float] = {}
            for kind in ("pitchfork", "llvm", "halide21"):
                have = [r["median"][kind] for r in sel if kind in r["median"]]
                for phase in ("total", "cpu") + WAITS + (PHASES + LLVM_PHASES + CODEGEN_PHASES + CPU_CAPTURE
                                                         if kind != "halide21" else ()):
                    # a phase a compile did not run counts 0 (e.g. llvm_emit_assembly where the object
                    # was emitted); a checkout that reports no CPU or LLVM split has no such cells
                    if phase in CPU_CAPTURE + WAITS:  # over the compiles that report it (not 0 for the others)
                        if any(phase in h for h in have):
                            cell[f"{kind}.{phase}"] = statistics.median(h[phase] for h in have if phase in h)
                    elif have and (phase in PHASES + ("total",) or any(phase in h for h in have)):
                        cell[f"{kind}.{phase}"] = statistics.median(h.get(phase, 0.0) for h in have)
                cell[f"{kind}.n"] = len(have)
            cell.update(paired(sel))
            out.setdefault(root, {})[isa] = cell
    return out


def paired(rows: list[dict[str, Any]]) -> dict[str, float]:
    """PITCHFORK against each other contender on the same benchmarks: for the benchmarks where both
    compiled, the median of PITCHFORK's totals and of the other's (`<kind>.same.pitchfork`,
    `<kind>.same.other`), the median of the per-benchmark ratios (`<kind>.paired`), how many
    benchmarks that is (`<kind>.same.n`) and on how many PITCHFORK was not slower (`<kind>.wins`).

    Why beside the medians of `summarize`: those are taken over the benchmarks each contender compiled,
    so where one contender fails on a benchmark (Halide 21 on softmax hvx128) the two medians are over
    different sets (16 against 15) and their ratio compares different pipelines; these compare the same
    ones, and the per-benchmark ratio does not depend on which benchmark happens to sit at the median."""
    out: dict[str, float] = {}
    for other in ("llvm", "halide21"):
        both = [r["median"] for r in rows if "pitchfork" in r["median"] and other in r["median"]
                and r["median"][other].get("total")]
        if not both:
            continue
        ratios = [m["pitchfork"]["total"] / m[other]["total"] for m in both]
        out[f"{other}.same.pitchfork"] = statistics.median(m["pitchfork"]["total"] for m in both)
        out[f"{other}.same.other"] = statistics.median(m[other]["total"] for m in both)
        out[f"{other}.paired"] = statistics.median(ratios)
        out[f"{other}.same.n"] = len(both)
        out[f"{other}.wins"] = sum(x <= 1.0 for x in ratios)
        # CPU with the capture's child (checkouts that report it) against the other's CPU (LLVM alone's
        # with its capture child too): the comparison a loaded machine does not distort as it does wall time
        key = "cpu_with_capture" if other == "llvm" else "cpu"
        cpus = [m for m in both if "cpu_with_capture" in m["pitchfork"] and m[other].get(key)]
        if cpus:
            cpu_ratios = [m["pitchfork"]["cpu_with_capture"] / m[other][key] for m in cpus]
            out[f"{other}.cpu_paired"] = statistics.median(cpu_ratios)
            out[f"{other}.cpu_same.n"] = len(cpus)
            out[f"{other}.cpu_wins"] = sum(x <= 1.0 for x in cpu_ratios)
    return out


# ---------------------------------------------------------------------------------------------
# Report


def markdown(data: dict[str, Any]) -> str:
    lines = ["## Compile time (seconds, medians; `python -m benchmarks.compile_time`)", ""]
    host = data["host"]
    loads = [x for r in data.get("compile", {}).get("rows", []) for x in r.get("load", [])]
    during = f", {min(loads)}-{max(loads)} during the compile measurements" if loads else ""
    lines.append(f"Measured {host['date']} on {host['cpus']} CPUs, load average {host['load']} at the start{during} "
                 "(a shared machine: wall times include waiting for a core; CPU times do not).")
    lines.append("")
    comp = data.get("compile")
    if comp:
        lines += ["### `pitchfork.compile` per phase beside LLVM alone and Halide 21", "",
                  "Per ISA, the median over the benchmarks of each contender's median compile time (parameter set "
                  "0; each child process warms up once, then compiles each contender in rotation). Phases: Halide "
                  "capture / selection (lift + lower) / codegen (statement parse, loop passes, IR emission; from the "
                  "issue 26 changes on also llvmlite's printing of the module, before them in LLVM) / LLVM "
                  "(parse, verify, O3, one emission: before the issue 26 one-emission change the assembly, the object "
                  "emitted when first asked for; after it the object, the assembly when first asked for). Halide 21: x86 `compile_jit`, arm64 `compile_to_assembly`, hvx128 "
                  "`compile_to_llvm_assembly` + llc -O3 with our backend options (`halide21.llc_command`). Every "
                  "contender compiles the same Halide target string per ISA (`benchmarks.common.HALIDE_TARGETS`; "
                  "hvx128: `no_asserts-no_bounds_query`).", "",
                  "| checkout | ISA | PITCHFORK total (capture / selection / codegen / LLVM) | selection share "
                  "| LLVM alone total (same) | Halide 21 | PITCHFORK / LLVM alone | PITCHFORK / Halide 21 |",
                  "|---|---|---|---|---|---|---|---|"]
        for root, per_isa in comp["summary"].items():
            for isa, c in per_isa.items():
                def split(k: str) -> str:
                    if f"{k}.total" not in c:
                        return "failed"
                    return (f"{c[f'{k}.total']:.2f} (" + " / ".join(f"{c[f'{k}.{p}']:.2f}" for p in PHASES) + ")")
                pf, lv, hl = c.get("pitchfork.total"), c.get("llvm.total"), c.get("halide21.total")
                share = f"{100 * c['pitchfork.selection'] / pf:.0f}%" if pf else "-"
                halide = f"{hl:.2f} (n={c['halide21.n']})" if hl is not None else "failed"
                vs_llvm = f"{pf / lv:.2f}x" if pf and lv else "-"
                vs_halide = f"{pf / hl:.2f}x" if pf and hl else "-"
                lines.append(f"| {Path(root).name} | {isa} | {split('pitchfork')} | {share} | {split('llvm')} | "
                             f"{halide} | {vs_llvm} | {vs_halide} |")
        lines.append("")
        same_rows = [(root, isa, c) for root, per_isa in comp["summary"].items() for isa, c in per_isa.items()
                     if "halide21.paired" in c or "llvm.paired" in c]
        if same_rows:
            lines += ["The same comparison on the same benchmarks (`paired`): over the benchmarks where both "
                      "contenders compiled, PITCHFORK's median total against the other's, the median of the "
                      "per-benchmark ratios PITCHFORK / other, and on how many of them PITCHFORK was not slower "
                      "(the medians above are each over the benchmarks that contender compiled).", "",
                      "| checkout | ISA | vs LLVM alone: medians, same benchmarks | paired ratio | not slower "
                      "| vs Halide 21: medians, same benchmarks | paired ratio | not slower |",
                      "|---|---|---|---|---|---|---|---|"]
            for root, isa, c in same_rows:
                cols = []
                for other in ("llvm", "halide21"):
                    if f"{other}.paired" not in c:
                        cols += ["-", "-", "-"]
                        continue
                    n = int(c[f"{other}.same.n"])
                    cols += [f"{c[f'{other}.same.pitchfork']:.2f} / {c[f'{other}.same.other']:.2f} (n={n}) = "
                             f"{c[f'{other}.same.pitchfork'] / c[f'{other}.same.other']:.2f}x",
                             f"{c[f'{other}.paired']:.2f}x", f"{int(c[f'{other}.wins'])} of {n}"]
                lines.append(f"| {Path(root).name} | {isa} | " + " | ".join(cols) + " |")
            lines.append("")
        cpu_rows = [(root, isa, c) for root, per_isa in comp["summary"].items() for isa, c in per_isa.items()
                    if "pitchfork.cpu" in c]
        if cpu_rows:
            lines += ["CPU seconds of the compiling process (medians as above; PITCHFORK's and LLVM alone's exclude "
                      "the capture child, whose lowering is Halide's own, so the wall-clock capture is shown beside "
                      "them; Halide 21's include its lowering and, on hvx128, llc) and PITCHFORK's LLVM phases "
                      "(wall seconds: parse / verify / O3 / printing the optimised IR / HVX fixups / parsing it back / "
                      "emitting the object / emitting assembly where the HVX pair choice needs it) and codegen phases "
                      "(wall seconds: statement parse / loop passes / IR building without selection / llvmlite's printing / "
                      "freeing the llvmlite module, 0 before session 19's free_module). From session 27 on the "
                      "capture's lowering child reports its CPU (`CompileStats.capture_child_cpu_seconds`): the "
                      "column `with capture child` is PITCHFORK's CPU with it (median over the benchmarks), and "
                      "`vs Halide 21 CPU` the median over the benchmarks of PITCHFORK's CPU with its capture "
                      "child / Halide 21's CPU, with on how many PITCHFORK used no more: whole compiles "
                      "compared in CPU, which a loaded machine does not inflate as it does wall time.", "",
                      "| checkout | ISA | PITCHFORK CPU (+ capture wall) | with capture child | vs Halide 21 CPU "
                      "| LLVM alone CPU (+ capture wall) "
                      "| Halide 21 CPU | PITCHFORK codegen phases | PITCHFORK LLVM phases |",
                      "|---|---|---|---|---|---|---|---|---|"]
            for root, isa, c in cpu_rows:
                def cpu(k: str) -> str:
                    return f"{c[f'{k}.cpu']:.2f} (+ {c[f'{k}.capture']:.2f})" if f"{k}.cpu" in c else "-"
                with_child = f"{c['pitchfork.cpu_with_capture']:.2f}" if "pitchfork.cpu_with_capture" in c else "-"
                vs_cpu = (f"{c['halide21.cpu_paired']:.2f}x ({int(c['halide21.cpu_wins'])} of "
                          f"{int(c['halide21.cpu_same.n'])})" if "halide21.cpu_paired" in c else "-")
                def phases(names: tuple[str, ...]) -> str:  # all of them, 0 for one no compile ran
                    if not any(f"pitchfork.{p}" in c for p in names):
                        return "-"
                    return " / ".join(f"{c.get(f'pitchfork.{p}', 0.0):.3f}" for p in names)
                split, cg = phases(LLVM_PHASES), phases(CODEGEN_PHASES)
                hl_cpu = f"{c['halide21.cpu']:.2f}" if "halide21.cpu" in c else "-"
                lines.append(f"| {Path(root).name} | {isa} | {cpu('pitchfork')} | {with_child} | {vs_cpu} "
                             f"| {cpu('llvm')} | {hl_cpu} | {cg} | {split} |")
            lines.append("")
        wait_rows = [(root, isa, c) for root, per_isa in comp["summary"].items() for isa, c in per_isa.items()
                     if any(f"{k}.run_delay" in c for k in KINDS)]
        if wait_rows:
            lines += ["Wall against CPU and waits (ms, medians over the benchmarks of each one's median compile): "
                      "`wall` as above; `CPU` the compiling process's (PITCHFORK's and LLVM alone's with the capture "
                      "child); `run delay` the time the compiling process's threads were runnable but waiting for a "
                      "core (second field of /proc/self/task/*/schedstat, summed over its threads, the frontend "
                      "thread read inside it, with PITCHFORK's and LLVM alone's capture child as the capture worker "
                      "reads it before the kill (`CompileStats.capture_child_run_delay_seconds`); not counted: "
                      "Halide 21's hvx128 llc); "
                      "`rest` = wall - CPU - run delay; `steal` the host's steal during the compile (/proc/stat, "
                      f"summed over its {host['cpus']} CPUs, 10 ms ticks). Wall - CPU - run delay separates waiting "
                      "for a core (run delay, which grows with the load) from what neither explains: the host's "
                      "steal, which a guest sees as neither CPU nor run delay, hand-offs (PITCHFORK's capture) "
                      "and the waits of a subprocess not counted (Halide 21's llc on hvx128). Each column is its own "
                      "median, so they need not add up.", "",
                      "| checkout | ISA | PITCHFORK wall / CPU / run delay / rest / steal "
                      "| LLVM alone (same) | Halide 21 (same) |", "|---|---|---|---|---|"]
            for root, isa, c in wait_rows:
                def waits(k: str) -> str:
                    if f"{k}.run_delay" not in c:
                        return "-"
                    cpu = c.get(f"{k}.cpu_with_capture", c[f"{k}.cpu"])
                    return " / ".join(f"{1e3 * v:.0f}" if v is not None else "-" for v in (
                        c[f"{k}.total"], cpu, c[f"{k}.run_delay"], c.get(f"{k}.rest"), c.get(f"{k}.steal")))
                lines.append(f"| {Path(root).name} | {isa} | {waits('pitchfork')} | {waits('llvm')} "
                             f"| {waits('halide21')} |")
            lines.append("")
        errs = [(r["bench"], r["isa"], Path(r["root"]).name, k, v) for r in comp["rows"] for k, v in r["errors"].items()]
        if errs:
            lines += ["Failed compiles (not in the medians):", ""]
            lines += [f"* {b} / {i} / {root} / {k}: {v}" for b, i, root, k, v in errs]
            lines.append("")
    sel = data.get("selection")
    if sel:
        lines += ["### The selector alone", "", "| measure | " + " | ".join(Path(r).name for r in sel) + " |",
                  "|---|" + "---|" * len(sel)]

        def row(label: str, f: Any) -> None:
            vals = []
            for r in sel.values():
                try:
                    vals.append(f(r))
                except (KeyError, TypeError, ZeroDivisionError):
                    vals.append("-")
            lines.append(f"| {label} | " + " | ".join(vals) + " |")

        row("cold `pitchfork lift` (small expression), wall median / CPU median, s",
            lambda r: f"{r['cold']['wall_median']:.3f} / {r['cold']['cpu_median']:.3f}")
        row("`pitchfork lift --batch` 1,000 expressions, per second (wall / CPU)",
            lambda r: f"{r['batch']['per_second_wall']:.0f} / {r['batch']['per_second_cpu']:.0f}")
        for isa in ISAS:
            row(f"lift + lower one corpus expression, {isa}, ms CPU",
                lambda r, isa=isa: f"{1e3 * r['micro']['select_per_isa'][isa]['cpu_per_expr']:.2f}")
        first = next(iter(sel.values()))
        for n in first.get("micro", {}).get("lift_per_rule_count", {}):
            row(f"lift one corpus expression with {n} lifting rules, ms CPU",
                lambda r, n=n: f"{1e3 * r['micro']['lift_per_rule_count'][n]['cpu_per_expr']:.2f}")
        for shape, sizes in first.get("micro", {}).get("lift_cpu_by_sum_size", {}).items():
            for n in sizes:
                row(f"lift a {n}-term sum ({shape}), s CPU",
                    lambda r, s=shape, n=n: f"{r['micro']['lift_cpu_by_sum_size'][s][n]:.3f}")
            row(f"640-term / 80-term lift time ({shape})",
                lambda r, s=shape: f"{r['micro']['ratio_640_over_80'][s]:.1f}x")
        row(f"{first.get('memory', {}).get('terms', '?')}-term sum (widen): tracemalloc peak during lift / max-RSS growth during lift, MB",
            lambda r: f"{r['memory']['tracemalloc_peak_mb']:.0f} / {r['memory']['maxrss_growth_during_lift_mb']:.0f}")
        lines.append("")
    return "\n".join(lines) + "\n"


def plot(data: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comp = data.get("compile")
    if not comp:
        return
    roots = list(comp["summary"])
    fig, axes = plt.subplots(1, len(roots), figsize=(6 * len(roots), 4.2), squeeze=False)
    colors = {"capture": "#4c72b0", "selection": "#dd8452", "codegen": "#55a868", "llvm": "#c44e52"}
    for ax, root in zip(axes[0], roots):
        per_isa = comp["summary"][root]
        x = 0
        ticks, labels = [], []
        for isa, c in per_isa.items():
            for kind in ("pitchfork", "llvm"):
                bottom = 0.0
                for p in PHASES:
                    v = c.get(f"{kind}.{p}", 0.0)
                    ax.bar(x, v, bottom=bottom, color=colors[p], label=p if x == 0 else None)
                    bottom += v
                ticks.append(x)
                labels.append(f"{isa}\n{'PF' if kind == 'pitchfork' else 'LLVM'}")
                x += 1
            if "halide21.total" in c:
                ax.bar(x, c["halide21.total"], color="#8c8c8c", label="Halide 21" if x == 2 else None)
            ticks.append(x)
            labels.append(f"{isa}\nHalide 21")
            x += 1.6
        ax.set_xticks(ticks, labels, fontsize=7)
        ax.set_ylabel("compile time, s (median over benchmarks)")
        ax.set_title(Path(root).name)
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


#: the lines around the section `--write-results` owns in the results file: it replaces what is between
#: them and nothing else (the file's hand-written history of earlier sessions stays as it is)
BEGIN_MARK = "<!-- benchmarks.compile_time --write-results: generated, replaced by the next run -->"
END_MARK = "<!-- end of benchmarks.compile_time --write-results -->"


def write_results(md: str, results: Path) -> None:
    """Put `md` (this run's report) in `results` between BEGIN_MARK and END_MARK, replacing the run
    written there before. A file without the marks gets them right after its title (its first line,
    when that is a "# " heading), above the sessions' sections; a missing file is made."""
    block = f"{BEGIN_MARK}\n{md.rstrip()}\n{END_MARK}\n"
    if not results.exists():
        results.write_text(block)
        return
    text = results.read_text()
    start, end = text.find(BEGIN_MARK), text.find(END_MARK)
    if 0 <= start < end:
        after = text[end + len(END_MARK):].lstrip("\n")
        results.write_text(text[:start] + block + ("\n" + after if after else ""))
        return
    if text.startswith("# "):
        title, _, rest = text.partition("\n")
        results.write_text(f"{title}\n\n{block}\n" + rest.lstrip("\n"))
    else:
        results.write_text(f"{block}\n{text}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-o", "--out", type=Path, default=Path("compile-time-out"))
    p.add_argument("--quick", action="store_true", help="fewer runs, two sum sizes, three benchmarks")
    p.add_argument("--bench", action="append")
    p.add_argument("--isa", action="append", choices=ISAS)
    p.add_argument("--repeat", type=int, default=None, help="timed compiles per contender after the warm-up "
                   "(default 3, --quick 1: a median of 2 is their mean, which one steal burst sets)")
    p.add_argument("--roots", type=Path, nargs="+", default=[ROOT],
                   help="checkouts to measure side by side (default: this one), e.g. an old commit's and this")
    p.add_argument("--skip-compile", action="store_true")
    p.add_argument("--skip-selection", action="store_true")
    p.add_argument("--write-results", action="store_true", help="put this run's report into "
                   "benchmarks/RESULTS_COMPILE_TIME.md (replacing the run written there before)")
    p.add_argument("--child", nargs=2, metavar=("BENCH", "ISA"), help=argparse.SUPPRESS)
    p.add_argument("--skip", action="append", default=[], choices=KINDS, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args.repeat or 1, tuple(args.skip))))
        return 0
    from benchmarks.registry import NAMES

    out: Path = args.out.resolve()
    out.mkdir(parents=True, exist_ok=True)
    data: dict[str, Any] = {"host": {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                     "cpus": os.cpu_count(), "load": round(os.getloadavg()[0], 1)},
                            "roots": [str(r.resolve()) for r in args.roots]}
    if not args.skip_selection:
        data["selection"] = {}
        for root in args.roots:
            root = root.resolve()
            cmd = [sys.executable, "-c", "import json, sys; from benchmarks.compile_time import selection_child; "
                   f"print(json.dumps(selection_child({args.quick!r}, sys.argv[1])))", str(out)]
            pr = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env={**os.environ, "PYTHONPATH": str(root)})
            if pr.returncode:
                print(f"selection on {root} failed: {pr.stderr[-600:]}", file=sys.stderr)
                continue
            data["selection"][str(root)] = json.loads(pr.stdout.strip().splitlines()[-1])
            print(f"selection {root.name}: {json.dumps(data['selection'][str(root)])[:300]}", flush=True)
            _save(data, out)
    if not args.skip_compile:
        benches = args.bench or (["add", "sobel3x3", "matmul"] if args.quick else list(NAMES))
        def progress(rows: list[dict[str, Any]]) -> None:  # partial results survive an interrupted run
            data["compile"] = {"rows": rows, "summary": summarize(rows)}
            _save(data, out)

        rows = compile_rows(benches, args.isa or list(ISAS), args.repeat or (1 if args.quick else 3),
                            [r.resolve() for r in args.roots], progress)
        data["compile"] = {"rows": rows, "summary": summarize(rows)}
    md = _save(data, out)
    plot(data, out / "compile_time.png")
    print(md)
    if args.write_results:
        write_results(md, ROOT / "benchmarks" / "RESULTS_COMPILE_TIME.md")
    return 0


def _save(data: dict[str, Any], out: Path) -> str:
    (out / "results.json").write_text(json.dumps(data, indent=1))
    md = markdown(data)
    (out / "compile_time.md").write_text(md)
    return md


def selection_child(quick: bool, out: str) -> dict[str, Any]:
    """Every selector measure of one checkout (run with that checkout first on the path)."""
    o = Path(out)
    return {"cold": cold_lift(o, 3 if quick else 7), "batch": batch_rate(o), "micro": selection(quick),
            "memory": memory(20_000 if not quick else 5_000, "widen")}


if __name__ == "__main__":
    sys.exit(main())
