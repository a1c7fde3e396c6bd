"""`python -m benchmarks.harness.apps_suite_alloc` (benchmarks/harness/apps_suite_alloc.py): an allocator
variant compiles in its own worker and computes Halide's output; the table has a row per thread count and
variant; an unknown variant is a one-line error. No timing is asserted."""

from __future__ import annotations

import pytest

from benchmarks.harness.apps_suite_alloc import main, run, table


def test_allocator_variants_compute_halides_output() -> None:
    samples, diffs = run("blur", ["p64_0pad", "h"], rounds=1, calls=1, quick=True, no_huge_pages=False)
    assert diffs == {(1, "p64_0pad"): 0.0, (1, "h"): 0.0, (2, "p64_0pad"): 0.0, (2, "h"): 0.0}
    assert all(r["cpu_ms"] > 0 and r["wall_ms"] > 0 for rows in samples.values() for r in rows)
    rows = table(samples, diffs, ["p64_0pad", "h"]).splitlines()
    assert len(rows) == 2 + 4 and rows[-1].startswith("| 2 | h | 1 |") and "| 1.000 |" in rows[-1]


def test_unknown_variant_is_one_line_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--variants", "p,q"]) == 2
    assert capsys.readouterr().err.strip().splitlines() == [
        "error: unknown variant(s) q; the variants are p, p64, p0pad, p64_0pad, pgather, pnogather, h"]
