"""A work meter for one synthesis task: a cap on what a single search may spend, counted, not timed.

Why: a stage's time limit (`--time-limit`) only stops new tasks from being handed out. One deep
search (enumerator, then the top-down search with its sub-goal searches and Z3 queries) has no bound
of its own besides its per-call counts, and those multiply: arm64 `rounding_shr(rounding_mul_shr(a +
b, c, 31), d)` took 644 s of a round's 600 s at load ~20, most of it in Z3 queries of sub-goals run
to their rlimit, and no other deep search of that round ran.

What is counted (all deterministic, so a capped search gives the same answer on any machine and
under any load, and a rerun writes byte-identical rule files):

* Z3 resource units that the search's queries consumed (`synth.search.prove_equal` runs each query
  in a fresh context, so the count does not depend on what the process solved before; the rlimit of
  a query is lowered to what is left, so no query runs past the cap);
* enumeration steps: candidate terms (argument combinations) the bank's levels hold for a search
  (the logical count `synthesize` reports, the same whether a bank was shared or built), top-down
  root combinations, probe tuples; each is one evaluation over the example rows and is charged
  `STEP_UNITS` Z3 units (roughly what each costs in CPU time here, see below).

When the total passes the cap, `WorkCapExceeded` is raised at the next charge; `synth.tasks` turns it
into a "budget" verdict with the reason. A task with cap 0 is not metered (the behaviour before).
Generalization and the rule's verification at every type instance are not metered: they run only
after a right side was found, and a found rule is what the search is for.

The cap a driver hands its tasks is a share of its stage's time limit converted to units at a fixed
rate (`units_for`): the conversion is a constant of the code, not a measurement of the run, so the
verdicts depend only on the options.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator, Optional

#: Z3 resource units charged per enumeration step (one candidate evaluated on every example row).
#: Measured on this project's 2-core machine: a bank level evaluates ~1.1e5 candidates per CPU second
#: and Z3 spends ~1.4-2e6 units per CPU second on the search's bit-vector queries, so a step costs
#: about as much as 13-18 units; 16. Over 13 deep arm64 searches (session 18) the total ran at 0.4-3.0
#: million units per CPU second: the Python work per top-down decomposition (sub-goal rewrites) is
#: not counted, so a cap of N units meant N / 3e6 to N / 4e5 CPU seconds in those searches.
STEP_UNITS = 16
#: the fixed rate that turns a share of a stage's time limit into a cap (`units_for`): Z3 units per
#: CPU second on the development machine (fpir/z3enc.py: 2-3 million), never measured at run time
UNITS_PER_SECOND = 2_000_000


class WorkCapExceeded(Exception):
    """The search spent its cap (`Meter.cap` units)."""


class Meter:
    """What one task's search has spent so far (mutable: a running count, one per task).

    Invariant: `used == solver + STEP_UNITS * steps`; once `used > cap` (cap > 0) every further
    charge raises `WorkCapExceeded`."""

    def __init__(self, cap: int) -> None:
        self.cap = int(cap)
        self.solver = 0
        self.steps = 0

    @property
    def used(self) -> int:
        return self.solver + STEP_UNITS * self.steps

    def remaining(self) -> int:
        """Units left (at least 1 while the cap is not passed); a large number when uncapped."""
        if self.cap <= 0:
            return 1 << 62
        return max(0, self.cap - self.used)

    def _check(self) -> None:
        if self.cap > 0 and self.used > self.cap:
            raise WorkCapExceeded(
                f"work cap of {self.cap} units reached ({self.solver} Z3 units, {self.steps} enumeration steps)"
            )

    def charge_solver(self, units: int) -> None:
        self.solver += max(0, int(units))
        self._check()

    def charge_steps(self, n: int) -> None:
        self.steps += max(0, int(n))
        self._check()


_CURRENT: Optional[Meter] = None


def current() -> Optional[Meter]:
    return _CURRENT


@contextmanager
def metered(cap: int) -> Iterator[Meter]:
    """Meter the code in the block against `cap` units (0: count only, never raise)."""
    global _CURRENT
    prev, m = _CURRENT, Meter(cap)
    _CURRENT = m
    try:
        yield m
    finally:
        _CURRENT = prev


@contextmanager
def unmetered() -> Iterator[None]:
    """No meter in the block (generalization and verification after a right side was found)."""
    global _CURRENT
    prev, _CURRENT = _CURRENT, None
    try:
        yield
    finally:
        _CURRENT = prev


def charge_steps(n: int) -> None:
    if _CURRENT is not None:
        _CURRENT.charge_steps(n)


def charge_solver(units: int) -> None:
    if _CURRENT is not None:
        _CURRENT.charge_solver(units)


def solver_limit(rlimit: int) -> int:
    """A query's rlimit under the current meter: no more than what is left of the cap, so a single
    query cannot run past it (its verdict is then UNKNOWN, and the charge that follows stops the
    search). Raises at once when nothing is left."""
    if _CURRENT is None or _CURRENT.cap <= 0:
        return rlimit
    left = _CURRENT.remaining()
    if left <= 0:
        _CURRENT._check()
        raise WorkCapExceeded(f"work cap of {_CURRENT.cap} units reached")
    return max(1, min(int(rlimit), left))


def units_for(share: float, time_limit: float) -> int:
    """The cap of one search: `share` of a stage's `time_limit` seconds at `UNITS_PER_SECOND` (0 when
    either is 0: not capped)."""
    if share <= 0 or time_limit <= 0:
        return 0
    return int(share * time_limit * UNITS_PER_SECOND)


# ---------------------------------------------------------------------------------------------
# A stage's budget: which tasks run is decided by counted work, never by the clock.
#
# Before, a stage's `--time-limit` stopped handing out tasks at a wall-clock deadline, so which tasks
# ran, and so which rules came out, depended on the machine's load (session 25: the same hvx128
# bring-up lost four hand rules at load 5-9 that a quieter run found). Now a stage has a budget in the
# units above, converted once from its seconds at the fixed `UNITS_PER_SECOND`; the driver hands its
# tasks out in a fixed order and charges each finished one `task_units(result)` (what the task's own
# meter counted, plus fixed charges for the work the meter does not count); a task is handed out
# while the charges of the ones before it, in that order, are below the budget. The charges are
# counts in the result (cached with it), so a fresh run, a resumed one, 1 or N local jobs and a Dask
# cluster hand out the same tasks and write the same rules. A wall-clock safety stop
# (`--wall-limit`) remains for runs that must end by a time; when it fires the run says so (its
# rules then depend on load).

#: fixed charge per task: the work around its search that the meter does not count (lowering the cut
#: with the current rules, building its grammar and pruning TRS, bookkeeping): 0.1 s at the rate above.
#: Measured (CPU time, hvx128 first passes, session 26): 0.02-0.1 s a task besides a counted search of
#: 0.4k-90k units
TASK_UNITS = 200_000
#: fixed charge per task that found a right side: its generalization and the verification of the
#: rule at every type instance (synth/generalize.py; not metered, so a found rule is never lost to the
#: cap): 0.5 s at the rate above (hvx128 one-instruction rules: 0.2-0.3 s of CPU for the whole task)
FOUND_UNITS = 1_000_000


def stage_units(time_limit: float) -> int:
    """A stage's work budget for `time_limit` seconds (0: no budget)."""
    return int(time_limit * UNITS_PER_SECOND) if time_limit > 0 else 0


def task_units(result: dict) -> int:
    """What a finished task is charged against its stage's budget: its search's counted work
    (`Meter.used`, recorded in the result as `work.used`), `TASK_UNITS`, and `FOUND_UNITS` when it
    found a right side. A pure function of the result, so a cached result is charged what it was
    charged when it ran."""
    work = result.get("work") or {}
    found = result.get("status") == "synthesized" or bool(result.get("rhs"))
    return int(work.get("used", 0)) + TASK_UNITS + (FOUND_UNITS if found else 0)
