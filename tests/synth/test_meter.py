"""The work cap of one search (synth/meter.py): counted in Z3 resource units and enumeration steps,
never in seconds, so a capped search gives the same verdict every time; a cap the search stays under
changes nothing; a search over it ends "budget" with the reason, and the driver hands the cap to its
lowering tasks as a share of the stage's time limit."""

from __future__ import annotations

import pytest

from fpir.text import parse
from synth import meter
from synth.bank import BudgetExceeded, clear_banks, shared_bank
from synth.bringup import bring_up_hidden
from synth.driver import Options, lower_tasks
from synth.search import base_examples, prove_equal
from synth.tasks import Task, lowering_grammar, run_task

#: a lowering left side whose right side (arm64 sqxtn over the widening shift) the enumerator alone
#: misses with its hand rules hidden: its search runs the top-down search, with sub-goal searches
#: and Z3 queries, in about a second
LHS = "saturating_cast<i16>(widening_shl(1, v0_i16 + 15))"


def _task(cap: int) -> Task:
    return Task("lower", "arm64", LHS, max_terms=100_000, hide=bring_up_hidden("arm64"), work_cap=cap)


def _verdict(r: dict) -> dict:
    return {k: v for k, v in r.items() if k not in ("seconds", "search_seconds", "generalize_seconds", "cpu_seconds", "task", "key")}


def test_meter_raises_past_its_cap_and_lowers_a_query_rlimit_to_what_is_left() -> None:
    with meter.metered(1000) as m:
        meter.charge_solver(600)
        assert meter.solver_limit(20_000_000) == 400
        meter.charge_steps(25)  # 25 * STEP_UNITS = 400: exactly the cap, not past it
        assert m.used == 1000 and m.used == m.solver + meter.STEP_UNITS * m.steps
        with pytest.raises(meter.WorkCapExceeded):
            meter.solver_limit(20_000_000)  # nothing left for a query
        with pytest.raises(meter.WorkCapExceeded):
            meter.charge_steps(1)
    with meter.metered(0) as m:  # cap 0: counts, never raises
        meter.charge_solver(10**12)
        assert meter.solver_limit(123) == 123 and m.solver == 10**12
    assert meter.current() is None


def test_a_query_is_charged_the_same_units_whatever_the_process_solved_before() -> None:
    lhs, rhs = parse("v0_u16 * v1_u16 + v0_u16"), parse("v0_u16 * (v1_u16 + 1)")
    with meter.metered(0) as first:
        assert prove_equal(lhs, rhs)[0] == "VALID"
    for other in ("v0_u32 * v1_u32 + 7", "(v0_i16 * 3) >> 2"):  # unrelated queries in between
        prove_equal(parse(other), parse(other + " + 0"))
    with meter.metered(0) as again:
        assert prove_equal(lhs, rhs)[0] == "VALID"
    assert first.solver == again.solver > 0


def test_a_search_over_its_cap_ends_over_budget_the_same_way_every_time() -> None:
    free = run_task(_task(0))
    assert free["status"] == "synthesized", free
    used = free["work"]["used"]
    assert free["work"]["steps"] > 0 and free["work"]["solver"] > 0
    # a cap the search stays under: the same verdict, rule and counts as no cap
    roomy = run_task(_task(used))
    assert _verdict(roomy) == _verdict(free)
    # half of it: over budget with the reason, identical on a second run (a count, not a clock)
    half = run_task(_task(used // 2))
    assert half["status"] == "budget" and half["reason"].startswith("work cap of"), half
    assert half["work"]["used"] > used // 2
    assert _verdict(run_task(_task(used // 2))) == _verdict(half)
    # the cap is part of the task's cache key (a capped verdict is never reused for another cap)
    assert _task(used // 2).key != _task(0).key and "|w:" not in _task(0).key


def test_a_shared_bank_built_past_a_budget_refuses_a_smaller_one() -> None:
    # banks are shared by left sides with the same grammar: a level a larger budget built must not
    # let a search with a smaller budget through (a fresh bank would not have built it)
    clear_banks()
    lhs = parse("v0_u8 + v1_u8")
    g = lowering_grammar(lhs, "arm64")
    vars_ = sorted(set(lhs.variables()), key=lambda v: v.name)
    rows = list(base_examples(tuple((v.name, v.type) for v in vars_)))
    bank = shared_bank((g.key, g.max_ops), g, vars_, rows, {})
    bank.ensure(1, 10**9)
    small = sum(bank.level_count[:2]) - 1
    with pytest.raises(BudgetExceeded):
        shared_bank((g.key, g.max_ops), g, vars_, rows, {}).ensure(1, small)
    clear_banks()
    with pytest.raises(BudgetExceeded):
        shared_bank((g.key, g.max_ops), g, vars_, rows, {}).ensure(1, small)


def test_lowering_tasks_get_their_share_of_the_stage_time_limit_as_a_count() -> None:
    inputs = {"t": [parse("rounding_shr(v0_i16, 3) + v1_i16")]}
    capped, _ = lower_tasks(inputs, "arm64", Options(time_limit=600, deep_share=0.1))
    assert capped and {t.work_cap for t in capped} == {meter.units_for(0.1, 600)}
    assert meter.units_for(0.1, 600) == int(60 * meter.UNITS_PER_SECOND)
    free, _ = lower_tasks(inputs, "arm64", Options(time_limit=0, deep_share=0.1))
    assert {t.work_cap for t in free} == {0}
