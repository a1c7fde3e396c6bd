"""Halide 21's own wrong HVX code, reproduced (benchmarks/harness/halide21_repro.py): the reasons the
harness gives for its missing Halide 21 rows on hvx128 are facts about Halide's code, not our runner.

If Halide is fixed these fail, and the rows should come back (remove the KNOWN_FAILURES entries)."""

from __future__ import annotations

import pytest

from benchmarks.harness import halide21, halide21_repro

pytestmark = pytest.mark.qemu


def test_rowsum_accumulator_is_permuted_from_the_second_term_on() -> None:
    assert halide21_repro.rowsum_case(1).wrong_rows == 0  # one term: the same harness and buffers are right
    r = halide21_repro.rowsum_case(2)
    assert r.wrong_rows == 124
    assert r.first_term_rows == (0, 32, 1, 33, 2, 34, 3, 35)  # lane y got row y/2 + 32*(y%2)'s element


def test_loop_carry_deletes_fully_connected_update_loop() -> None:
    before, after = halide21_repro.loop_carry_case()
    assert (before.loops, before.vector_reduce_adds) == (22, 55)
    assert (after.loops, after.vector_reduce_adds) == (20, 19)


def test_known_failures_name_the_reproduction() -> None:
    for key in (("fully_connected", "hvx128"), ("matmul", "hvx128")):
        assert "halide21_repro" in halide21.known_failure(*key)
    assert "internal error" in halide21.known_failure("softmax", "hvx128")
