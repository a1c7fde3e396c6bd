"""The synthesis run: corpus, task lists, execution (in process, local processes or Dask), cache,
rule selection and writing, summary.

Stages: `corpus` (benchmark expressions through the Halide frontend, cached per benchmark), `lift`
(one task per corpus entry), `lower:<isa>` (one task per cut of a lifted expression), `write`
(selection and final verification, synth/output.py). Every finished task is appended to the cache
(`<cache>/tasks.jsonl`, keyed by the task key: kind, ISA, canonical left side, budgets) before the
next one is awaited, so an interrupted run resumes where it stopped and never redoes finished work.
`time_limit` stops handing out tasks (those not run stay uncached); verdicts never depend on it.

Execution backends run the same `synth.tasks.run_task`: `jobs == 1` in this process, `jobs > 1` a
local process pool, `cluster` an existing Dask distributed scheduler (`distributed.Client`).
"""

from __future__ import annotations

import json
import time
from collections import Counter, defaultdict
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Optional, Sequence

from fpir.opspec import spec
from fpir.term import Term
from fpir.printer import to_text
from fpir.text import parse
from synth.corpus import Corpus, build_corpus, canonical, cuts, benchmark_expressions
from pitchfork.trs.rules import parse_rule
from synth.output import (
    Candidate,
    Decision,
    candidate_from,
    existing_rules,
    select,
    subsumed_file_rules,
    write_rules,
)
from synth.tasks import Task, run_task

ROOT = Path(__file__).resolve().parent.parent
ISA_STEMS = {"x86-avx2": "x86_avx2", "arm64": "arm_neon", "hvx128": "hvx"}
QUICK_BENCHMARKS = ("sobel3x3",)


@dataclass(frozen=True)
class Options:
    benchmarks: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    isas: tuple[str, ...] = ("arm64", "hvx128", "x86-avx2")
    stages: tuple[str, ...] = ("lift", "lower")
    corpus_isas: tuple[str, ...] = ("arm64",)
    max_nodes: int = 10
    max_lhs: int = 0  # per stage, most frequent first; 0 = all
    max_lower_lhs: Optional[int] = None  # per lowering stage (None: max_lhs)
    min_ops: int = 1
    max_vars: int = 3  # left sides with more variables are skipped (a cheaper form rarely exists)
    max_terms: int = 200_000
    rlimit: int = 20_000_000
    jobs: int = 1
    cluster: Optional[str] = None
    time_limit: float = 0.0  # seconds; 0 = none
    cache_dir: Path = ROOT / ".synth-cache"
    out_dir: Path = ROOT / "rules" / "synthesized"
    write: bool = True
    progress: bool = True
    #: existing rules left out of the baseline (show that synthesis rediscovers them)
    hide: tuple[str, ...] = ()


@dataclass
class StageStats:
    seen: int = 0
    cached: int = 0
    run: int = 0
    not_run: int = 0
    outcomes: Counter = field(default_factory=Counter)
    generalized: int = 0
    written: int = 0
    decisions: Counter = field(default_factory=Counter)
    seconds: float = 0.0


@dataclass
class RunReport:
    stages: dict[str, StageStats] = field(default_factory=dict)
    corpus_entries: int = 0
    corpus_errors: list[str] = field(default_factory=list)
    written: dict[str, int] = field(default_factory=dict)
    files: dict[str, Path] = field(default_factory=dict)
    decisions: dict[str, list[Decision]] = field(default_factory=dict)
    dropped: dict[str, list[tuple[str, str]]] = field(default_factory=dict)
    results: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    seconds: float = 0.0


# ---------------------------------------------------------------------------------------------
# Cache


class Cache:
    """Append-only JSON lines of task results, keyed by `Task.key`."""

    def __init__(self, directory: Path) -> None:
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = self.dir / "tasks.jsonl"
        self.data: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            for line in self.path.read_text().splitlines():
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut by an interruption
                self.data[r["key"]] = r

    def get(self, key: str) -> Optional[dict[str, Any]]:
        return self.data.get(key)

    def put(self, result: dict[str, Any]) -> None:
        self.data[result["key"]] = result
        with self.path.open("a") as f:
            f.write(json.dumps(result) + "\n")
            f.flush()

    def corpus(self, bench: str, isas: Sequence[str]) -> list[Term]:
        p = self.dir / f"corpus-{bench}-{'-'.join(isas)}.txt"
        if p.exists():
            return [parse(ln) for ln in p.read_text().splitlines() if ln.strip()]
        terms = benchmark_expressions(bench, isas)
        p.write_text("".join(to_text(t) + "\n" for t in terms))
        return terms


# ---------------------------------------------------------------------------------------------
# Execution


def execute(
    tasks: Sequence[Task],
    cache: Cache,
    opts: Options,
    label: str,
    on_result: Callable[[dict[str, Any]], None],
    deadline: Optional[float] = None,
) -> tuple[int, int, int]:
    """Run the tasks not in the cache, handing out none after `deadline` (time.monotonic());
    returns (cached, run, not run)."""
    todo = [t for t in tasks if cache.get(t.key) is None]
    cached = len(tasks) - len(todo)
    for t in tasks:
        hit = cache.get(t.key)
        if hit is not None:
            on_result({**hit, "cached": True})
    done = 0
    with _progress(opts.progress) as prog:
        bar = prog.add_task(label, total=len(tasks), completed=cached) if prog else None

        def finish(r: dict[str, Any]) -> None:
            nonlocal done
            cache.put(r)
            on_result(r)
            done += 1
            if prog is not None:
                prog.advance(bar)

        for r in _backend(todo, opts, deadline):
            finish(r)
    return cached, done, len(todo) - done


def _expired(deadline: Optional[float]) -> bool:
    return deadline is not None and time.monotonic() > deadline


def _backend(todo: Sequence[Task], opts: Options, deadline: Optional[float]) -> Iterator[dict[str, Any]]:
    if not todo:
        return
    if opts.cluster:
        yield from _dask(todo, opts, deadline)
    elif opts.jobs <= 1:
        for t in todo:
            if _expired(deadline):
                return
            yield run_task(t)
    else:
        yield from _pool(todo, opts.jobs, deadline)


def _pool(todo: Sequence[Task], jobs: int, deadline: Optional[float]) -> Iterator[dict[str, Any]]:
    pending = list(reversed(todo))
    with ProcessPoolExecutor(max_workers=jobs) as ex:
        running = set()
        while pending or running:
            while pending and len(running) < 2 * jobs and not _expired(deadline):
                running.add(ex.submit(run_task, pending.pop()))
            if not running:
                return
            finished, running = wait(running, return_when=FIRST_COMPLETED)
            for f in finished:
                yield f.result()
            if _expired(deadline):
                pending.clear()


def _dask(todo: Sequence[Task], opts: Options, deadline: Optional[float]) -> Iterator[dict[str, Any]]:
    from distributed import Client, as_completed

    with Client(opts.cluster) as client:
        futures = client.map(run_task, list(todo), pure=False)
        ac = as_completed(futures)
        for fut in ac:
            yield fut.result()
            if _expired(deadline):
                for f in futures:
                    f.cancel()
                return


class _NoProgress:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *a: Any) -> None:
        return None


def _progress(enabled: bool) -> Any:
    if not enabled:
        return _NoProgress()
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        transient=False,
    )


# ---------------------------------------------------------------------------------------------
# Task lists


def lift_tasks(corpus: Corpus, opts: Options) -> tuple[list[Task], dict[str, tuple[set[str], int]]]:
    tasks: list[Task] = []
    origin: dict[str, tuple[set[str], int]] = {}
    for e in corpus.entries():
        if sum(1 for t in e.term.walk() if t.args) < opts.min_ops or len(e.term.variables()) > opts.max_vars:
            continue
        task = Task("lift", "", e.key, opts.max_terms, opts.rlimit, hide=opts.hide)
        tasks.append(task)
        origin[task.key] = (set(e.sources), e.count)
    return _limit(tasks, opts), origin


def lower_tasks(
    corpus: Corpus, isa: str, opts: Options
) -> tuple[list[Task], dict[str, tuple[set[str], int]]]:
    """Cuts of the lifted whole expressions that contain an FPIR op."""
    from pitchfork.selection.lift import lift

    lowered = Corpus()
    for source, exprs in corpus.expressions.items():
        for t in exprs:
            lowered.add_expression(lift(t), source, opts.max_nodes)
    tasks: list[Task] = []
    origin: dict[str, tuple[set[str], int]] = {}
    for e in lowered.entries():
        if not any(t.args and spec(t.op).kind == "fpir" for t in e.term.walk()):
            continue
        if len(e.term.variables()) > opts.max_vars:
            continue
        task = Task("lower", isa, e.key, opts.max_terms, opts.rlimit, hide=opts.hide)
        tasks.append(task)
        origin[task.key] = (set(e.sources), e.count)
    if opts.max_lower_lhs is not None:
        return _limit(tasks, replace(opts, max_lhs=opts.max_lower_lhs)), origin
    return _limit(tasks, opts), origin


def _fixed_point_first(task: Task) -> int:
    """0 for left sides with a cast or an element narrower than 32 bits (fixed-point code), 1 for
    the rest (mostly index arithmetic): with a --max-lhs budget the former go first."""
    t = parse(task.lhs)
    small = any(x.type.bits < 32 or x.op in ("cast", "reinterpret", "saturating_cast") for x in t.walk())
    return 0 if small else 1


def _bank_signature(task: Task) -> tuple:
    """What a left side's term bank depends on most (its variables' and nodes' types, its constants,
    its ops): tasks with equal signatures run one after the other, so they share banks
    (synth/bank.py keeps the few most recent)."""
    t = parse(task.lhs)
    return (
        tuple((v.name, v.type.name) for v in sorted(set(t.variables()), key=lambda v: v.name)),
        tuple(sorted({x.type.name for x in t.walk()})),
        tuple(sorted({x.value for x in t.walk() if x.is_const})),
        tuple(sorted({x.op for x in t.walk() if x.args})),
    )


def _limit(tasks: list[Task], opts: Options) -> list[Task]:
    """The first --max-lhs tasks (fixed-point ones first, then by corpus frequency), run in bank
    signature order."""
    ordered = sorted(tasks, key=_fixed_point_first)  # stable: frequency order kept within each group
    chosen = ordered[: opts.max_lhs] if opts.max_lhs > 0 else ordered
    return sorted(chosen, key=_bank_signature)


# ---------------------------------------------------------------------------------------------
# The run


def _stage_cost(stage: str) -> Callable[[Any, Term], tuple]:
    from pitchfork.trs.rewriter import Rewriter

    if stage == "lift":
        from pitchfork.selection.cost import cost

        return lambda rules, t: cost(Rewriter(rules).rewrite(t))
    isa = stage.split(":", 1)[1]
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import target_cost

    def lower_cost(rules: Any, t: Term) -> tuple:
        c = target_cost(
            expand_fpir(Rewriter(rules, cost=target_cost).rewrite(t), TARGET_MAX_BITS.get(isa, 64))
        )
        return (c[0], 0, 0)

    return lower_cost


def _base_rules(stage: str, hide: tuple[str, ...]) -> list[Any]:
    """The rules the stage's rewriter has today (hand-written and already synthesized, less hidden)."""
    if stage == "lift":
        from pitchfork.selection.lift import lift_rules

        rules = list(lift_rules(True, ()).rules)
    else:
        from pitchfork.targets import load_target

        rules = list(load_target(stage.split(":", 1)[1], True, ()).rules.rules)
    return [r for r in rules if r.name not in hide]


HEADERS = {
    "lift": "# Lifting rules synthesized by pitchfork-synth (synth/): do not edit by hand; re-run it.\n"
    "# Each rule was proven by Z3 at every type instance it can match (synth/verify.py).",
    "lower": "# {isa} lowering rules synthesized by pitchfork-synth (synth/): do not edit by hand; "
    "re-run it.\n"
    "# Each rule was proven by Z3 at every type instance it can match (synth/verify.py).",
}


def run(opts: Options) -> RunReport:
    t_start = time.perf_counter()
    deadline = time.monotonic() + opts.time_limit if opts.time_limit > 0 else None
    report = RunReport()
    cache = Cache(opts.cache_dir)
    t0 = time.perf_counter()
    exprs: dict[str, list[Term]] = {}
    for b in opts.benchmarks:
        try:
            exprs[b] = cache.corpus(b, opts.corpus_isas)
        except Exception as e:  # noqa: BLE001 - one benchmark the frontend cannot take must not stop the run
            report.corpus_errors.append(
                f"{b}: skipped ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
            )
    corpus = build_corpus(list(exprs), opts.files, opts.corpus_isas, opts.max_nodes, exprs)
    report.corpus_entries = len(corpus)
    report.corpus_errors += list(corpus.errors)
    report.stages["corpus"] = StageStats(seen=len(corpus), seconds=time.perf_counter() - t0)

    plans: list[tuple[str, list[Task], dict[str, tuple[set[str], int]]]] = []
    if "lift" in opts.stages:
        plans.append(("lift", *lift_tasks(corpus, opts)))
    if "lower" in opts.stages:
        for isa in opts.isas:
            plans.append((f"lower:{isa}", *lower_tasks(corpus, isa, opts)))

    for stage, tasks, origin in plans:
        st = StageStats(seen=len(tasks))
        report.stages[stage] = st
        results: list[dict[str, Any]] = []
        t0 = time.perf_counter()

        def on_result(r: dict[str, Any], st: StageStats = st, results: list = results) -> None:
            results.append(r)
            st.outcomes[r.get("status", "error")] += 1
            if r.get("status") == "synthesized" and (
                r.get("level") != "monomorphic" or r.get("constants") not in ("pinned", "none")
            ):
                st.generalized += 1

        st.cached, st.run, st.not_run = execute(tasks, cache, opts, stage, on_result, deadline)
        report.results[stage] = results
        st.seconds = time.perf_counter() - t0
        if opts.write:
            t0 = time.perf_counter()
            cands = []
            for r in results:
                src, count = origin.get(r["key"], (set(), 0))
                c = candidate_from(r, sorted(src), count)
                if c is not None:
                    cands.append(c)
            if stage == "lift":
                path, header = opts.out_dir / "lift.rules", HEADERS["lift"]
            else:
                isa = stage.split(":", 1)[1]
                path, header = opts.out_dir / f"lower_{ISA_STEMS[isa]}.rules", HEADERS["lower"].format(
                    isa=isa
                )
            base = _base_rules(stage, opts.hide)
            names = {r.name for r in base}
            base += [r for r in existing_rules(path) if r.name not in names]  # the output file's own rules
            decisions = select(cands, stage.replace(":", "_").replace("-", "_"), base, _stage_cost(stage))
            report.decisions[stage] = decisions
            for d in decisions:
                st.decisions[d.outcome] += 1
            new_rules = {d.name for d in decisions if d.outcome == "written"}
            if new_rules:  # rules of earlier runs that this run's rules subsume leave the file
                kept = base + [
                    parse_rule(f"{d.name}: {d.candidate.text}", "<synthesized>", 1)
                    for d in decisions if d.outcome == "written"
                ]
                subsumed = subsumed_file_rules(path, kept, _stage_cost(stage))
                report.dropped[stage] = subsumed
                st.decisions["dropped-from-file"] += len(subsumed)
            else:
                subsumed = []
            if new_rules or subsumed or not path.exists():
                report.written[stage] = write_rules(path, decisions, header, [n for n, _ in subsumed])
            st.written = sum(1 for d in decisions if d.outcome == "written")
            report.files[stage] = path
            _clear_rule_caches()
            st.seconds += time.perf_counter() - t0
    report.seconds = time.perf_counter() - t_start
    return report


def _clear_rule_caches() -> None:
    """Rules just written must be seen by the next stage (lowering lifts with the new lift rules)."""
    from pitchfork.selection.lift import _lift_rules
    from pitchfork.targets import _load_target

    _lift_rules.cache_clear()
    _load_target.cache_clear()
