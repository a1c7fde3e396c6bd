"""The ablation's `--write-results` without a full results.json (benchmarks/ keeps only RESULTS.md, the
plots and the trimmed baseline.json): RESULTS.md's ablation section is replaced in place, everything
before it kept, as report.write_all would lay it out."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from benchmarks.harness import ablation

BENCH = Path(__file__).resolve().parents[3] / "benchmarks"


def test_write_without_results_json_replaces_the_section(tmp_path: Path) -> None:
    committed = (BENCH / "RESULTS.md").read_text()
    head = "## Ablation: synthesized rules"
    assert committed.count(head) == 1
    shutil.copy(BENCH / "RESULTS.md", tmp_path / "RESULTS.md")
    ablation.write(json.loads((BENCH / "ablation.json").read_text()), tmp_path)
    assert not (tmp_path / "results.json").exists()
    section = (tmp_path / "RESULTS_ABLATION.md").read_text()
    assert section.startswith(head)
    before = committed[:committed.index("\n" + head)].rstrip("\n")
    assert (tmp_path / "RESULTS.md").read_text() == before + "\n\n" + section


def test_splice_appends_a_missing_section_and_replaces_a_present_one(tmp_path: Path) -> None:
    md = tmp_path / "RESULTS.md"
    md.write_text("# Results\n\nbody\n")
    ablation.splice_section(md, "## Ablation\n\nold\n")
    assert md.read_text() == "# Results\n\nbody\n\n## Ablation\n\nold\n"
    ablation.splice_section(md, "## Ablation\n\nnew\n")
    assert md.read_text() == "# Results\n\nbody\n\n## Ablation\n\nnew\n"
