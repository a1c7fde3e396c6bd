"""The command line's errors (issue 8, items 6, 7, 8; docs/ERRORS.md): one line on stderr naming the
file or construct, a documented exit code per class, per-line errors in batches (exit 1 unless
--allow-errors), and no traceback for anything a user types."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pitchfork.cli import main
from pitchfork.errors import EXIT_FILE, EXIT_INPUT, EXIT_OK, EXIT_PIPELINE, EXIT_USAGE
from pitchfork.limits import MAX_LANES

DATA = Path(__file__).resolve().parent / "frontend" / "data"
GENERATORS = Path(__file__).resolve().parent / "aot" / "data"


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    return code, out.out, out.err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


def test_lane_counts_bounded(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["select", "a_u8 + b_u8", "--lanes", "100000", "--emit", "asm"], capsys)
    assert code == EXIT_USAGE
    assert one_line(err) == f"pitchfork select: --lanes = 100000 is more than PITCHFORK supports ({MAX_LANES})"
    code, _, err = run(["select", "a_u8 + b_u8", "--lanes", "-4"], capsys)
    assert code == EXIT_USAGE and one_line(err) == "pitchfork select: --lanes must be positive, got -4"


def test_batch_lines_fail_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "exprs.txt"
    src.write_bytes(b"u8(a_u8 + 1)\n\xff\xfe bad\n  foo(\n# comment\n")
    code, out, err = run(["lift", "--batch", str(src)], capsys)
    recs = [json.loads(line) for line in out.splitlines()]
    assert code == EXIT_INPUT and len(recs) == 3
    assert recs[0]["lifted"] == "a_u8 + 1" and recs[0]["error"] is None
    assert recs[1]["error"] == f"{src}:2: not UTF-8 text"
    assert recs[2]["error"] == f"{src}:3:7: unexpected end of input"
    assert one_line(err) == "pitchfork lift: 2 of 3 line(s) failed"
    code, _, _ = run(["lift", "--batch", str(src), "--allow-errors"], capsys)
    assert code == EXIT_OK
    code, out, _ = run(["select", "--batch", str(src), "--emit", "fpir", "-t", "arm64"], capsys)
    recs = [json.loads(line) for line in out.splitlines()]
    assert code == EXIT_INPUT and recs[1]["error"] == "line 2: not UTF-8 text" and recs[0]["error"] is None
    assert run(["select", "--batch", str(src), "--emit", "fpir", "--allow-errors"], capsys)[0] == EXIT_OK


@pytest.mark.parametrize("cmd", [["lift", "--batch"], ["select", "--emit", "fpir", "--batch"]])
def test_file_errors(cmd: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "missing.txt"
    code, _, err = run([*cmd, str(missing)], capsys)
    assert code == EXIT_FILE and one_line(err).endswith(f"{missing}: cannot read batch file: No such file or directory")
    code, _, err = run([*cmd, str(tmp_path)], capsys)
    assert code == EXIT_FILE and one_line(err).endswith(f"{tmp_path}: cannot read batch file: Is a directory")
    ok = tmp_path / "ok.txt"
    ok.write_text("a_u8 + b_u8\n")
    bad_out = tmp_path / "no" / "such" / "out.jsonl"
    code, _, err = run([*cmd, str(ok), "-o", str(bad_out)], capsys)
    assert code == EXIT_FILE and one_line(err).endswith(f"{bad_out}: cannot write output file: No such file or directory")


def test_lift_rules_flag_does_not_swallow_the_expression(capsys: pytest.CaptureFixture[str]) -> None:
    rules = Path(__file__).resolve().parents[2] / "rules" / "lift" / "widening.rules"
    code, out, _ = run(["lift", "--rules", str(rules), "u16(a_u8) + u16(b_u8)"], capsys)
    assert code == EXIT_OK and out.strip() == "widening_add(a_u8, b_u8)"


def test_expression_errors_are_located(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["lift", "a_u8 +"], capsys)
    assert code == EXIT_INPUT and one_line(err) == "pitchfork lift: <expr>:1:7: unexpected end of input"
    code, _, err = run(["lift", "a_u8 + b_u16"], capsys)
    assert code == EXIT_INPUT and one_line(err).startswith("pitchfork lift: <expr>:1:1: ")
    code, _, err = run(["lift"], capsys)
    assert code == EXIT_USAGE and one_line(err) == "pitchfork lift: give one expression or --batch FILE"


GPU_GEN = '''import halide as hl
x, y = hl.vars("x y")
@hl.generator(name="gputile")
class G:
    input = hl.InputBuffer(hl.UInt(8), 2)
    output = hl.OutputBuffer(hl.UInt(8), 2)
    def generate(self):
        self.output[x, y] = self.input[x, y] + 1
        xo, yo, xi, yi = hl.vars("xo yo xi yi")
        self.output.gpu_tile(x, y, xo, yo, xi, yi, 8, 8)
'''

BROKEN_GEN = '''import halide as hl
x = hl.Var("x")
@hl.generator(name="broken")
class B:
    input = hl.InputBuffer(hl.UInt(8), 1)
    output = hl.OutputBuffer(hl.UInt(8), 1)
    def generate(self):
        raise KeyError("oops")
'''


def test_compile_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gen = GENERATORS / "gen_params.py"
    out = str(tmp_path / "out")
    code, _, err = run(["compile", str(gen), "-p", "input.type=uint8", "-p", "lanes=-4", "-o", out], capsys)
    assert code == EXIT_PIPELINE
    assert one_line(err) == ("pitchfork compile: scaled_avg: Halide rejects this pipeline for x86-avx2: "
                             "Can't split x by -4. Split factors must be strictly positive")
    assert not (tmp_path / "out").exists()
    g = tmp_path / "gen_gpu.py"
    g.write_text(GPU_GEN)
    code, _, err = run(["compile", str(g), "-o", out], capsys)
    assert code == EXIT_PIPELINE and "gputile: Halide rejects this pipeline" in one_line(err)
    b = tmp_path / "gen_broken.py"
    b.write_text(BROKEN_GEN)
    code, _, err = run(["compile", str(b), "-o", out], capsys)
    assert code == EXIT_PIPELINE
    assert one_line(err) == f"pitchfork compile: generator broken ({b}:8): KeyError: 'oops'"
    code, _, err = run(["compile", str(gen), "-p", "input.type=uint8", "-o", str(gen)], capsys)
    assert code == EXIT_FILE and one_line(err) == f"pitchfork compile: -o {gen}: not a directory"
    code, _, err = run(["compile", str(DATA / "captures.json"), "-o", out], capsys)
    assert code == EXIT_FILE and "is not a Python file (.py)" in one_line(err)
    code, _, err = run(["compile", f"{gen}:Nope", "-o", out], capsys)
    assert code == EXIT_PIPELINE and f"no generator 'Nope' in {gen}" in one_line(err)
    assert "pitchfork_generator_" not in err


def test_unknown_flag_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["lift", "--no-such-flag", "a_u8"]) == EXIT_USAGE
    assert "unrecognized arguments" in capsys.readouterr().err
