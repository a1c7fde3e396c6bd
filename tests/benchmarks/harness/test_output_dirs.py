"""No tool writes into the source tree by default (issue 25, item 7).

`pitchfork bench`, the ablation and `pitchfork-synth` default to a folder in the current directory;
only `--write-results` / `--write-rules` name the committed files. The defaults are checked from a
temporary current directory, and a tiny bench run and a tiny synthesis run from there must leave
`git status --porcelain` of the repository unchanged.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]


def _git_status() -> str:
    return subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], capture_output=True,
                          text=True, cwd=REPO, check=True).stdout


def test_bench_output_defaults_to_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.harness.run import RESULTS_DIR, add_arguments, output_dir

    monkeypatch.chdir(tmp_path)
    ap = argparse.ArgumentParser()
    add_arguments(ap)
    assert output_dir(ap.parse_args([])) == tmp_path / "pitchfork-bench-out"
    assert output_dir(ap.parse_args(["-o", "x"])) == tmp_path / "x"
    assert output_dir(ap.parse_args(["--write-results"])) == RESULTS_DIR == REPO / "benchmarks"


def test_ablation_output_defaults_to_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from benchmarks.harness.ablation import RESULTS_DIR, output_dir

    monkeypatch.chdir(tmp_path)
    assert output_dir(None, False) == tmp_path / "pitchfork-ablation-out"
    assert (tmp_path / "pitchfork-ablation-out").is_dir()
    assert RESULTS_DIR == REPO / "benchmarks"


def test_synth_output_and_cache_default_to_the_current_directory(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from synth.cli import options, parser

    monkeypatch.chdir(tmp_path)
    o = options(parser().parse_args(["--quick"]))
    assert o.out_dir == tmp_path / "pitchfork-synth-out"
    assert o.cache_dir == tmp_path / "pitchfork-synth-out" / ".synth-cache"
    w = options(parser().parse_args(["--quick", "--write-rules"]))
    assert w.out_dir == REPO / "rules" / "synthesized" and w.cache_dir == REPO / ".synth-cache"
    with pytest.raises(SystemExit):
        options(parser().parse_args(["--write-rules", "-o", "x"]))


def test_tiny_runs_leave_the_source_tree_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pitchfork.cli import main as pitchfork_main
    from synth.cli import main as synth_main

    before = _git_status()
    monkeypatch.chdir(tmp_path)
    assert pitchfork_main(["bench", "--quick", "--bench", "add", "--isa", "x86-avx2"]) == 0
    assert (tmp_path / "pitchfork-bench-out" / "results.json").exists()
    assert synth_main(["--quick", "--stage", "lift", "--max-lhs", "1", "--max-terms", "200", "--no-progress"]) == 0
    assert (tmp_path / "pitchfork-synth-out" / "lift.rules").exists()
    assert _git_status() == before
