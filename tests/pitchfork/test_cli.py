"""The `pitchfork` program's entry (pitchfork/cli.py `entry`): what `python -m pitchfork` and the console
script run. It is `main()` plus a `gc.freeze()` before the process exits; these tests run it in fresh
processes and check that the program's behaviour is the one `main` has: output, written files, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

from pitchfork.errors import EXIT_INPUT, EXIT_OK

ROOT = Path(__file__).resolve().parents[2]


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, *args], env=env, capture_output=True, text=True, cwd=cwd)


def test_console_script_and_module_run_the_same_entry() -> None:
    scripts = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts["pitchfork"] == "pitchfork.cli:entry"
    assert "entry()" in (ROOT / "pitchfork" / "__main__.py").read_text()


def test_module_prints_the_lift_and_exits_zero(tmp_path: Path) -> None:
    p = _run(["-m", "pitchfork", "lift", "u8(min(u16(a_u8) + u16(b_u8), 255))"], tmp_path)
    assert (p.returncode, p.stdout, p.stderr) == (EXIT_OK, "saturating_add(a_u8, b_u8)\n", "")


def test_module_keeps_exit_codes_and_one_line_errors(tmp_path: Path) -> None:
    p = _run(["-m", "pitchfork", "lift", "u8(a_u8 +"], tmp_path)
    assert p.returncode == EXIT_INPUT
    assert p.stdout == "" and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr


def test_entry_freezes_after_writing_every_output(tmp_path: Path) -> None:
    """A batch written through `entry` is complete (its file closed before the freeze), and the freeze
    happened (the objects left are in the permanent generation)."""
    lines = ["u8(min(u16(a_u8) + u16(b_u8), 255))", "u8((u16(a_u8) + u16(b_u8) + 1) / 2)", "a_u8 +"]
    src = tmp_path / "in.txt"
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.jsonl"
    probe = ("import gc, sys; from pitchfork.cli import entry; "
             f"sys.argv = ['pitchfork', 'lift', '--batch', {str(src)!r}, '-o', {str(out)!r}]; "
             "code = entry(); print(code, gc.get_freeze_count() > 0); sys.exit(code)")
    p = _run(["-c", probe], tmp_path)
    assert p.returncode == EXIT_INPUT  # the third line does not parse
    assert p.stdout == f"{EXIT_INPUT} True\n"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["lifted"] for r in rows] == ["saturating_add(a_u8, b_u8)", "rounding_halving_add(a_u8, b_u8)", None]
    assert rows[2]["error"]


def test_a_batch_gives_the_collector_back(tmp_path: Path) -> None:
    """`lift --batch` pauses the cyclic collector over its lines (greedy engine) and turns it back on."""
    import gc

    from pitchfork.cli import main

    src = tmp_path / "in.txt"
    src.write_text("u8(min(u16(a_u8) + u16(b_u8), 255))\n")
    assert gc.isenabled()
    assert main(["lift", "--batch", str(src), "-o", str(tmp_path / "out.jsonl")]) == EXIT_OK
    assert gc.isenabled()
    assert json.loads((tmp_path / "out.jsonl").read_text())["lifted"] == "saturating_add(a_u8, b_u8)"
