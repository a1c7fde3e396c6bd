"""The synthesis corpus: small sub-expressions of real vector code, canonicalised and counted.

Sources are the benchmarks' vector expressions (every expression the Halide frontend turns into an
fpir.Term, read from `LoopNestCodegen.selections` with isel="pitchfork" on each ISA, i.e. after the loop passes, before any lifting) and
user expression files (`--from FILE`, one FPIR expression per line, `#` comments).

A sub-expression ("cut") of an expression is a node together with some of its descendants, every
other child subtree replaced by a variable of its type (the same subtree by the same variable, so
sharing is kept); constants are kept. Cuts have at most `max_nodes` nodes (leaves included), like the
paper's left-hand sides of up to 10 IR nodes. A cut is canonicalised by renaming its variables to
`v0, v1, ...` in pre-order of first appearance, so the same shape found in two places (or two
benchmarks) is one corpus entry; `CorpusEntry.count` is how often it was found and `sources` the
benchmarks (or files) it came from.

Invariant: every entry's term is a well-typed FPIR term whose variables are exactly v0..vk.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Iterator, Optional, Sequence

from fpir.ops import make
from fpir.opspec import spec
from fpir.term import Term, var
from fpir.printer import to_text
from fpir.text import FPIRSyntaxError, parse
from fpir.types import FPIRTypeError

MAX_NODES = 10
#: distinct per-site ranges kept per entry (`Corpus.site_ranges`: the first met)
MAX_SITE_RANGES = 4


@dataclass(frozen=True)
class CorpusEntry:
    key: str  # canonical text: the identity of the entry
    term: Term
    count: int
    sources: tuple[str, ...]


@dataclass
class Corpus:
    counts: Counter = field(default_factory=Counter)
    terms: dict[str, Term] = field(default_factory=dict)
    sources: dict[str, set[str]] = field(default_factory=dict)
    #: the whole expressions, per source (lowering synthesis lifts whole expressions first)
    expressions: dict[str, list[Term]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    #: per entry, the hull of the value range (pitchfork.selection.bounds) of what each variable
    #: v0, v1, ... stood for at every place the cut was found: the sub-term a cut variable replaced, or
    #: the leaf. A bounds predicate the lowering search may state (synth/tasks.py `_bounded_ranges`)
    ranges: dict[str, list[tuple[int, int]]] = field(default_factory=dict)
    #: per entry, whether each variable v0, v1, ... stood for a uniform value (a broadcast scalar:
    #: pitchfork.trs.predicate.is_uniform_term) at one place the cut was found at least: an
    #: `is_uniform` predicate the lowering search may state (x86's shifts by a count in a register)
    uniform: dict[str, list[bool]] = field(default_factory=dict)
    #: per entry, the distinct range vectors (as `ranges`, at one place each) of the places where a
    #: variable stood for a uniform value, the first MAX_SITE_RANGES met: a uniform task is also posed
    #: inside each range narrower than the hull (synth/driver.py `narrowed_uniform_ranges`: hvx128
    #: mul's shift `min(w, 15)` is in [0, 15], depthwise_conv's unclamped one in all of u32)
    site_ranges: dict[str, list[tuple[tuple[int, int], ...]]] = field(default_factory=dict)

    def add_expression(self, term: Term, source: str, max_nodes: int = MAX_NODES) -> None:
        exprs = self.expressions.setdefault(source, [])
        if term in exprs:
            return
        exprs.append(term)
        self.add_cuts(term, source, cuts(term, max_nodes))

    def add_cuts(self, term: Term, source: str, found: Iterable[Term]) -> None:
        """Count the cuts `found` of `term` (their cut variables named `cut<id>` after the sub-terms of
        `term` they replace, as `cuts` names them), with each variable's range and uniformity there."""
        from pitchfork.selection.bounds import bounds
        from pitchfork.trs.predicate import is_uniform_term

        origin = {f"cut{id(n)}": n for n in term.walk() if n.args}  # a cut variable's name -> its sub-term
        for cut in found:
            c = canonical(cut)
            key = to_text(c)
            self.counts[key] += 1
            self.terms.setdefault(key, c)
            self.sources.setdefault(key, set()).add(source)
            here = [bounds(origin.get(v.name, v)) for v in variable_order(cut)]
            have = self.ranges.get(key)
            self.ranges[key] = here if have is None else [
                (min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(have, here)]
            flat = [is_uniform_term(origin.get(v.name, v)) for v in variable_order(cut)]
            was = self.uniform.get(key)
            self.uniform[key] = flat if was is None else [a or b for a, b in zip(was, flat)]
            sites = self.site_ranges.setdefault(key, [])
            if any(flat) and len(sites) < MAX_SITE_RANGES and tuple(here) not in sites:
                sites.append(tuple(here))

    def entries(self) -> list[CorpusEntry]:
        """Most frequent first, then by text (deterministic)."""
        keys = sorted(self.counts, key=lambda k: (-self.counts[k], len(k), k))
        return [CorpusEntry(k, self.terms[k], self.counts[k], tuple(sorted(self.sources[k]))) for k in keys]

    def __len__(self) -> int:
        return len(self.counts)


# ---------------------------------------------------------------------------------------------
# Cuts and canonical form


def rebuild(t: Term, args: Sequence[Term]) -> Term:
    if all(a is b for a, b in zip(args, t.args)):
        return t
    return make(t.op, *args, type=t.type if spec(t.op).explicit_type else None, fold=False)


def cuts(term: Term, max_nodes: int = MAX_NODES) -> Iterator[Term]:
    """Every cut (see module doc) of every operation node of `term`, with at most max_nodes nodes."""
    seen: set[Term] = set()
    memo: dict[tuple[Term, int], list[tuple[Term, int]]] = {}
    for node in term.walk():
        if not node.args or node in seen:
            continue
        seen.add(node)
        for pattern, _size in _cuts_at(node, max_nodes, memo):
            if pattern.args:
                yield pattern


def _cuts_at(
    t: Term, budget: int, memo: dict[tuple[Term, int], list[tuple[Term, int]]]
) -> list[tuple[Term, int]]:
    """Patterns rooted at t of at most `budget` nodes; cut children become variables named after
    their identity (renamed by `canonical`)."""
    if budget <= 0:
        return []
    if not t.args:
        return [(t, 1)]
    hit = memo.get((t, budget))
    if hit is not None:
        return hit
    out: list[tuple[Term, int]] = []
    options: list[list[tuple[Term, int]]] = []
    for a in t.args:
        opts: list[tuple[Term, int]] = [(a, 1)] if not a.args else [(_cut_var(a), 1)]
        if a.args and budget - len(t.args) >= 1:
            opts += [p for p in _cuts_at(a, budget - len(t.args), memo) if p[1] > 0]
        options.append(opts)
    for combo in itertools.product(*options):
        size = 1 + sum(s for _, s in combo)
        if size > budget:
            continue
        try:
            out.append((rebuild(t, [p for p, _ in combo]), size))
        except FPIRTypeError:
            continue
    memo[(t, budget)] = out
    return out


def _cut_var(t: Term) -> Term:
    return var(f"cut{id(t)}", t.type)


def variable_order(term: Term) -> list[Term]:
    """The variables of `term` in pre-order of first appearance (`canonical` names them v0, v1, ...)."""
    order: list[Term] = []

    def visit(t: Term) -> None:
        if t.is_var:
            if t not in order:
                order.append(t)
            return
        for a in t.args:
            visit(a)

    visit(term)
    return order


def canonical(term: Term) -> Term:
    """Variables renamed v0, v1, ... in pre-order of first appearance (constants kept)."""
    mapping = {v: var(f"v{i}", v.type) for i, v in enumerate(variable_order(term))}
    return substitute(term, mapping)


def substitute(term: Term, mapping: dict[Term, Term]) -> Term:
    memo: dict[Term, Term] = {}
    for t in term.walk():
        if t in mapping:
            memo[t] = mapping[t]
        elif t.args:
            memo[t] = rebuild(t, [memo[a] for a in t.args])
        else:
            memo[t] = t
    return memo[term]


# ---------------------------------------------------------------------------------------------
# Sources


def benchmark_expressions(name: str, isas: Sequence[str] = ("arm64",), isel: str = "pitchfork") -> list[Term]:
    """The distinct vector expressions of one benchmark (all its parameter sets, the given ISAs'
    schedules), as the compiler hands them to instruction selection: with isel="pitchfork" the
    loop passes that only run for Pitchfork's selection (dot products, HVX windows, ...) have run."""
    import halide as hl

    from benchmarks import registry
    from pitchfork.api import run_loop_passes
    from pitchfork.codegen.loop_nest import LoopNestCodegen
    from pitchfork.frontend.capture import capture_stmt
    from pitchfork.passes.pipeline import resolve
    from pitchfork.targets.target_strings import parse_target

    bench = registry.get(name)
    out: list[Term] = []
    for isa in isas:
        spec = parse_target(isa)
        plist = resolve(spec.isa, isel, None, [], [])
        for pset in bench.param_sets:
            func, args = bench.build(isa, pset)
            pipeline = func if isinstance(func, hl.Pipeline) else hl.Pipeline(func)
            captured = capture_stmt(pipeline, args, spec.halide)
            # the loop passes pitchfork.compile runs (dot_products, hvx_windows, ...): without them the
            # corpus misses the forms they make (matmul's 4-tap sums as vector_reduce_add_x4)
            stmt = run_loop_passes(captured.parse(), plist, name, 0, spec.unavailable)
            cg = LoopNestCodegen(captured, stmt, spec.isa, isel, name, unavailable=spec.unavailable, passes=plist)
            cg.build()
            for _node, sel in cg.selections:
                if sel.input.args and sel.input not in out:
                    out.append(sel.input)
    return out


@dataclass(frozen=True)
class ExprFileError:
    source: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}:{self.column}: {self.message}"


def read_expression_file(path: str | Path) -> tuple[list[Term], list[ExprFileError]]:
    """Expressions of a user file (one per line, `#` comments, blank lines ignored). A malformed line
    gives an error with file:line:col and reading goes on with the next line."""
    p = Path(path)
    terms: list[Term] = []
    errors: list[ExprFileError] = []
    for i, line in enumerate(p.read_text().splitlines(), 1):
        body = line.split("#", 1)[0]
        if not body.strip():
            continue
        try:
            terms.append(parse(body, source=str(p)))
        except FPIRSyntaxError as e:
            errors.append(ExprFileError(str(p), i, e.column or 1, e.message))
        except FPIRTypeError as e:
            col = len(body) - len(body.lstrip()) + 1
            errors.append(ExprFileError(str(p), i, col, str(e)))
    return terms, errors


def build_corpus(
    benchmarks: Iterable[str] = (),
    files: Iterable[str | Path] = (),
    isas: Sequence[str] = ("arm64",),
    max_nodes: int = MAX_NODES,
    expressions: Optional[dict[str, list[Term]]] = None,
) -> Corpus:
    """The corpus of the named benchmarks and expression files. `expressions` (source -> terms) can
    supply already captured benchmark expressions (the driver caches them on disk)."""
    corpus = Corpus()
    for name in benchmarks:
        terms = (
            expressions[name] if expressions and name in expressions else benchmark_expressions(name, isas)
        )
        for t in terms:
            corpus.add_expression(t, name, max_nodes)
    for f in files:
        terms, errors = read_expression_file(f)
        corpus.errors.extend(str(e) for e in errors)
        tag = Path(f).stem
        for t in terms:
            corpus.add_expression(t, tag, max_nodes)
    return corpus
