"""Every term the e-graph extracts equals its input, whether selection keeps it or not.

Selection proves only the e-graph results it keeps (engine.py's module docstring, `lift_egraph(defer=True)`
and `prove`; a discarded one cannot reach the output). These tests are the check for every other
extracted term: the extracted term of every shape saturated while selecting the 16 benchmarks' vector
expressions on hvx128 (the frontend, loop passes and codegen's selection as pitchfork.compile runs them,
without LLVM), and of every program of the variant suite (benchmarks/variants: variants.txt,
bench_keys.txt, halide_pairs.txt). Each is proved by validate.py's own methods, cheapest first for
these shapes: Z3 with the sub-terms shared with greedy's result abstracted, else the reference
interpreter on every input (at most 2^18 points), else Z3 on the whole terms under the input's flag
facts (an extracted term that is the input itself needs none of them). The e-graph's candidate result (the greedy TRS run on the extracted term) is proved the same way.
"""

from __future__ import annotations

import pytest

from benchmarks.variants import DATA, load
from fpir.term import Term
from fpir.text import parse
from pitchfork.selection.egraph import engine as eng
from pitchfork.selection.egraph.validate import abstract_shared, exhaustive, prove_equal
from pitchfork.selection.greedy import lift_rules

#: the Z3 resource limit of these proofs: `lift`'s (selection's own is smaller, and a proof that does
#: not finish within it only keeps greedy's result; here it would fail the test)
RLIMIT = eng.Budget().rlimit


def _proved(canon: Term, result: Term, greedy: Term) -> str:
    """How `result` was proved equal to `canon` ("identical", "shared", "exhaustive", "full"), or "" if
    not."""
    if result is canon:  # terms are interned: the input itself (nothing cheaper was found)
        return "identical"
    ga, ra = abstract_shared(greedy, result)
    if (ga, ra) != (greedy, result) and not prove_equal(ga, ra, RLIMIT):
        return "shared"
    if exhaustive(canon, result) == "":
        return "exhaustive"
    return "" if prove_equal(canon, result, RLIMIT) else "full"


def _check_every_shape(shapes: dict) -> int:
    """Prove every saturated shape's extracted term (and candidate result) equal to its input; the number
    of extracted terms proved."""
    n = 0
    for key, (_, shape) in shapes.items():
        if shape.extracted is None:  # the egglog program failed: greedy's result, nothing extracted
            continue
        canon = key[0]
        assert shape.greedy_term is not None
        assert _proved(canon, shape.extracted, shape.greedy_term), f"{canon}\n  extracted {shape.extracted}"
        if shape.source == "egraph":
            assert _proved(canon, shape.term, shape.greedy_term), f"{canon}\n  result {shape.term}"
        n += 1
    return n


def _select(name: str, isa: str) -> int:
    """Run benchmark `name`'s frontend and codegen for `isa` with the e-graph engine, as pitchfork.compile
    does up to its LLVM IR (the selection calls are compile's own); the number of vector expressions."""
    import halide as hl

    from benchmarks import registry
    from pitchfork.api import run_loop_passes
    from pitchfork.codegen.loop_nest import LoopNestCodegen
    from pitchfork.frontend.capture import capture_stmt
    from pitchfork.frontend.checks import check_arguments
    from pitchfork.frontend.deep import run_deep
    from pitchfork.passes.pipeline import resolve
    from pitchfork.selection.lift import lift_engine
    from pitchfork.targets.target_strings import parse_target

    spec = parse_target(isa)
    plist = resolve(spec.isa, "pitchfork", None, [], [])
    bench = registry.get(name)
    func, args = bench.build(isa, bench.param_sets[0])
    pipeline = func if isinstance(func, hl.Pipeline) else hl.Pipeline(func)
    cap = capture_stmt(pipeline, check_arguments(pipeline, args), spec.halide, upto_intrinsics=True)

    def frontend() -> int:
        stmt = run_loop_passes(cap.parse(), plist, name, 0, spec.unavailable)
        cg = LoopNestCodegen(cap, stmt, spec.isa, "pitchfork", name, unavailable=spec.unavailable, passes=plist)
        cg.build()
        return cg.stats.vector_exprs

    with lift_engine("egraph"):
        return run_deep(frontend)


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> dict:
    """Empty result and shape caches (every shape saturated here, none inherited), returned: the shapes."""
    shapes: dict = {}
    monkeypatch.setattr(eng, "_RESULTS", {})
    monkeypatch.setattr(eng, "_SHAPES", shapes)
    return shapes


def test_every_extracted_term_of_the_benchmarks_selection_is_proved(fresh: dict) -> None:
    import warnings

    from benchmarks import registry

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Halide's schedule warnings (camera_pipe's prefetch)
        exprs = sum(_select(name, "hvx128") for name in registry.NAMES)
    assert exprs > 100
    # most expressions are gated or share a shape; the shapes saturated are the ones checked
    assert _check_every_shape(fresh) >= 10
    # the results selection kept were proved by `prove`; the others were left PENDING, never used
    kept = [r for r in eng._RESULTS.values() if r.source == "egraph"]
    assert all(r.proof in (eng.PENDING, "exhaustive", "shared", "full") for r in kept)


@pytest.mark.parametrize("budget", [pytest.param(eng.SELECTION_BUDGET, id="selection"),
                                    pytest.param(eng.Budget(), id="lift", marks=pytest.mark.extended)])
def test_every_extracted_term_of_the_variant_suite_is_proved(budget: eng.Budget, fresh: dict) -> None:
    rs = lift_rules()
    programs = [t for n in ("variants.txt", "bench_keys.txt", "halide_pairs.txt")
                for g in load(DATA.with_name(n)) for t in g.variants]
    for text in programs:
        eng.lift_egraph(parse(text), rs, budget, defer=True)
    assert _check_every_shape(fresh) >= 100
