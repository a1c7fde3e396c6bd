"""benchmarks/variants/results.py and the harnesses' `--write-results` tables: a generated section is
replaced in place (the hand-written text around it kept), appended when missing; the tables carry the
command, the load average and one row per set (hits and lift times) or per ISA and cache mode."""

from __future__ import annotations

from pathlib import Path

from benchmarks.variants import __main__ as variants_main
from benchmarks.variants import selection
from benchmarks.variants.results import write_section


def test_write_section_replaces_only_its_own_section(tmp_path: Path) -> None:
    f = tmp_path / "RESULTS.md"
    f.write_text("# Title\n\nintro\n\n## T (generated)\n\nold table\n\n## Notes\n\nkept\n")
    write_section("T (generated)", "## T (generated)\n\nnew table\n", f)
    assert f.read_text() == "# Title\n\nintro\n\n## T (generated)\n\nnew table\n\n## Notes\n\nkept\n"
    write_section("U (generated)", "## U (generated)\n\nu\n", f)
    assert f.read_text().endswith("## Notes\n\nkept\n\n## U (generated)\n\nu\n")
    write_section("U (generated)", "## U (generated)\n\nu2\n", f)
    assert f.read_text().endswith("kept\n\n## U (generated)\n\nu2\n") and "\nu\n" not in f.read_text()


def test_missing_file_is_made(tmp_path: Path) -> None:
    f = tmp_path / "new.md"
    write_section("T (generated)", "## T (generated)\n\nx\n", f)
    assert f.read_text() == "## T (generated)\n\nx\n"


def test_variant_table() -> None:
    s = {"median_ms": 1.0, "p95_ms": 2.0, "hits": 3, "strict_hits": 3, "n": 4}
    md = variants_main._markdown({"variants/greedy": s, "variants/egraph": {**s, "hits": 4}},
                                 {"load_average_1min_at_start": 2.5, "load_average_1min_at_end": None}, ["-o", "OUT"])
    assert md.startswith(f"## {variants_main.TITLE}\n")
    assert "`python3 -m benchmarks.variants -o OUT`" in md and "2.5 at the start, ? at the end" in md
    assert "| variants.txt (each FPIR idiom >= 5 ways) | 3/4 (strict 3) | 4/4 | 3/4 | 1.0 / 2.0 | 1.0 / 2.0 |" in md


def test_selection_table() -> None:
    summary = {"load_average_1min_at_start": 7.0, "repeat": 3, "load_average_1min_at_end": 8.0,
               "hvx128/rules": {"greedy_selection_s": 2.0, "egraph_selection_s": 3.0, "ratio": 1.5, "same_code": 16,
                                "benchmarks": 16, "greedy_selection_cpu_s": 1.0, "egraph_selection_cpu_s": 1.75,
                                "cpu_ratio": 1.75}}
    rows = [{"isa": "hvx128", "cache": "rules", "egraph": {"saturated": 20, "gated": 3}},
            {"isa": "hvx128", "cache": "rules", "egraph": {"saturated": 7, "stored": 1}}]
    md = selection._markdown(summary, rows, ["--isa", "hvx128"])
    assert md.startswith(f"## {selection.TITLE}\n") and "median of 3" in md and "7.0 at the start" in md
    assert "| hvx128 | rules | 2.00 | 3.00 | 1.50x | 1.00 | 1.75 | 1.75x | 27 / 1 | 16/16 |" in md
