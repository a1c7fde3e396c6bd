"""Stage budgets are counts of work, not a clock (synth/driver.py `StageBudget`, synth/meter.py
`task_units`): the tasks a budget lets run, and so the rule files, are the same with 1 or 2 jobs and
when resumed from a cache; the wall-clock safety stop is reported when it fires."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from synth import meter
from synth.driver import Options, StageBudget, run

EXPRS = """# a user pipeline
i16(a_u8) << 6
u8(u16(a_u8) * 2)
u8((u16(a_u8) + u16(b_u8) + 1) >> 1)
"""


def _opts(tmp: Path, **kw: object) -> Options:
    tmp.mkdir(parents=True, exist_ok=True)
    f = tmp.parent / "exprs.txt"
    f.write_text(EXPRS)
    base = Options(benchmarks=(), files=(str(f),), isas=("arm64",), stages=("lift",), max_lhs=10,
                   max_terms=20_000, cache_dir=tmp / "cache", out_dir=tmp / "out", progress=False,
                   hide=("widening_shl_of_cast", "umlal_shl", "rounding_halving_add_of_casts"))
    return replace(base, **kw)  # type: ignore[arg-type]


def _files(out: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(out.glob("*.rules"))}


def test_a_work_budget_hands_out_the_same_tasks_with_one_or_two_jobs_and_when_resumed(tmp_path: Path) -> None:
    full = run(_opts(tmp_path / "full", write=False))
    charges = [meter.task_units(r) for r in full.results["lift"]]
    assert len(charges) >= 4 and all(c >= meter.TASK_UNITS for c in charges)
    # a budget spent just after the last task that finds a rule (in the tasks' order): the tasks
    # after it are not handed out
    half = 1 + max(i for i, r in enumerate(full.results["lift"]) if r["status"] == "synthesized")
    assert half < len(charges)
    limit = sum(charges[:half]) - 1
    one = run(_opts(tmp_path / "one", work_limit=limit))
    two = run(_opts(tmp_path / "two", work_limit=limit, jobs=2))
    for rep in (one, two):
        st = rep.stages["lift"]
        assert (st.run, st.not_run, st.cached) == (half, len(charges) - half, 0)
        assert st.work == sum(charges[:half]) and st.work_budget == limit and not st.wall_stopped
    keys = [r["key"] for r in one.results["lift"]]
    assert keys == [r["key"] for r in two.results["lift"]] == [r["key"] for r in full.results["lift"][:half]]
    assert _files(tmp_path / "one" / "out") == _files(tmp_path / "two" / "out")
    assert "widening_shl" in _files(tmp_path / "one" / "out")["lift.rules"]
    # resumed from a cache holding every task's result (the full run's): the same tasks are taken
    # (cached results are charged what they cost when they ran), so the same rules are written
    resumed = run(_opts(tmp_path / "resumed", work_limit=limit, cache_dir=tmp_path / "full" / "cache"))
    assert resumed.stages["lift"].cached == half and resumed.stages["lift"].not_run == len(charges) - half
    assert _files(tmp_path / "resumed" / "out") == _files(tmp_path / "one" / "out")


def test_the_wall_clock_safety_stop_is_reported_when_it_fires() -> None:
    budget = StageBudget(units=0, wall_deadline=0.0)  # long passed
    assert not budget.open() and budget.wall_stopped
    counted = StageBudget(units=10)
    assert counted.open()
    counted.charge({"status": "budget", "work": {"used": 7}})
    assert counted.spent == 7 + meter.TASK_UNITS and not counted.open() and not counted.wall_stopped
    found = StageBudget()
    found.charge({"status": "synthesized", "rhs": "x", "work": {"used": 1}})
    assert found.spent == 1 + meter.TASK_UNITS + meter.FOUND_UNITS and found.open()


def test_a_work_budget_on_a_dask_cluster_writes_the_local_run_s_rules(tmp_path: Path) -> None:
    """Workers are fresh interpreters (their own hash seeds): the work they count for a task, and so
    the tasks the budget lets run, equal the in-process run's; also on the same, reused cluster."""
    import pytest

    distributed = pytest.importorskip("distributed")
    local = run(_opts(tmp_path / "local", write=False))
    charges = [meter.task_units(r) for r in local.results["lift"]]
    half = 1 + max(i for i, r in enumerate(local.results["lift"]) if r["status"] == "synthesized")
    limit = sum(charges[:half]) - 1
    ref = run(_opts(tmp_path / "ref", work_limit=limit))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  memory_limit="1GiB") as cluster:
        for name in ("dask1", "dask2"):  # the second run on the reused cluster
            rep = run(_opts(tmp_path / name, work_limit=limit, cluster=cluster.scheduler_address))
            assert [meter.task_units(r) for r in rep.results["lift"]] == charges[:half]
            assert _files(tmp_path / name / "out") == _files(tmp_path / "ref" / "out")
    assert ref.stages["lift"].run == half


def test_a_corpus_line_reads_back_the_captured_term() -> None:
    """The corpus cache's text gives back the captured term, flags and uniform leaves included, and a
    fresh capture is read back from it: a resumed run plans the same tasks as the fresh one (before,
    the read back dropped `nsw` under a uniform leaf, the variables' ranges widened and 13 hvx128
    bring-up tasks got other keys)."""
    from fpir.ops import make
    from fpir.term import var
    from fpir.types import i32, u8
    from synth.driver import _corpus_line, _corpus_text

    a, b, s = var("a", i32), var("b", i32), var("s", u8, uniform=True)
    t = make("sub", a, make("mul", b, make("cast", s, type=i32), flags=("nsw",)), flags=("nsw",))
    assert _corpus_line(_corpus_text(t)) == t
