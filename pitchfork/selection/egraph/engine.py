"""The e-graph lifting engine: equality saturation on egglog beside the greedy TRS.

`lift_egraph(term)`:

1. the input (shift constants normalised as pitchfork/lift.py does) is added to a fresh egglog
   e-graph declared from the op table (declare.py), with the rules of rules/lift/ and
   rules/egraph/algebra.rules compiled to egglog (rules.py) at the type instances the term can reach;
2. saturation runs one round at a time, a round being: the directed lifting rules (and constant
   folding) to saturation, then one step of the algebraic equivalences. This is the rule scheduling
   the sketch-guided paper (001) uses to keep growth under control: cheap, shrinking rewrites always
   run to a fixed point, the growing ones (commutativity, associativity, distributivity) one step at
   a time, and the budget (rounds, e-nodes, optionally seconds) stops the growth. A budget hit keeps
   the e-graph built so far;
3. the cheapest term is extracted by pitchfork/cost.py's node cost (extract.py);
0. the gate: greedy runs first, and when its result is already fully lifted (`needs_saturation`)
   that is the answer (no e-graph);
4. never worse than greedy: the greedy TRS runs on the extracted term (this is also where the lifting
   rules egglog cannot decide act, rules.py `greedy_only`) and on the input; the cheaper result by
   pitchfork.cost.cost wins (greedy's on a tie);
5. translation validation (validate.py): a result other than greedy's own is proved equal by Z3
   (fpir.z3enc.equivalent under the budget's rlimit): first to greedy's result with their shared
   sub-terms abstracted (small formulas), else to the input (assuming the input's flag facts).
   Anything but VALID, any egglog error or an unsupported input returns greedy's result with a
   one-line note.

Steps 1-5 run once per shape: on the input alpha-renamed (canon.py), cached, so expressions that differ
only in variable names (a pipeline's rows, tails, unrolled copies) share one saturation and one proof.

Proof on use: `lift_egraph(..., defer=True)` (selection, pitchfork/selection/lower.py) returns an e-graph
result unproved (`proof == PENDING`), and `prove(res)` proves it, once per shape, or turns it into
greedy's result with the one-line note. Selection keeps an e-graph result only if it also lowers
cheaper by the target's cost (lower.E_GRAPH_MARGIN) and calls `prove` only then: a discarded result
cannot reach the output, so it is not proved, and a process that keeps none never imports Z3 (on the
16 benchmarks most processes). Every other caller (`lift`, `pitchfork lift`, `--explain`, the variant
harness) gets a proved result from `lift_egraph`. That every extracted term equals its input, kept or
not, is what the tests check (tests/pitchfork/selection/egraph/test_extracted.py: every extracted term
of the 16 benchmarks' selection on hvx128 and of the variant suite).

Invariant: the term `lift_egraph` returns (`prove` for a deferred one) is greedy's result or a term
proved equal to the input, and its cost is never above greedy's; a deferred result is PENDING until
`prove` says which.
"""

from __future__ import annotations

import gc
import re
import threading
import time
from functools import lru_cache
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Optional, Sequence

from fpir.term import Term
from fpir.types import FPIRTypeError, ScalarType, parse_type
from pitchfork.selection.cost import cost
from pitchfork.selection.egraph.canon import canonical, rename, rename_all
from pitchfork.selection.egraph.declare import ROOT, Encoding, _type, declarations, encode, lifting_ops, parse_ctor
from pitchfork.selection.egraph.program import run_text
from pitchfork.selection.egraph.extract import extract, extract_all_with_choices, read_egraph
from pitchfork.selection.egraph import store
from pitchfork.selection.egraph.sketch import Guide, sketches
from pitchfork.selection.egraph.rules import Compiled, compile_rules, result_type_table, type_tables
from pitchfork.selection.egraph.validate import validate_result
from pitchfork.selection.egraph.view import EGraphView
from pitchfork.trs.compiled import CompiledRules
from pitchfork.trs.rewriter import Rewriter
from pitchfork.trs.rules import RuleSet, load_rule_file

ALGEBRA_FILE = Path(__file__).resolve().parents[3] / "rules" / "egraph" / "algebra.rules"
BOUNDED_FILE = ALGEBRA_FILE.with_name("bounded.rules")

#: the rule set the lifting pass applies on e-nodes, per lifting rule set (kept alive beside it)
_PASS_RULES: dict[int, tuple[RuleSet, RuleSet]] = {}


def pass_rules(lift_rs: RuleSet) -> RuleSet:
    """The lifting rules plus rules/egraph/bounded.rules (range-dependent equivalences). Its matchers
    share the lifting rule set's compiled ones (`_SharedRows`)."""
    hit = _PASS_RULES.get(id(lift_rs))
    if hit is None or hit[0] is not lift_rs:
        rs = RuleSet(list(lift_rs.rules) + load_rule_file(BOUNDED_FILE))
        rs.__dict__["_compiled"] = _SharedRows(rs.index, lift_rs.compiled())
        hit = (lift_rs, rs)
        _PASS_RULES[id(lift_rs)] = hit
    return hit[1]


class _SharedRows(CompiledRules):
    """The pass rule set's compiled rules (RuleSet.compiled), built from the lifting rule set's: the
    pass rule set's index lists, per op, the lifting rule set's entries (the same rule and pattern
    objects, in the same order) followed by bounded.rules' own, so an op's rows are the lifting rule
    set's rows (compiled once for both: each compile is ~1 ms per op, and the greedy TRS compiles
    them anyway) plus the bounded rules' rows compiled here. Rows are a pure function of their (rule,
    pattern) entries, so the matches are those of compiling every row here."""

    def __init__(self, index: dict[str, list], base: CompiledRules) -> None:
        super().__init__(index)
        self._base = base

    def _op_rows(self, op: str) -> list:
        rows = self._by_op.get(op)
        if rows is not None:
            return rows
        mine, theirs = self.index.get(op, ()), self._base.index.get(op, ())
        if len(theirs) > len(mine) or any(a[0] is not b[0] or a[1] is not b[1] for a, b in zip(mine, theirs)):
            return super()._op_rows(op)  # not a prefix (never for pass_rules' index): compiled here
        shared = self._base._op_rows(op)
        own = CompiledRules({op: list(mine[len(theirs):])})._op_rows(op)
        rows = self._by_op[op] = shared + own
        return rows


@dataclass(frozen=True)
class Budget:
    """Limits of one saturation: rounds, e-nodes (checked after each round), and optionally wall
    seconds (for interactive use only: tests and measurements use rounds and nodes, which do not
    depend on machine load)."""

    rounds: int = 5  # add and softmax written as a difference of two products by 97088 (1482880) take five
    nodes: int = 5_000
    seconds: Optional[float] = None
    lifts: Optional[int] = None  # e-nodes the lifting pass may lift per round (None: all)
    gate: bool = True  # skip saturation when greedy's result is fully lifted (needs_saturation)
    guided: bool = True  # the lifting pass also follows the lifting rules' sketches (sketch.py)
    # the first lifting pass (before any algebra) replaced by greedy's own lifting of the input's
    # sub-terms, unioned in: the same lifted terms for e-nodes over the input's own children, without
    # the bounded rules and sketches (which the pass after the first round still applies)
    seed: bool = False
    rlimit: int = 60_000_000  # Z3 resource limit of the translation validation (fpir.z3enc.DEFAULT_RLIMIT)
    # keep each shape's outcome in the on-disk store (store.py) and look it up before saturating
    persist: bool = False
    # shapes saturated one after another in one egglog (push)/(pop) scope (`_saturate_here`): a push
    # and a pop cost egglog ~8 ms whatever the e-graph, about half of a small shape's saturation
    scope: int = 1


#: the budget of selection (`select --engine egraph`, pitchfork.compile(engine="egraph")): whole
#: programs have hundreds of expressions, so fewer rounds and e-nodes than a single `lift`, and a
#: smaller Z3 resource limit for the translation validation (a proof that does not finish within it
#: keeps greedy's result). One round: on the 16 benchmarks a second round found no result the first
#: did not (8 e-graph results either way on the 137 expressions of add, mul, l2norm, softmax,
#: camera_pipe, gaussian3x3/5x5/7x7, sobel3x3) and took 1.8x the e-graph's time (measured side by
#: side in one process, load ~13). Unguided (no sketches): the sketch-following part of the lifting
#: pass is ~14% of a saturation's CPU, and on the 16 benchmarks it changes no result on any ISA; what
#: selection gives up is the rounding constant folded into a sum three bench_keys spellings of
#: gaussian3x3 write (`u8((u16(a) + u16(b) * 2 + 2) >> 2)`), which `lift` (Budget()) still finds
#: Two shapes per egglog scope (`Budget.scope`): the second shares the first's scope, where it meets
#: only the first's constants, and the first's newest e-nodes get one more algebra step (on the 16
#: benchmarks no result changed; a third shape per scope costs more than the pop it saves)
SELECTION_BUDGET = Budget(rounds=1, nodes=1_500, lifts=300, rlimit=1_000_000, seed=True, persist=True, guided=False,
                          scope=2)


@dataclass
class EgraphResult:
    term: Term
    source: str  # "egraph" | "greedy"
    note: str = ""
    rounds: int = 0
    nodes: int = 0
    saturated: bool = False
    fired: Counter = field(default_factory=Counter)  # algebra rule name -> matches
    # lifting rules fired: on e-nodes and on the extracted term (source "egraph"), else greedy's own
    greedy_fired: Counter = field(default_factory=Counter)
    lift_unions: int = 0
    rule_set: Optional[RuleSet] = field(default=None, repr=False)
    extracted: Optional[Term] = None
    greedy_term: Optional[Term] = None
    seconds: float = 0.0
    # how the result was proved (validate.py): "exhaustive", "shared", "full"; PENDING until `prove`
    # (defer=True); "unchecked" with check=False; "" when greedy's
    proof: str = ""
    stored: bool = False  # the shape's outcome came from the on-disk store (store.py), not a saturation
    claim: Optional["_Claim"] = field(default=None, repr=False, compare=False)  # what `prove` needs (PENDING only)


#: EgraphResult.proof of an e-graph result not proved yet (lift_egraph(defer=True); `prove` proves it)
PENDING = "pending"


@dataclass(frozen=True)
class _Claim:
    """What proving a PENDING result needs: the caches' keys, the call's arguments (to saturate afresh
    when a stored result fails), and the shape's canonical input, result and greedy result (the proof
    is made on these, once per shape), and greedy's fired rules (the result's if the proof fails)."""

    result_key: tuple
    shape_key: tuple
    term: Term
    rule_set: RuleSet
    budget: "Budget"
    check: bool
    canon: Term
    result: Term
    greedy: Term
    greedy_fired: Counter


@lru_cache(maxsize=1)
def _algebra() -> Compiled:
    return compile_rules(load_rule_file(ALGEBRA_FILE), "algebra")


@lru_cache(maxsize=1)
def _declared() -> frozenset[str]:
    """The ops the prelude declares: those of the op table when it was first built. Ops registered
    later (a reduction by a factor first met in a pipeline, vector_reduce_add_x32) are opaque leaves."""
    return frozenset(lifting_ops())


@lru_cache(maxsize=1)
def _prelude() -> str:
    """Declarations, type tables and the algebra rules: the program every e-graph starts from. Kept on
    disk beside the other rule caches (store.prelude_path: compiling the rule files to egglog text is
    most of building it, ~20 ms a process); a stored text is exactly what `_build_prelude` returns."""
    path = store.prelude_path(_declared())
    text = store.load_text(path)
    if text is None:
        text = _build_prelude()
        store.save_text(path, text)
    return text


def _build_prelude() -> str:
    alg = _algebra()
    if alg.unsupported:
        raise ValueError(f"{ALGEBRA_FILE}: rules outside the compiled subset: {alg.unsupported}")
    folding = "\n".join(c.replace(":ruleset algebra", ":ruleset fold") for n, c in alg.commands if n.startswith("fold_"))
    growing = "\n".join(c for n, c in alg.commands if not n.startswith("fold_"))
    tables = "".join(result_type_table(op) for op in alg.tables)
    return declarations(sorted(_declared())) + type_tables() + tables + "(ruleset algebra)\n(ruleset fold)\n" + folding + "\n" \
        + growing + "\n"


_ROUND = "(run-schedule (saturate (seq (saturate (run types)) (run fold))) (run algebra) (saturate (run types)))"
_CLOSE = "(run-schedule (saturate (seq (saturate (run types)) (run fold))))"


def _parsed(eg: Any, text: str) -> list:
    """egglog commands of `text`, parsed once per e-graph (schedules are run every round)."""
    cache = getattr(_LOCAL, "parsed", None)
    if cache is None or cache[0] is not eg:
        cache = _LOCAL.parsed = (eg, {})
    got = cache[1].get(text)
    if got is None:
        got = cache[1][text] = eg.parse_program(text)
    return got


def _count(sizes: Any) -> int:
    """E-nodes in a `(print-size)` output."""
    return sum(n for name, n in sizes.sizes if name.startswith("op_") or name in ("Const", "Leaf"))


def _lift_pass(classes: dict, enc: Encoding, rw: Rewriter, seen: set, res: EgraphResult,
               limit: Optional[int] = None, guided: bool = True) -> list[str]:
    """Greedy lifting of every e-node (over its children's cheapest terms), as egglog commands that
    union each lifted term with its e-node: the lifting rules act on the e-graph through the greedy
    TRS, with its own matcher, predicates and bounds. With `guided`, each e-node is also lifted over
    the children's terms that follow the lifting rules' left sides (sketch.py), where those differ
    from the cheapest. An e-node over the same child terms as in an earlier pass is not lifted again,
    and a lifted term that is its e-class's cheapest term already is not unioned (a no-op). The
    caller runs the commands with its next ones (each run_program call costs egglog a few
    milliseconds however small)."""
    best_nodes, best = extract_all_with_choices(classes, enc, fold=False)
    guide = Guide(classes, best_nodes, best, enc) if guided else None
    sk = sketches(rw.rules) if guided else {}
    compiled = rw.rules.compiled()
    unions: list[str] = []
    cap = None if limit is None else limit * (res.rounds + 1)  # `limit` new e-nodes per round
    rooted: dict[tuple[str, str], tuple[str, bool]] = {}  # (ctor, type) -> (op, a rule has it at its root)
    for c, n in ((c, n) for c, nodes in classes.items() for n in nodes):
        if cap is not None and len(seen) >= cap:
            res.note = res.note or f"lifting pass limited to {limit} e-nodes per round"
            break
        if not n.children or any(ch not in best for ch in n.children):
            continue
        default = tuple(best[ch] for ch in n.children)
        got = rooted.get((n.ctor, n.tname))
        if got is None:
            op = parse_ctor(n.ctor)[0]
            got = rooted[(n.ctor, n.tname)] = (op, bool(compiled.candidates(op, _type(n.tname))))
        op = got[0]
        if not got[1] and not all(a.is_const for a in default):
            # no lifting rule has this op and type at its root: lifting the node only lifts its
            # children, whose cheapest terms' liftings this pass unions into their own classes, so
            # the node over them is in this class already (congruence). (Over constants alone the
            # rebuilt node may fold, which egglog's fold rules do not all cover: lifted anyway.)
            continue
        choices = [default]
        if guide is not None:
            for s in sk.get(op, ()):
                alt = guide.children_for(n, s)
                if alt is not None and alt not in choices:
                    choices.append(alt)
        for args in choices:
            key = (n.ctor, n.tname, args)
            if key in seen:
                continue
            seen.add(key)
            try:
                t = enc.decode_node(n.ctor, n.tname, list(args), n.payload, fold=False)
            except FPIRTypeError:
                continue
            if args is default:
                lifted = rw.rewrite(t)
            else:
                # a guided term is matched at its root as it stands: rewriting it bottom-up would
                # first re-lift its children back to their cheapest forms (the sketch undone)
                step = rw._best(t)
                lifted = t if step is None else rw.rewrite(step)
            # a lifting that is already its class's cheapest term (greedy's own lifting, from the seed
            # or an earlier pass) is in the class: its union would be a no-op for egglog, and binding
            # it re-sends every node of it (on the 16 benchmarks 60% of the pass's actions)
            if lifted is not t and lifted is not best.get(c):
                a = enc.bind(t, unions)
                unions.append(f"(union {a} {enc.bind(lifted, unions)})")
    return unions


_LOCAL = threading.local()


def _bindings() -> Any:
    """egglog's compiled module `egglog.bindings` (the program-text API this engine uses), loaded
    without running the `egglog` package's __init__, which imports its high-level Python API
    (black, opentelemetry, ...: 0.3-0.7 s of every process's first lift, for nothing we use). If the
    package is already imported, its module is used; importing the package later finds this one."""
    import sys

    mod = sys.modules.get("egglog.bindings")
    if mod is not None:
        return mod
    import importlib.machinery
    import importlib.util

    pkg = importlib.util.find_spec("egglog")  # locates the package without executing it
    if pkg is None or not pkg.submodule_search_locations:
        raise ImportError("egglog is not installed (pip install egglog)")
    for folder in pkg.submodule_search_locations:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / f"bindings{suffix}"
            if path.exists():
                loader = importlib.machinery.ExtensionFileLoader("egglog.bindings", str(path))
                spec = importlib.util.spec_from_file_location("egglog.bindings", path, loader=loader)
                assert spec is not None
                mod = importlib.util.module_from_spec(spec)
                loader.exec_module(mod)
                sys.modules["egglog.bindings"] = mod
                return mod
    raise ImportError(f"egglog.bindings not found in {list(pkg.submodule_search_locations)}")


def _session() -> tuple[object, list, list]:
    """The egglog thread's e-graph holding the prelude (declarations, type tables, algebra rules: adding
    them costs egglog far more than a saturation), with parsed `(push)` / `(pop)` commands: each lift
    works between a push and a pop (`Budget.scope` lifts share one), so it starts from the prelude and
    at most its scope's earlier shapes."""
    got = getattr(_LOCAL, "session", None)
    if got is None:
        eg = _bindings().EGraph()
        run_text(eg, _prelude())
        got = (eg, eg.parse_program("(push)"), eg.parse_program("(pop)"))
        _LOCAL.session = got
    return got


#: memo entries a pass rewriter keeps before it starts afresh
_MEMO_LIMIT = 200_000


@lru_cache(maxsize=1)
def _bounded_roots() -> Optional[frozenset[str]]:
    """The root ops of rules/egraph/bounded.rules' left sides (None if one has no op at its root)."""
    from pitchfork.trs.pattern import PApp

    rules = load_rule_file(BOUNDED_FILE)
    if any(not isinstance(p, PApp) for r in rules for p in r.patterns):
        return None
    return frozenset(op for r in rules for op in r.root_ops)


def _mark_fixed(rw: Rewriter, fixed: Sequence[Term]) -> None:
    """Record in the pass rewriter's memo, as their own liftings, the terms of `fixed` (and their
    sub-terms) that no rule of bounded.rules can match at any node: exactly what rewriting them would
    give. Each term of `fixed` is a fixed point of the greedy TRS (every node of it was tried against
    every lifting rule and none lowered the cost; variable names, which canon.py renames, decide no
    match, predicate or cost), and the pass rewriter's rules are the lifting rules plus bounded.rules;
    so where no bounded rule can match, the pass would try the same rules on the same nodes and find
    nothing either. The lifting pass then lifts an e-node over the input's own lifted children without
    lifting those children again (with a seed, most of the pass's rewriting was that)."""
    roots = _bounded_roots()
    if roots is None or not fixed:
        return
    memo = rw._memo
    free: dict[Term, bool] = {}
    for top in fixed:
        for x in top.walk():  # post-order: children first
            if x in free:
                continue
            ok = free[x] = x.op not in roots and all(free[a] for a in x.args)
            if ok and x.args:
                memo.setdefault(x, x)


def _pass_rewriter(lift_rs: RuleSet) -> Rewriter:
    """This thread's rewriter of the lifting pass for `lift_rs`, kept across lifts: terms are
    interned, so its memo (term -> lifted term) stays valid and the sub-terms the expressions of one
    program share are lifted once."""
    cache = getattr(_LOCAL, "rewriters", None)
    if cache is None:
        cache = _LOCAL.rewriters = {}
    hit = cache.get(id(lift_rs))
    if hit is None or hit[0] is not lift_rs or len(hit[1]._memo) > _MEMO_LIMIT:
        hit = cache[id(lift_rs)] = (lift_rs, Rewriter(pass_rules(lift_rs)))
    return hit[1]


class EgglogError(RuntimeError):
    """An error raised while saturating (egglog's, or ours on the egglog thread), as text."""


class _EgglogThread:
    """The one thread that runs egglog. An egglog EGraph may only be used by the thread that made it
    (pyo3 `unsendable`), and building the prelude costs about a second, while pitchfork.compile runs
    each pipeline's frontend in a thread of its own (pitchfork/frontend/deep.py): so saturations are
    handed to this long-lived thread, whose prelude e-graph (`_session`) serves every compile of the
    process. Calls are serialised (one e-graph)."""

    STACK_BYTES = 256 * 1024 * 1024  # as deep as the frontend's own thread allows the terms to be

    def __init__(self) -> None:
        import queue

        self.jobs: queue.Queue = queue.Queue()
        old = threading.stack_size()
        try:
            threading.stack_size(max(old, self.STACK_BYTES))
            self.thread = threading.Thread(target=self._serve, name="pitchfork-egglog", daemon=True)
            self.thread.start()
        finally:
            threading.stack_size(old)

    def _serve(self) -> None:
        while True:
            job = self.jobs.get()
            if job is None:  # process exit: egglog objects must be dropped by this thread
                _LOCAL.__dict__.clear()
                return
            fn, args, box, done = job
            try:
                box.append((True, fn(*args)))
            except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
                # a new exception: this one's traceback holds frames with egglog objects, which
                # must not be freed by another thread
                box.append((False, EgglogError(f"{type(e).__name__}: {e}" if str(e) else type(e).__name__)))
                del e
            done.set()

    def call(self, fn: Any, *args: Any) -> Any:
        if threading.current_thread() is self.thread:
            return fn(*args)
        box: list = []
        done = threading.Event()
        self.jobs.put((fn, args, box, done))
        done.wait()
        ok, value = box[0]
        if not ok:
            raise value
        return value


    def stop(self) -> None:
        self.jobs.put(None)
        self.thread.join()


_WORKER: Optional[_EgglogThread] = None
_WORKER_LOCK = threading.Lock()


def _stop_worker() -> None:
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is not None:
            _WORKER.stop()
            _WORKER = None


def saturate(term: Term, lift_rs: RuleSet, budget: Budget,
             seed: Optional[list[tuple[Term, Term]]] = None, capture: Optional[list] = None,
             fixed: Sequence[Term] = ()) -> tuple[Term, EgraphResult]:
    """Steps 1-3 (on the egglog thread): the extracted term and the run's statistics (raises on any
    egglog error; the e-graph is then dropped and rebuilt on the next call). With `capture` (a list),
    the final e-graph is appended to it as an explain.EGraphView (for `--explain`). `fixed`: terms the
    greedy TRS left as they are (`known_fixed`), which the lifting pass need not lift again."""
    global _WORKER
    with _WORKER_LOCK:
        if _WORKER is None:
            import atexit

            _WORKER = _EgglogThread()
            atexit.register(_stop_worker)
    return _WORKER.call(_saturate_here, term, lift_rs, budget, seed, capture, fixed)


def _saturate_here(term: Term, lift_rs: RuleSet, budget: Budget,
                   seed: Optional[list[tuple[Term, Term]]] = None, capture: Optional[list] = None,
                   fixed: Sequence[Term] = ()) -> tuple[Term, EgraphResult]:
    eg, push, pop = _session()
    # the open scope: (budget, shapes saturated in it), or None. A shape joins it while it holds fewer
    # than budget.scope shapes of the same budget; otherwise it is closed and a new one opened.
    # Shapes in one scope share no leaf (declare.py LEAF_STRIDE) and each finds its own root (`Root`
    # = its index), so one meets another's e-classes only through constants, which are the same
    # values in both
    open_ = getattr(_LOCAL, "scope", None)
    if open_ is not None and (open_[0] != budget or open_[1] >= budget.scope or capture is not None):
        eg.run_program(*pop)  # type: ignore[attr-defined]
        open_ = _LOCAL.scope = None
    if open_ is None:
        eg.run_program(*push)  # type: ignore[attr-defined]
        open_ = (budget, 0)
    key = open_[1]
    try:
        out = _saturate(eg, term, lift_rs, budget, seed, capture, fixed, key)
    except BaseException:
        _LOCAL.session = _LOCAL.scope = None
        raise
    if key + 1 >= budget.scope or capture is not None:
        eg.run_program(*pop)  # type: ignore[attr-defined]
        _LOCAL.scope = None
    else:
        _LOCAL.scope = (budget, key + 1)
    return out


def _reachable(classes: dict, root: Any) -> dict:
    """The e-classes of `classes` reachable from `root` (the shape's own, in a shared scope)."""
    seen = {root}
    stack = [root]
    while stack:
        for n in classes.get(stack.pop(), ()):
            for ch in n.children:
                if ch not in seen:
                    seen.add(ch)
                    stack.append(ch)
    return {c: ns for c, ns in classes.items() if c in seen}


def _read(eg: Any, key: int) -> tuple[dict, Any]:
    """The e-graph's classes (extract.read_egraph) and the root class of the shape `key` of the
    scope; in a scope holding earlier shapes, only the classes reachable from the root."""
    frozen = eg.freeze()
    classes = read_egraph(eg, frozen)
    root = next(r.inputs[0] for r in frozen.functions[ROOT].rows if eg.value_to_i64(r.output) == key)
    return (_reachable(classes, root) if key else classes), root


def _saturate(eg: Any, term: Term, lift_rs: RuleSet, budget: Budget,
              seed: Optional[list[tuple[Term, Term]]] = None, capture: Optional[list] = None,
              fixed: Sequence[Term] = (), key: int = 0) -> tuple[Term, EgraphResult]:
    enc = encode(term, _declared(), key=key)
    res = EgraphResult(term, "egraph")
    rw = _pass_rewriter(lift_rs)
    _mark_fixed(rw, fixed)
    fired_before = Counter(rw.stats.fired)
    seen: set = set()
    t0 = time.perf_counter()
    rnd, close, size = _parsed(eg, _ROUND), _parsed(eg, _CLOSE), _parsed(eg, "(print-size)")
    program = enc.program()
    batches = key * 1_000_000  # batch rule names are unique within the scope
    # e-nodes of the scope's earlier shapes (the node budget counts this shape's own)
    before = _count(eg.run_program(*size)[0]) if key else 0

    def batch(actions: list[str]) -> str:
        """`actions` as one egglog command (declare.py Encoding.batch), as text (program.run_text)."""
        nonlocal batches
        batches += 1
        return enc.batch(actions, batches) if actions else ""

    if seed is not None:  # greedy's lifting of the input's sub-terms (Budget.seed)
        pending = []
        for t, lifted in seed:
            a = enc.bind(t, pending)
            pending.append(f"(union {a} {enc.bind(lifted, pending)})")
    else:
        run_text(eg, batch(program), *close)
        program = []
        pending = _lift_pass(_read(eg, key)[0], enc, rw, seen, res, budget.lifts, budget.guided)
    for r in range(budget.rounds):
        res.lift_unions += sum(1 for u in pending if u.startswith("(union"))
        # with a seed, nothing is read before the first round: the input's actions join its batch
        new = batch(program + pending)
        program = []
        out = run_text(eg, new, *rnd, *close, *size)
        # the reports of the batch's run (if any), the round and the closing schedule, in order
        report = [o.report for o in out if hasattr(o, "report")][1 if new else 0]
        res.fired.update({k: v for k, v in report.num_matches_per_rule.items() if v and not k.startswith("(")})
        res.rounds = r + 1
        res.nodes = _count(next(o for o in out if hasattr(o, "sizes"))) - before
        pending = _lift_pass(_read(eg, key)[0], enc, rw, seen, res, budget.lifts, budget.guided)
        if not report.updated and not pending:
            res.saturated = True
            break
        if res.nodes > budget.nodes:
            res.note = f"e-graph node budget ({budget.nodes}) hit after {res.rounds} rounds"
            break
        if budget.seconds is not None and time.perf_counter() - t0 > budget.seconds:
            res.note = f"time budget ({budget.seconds} s) hit after {res.rounds} rounds"
            break
    else:
        res.note = f"round budget ({budget.rounds}) hit"
    res.greedy_fired.update(Counter(rw.stats.fired) - fired_before)
    if pending:  # the last pass's lifted terms join the e-graph before extraction
        res.lift_unions += sum(1 for u in pending if u.startswith("(union"))
        run_text(eg, batch(pending), *close)
    classes, root_value = _read(eg, key)
    if capture is not None:
        capture.append(EGraphView.of(classes, root_value, enc))
    return extract(eg, root_value, enc, classes), res


#: results per (term, rule set, budget): terms are interned, and a compiled pipeline selects the same
#: expression in several loops (vector body, tails); bounded, oldest dropped first
_RESULTS: dict[tuple, EgraphResult] = {}
_RESULTS_MAX = 4096


def lift_egraph(term: Term, lift_rs: Optional[RuleSet] = None, budget: Budget = Budget(),
                check: bool = True, defer: bool = False) -> EgraphResult:
    """Lift `term` with the e-graph engine (see the module docstring); never worse than greedy. With
    `defer`, an e-graph result comes back unproved (`proof == PENDING`): the caller must pass it through
    `prove` before using its term (selection does, for the results it keeps)."""
    from pitchfork.selection.greedy import lift_rules

    rs = lift_rs if lift_rs is not None else lift_rules()
    key = (term, id(rs), budget, check)
    hit = _RESULTS.get(key)
    if hit is not None and hit.rule_set is rs:
        return hit if defer else prove(hit)
    # Python's cyclic collector is paused while lifting, as pitchfork/trs/rewriter.py pauses it while
    # rewriting: reading e-graphs out and extracting allocate many short-lived acyclic objects, and each
    # full collection they trigger rescans every interned term made so far (on hvx128, single
    # expressions of gaussian3x3 or add took ~1 s when a collection fell on them). Re-enabled on the
    # way out only if it was on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        res = _lift_egraph(term, rs, budget, check)
    finally:
        if collecting:
            gc.enable()
    res.rule_set = rs
    if len(_RESULTS) >= _RESULTS_MAX:
        del _RESULTS[next(iter(_RESULTS))]
    _RESULTS[key] = res
    return res if defer else prove(res)


#: proofs of shapes' results: (canonical input, result, greedy result, rlimit) -> validate_result's
#: (reason, how); bounded like the other caches
_PROOFS: dict[tuple, tuple[str, str]] = {}


def prove(res: EgraphResult) -> EgraphResult:
    """`res` with its e-graph result proved (validate.py, once per shape), or, when no proof holds,
    greedy's result with the reason in a one-line note; a result that is not PENDING as it is. A stored
    result (store.py) whose proof fails is dropped from the store and the shape saturated afresh, as
    `_stored_shape` did when it proved on load. The answer replaces `res` in the results cache."""
    c = res.claim
    if c is None or res.proof != PENDING:
        return res
    pkey = (c.canon, c.result, c.greedy, c.budget.rlimit)
    got = _PROOFS.get(pkey)
    if got is None:
        if len(_PROOFS) >= _RESULTS_MAX:
            del _PROOFS[next(iter(_PROOFS))]
        got = _PROOFS[pkey] = validate_result(c.canon, c.result, c.greedy, c.budget.rlimit)
    why, how = got
    hit = _SHAPES.get(c.shape_key)
    shape = hit[1] if hit is not None and hit[0] is c.rule_set else None
    path = store.entry_path(c.canon, c.rule_set, c.budget, c.check, _declared()) if c.budget.persist else None
    if not why:
        out = replace(res, proof=how, claim=None)
        if shape is not None and shape.proof == PENDING:  # later expressions of the shape: proved already
            _SHAPES[c.shape_key] = (c.rule_set, replace(shape, proof=how))
    elif res.stored:
        # a disk is not trusted with a proof: the entry is dropped and the shape saturated afresh
        _SHAPES.pop(c.shape_key, None)
        _PROOFS.pop(pkey, None)
        store.drop(path)
        _RESULTS.pop(c.result_key, None)
        return lift_egraph(c.term, c.rule_set, c.budget, c.check)
    else:
        note = "; ".join(x for x in (res.note, why + "; greedy result") if x)
        out = replace(res, term=res.greedy_term, source="greedy", greedy_fired=c.greedy_fired, note=note,
                      proof="", claim=None)
        if shape is not None:  # the shape's outcome is greedy's from now on, in this process and the store
            failed = replace(shape, term=shape.greedy_term, source="greedy", proof="",
                             note="; ".join(x for x in (shape.note, why + "; greedy result") if x))
            _SHAPES[c.shape_key] = (c.rule_set, failed)
            if c.budget.seconds is None:
                store.save(path, failed)
    if _RESULTS.get(c.result_key) is res:
        _RESULTS[c.result_key] = out
    return out


#: primitive arithmetic: a node of one of these over a computed operand is not fully lifted
_ARITH = frozenset({"add", "sub", "mul", "div", "mod", "shl", "shr", "min", "max", "abs", "select", "and", "or",
                    "xor", "not"})


def needs_saturation(lifted: Term) -> bool:
    """The gate in front of the e-graph: False when greedy's result is already fully lifted, i.e. no
    primitive arithmetic node takes a computed (non-leaf) operand without also taking a variable,
    and no FPIR instruction takes a constant 0 or 1 or, for the value-combining ones, any constant
    (which the equivalences might fold or move). Such a result has nothing the equivalences could
    re-associate into another instruction, so saturation is skipped (on the 16 benchmarks it skips
    most expressions). A primitive node over a variable (a runtime clamp `max(min(x, lo), hi)`, an
    accumulation `acc + p`, a division by a runtime value) was matched against every lifting rule
    with that variable as it is; the equivalences could only move other computed operands around
    it, and that needs another primitive node over computed operands alone, which this gate does
    count."""
    from fpir.opspec import spec

    amounts = ("widening_shl", "widening_shr", "rounding_shr", "rounding_shl", "mul_shr", "rounding_mul_shr",
               "saturating_shl")
    for x in lifted.walk():
        if not x.args:
            continue
        if x.op in _ARITH and any(a.args for a in x.args) and not any(a.is_var for a in x.args):
            return True
        if spec(x.op).kind == "fpir" and any(a.is_const and (a.value in (0, 1) or x.op not in amounts)
                                            for a in x.args):
            return True
    return False


#: saturation results per canonical (alpha-renamed, canon.py) input, rule set and budget: expressions
#: of one shape (a pipeline's rows, tails, unrolled copies) are saturated and proved once; bounded
_SHAPES: dict[tuple, tuple[RuleSet, EgraphResult]] = {}


def _lift_egraph(term: Term, rs: RuleSet, budget: Budget, check: bool) -> EgraphResult:
    from pitchfork.selection.greedy import lifter, normalize_shift_constants

    t0 = time.perf_counter()
    norm = normalize_shift_constants(term)
    lw = lifter(rs)
    greedy_in = lw.rewrite(norm)
    if budget.gate and not needs_saturation(greedy_in):
        return EgraphResult(greedy_in, "greedy", note="greedy result fully lifted (no saturation)",
                            greedy_fired=lw.stats.fired, greedy_term=greedy_in, seconds=time.perf_counter() - t0)
    canon, back = canonical(norm)
    key = (canon, id(rs), budget, check)
    hit = _SHAPES.get(key)
    if hit is None or hit[0] is not rs:
        if len(_SHAPES) >= _RESULTS_MAX:
            del _SHAPES[next(iter(_SHAPES))]
        forward = {v: k for k, v in back.items()}
        greedy_canon = rename(greedy_in, forward)
        path = store.entry_path(canon, rs, budget, check, _declared()) if budget.persist else None
        shape = _stored_shape(path, greedy_canon, check)
        if shape is None:
            seed, fixed = None, []
            if budget.seed:  # greedy's lifting of every sub-term of the input, from its memo, renamed
                memo = lw._memo
                pairs = [(t, memo[t]) for t in norm.walk() if t.args and memo.get(t, t) is not t]
                kept = [t for t, r in memo.items() if r is t and t.args]
                renamed = rename_all([x for p in pairs for x in p] + kept, forward)
                seed = list(zip(renamed[0:2 * len(pairs):2], renamed[1:2 * len(pairs):2]))
                fixed = renamed[2 * len(pairs):]
            shape = _saturate_shape(canon, greedy_canon, rs, budget, check, seed, fixed)
            if budget.seconds is None and not shape.note.startswith("egraph engine failed"):
                store.save(path, shape)
        _SHAPES[key] = hit = (rs, shape)
    else:
        shape = replace(hit[1], note="; ".join(x for x in ("same shape as an earlier expression", hit[1].note) if x))
    res = replace(shape, extracted=None if shape.extracted is None else rename(shape.extracted, back),
                  greedy_term=greedy_in, term=greedy_in, source="greedy", greedy_fired=lw.stats.fired)
    if shape.source == "egraph":
        # equal to the canonical input once proved (`prove`), so its renaming equals `norm`; never
        # worse than greedy
        cand = rename(shape.term, back)
        if cost(cand) < cost(greedy_in):
            res.term, res.source, res.greedy_fired = cand, "egraph", shape.greedy_fired
            if shape.proof == PENDING:
                assert shape.greedy_term is not None
                res.claim = _Claim((term, id(rs), budget, check), key, term, rs, budget, check, canon, shape.term,
                                   shape.greedy_term, lw.stats.fired)
        else:
            res.proof = ""
    res.seconds = time.perf_counter() - t0
    return res


def _stored_shape(path: Optional[Path], greedy_canon: Term, check: bool) -> Optional[EgraphResult]:
    """The shape's outcome from the on-disk store (store.py), or None. A stored e-graph result is used
    only if it is still cheaper than greedy's, and it is PENDING whatever the entry says (a disk is not
    trusted with a proof): `prove` proves it again, and if that fails the entry is dropped and the
    shape saturated afresh."""
    fields = store.load(path)
    if fields is None or fields["greedy_term"] is not greedy_canon:
        return None
    res = EgraphResult(**store.counters(fields), stored=True)
    if res.source == "egraph":
        if not cost(res.term) < cost(greedy_canon):
            return None
        res.proof = PENDING if check else "unchecked"
    return res


def _saturate_shape(term: Term, greedy_in: Term, rs: RuleSet, budget: Budget, check: bool,
                    seed: Optional[list[tuple[Term, Term]]] = None, fixed: Sequence[Term] = ()) -> EgraphResult:
    """Steps 1-4 of the module docstring on one (canonical) input, whose greedy lifting is `greedy_in`:
    the e-graph's result when it is cheaper than greedy's, PENDING its proof (step 5, `prove`; with
    `check` False "unchecked"), else greedy's with the reason in `note`. `seed` (Budget.seed): greedy's lifting of the input's
    sub-terms, (sub-term, lifted) pairs, which the caller's greedy run already computed. `greedy_in`
    is the greedy TRS's result (so a fixed point of it)."""
    from pitchfork.selection.greedy import lift_with_stats, normalize_shift_constants

    try:
        extracted, res = saturate(term, rs, budget, seed, fixed=fixed)
    except Exception as e:  # egglog errors, unsupported input: greedy's answer, said in one line
        msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        return EgraphResult(greedy_in, "greedy", note=f"egraph engine failed ({msg[:160]}); greedy result",
                            greedy_term=greedy_in)
    if extracted is greedy_in and normalize_shift_constants(extracted) is extracted:
        # the extraction is greedy's own result (25 of hvx128's 27 shapes): a fixed point of the
        # greedy TRS, which would leave it as it is and fire nothing
        greedy_e = extracted
    else:
        greedy_e, stats = lift_with_stats(extracted, rs)
        res.greedy_fired.update(stats.fired)
    res.extracted, res.greedy_term = extracted, greedy_in
    res.term, res.source = greedy_in, "greedy"
    if cost(greedy_e) < cost(greedy_in):
        res.term, res.source, res.proof = greedy_e, "egraph", PENDING if check else "unchecked"
    return res


def explain(res: EgraphResult) -> list[str]:
    """Which equivalences and rules led to the result: the algebra rules that fired during saturation
    (with their match counts) and the lifting rules the greedy TRS fired on e-nodes and on the
    extracted term: the set of rules that acted (with counts). The ordered derivation of the result
    is explain.py's `explain_derivation` (`--explain` prints both)."""
    from fpir.printer import to_text

    lines = [f"engine: {res.source}" + (f" ({res.note})" if res.note else ""),
             f"saturation: {res.rounds} rounds, {res.nodes} e-nodes, {res.lift_unions} lifted e-nodes unioned"
             + (", saturated" if res.saturated else "")]
    if res.extracted is not None:
        lines.append(f"extracted: {to_text(res.extracted)}")
    if res.fired:
        lines.append("equivalences (rules/egraph/algebra.rules): "
                     + ", ".join(f"{k} x{v}" for k, v in res.fired.most_common()))
    if res.greedy_fired:
        lines.append("lifting rules: " + ", ".join(f"{k} x{v}" for k, v in res.greedy_fired.most_common()))
    lines.append(f"result: {to_text(res.term)}")
    return lines
