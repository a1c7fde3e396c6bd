"""fpir.markdown: the pipe-table format and the generated-document command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from fpir import markdown as md


def test_table_format() -> None:
    assert md.table(("a", "b"), [("1", md.escape("x|y")), ("", "2")]) == [
        "| a | b |", "|---|---|", "| 1 | x\\|y |", "|  | 2 |"]


@pytest.mark.parametrize("failed", [False, True])
def test_generated_doc_main(tmp_path: Path, failed: bool, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "doc.md"

    def run(*argv: str) -> int:
        return md.generated_doc_main([*argv, "-o", str(out)], prog="gen", description="d",
                                     default_path=out, render=lambda: ("text\n", failed))

    assert run("--check") == 1  # missing file
    assert "is stale: run `gen`" in capsys.readouterr().err
    assert run() == int(failed)  # written even when the document breaks its generator's rule
    assert out.read_text() == "text\n"
    assert run("--check") == int(failed)
    assert run("--stdout") == int(failed)
    assert capsys.readouterr().out.endswith("text\n")
