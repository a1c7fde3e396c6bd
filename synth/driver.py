"""The synthesis run: corpus, task lists, execution (in process, local processes or Dask), cache,
rule selection and writing, firing census, summary.

Stages, in order, each with its own budgets (`max_lhs` / `max_lower_lhs` left sides, a work budget
of `time_limit` seconds at the fixed rate of synth/meter.py, or `work_limit` units): `corpus` (the benchmarks' selection
inputs per ISA as the compiler produces them: isel=pitchfork, loop passes applied; cached per
benchmark and ISA), `lift` (one task per cut), `lower:<isa>` (one task per cut of the ISA's
expressions lifted with the rules as they stand after the lift stage wrote its own), then `write`
(selection and final verification, synth/output.py) per stage and the census (synth/census.py:
this run's rules that never fire on the corpus leave their file).

Every task carries the digest of the rules it is planned against (synth/rulesnap.py) in its cache
key, and the rules themselves travel with it to whichever process runs it; every finished task is
appended to the cache (`<cache>/tasks.jsonl`) before the next one is awaited, so an interrupted run
resumes where it stopped, and a result is reused only for the same rules.

Which tasks run is decided by counted work, never by the clock (`StageBudget`): a stage's tasks are
taken in a fixed order, each finished one is charged its counted work (synth/meter.py `task_units`:
Z3 resource units, enumeration steps, fixed charges; recorded in the result, so a cached result is
charged the same), and tasks are handed out while the charges before them are below the stage's
budget. With `deep_share`, each lowering task's search is capped at that share of the budget, also a
count (part of the task and its cache key). So the same options give the same rule files on a loaded
or idle machine, fresh or resumed, with 1 or N jobs or on a Dask cluster; only the optional
wall-clock safety stop (`wall_limit`) can end a stage early, and the report says when it did.

Execution backends run the same `synth.tasks.run_task`: `jobs == 1` in this process, `jobs > 1` a
local Dask cluster of that many one-thread worker processes started for the run (`local_cluster`),
`cluster` an existing Dask distributed scheduler (`distributed.Client`); both go through the same
Dask path, and a reused worker gives the same answers as a fresh one. A cluster runs a few tasks
ahead of the one awaited; results are taken in the tasks' order.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Optional, Sequence

from fpir.opspec import spec
from fpir.term import Term
from fpir.printer import to_text
from fpir.text import parse
from synth.corpus import Corpus, benchmark_expressions
from pitchfork.trs.rules import parse_rule
from synth.output import (
    Decision,
    candidate_from,
    existing_rules,
    select,
    subsumed_file_rules,
    write_rules,
)
from synth.rulesnap import RuleSnapshot, activate, active, take
from synth.stages import ISA_STEMS, merged_inputs, stage_inputs, stage_path  # noqa: F401 (ISA_STEMS re-exported)
from synth.tasks import Task, bounds_encodable_isa, lane0_isa, narrower_than_type, run_task

ROOT = Path(__file__).resolve().parent.parent
QUICK_BENCHMARKS = ("sobel3x3",)


@dataclass(frozen=True)
class Options:
    benchmarks: tuple[str, ...] = ()
    files: tuple[str, ...] = ()
    isas: tuple[str, ...] = ("arm64", "hvx128", "x86-avx2")
    stages: tuple[str, ...] = ("lift", "lower")
    max_nodes: int = 10
    max_lhs: int = 0  # per stage, most frequent first; 0 = all
    max_lower_lhs: Optional[int] = None  # per lowering stage (None: max_lhs)
    min_ops: int = 1
    max_vars: int = 3  # left sides with more variables are skipped (a cheaper form rarely exists)
    #: lowering searches over budget search again over the ISA's instructions alone (synth/search.py;
    #: off by default: it multiplies the time of every over-budget left side)
    instructions_pass: bool = False
    #: lowering searches over budget search again from the root down (synth/topdown.py)
    topdown: bool = True
    max_terms: int = 200_000
    rlimit: int = 20_000_000
    jobs: int = 1
    cluster: Optional[str] = None
    #: per stage (each stage and round has its own): a work budget of this many seconds at the fixed
    #: rate of synth/meter.py (`stage_units`), not a clock; 0 = none
    time_limit: float = 0.0
    #: per stage: the work budget in units (synth/meter.py), instead of `time_limit`'s; 0 = from it
    work_limit: int = 0
    #: per stage: a wall-clock safety stop (seconds; 0 = none). Only it makes the output depend on the
    #: machine's load, and the report says when it fired (`StageStats.wall_stopped`)
    wall_limit: float = 0.0
    cache_dir: Path = ROOT / ".synth-cache"
    out_dir: Path = ROOT / "rules" / "synthesized"
    write: bool = True
    progress: bool = True
    #: existing rules left out of the baseline (show that synthesis rediscovers them)
    hide: tuple[str, ...] = ()
    #: end with a firing census that drops this run's rules that never fire (synth/census.py)
    census: bool = True
    #: lowering rounds per ISA: round k+1 is planned against the rules rounds 1..k wrote, so its left
    #: sides have their children lowered as the compiler will lower them with those rules (a rule for
    #: `reduce(widening_mul(x, y))` never fires once `widening_mul` has its own rule; round 2 finds
    #: `reduce(umull(x, y))`); a round that writes nothing ends the stage
    rounds: int = 1
    #: lowering: every left side is first searched with at most this many terms and no top-down
    #: search, then those over budget again with the full budget, in the same order (0: one pass).
    #: A time limit then cuts only the deep searches: a bring-up whose limit handed out 52 of arm64's
    #: 150 left sides lost uqxtn, uaba and umlal (one instruction each, found in under a second), and
    #: synthesized-only sobel3x3 fell from 1.000x to 0.851x of hand-written lowering
    first_pass_terms: int = 0
    #: lowering: the share of the stage's work budget (`StageBudget.units`: `work_limit`, or
    #: `time_limit` at synth/meter.py's fixed rate) one task's search may spend, as a count of Z3
    #: resource units and enumeration steps (0, or no budget: no cap). Without it one deep search could take a whole round: arm64
    #: `rounding_shr(rounding_mul_shr(a + b, c, 31), d)` took 644 s of a 600 s round at load ~20
    deep_share: float = 0.0
    #: lowering: after the rounds, one more of peephole left sides (synth/peephole.py): each
    #: instruction over an instruction in the corpus as the rules written so far lower it
    peephole: bool = False


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
    #: the work charged (synth/meter.py `task_units`) and the stage's budget (0: none)
    work: int = 0
    work_budget: int = 0
    #: the wall-clock safety stop (`Options.wall_limit`) ended the stage: its rules depend on load
    wall_stopped: bool = False


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
    #: stage -> synthesized rule name -> firings on the corpus (synth/census.py)
    census: dict[str, dict[str, int]] = field(default_factory=dict)
    #: stage -> the rule-set digest its tasks were planned against (synth/rulesnap.py)
    rules: dict[str, str] = field(default_factory=dict)
    #: ISA -> source -> the whole expressions of the corpus (what the census and bring-up judge on)
    inputs: dict[str, dict[str, list[Term]]] = field(default_factory=dict)
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

    def corpus(self, bench: str, isa: str) -> list[Term]:
        """The benchmark's selection inputs on `isa` (isel=pitchfork, loop passes applied). The file
        holds one expression a line, then a tab and the names of its uniform leaves (FPIR text cannot
        state them; a resumed run must see the broadcasts a fresh one sees, synth/corpus.py
        `Corpus.uniform`)."""
        p = self.dir / f"corpus-{bench}-{isa}-pitchfork-u.txt"
        if not p.exists():
            terms = benchmark_expressions(bench, (isa,), "pitchfork")
            p.write_text("".join(_corpus_text(t) + "\n" for t in terms))
        # read back even when just captured: a fresh run then plans from exactly the terms a resumed
        # one reads. The text round trip is not the identity (depthwise_conv on hvx128: 7 of 99
        # captured terms differ from their text read back), and a bring-up resumed from a fresh run's
        # cache planned 13 tasks with other keys (hvx128 `extending_add(v0_i32 + v1_i32, v2_i16)`:
        # v0's range [-2147418112, 2147483647] fresh, the whole i32 range resumed)
        return [_corpus_line(ln) for ln in p.read_text().splitlines() if ln.strip()]


def _corpus_text(t: Term) -> str:
    names = sorted({v.name for v in t.variables() if v.is_uniform_leaf})
    return to_text(t) + ("\tuniform=" + ",".join(names) if names else "")


def _corpus_line(line: str) -> Term:
    """A corpus line back to its term: the variables named after the tab uniform, every node's flags
    (`add.nsw`) kept, so the term is the captured one (synth/corpus.py `substitute` rebuilds nodes
    without flags, and the nsw facts narrow the value ranges a lowering task states)."""
    from fpir.ops import make
    from fpir.term import var

    text, _, marks = line.partition("\tuniform=")
    t = parse(text)
    names = set(marks.split(",")) if marks else set()
    if not names:
        return t
    memo: dict[Term, Term] = {}
    for x in t.walk():
        if x.is_var and x.name in names:
            memo[x] = var(x.name, x.type, uniform=True)
        elif x.args and any(memo[a] is not a for a in x.args):
            flags = x.attrs if spec(x.op).flags else ()
            memo[x] = make(x.op, *[memo[a] for a in x.args], type=x.type if spec(x.op).explicit_type else None,
                           fold=False, flags=flags)
        else:
            memo[x] = x
    return memo[t]


# ---------------------------------------------------------------------------------------------
# Execution


@dataclass
class StageBudget:
    """What one stage (or round) may spend, and what it has spent (mutable: a running count).

    `units`: the stage's work budget (synth/meter.py `stage_units`; 0: none). A task is handed out
    while `spent`, the charges (`meter.task_units`) of the tasks before it in the stage's order, is
    below it, so the tasks that run depend on the options only. `wall_deadline` (time.monotonic()) is
    the safety stop (`Options.wall_limit`): when it ends a stage, `wall_stopped` records it, and that
    stage's rules depend on the machine's load."""

    units: int = 0
    wall_deadline: Optional[float] = None
    spent: int = 0
    wall_stopped: bool = False

    def open(self) -> bool:
        if self.units > 0 and self.spent >= self.units:
            return False
        if self.wall_deadline is not None and time.monotonic() > self.wall_deadline:
            self.wall_stopped = True
            return False
        return True

    def charge(self, result: dict[str, Any]) -> None:
        from synth.meter import task_units

        self.spent += task_units(result)


def budget_units(opts: Options) -> int:
    """One stage's (or round's) work budget: `work_limit` units, else `time_limit` seconds at the
    meter's fixed rate (0: none)."""
    from synth.meter import stage_units

    return opts.work_limit if opts.work_limit > 0 else stage_units(opts.time_limit)


def stage_budget(opts: Options) -> StageBudget:
    """A fresh budget for one stage or round: `budget_units`, the safety stop `wall_limit` seconds
    from now."""
    wall = time.monotonic() + opts.wall_limit if opts.wall_limit > 0 else None
    return StageBudget(budget_units(opts), wall)


def execute(
    tasks: Sequence[Task],
    cache: Cache,
    opts: Options,
    label: str,
    on_result: Callable[[dict[str, Any]], None],
    budget: Optional[StageBudget] = None,
    snap: Optional[RuleSnapshot] = None,
) -> tuple[int, int, int]:
    """Take the tasks' results in their order (from the cache, else run against the rules of `snap`,
    shipped with every task), charging each to `budget`, and stop handing out tasks once it is spent;
    returns (cached, run, not run). Backends may run a few tasks ahead of the one awaited (their
    results are cached for a later run, never charged or reported here), so every backend charges,
    reports and stops at the same tasks."""
    budget = budget if budget is not None else StageBudget()
    cached = done = 0
    with _progress(opts.progress) as prog, _runner(opts, snap) as runner:
        bar = prog.add_task(label, total=len(tasks)) if prog else None
        for i, t in enumerate(tasks):
            if not budget.open():
                break
            hit = cache.get(t.key)
            if hit is not None:
                r = {**hit, "cached": True}
                cached += 1
            else:
                r = runner.result(i, tasks, cache)
                cache.put(r)
                done += 1
            budget.charge(r)
            on_result(r)
            if prog is not None:
                prog.advance(bar)
        for r in runner.stop():
            if cache.get(r["key"]) is None:
                cache.put(r)
    return cached, done, len(tasks) - cached - done


class _Serial:
    """Runs the awaited task in this process, nothing ahead."""

    def __init__(self, snap: Optional[RuleSnapshot]) -> None:
        self.snap = snap

    def result(self, i: int, tasks: Sequence[Task], cache: Cache) -> dict[str, Any]:
        return run_task(tasks[i], self.snap)

    def stop(self) -> list[dict[str, Any]]:
        return []

    def __enter__(self) -> "_Serial":
        return self

    def __exit__(self, *a: Any) -> None:
        return None


class _Ahead:
    """Runs the awaited task and up to `window` uncached tasks after it on a Dask client, so workers
    stay busy while results are taken in order. `submit` returns a future with `result()`, `done()`
    and `cancel()`."""

    def __init__(self, submit: Callable[[Task], Any], window: int) -> None:
        self.submit, self.window = submit, window
        self.futures: dict[str, Any] = {}

    def result(self, i: int, tasks: Sequence[Task], cache: Cache) -> dict[str, Any]:
        for t in tasks[i:]:
            if len(self.futures) >= self.window and tasks[i].key in self.futures:
                break
            if t.key not in self.futures and cache.get(t.key) is None:
                self.futures[t.key] = self.submit(t)
        return self.futures.pop(tasks[i].key).result()

    def stop(self) -> list[dict[str, Any]]:
        """Cancels what has not finished; returns the results of the tasks run ahead that did."""
        out = []
        for f in self.futures.values():
            if f.done():
                try:
                    out.append(f.result())
                except Exception:  # noqa: BLE001 - a cancelled or lost task is simply not cached
                    continue
            else:
                f.cancel()
        self.futures.clear()
        return out


@contextmanager
def local_cluster(workers: int) -> Iterator[str]:
    """A Dask LocalCluster of `workers` one-thread worker processes for one run (`--jobs N`); yields
    its scheduler address. One cluster for all the run's stages: its workers keep their imports and
    term banks (synth/bank.py) from stage to stage, and a reused worker answers as a fresh one does."""
    from distributed import LocalCluster

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        yield cluster.scheduler_address


class _runner:
    """The backend for `opts` as a context: in process (`jobs == 1` and no cluster), else the Dask
    scheduler `opts.cluster` (`run` starts a local one for `jobs > 1`; the rule snapshot is scattered
    once and handed to every task: a worker activates it before running, so a reused worker drops the
    rule sets it loaded before)."""

    def __init__(self, opts: Options, snap: Optional[RuleSnapshot]) -> None:
        self.opts, self.snap = opts, snap
        self._close: list[Callable[[], None]] = []

    def __enter__(self) -> Any:
        opts, snap = self.opts, self.snap
        if opts.cluster:
            from distributed import Client

            client = Client(opts.cluster)
            self._close.append(client.close)
            shipped = client.scatter(snap, broadcast=True) if snap is not None else None
            workers = max(1, sum(client.nthreads().values()))
            return _Ahead(lambda t: client.submit(run_task, t, snap=shipped, pure=False), 4 * workers)
        return _Serial(snap)

    def __exit__(self, *a: Any) -> None:
        for close in reversed(self._close):
            close()


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


def lift_tasks(
    corpus: Corpus, opts: Options, rules: str = ""
) -> tuple[list[Task], dict[str, tuple[set[str], int]]]:
    tasks: list[Task] = []
    origin: dict[str, tuple[set[str], int]] = {}
    for e in corpus.entries():
        if sum(1 for t in e.term.walk() if t.args) < opts.min_ops or len(e.term.variables()) > opts.max_vars:
            continue
        task = Task("lift", "", e.key, opts.max_terms, opts.rlimit, hide=opts.hide, rules=rules)
        tasks.append(task)
        origin[task.key] = (set(e.sources), e.count)
    return _limit(tasks, opts), origin


def lifted_corpus(inputs: dict[str, list[Term]], max_nodes: int) -> Corpus:
    """Cuts of the whole expressions lifted as the compiler lifts them, with the rules loaded now
    (after the lift stage's new rules are in)."""
    from pitchfork.selection.lift import lift

    lowered = Corpus()
    for source, exprs in inputs.items():
        for t in exprs:
            lowered.add_expression(lift(t), source, max_nodes)
    return lowered


#: budget factor (--max-terms) of a lowering left side with a reduction: its grammar's banks are small
#: (the lane-combining levels), but the combinations of a multi-operand dot-product instruction with
#: the casts feeding it run out first (x86 `reduce_x2(u32(widening_mul(x_u8, y_u8)))` ->
#: `pmaddwd_pairs(i16(x), i16(y))`: over budget at 100,000 combinations, found at 142,752 in 7 s)
REDUCTION_BUDGET = 4


def lower_tasks(
    inputs: dict[str, list[Term]], isa: str, opts: Options, rules: str = "", peephole: bool = False
) -> tuple[list[Task], dict[str, tuple[set[str], int]]]:
    """Cuts of the ISA's lifted whole expressions (`lifted_corpus`) that contain an FPIR op or a
    reduction (`vector_reduce_add_x4(u32(x_u8))` has no FPIR op, and is one udot / vrmpy by 1), or
    primitive fixed-point code (`_narrow_primitive`: ARM shrn / addhn under a narrowing cast).
    `peephole`: the instruction pairs of the expressions as lowered now instead (synth/peephole.py),
    each with at most `search.MAX_PROBE_ARITY` variables (or --max-vars, when more)."""
    from synth.peephole import peephole_corpus
    from synth.search import MAX_PROBE_ARITY

    lowered = peephole_corpus(inputs, isa, opts.hide) if peephole else lifted_corpus(inputs, opts.max_nodes)
    max_vars = max(opts.max_vars, MAX_PROBE_ARITY) if peephole else opts.max_vars
    cap = int(opts.deep_share * budget_units(opts)) if opts.deep_share > 0 else 0
    tasks: list[Task] = []
    origin: dict[str, tuple[set[str], int]] = {}
    lane0 = lane0_isa(isa)
    for e in lowered.entries():
        if not peephole \
                and not any(t.args and (spec(t.op).kind == "fpir" or spec(t.op).reduce is not None) for t in e.term.walk()) \
                and not (lane0 and _broadcast_shift(e.term, lowered.uniform.get(e.key, []))) \
                and not _narrow_primitive(e.term) \
                and not _emulated_primitive(e.term, isa):
            continue
        if len(e.term.variables()) > max_vars:
            continue
        ranges = tuple(lowered.ranges.get(e.key, ()))
        vs = {v.name: v for v in e.term.variables()}
        narrower = any((v := vs.get(f"v{i}")) is not None and (lo > v.type.min or hi < v.type.max)
                       for i, (lo, hi) in enumerate(ranges))
        reduces = any(t.args and spec(t.op).reduce is not None for t in e.term.walk())
        task = Task("lower", isa, e.key, opts.max_terms * (REDUCTION_BUDGET if reduces else 1), opts.rlimit,
                    hide=opts.hide, rules=rules, ranges=ranges if narrower else (),
                    instructions_pass=opts.instructions_pass, topdown=opts.topdown, work_cap=cap)
        tasks.append(task)
        origin[task.key] = (set(e.sources), e.count)
    chosen = _limit(tasks, replace(opts, max_lhs=opts.max_lower_lhs) if opts.max_lower_lhs is not None else opts)
    # each left side with a variable the corpus saw as a broadcast also searched with it uniform
    # (synth/tasks.py `_run_uniform`), right after its plain task: on every ISA, for a right side that
    # reads the operand at lane 0 (x86) or moves work onto it, where it is hoisted out of the loop
    # (arm64 smlal_mixed_bias's bias: pitchfork/targets/hoisted.py). Off x86 such a task gets the
    # first pass's term budget alone (`Options.first_pass_terms`; no deep search): arm64 poses 275 of
    # them beside 721 plain left sides, most without a gain, and a stage's work budget is shared
    out: list[Task] = []
    small: dict[str, Any] = {} if lane0 or opts.first_pass_terms <= 0 else {
        "max_terms": min(opts.max_terms, opts.first_pass_terms), "topdown": False}
    narrows = bounds_encodable_isa(isa)
    for t in chosen:
        out.append(t)
        flags = lowered.uniform.get(t.lhs, [])
        if any(flags):
            u = replace(t, uniform=tuple(i for i, f in enumerate(flags) if f), **small)
            out.append(u)
            origin[u.key] = origin[t.key]
            # and inside each narrower range its uniform variables had at one place (a right side
            # encodable only there, HVX vasr by a uniform amount in [0, 15], states that range), on
            # an ISA where an instruction's encodable test reads bounds (elsewhere the same search)
            hull = lowered.ranges.get(t.lhs, [])
            vs = {v.name: v.type for v in lowered.terms[t.lhs].variables()} if t.lhs in lowered.terms else {}
            types = [vs.get(f"v{i}") for i in range(len(hull))]
            for r in narrowed_uniform_ranges(hull, lowered.site_ranges.get(t.lhs, []) if narrows else [],
                                             u.uniform, types):
                n = replace(u, ranges=r)
                out.append(n)
                origin[n.key] = origin[t.key]
    return out, origin


#: narrowed uniform tasks per left side at most (`narrowed_uniform_ranges`)
MAX_NARROWED_UNIFORM = 2


def narrowed_uniform_ranges(hull: "list[tuple[int, int]]", sites: "list[tuple[tuple[int, int], ...]]",
                            uniform: tuple[int, ...], types: "list[Any]") -> list[tuple[tuple[int, int], ...]]:
    """Task ranges for a left side's uniform task inside the range its uniform variables had at one
    place (`Corpus.site_ranges`) where that is narrower than the hull over all places (the task the
    hull gives is posed anyway): the hull for the other variables, the place's for the uniform ones;
    distinct, narrower than the types somewhere, the first MAX_NARROWED_UNIFORM met."""
    out: list[tuple[tuple[int, int], ...]] = []
    for site in sites:
        r = tuple(tuple(site[i]) if i in uniform else tuple(h) for i, h in enumerate(hull))
        if r == tuple(tuple(h) for h in hull) or r in out:
            continue
        if any(t is not None and narrower_than_type(lo, hi, t) for (lo, hi), t in zip(r, types)):
            out.append(r)  # type: ignore[arg-type]
        if len(out) >= MAX_NARROWED_UNIFORM:
            break
    return out


def _narrow_primitive(t: Term) -> bool:
    """A cut of primitive ops alone that narrows (a cast to fewer bits) or computes on elements
    narrower than 32 bits: fixed-point code with no FPIR op, still one instruction less on a target
    (ARM `cast<i16>(x_i32 >> 8)` is shrn, `cast<u8>((x + y) >> 8)` addhn, `(z + (x << c)) + (y << c)`
    one shift less). Before, only cuts with an FPIR op or a reduction were lowering left sides, so
    the strict judge found shrn and addhn never rediscovered (9 such cuts on arm64, ~90 narrow ones);
    index arithmetic (32- and 64-bit) stays out."""
    nodes = [x for x in t.walk() if x.args]
    if any(spec(x.op).kind != "primitive" for x in nodes):
        return False
    return any(x.op == "cast" and x.type.bits < x.args[0].type.bits for x in nodes) or any(
        1 < x.type.bits < 32 for x in nodes)


def _emulated_primitive(t: Term, isa: str) -> bool:
    """A cut with a generic primitive the ISA has no single instruction for (the target's
    `pitchfork.targets.primitive_cost` table: LLVM emulates it with more than one), at any width: an
    instruction (or a cheaper combination) may do it, or the cut around it, in fewer. HVX's 32-bit
    `x_i32 * 6` is two instructions generically (vmpyieo + vmpyie.acc), one vmpyi by a halfword
    constant, and `acc_i32 + x_i32 * 6` one vmpyi.acc; before, a primitive cut on 32-bit lanes was a
    lowering left side only when it narrowed (`_narrow_primitive`), so neither was ever posed
    (gaussian7x7's vertical pass) and the strict judge counted vmpyi_32 and vmpyi_acc missed. A target
    the table does not model (every primitive one instruction) gets no new left side."""
    from pitchfork.targets.primitive_cost import primitive_instructions

    return any(x.args and spec(x.op).kind == "primitive" and primitive_instructions(isa, x) > 1
               for x in t.walk())


def _broadcast_shift(t: Term, uniform: Sequence[bool]) -> bool:
    """A shift by a variable the corpus saw as a broadcast (`uniform`: per variable v0, v1, ...): no
    FPIR op, but one instruction on an ISA that shifts every lane by a count in a register (x86
    vpsraw) where the generic code shifts lane by lane."""
    if t.op not in ("shl", "shr") or not t.args[1].is_var:
        return False
    i = int(t.args[1].name[1:])
    return i < len(uniform) and uniform[i]


def _fixed_point_first(task: Task) -> int:
    """0 for left sides rooted at a lane-combining op the search handles (lane factor at most
    `search.MAX_LANE_FACTOR`), 1 for the rest with a cast, an FPIR op or an element narrower than 32
    bits (fixed-point code), 2 for the rest (index arithmetic): with a --max-lhs budget they go in that
    order. A reduction root is the only place a dot-product instruction (vrmpy, udot, pmaddwd) can be
    found, its generic expansion is three instructions per halving, and there are few (5-8 per ISA on
    the 16 benchmarks); ranked by frequency alone HVX conv3x3a32's `vector_reduce_add_x4(i32(
    widening_mul(x_u8, y_i8)))` (8 sites) was the 122nd left side, outside a 100-left-side run, and
    conv3x3a32 compiled with the synthesized rules alone fell to 0.150x of hand-written lowering. An
    FPIR op counts at any width: `rounding_mul_shr(x_i32, y_i32, 31)` (ARM sqrdmulh, ten instructions
    generically, in every requantization) was ranked with the index arithmetic and cut by --max-lhs."""
    from synth.search import MAX_LANE_FACTOR

    t = parse(task.lhs)
    s = spec(t.op) if t.args else None
    if task.kind == "lower" and s is not None and s.reduce is not None and s.reduce[1] <= MAX_LANE_FACTOR:
        return 0
    small = any(
        x.type.bits < 32 or x.op in ("cast", "reinterpret", "saturating_cast")
        or (x.args and spec(x.op).kind == "fpir")
        for x in t.walk()
    )
    return 1 if small else 2


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


#: tasks run in bank signature order within each batch of this many, batches in priority order
BANK_BATCH = 64


def _limit(tasks: list[Task], opts: Options) -> list[Task]:
    """The first --max-lhs tasks (fixed-point ones first, then by corpus frequency), in batches of
    `BANK_BATCH` in that order, each run in bank signature order. A time limit then cuts the least
    frequent left sides: sorted by signature as a whole, a run over all left sides handed out every
    i16/i32 one before any u8 one, and its time limit cut ARM umull/uaddl/urhadd (the most frequent)."""
    ordered = sorted(tasks, key=_fixed_point_first)  # stable: frequency order kept within each group
    chosen = ordered[: opts.max_lhs] if opts.max_lhs > 0 else ordered
    return [t for i in range(0, len(chosen), BANK_BATCH)
            for t in sorted(chosen[i : i + BANK_BATCH], key=_bank_signature)]


# ---------------------------------------------------------------------------------------------
# The run


def _firing(
    stage: str, decisions: list[Decision], base: list[Any], inputs: dict[str, dict[str, list[Term]]],
    opts: Options,
) -> list[Decision]:
    """The selected rules that fire when the stage's whole expressions are compiled with them (the
    others become "never-fires": a rule for a cut that the compiler never sees as such)."""
    from synth.census import fire_counts
    from pitchfork.trs.rules import RuleSet

    new = [parse_rule(f"{d.name}: {d.candidate.text}", "<synthesized>", 1)
           for d in decisions if d.outcome == "written"]
    if not new:
        return decisions
    # this round's rules are not hidden by a hidden committed rule of the same name (the same text)
    mine = {r.name for r in new}
    fired, _ = fire_counts(stage, stage_inputs(stage, inputs), tuple(h for h in opts.hide if h not in mine),
                           RuleSet(list(base) + new))
    return [
        replace(d, outcome="never-fires", detail="does not fire on the stage's whole expressions")
        if d.outcome == "written" and not fired.get(d.name) else d
        for d in decisions
    ]


def _stage_cost(stage: str) -> Callable[[Any, Term], tuple]:
    from pitchfork.trs.rewriter import Rewriter

    if stage == "lift":
        from pitchfork.selection.cost import cost

        return lambda rules, t: cost(Rewriter(rules).rewrite(t))
    isa = stage.split(":", 1)[1]
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from synth.cost import bound_below, lowering_cost

    def lower_cost(rules: Any, t: Term) -> tuple:
        rewriter = Rewriter(rules, cost=load_target(isa).cost)  # as the compiler lowers
        c = lowering_cost(expand_fpir(rewriter.rewrite(t), TARGET_MAX_BITS.get(isa, 64)), isa)
        # the measure a right side must lower, as the search's bound has it (synth/cost.py bound_below):
        # instructions, and on arm64 issue cycles then instructions. With cycles alone, selection called
        # a right side found at the same cycles in fewer instructions subsumed: session 30's arm64
        # `v0_u16 + widening_shl(v1_u8, 1) -> umlal(v0, v1, 2)` (2.00 cycles, 2 instructions, against
        # ushll + add: 2.00 cycles, 4) was never written, and synthesized-only sobel3x3 ran at 0.851x
        return bound_below(c)

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


def capture(opts: Options, cache: Cache, report: RunReport) -> dict[str, dict[str, list[Term]]]:
    """ISA -> source -> the whole expressions the compiler selects instructions for (benchmarks on
    that ISA's schedule with isel=pitchfork; expression files on every ISA)."""
    from synth.corpus import read_expression_file

    out: dict[str, dict[str, list[Term]]] = {isa: {} for isa in opts.isas}
    for b in opts.benchmarks:
        for isa in opts.isas:
            try:
                out[isa][b] = cache.corpus(b, isa)
            except Exception as e:  # noqa: BLE001 - one benchmark the frontend cannot take must not stop the run
                report.corpus_errors.append(
                    f"{b} ({isa}): skipped ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
                )
    for f in opts.files:
        terms, errors = read_expression_file(f)
        report.corpus_errors.extend(str(e) for e in errors)
        for isa in opts.isas:
            out[isa].setdefault(Path(f).stem, []).extend(terms)
    return out


def run(opts: Options) -> RunReport:
    """Corpus, then the stages in order (lift, then lowering per ISA), each with its own budgets
    (`max_lhs`/`max_lower_lhs` left sides, a work budget, `StageBudget`), each planned
    against the rules as they stand when it starts (a lowering stage's left sides come from the
    corpus lifted with the lift stage's new rules), then the firing census (synth/census.py).
    With `jobs > 1` and no `cluster`, the tasks run on a local Dask cluster (`local_cluster`)."""
    if opts.jobs > 1 and not opts.cluster:
        with local_cluster(opts.jobs) as address:
            return _run(replace(opts, cluster=address))
    return _run(opts)


def _run(opts: Options) -> RunReport:
    t_start = time.perf_counter()
    report = RunReport()
    cache = Cache(opts.cache_dir)
    t0 = time.perf_counter()
    inputs = capture(opts, cache, report)
    report.inputs = inputs
    corpus = Corpus()
    for source, terms in merged_inputs(inputs).items():
        for t in terms:
            corpus.add_expression(t, source, opts.max_nodes)
    report.corpus_entries = len(corpus)
    report.stages["corpus"] = StageStats(seen=len(corpus), seconds=time.perf_counter() - t0)

    stages = (["lift"] if "lift" in opts.stages else []) + (
        [f"lower:{isa}" for isa in opts.isas] if "lower" in opts.stages else []
    )
    with active(take(opts.out_dir)):
        for stage in stages:
            snap = take(opts.out_dir)  # the rules as they stand now (earlier stages' included)
            activate(snap)
            digest = snap.stage_digest(stage)
            report.rules[stage] = digest
            if stage == "lift":
                tasks, origin = lift_tasks(corpus, opts, digest)
                _run_stage(stage, tasks, origin, snap, cache, opts, report, inputs)
                continue
            isa = stage.split(":", 1)[1]
            searched: set[Side] = set()  # left sides (as searched) of the earlier rounds
            cut: set[Side] = set()  # of those, the ones whose deep search the budget cut
            for k in range(1, max(1, opts.rounds) + 1):
                deep_only: set[str] = set()
                if k > 1:
                    snap = take(opts.out_dir)  # with the rules the earlier rounds wrote
                    activate(snap)
                    digest = snap.stage_digest(stage)
                    prev = report.results.get(_round_label(stage, k - 1), [])
                    searched |= {_result_side(r) for r in prev if "seen" in r}
                    cut = (cut | {_result_side(r) for r in prev if _deep_cut(r, opts)}) - {
                        _result_side(r) for r in prev if "seen" in r and not _deep_cut(r, opts)}
                tasks, origin = lower_tasks(inputs[isa], isa, opts, digest)
                if k > 1:
                    # a left side whose deep search was cut is searched again, deep at once
                    tasks = _new_left_sides(tasks, searched - cut)
                    deep_only = {t.key for t in tasks if _side(_seen_or_none(t), t.uniform, t.ranges) in cut}
                label = _round_label(stage, k)
                _run_stage(stage, tasks, origin, snap, cache, opts, report, inputs, label, deep_only)
                if not report.stages[label].written:
                    break
            if opts.peephole:
                # instruction pairs of the corpus as every rule written so far lowers it (synth/peephole.py)
                snap = take(opts.out_dir)
                activate(snap)
                searched |= {_result_side(r) for r in report.results.get(label, []) if "seen" in r}
                tasks, origin = lower_tasks(inputs[isa], isa, opts, snap.stage_digest(stage), peephole=True)
                _run_stage(stage, _new_left_sides(tasks, searched), origin, snap, cache, opts, report, inputs,
                           f"{stage} peephole")
        if opts.census and opts.write and stages:
            from synth.census import census_and_drop

            activate(take(opts.out_dir))
            census_and_drop(stages, inputs, opts, report)
    report.seconds = time.perf_counter() - t_start
    return report


def _deep_cut(r: dict[str, Any], opts: Options) -> bool:
    """A first-pass result that stood for its task because the budget was spent before its deep search
    (`_two_passes`): over the first pass's budget, with a smaller budget than the task's own."""
    t = r.get("task", {})
    return (r.get("status") == "budget" and "seen" in r and opts.first_pass_terms > 0
            and t.get("max_terms", 0) <= opts.first_pass_terms < opts.max_terms and not t.get("topdown", True))


def _seen_or_none(t: Task) -> Optional[str]:
    from synth.tasks import lower_seen

    try:
        return lower_seen(t)
    except Exception:  # noqa: BLE001 - the task itself reports the error when it runs
        return None


def _round_label(stage: str, k: int) -> str:
    return stage if k == 1 else f"{stage} round {k}"


#: a left side as a round searched it: its text (`lower_seen`, a result's "seen") and the indices of
#: the variables searched as uniform (`Task.uniform`): a left side's plain task and its uniform task
#: print the same text (a uniform leaf prints as a plain variable) but are two searches
Side = tuple[str, tuple[int, ...], tuple[tuple[int, int], ...]]


def _side(seen: Optional[str], uniform: "Sequence[int]", ranges: "Sequence[Sequence[int]]") -> Side:
    """A uniform task's side holds its ranges too (`narrowed_uniform_ranges`: one left side, searched
    uniform inside the hull and inside a narrower range, is two searches); a plain task's does not."""
    return seen, tuple(uniform), tuple(tuple(r) for r in ranges) if uniform else ()  # type: ignore[return-value]


def _result_side(r: dict[str, Any]) -> Side:
    """The left side a task's result (with "seen") was searched as."""
    task = r.get("task", {})
    return _side(r["seen"], task.get("uniform", ()), task.get("ranges", ()))


def _new_left_sides(tasks: list[Task], searched: set[Side]) -> list[Task]:
    """The tasks of a later round whose left side, as searched now (children lowered by the rules the
    earlier rounds wrote), is new: one per left side and uniform set. A left side searched before is
    not searched again: the same levels are enumerated in the same order, so it finds nothing the
    earlier round did not (its bound can only be lower now). Keyed by the uniform variables too: a
    new left side's uniform task follows its plain one with the same text, and keyed by text alone it
    was dropped as already searched (x86 vpsraw / vpsllw rules by a broadcast count)."""
    from synth.tasks import lower_seen

    out: list[Task] = []
    for t in tasks:
        try:
            side = _side(lower_seen(t), t.uniform, t.ranges)
        except Exception:  # noqa: BLE001 - the task itself reports the error when it runs
            out.append(t)
            continue
        if side not in searched:
            searched.add(side)
            out.append(t)
    return out


#: the share of a later round's budget its carried deep searches (`deep_only`) may spend before the
#: round's first pass: they were cut by the round before and go first (their left sides were over the
#: first pass's budget already; by frequency they would again come after every new first pass), but
#: cannot starve the round's new left sides
CARRIED_SHARE = 0.5


def _two_passes(
    tasks: list[Task],
    origin: dict[str, tuple[set[str], int]],
    cache: Cache,
    opts: Options,
    stage: str,
    on_result: Callable[[dict[str, Any]], None],
    budget: Optional[StageBudget],
    snap: RuleSnapshot,
    deep_only: frozenset[str] | set[str] = frozenset(),
) -> tuple[int, int, int]:
    """`Options.first_pass_terms`: every task with the small budget first (no top-down search), then
    the ones over budget with their own (in `deep_order`), all charged to the stage's `budget`. The
    tasks keyed in `deep_only` (an earlier round's first pass had them over budget, and its budget cut
    their deep search) skip the first pass and go before it, in `deep_order`, with at most
    `CARRIED_SHARE` of the budget; those it leaves join the deep searches after the first pass. A
    first-pass result stands for its task unless the task ran again (its result then replaces it);
    `origin` learns the first-pass keys. Returns (cached, run: all passes summed, not run: tasks with
    no result at all)."""
    budget = budget if budget is not None else StageBudget()
    ran: set[str] = set()

    def second(r: dict[str, Any]) -> None:
        ran.add(r["key"])
        on_result(r)

    carried = deep_order([t for t in tasks if t.key in deep_only])
    tasks = [t for t in tasks if t.key not in deep_only]
    c0 = r0 = 0
    if carried:
        share = StageBudget(budget.spent + int(CARRIED_SHARE * budget.units) if budget.units > 0 else 0,
                            budget.wall_deadline, budget.spent)
        c0, r0, _ = execute(carried, cache, opts, f"{stage} (carried deep searches)", second, share, snap)
        budget.spent, budget.wall_stopped = share.spent, share.wall_stopped
    first = [replace(t, max_terms=min(t.max_terms, opts.first_pass_terms), topdown=False) for t in tasks]
    got: dict[str, dict[str, Any]] = {}
    c1, r1, n1 = execute(first, cache, opts, f"{stage} (first pass)", lambda r: got.__setitem__(r["key"], r), budget,
                         snap)
    again: list[Task] = []
    for t, f in zip(tasks, first):
        r = got.get(f.key)
        if r is None:
            continue  # not run: the budget was spent first
        if r.get("status") == "budget" and f.key != t.key:
            again.append(t)
            continue
        origin.setdefault(f.key, origin.get(t.key, (set(), 0)))
        on_result(r)
    # each deep search knows the first pass's rules: an answer they already reach is not generalized
    # (synth/tasks.py `_composite`); fixed before any deep search runs, so the same on any worker count
    prior = first_pass_texts(list(got.values())) if stage.startswith("lower:") else ()
    again = [t for t in carried if t.key not in ran] + [
        replace(t, prior=prior) for t in deep_order(again, first_pass_rules(list(got.values())))]
    c2, r2, n2 = execute(again, cache, opts, stage, second, budget, snap)
    unrun = 0
    for t in again:
        if t.key not in ran:  # not run again (the budget): the first pass's verdict stands
            f = replace(t, max_terms=min(t.max_terms, opts.first_pass_terms), topdown=False, prior=())
            if f.key not in got:  # carried from an earlier round: no result this round
                unrun += 1
                continue
            origin.setdefault(f.key, origin.get(t.key, (set(), 0)))
            on_result(got[f.key])
    return c0 + c1 + c2, r0 + r1 + r2, n1 + unrun


def root_share(task: Task, rules: Sequence[Any] = ()) -> int:
    """What a deep search can save at a lowering left side's root: the first key of its current
    lowering's cost (instructions; on arm64 issue cycles x 100, synth/cost.py) less each child's lowered
    alone, by the ISA's rules as loaded now plus `rules` (those the first pass just found: a cut around a
    node they lower cheaply has little left to gain at its root). rounding_shr(x_i32, min(y_u32, 15)):
    the generic variable rounding shift's share, not the min's; `rounding_mul_shr(x_i16, y_i16 + z_i16,
    15)` once the first pass found sqrdmulh: one instruction's."""
    from pitchfork.selection.lower import TARGET_MAX_BITS, expand_fpir
    from pitchfork.targets import load_target
    from pitchfork.trs.rewriter import Rewriter
    from pitchfork.trs.rules import RuleSet
    from synth.cost import lowering_cost
    from synth.tasks import _without

    info = load_target(task.isa)
    rw = Rewriter(RuleSet(list(_without(info.rules, task.hide).rules) + list(rules)), cost=info.cost)
    bits = TARGET_MAX_BITS.get(task.isa, 64)
    t = parse(task.lhs)
    whole = lowering_cost(expand_fpir(rw.rewrite(t), bits), task.isa)[0]
    return whole - sum(lowering_cost(expand_fpir(rw.rewrite(a), bits), task.isa)[0] for a in t.args if a.args)


def _first_pass_found(results: Sequence[dict[str, Any]]) -> Iterator[tuple[int, str]]:
    """(index of the result, rule text) of each rule a first pass found (verified, as written: `rule`),
    the results' own and their alternatives (`also`)."""
    for i, r in enumerate(results):
        for alt in [r] + list(r.get("also", [])):
            if alt.get("status") == "synthesized" and alt.get("rule"):
                yield i, alt["rule"]


def first_pass_texts(results: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The rules a first pass found, as sorted text (`Task.prior`)."""
    return tuple(sorted({text for _, text in _first_pass_found(results)}))


def first_pass_rules(results: Sequence[dict[str, Any]]) -> list[Any]:
    """The rules a first pass found, parsed; for ordering only."""
    out = []
    for i, text in _first_pass_found(results):
        try:
            out.append(parse_rule(f"first_pass_{i}: {text}", "<first pass>", 1))
        except Exception:  # noqa: BLE001 - a rule the parser does not take only orders nothing
            continue
    return out


def deep_order(again: list[Task], rules: Sequence[Any] = ()) -> list[Task]:
    """The over-budget left sides of a first pass in the order their deep searches are handed out:
    reductions first (`_fixed_point_first`), then fewer variables first, then by the instructions at
    the root (`root_share`, with the first pass's `rules`; most first), then fewer operations, then
    the first pass's order. A time limit then cuts the searches with least to gain: by frequency
    alone, arm64 `rounding_shr(x_i32, min(y_u32, 15))` (the srshl by the negated clamped amount that
    mul and softmax need, 19.5 s alone) was the 229th of 623 left sides and no deep search reached it,
    while deep searches ran on 5-node cuts around nodes their own smaller left sides cover. Variables
    first: a deep search's top-down decompositions and CEGIS rounds grow with them (arm64 at load ~20:
    `rounding_shr(x_i32, y_i32)` 31 s, `rounding_shr(rounding_mul_shr(a + b, c, 31), d)` 644 s, the
    same root share, and the whole round's deep time)."""
    shares = {t.key: root_share(t, rules) for t in again}
    pos = {t.key: i for i, t in enumerate(again)}

    def key(t: Task) -> tuple:
        lhs = parse(t.lhs)
        return (_fixed_point_first(t), len(set(lhs.variables())), -shares[t.key],
                sum(1 for x in lhs.walk() if x.args), pos[t.key])

    return sorted(again, key=key)


def _run_stage(
    stage: str,
    tasks: list[Task],
    origin: dict[str, tuple[set[str], int]],
    snap: RuleSnapshot,
    cache: Cache,
    opts: Options,
    report: RunReport,
    inputs: dict[str, dict[str, list[Term]]],
    label: Optional[str] = None,
    deep_only: frozenset[str] | set[str] = frozenset(),
) -> None:
    """One stage (or one round of a lowering stage: `label` names it in the report, the rules go to
    the stage's file)."""
    label = label or stage
    st = StageStats(seen=len(tasks))
    report.stages[label] = st
    results: list[dict[str, Any]] = []
    t0 = time.perf_counter()
    budget = stage_budget(opts)

    def on_result(r: dict[str, Any]) -> None:
        results.append(r)
        capped = r.get("status") == "budget" and str(r.get("reason", "")).startswith("work cap")
        st.outcomes["work-cap" if capped else r.get("status", "error")] += 1
        if r.get("status") == "synthesized" and (
            r.get("level") != "monomorphic" or r.get("constants") not in ("pinned", "none")
        ):
            st.generalized += 1

    if opts.first_pass_terms > 0 and stage.startswith("lower:"):
        st.cached, st.run, st.not_run = _two_passes(tasks, origin, cache, opts, stage, on_result, budget, snap,
                                                    deep_only)
    else:
        st.cached, st.run, st.not_run = execute(tasks, cache, opts, stage, on_result, budget, snap)
    st.work, st.work_budget, st.wall_stopped = budget.spent, budget.units, budget.wall_stopped
    report.results[label] = results
    st.seconds = time.perf_counter() - t0
    if not opts.write:
        return
    t0 = time.perf_counter()
    cands = []
    for r in results:
        src, count = origin.get(r["key"], (set(), 0))
        for alt in [r] + list(r.get("also", [])):  # `also`: a bounded rule beside the general one
            c = candidate_from(alt, sorted(src), count)
            if c is not None:
                cands.append(c)
    path, header = stage_path(stage, opts.out_dir)
    base = _base_rules(stage, opts.hide)
    names = {r.name for r in base}
    base += [r for r in existing_rules(path) if r.name not in names]  # the output file's own rules
    decisions = select(cands, stage.replace(":", "_").replace("-", "_"), base, _stage_cost(stage))
    decisions = _firing(stage, decisions, base, inputs, opts)
    report.decisions[label] = decisions
    for d in decisions:
        st.decisions[d.outcome] += 1
    new_rules = {d.name for d in decisions if d.outcome == "written"}
    if new_rules:  # rules of earlier runs that this run's rules subsume leave the file
        kept = base + [
            parse_rule(f"{d.name}: {d.candidate.text}", "<synthesized>", 1)
            for d in decisions if d.outcome == "written"
        ]
        subsumed = subsumed_file_rules(path, kept, _stage_cost(stage))
        report.dropped.setdefault(stage, []).extend(subsumed)
        st.decisions["dropped-from-file"] += len(subsumed)
    else:
        subsumed = []
    if new_rules or subsumed or not path.exists():
        report.written[label] = write_rules(path, decisions, header, [n for n, _ in subsumed])
    st.written = sum(1 for d in decisions if d.outcome == "written")
    report.files[stage] = path
    st.seconds += time.perf_counter() - t0
