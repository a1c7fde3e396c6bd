"""Capturing Halide's pre-"Finding intrinsics" statement (these tests run Halide).

Golden statements live in `data/`; `PITCHFORK_REGEN_GOLDEN=1 pytest tests/pitchfork/frontend` rewrites
them (and `data/captures.json`) from fresh captures instead of comparing.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import halide as hl
import pytest
from tests.pitchfork.frontend.hl_cases import CASES

from pitchfork.frontend import examples as ex
from pitchfork.frontend import ir
from pitchfork.frontend.capture import (
    INTRINSICS_MARKER,
    TARGET_ALIASES,
    ArgInfo,
    CapturedStmt,
    CaptureError,
    OutputInfo,
    capture_stmt,
    capture_stmts,
    inprocess_capture_available,
    split_lowering_log,
)
from pitchfork.frontend.htypes import Float, Int, UInt

DATA = Path(__file__).with_name("data")
INDEX = DATA / "captures.json"
REGEN = os.environ.get("PITCHFORK_REGEN_GOLDEN") == "1"
REPO = Path(__file__).resolve().parents[3]
PRE_INTRINSICS_STAGE = "removing dead allocations and hoisting loop invariants"


def normalize(text: str) -> str:
    """Halide renames a second Func called `sobel` to `sobel$1`: drop those process-dependent suffixes."""
    return re.sub(r"\$\d+", "", text)


def canonical_temps(text: str) -> str:
    """Rename Halide's numbered temporaries (t123) in order of appearance: the numbering depends on
    how many names the process has made before."""
    seen: dict[str, str] = {}
    return re.sub(r"\bt\d+\b", lambda m: seen.setdefault(m.group(0), f"t{len(seen)}"), normalize(text))


def canonical_split_vars(text: str) -> str:
    """Rename the variables Halide makes up for vectorize/split (`blur_y.s0.x.v16`) in order of
    appearance: their numbers come from a process-wide counter, so they depend on how many pipelines
    the process scheduled before (other test files in the same pytest run)."""
    seen: dict[str, str] = {}
    return re.sub(r"(?<=\.)v\d+\b", lambda m: seen.setdefault(m.group(0), f"v{len(seen)}"), text)


@pytest.fixture(scope="module")
def captures() -> dict[str, CapturedStmt]:
    out = {}
    for name, case in CASES.items():
        func, args = case.build()
        out[name] = capture_stmt(func, args, case.target, mode="subprocess")
    return out


def _metadata(c: CapturedStmt) -> dict:
    return {
        "target": c.target,
        "stage": c.stage,
        "halide_failed_later": bool(c.error),
        "buffers": {k: str(v) for k, v in c.buffer_types.items()},
        "arguments": [[a.name, a.kind, str(a.type), a.dimensions] for a in c.arguments],
        "outputs": [[o.name, [str(t) for t in o.types], o.dimensions] for o in c.outputs],
    }


@pytest.mark.parametrize("name", sorted(CASES))
def test_golden_statement_matches_a_fresh_capture(name: str, captures: dict[str, CapturedStmt]) -> None:
    c = captures[name]
    path = DATA / f"{name}.stmt"
    if REGEN:
        DATA.mkdir(exist_ok=True)
        path.write_text(normalize(c.text))
        index = json.loads(INDEX.read_text()) if INDEX.exists() else {}
        index[name] = _metadata(c)
        INDEX.write_text(normalize(json.dumps(index, indent=1, sort_keys=True)) + "\n")
        pytest.skip("golden regenerated")
    assert path.exists(), f"missing golden {path.name}: run with PITCHFORK_REGEN_GOLDEN=1"
    assert canonical_split_vars(normalize(c.text)) == canonical_split_vars(path.read_text()), \
        f"{name}: Halide's statement changed (regenerate?)"
    meta = json.loads(INDEX.read_text())[name]
    assert json.loads(normalize(json.dumps(_metadata(c)))) == meta


def test_statement_is_the_stage_logged_just_before_finding_intrinsics(
    captures: dict[str, CapturedStmt],
) -> None:
    for name, c in captures.items():
        assert c.stage == PRE_INTRINSICS_STAGE, name
        names = [s.name for s in c.stages]
        i = names.index(PRE_INTRINSICS_STAGE)
        assert names[i + 1] == "finding intrinsics", name
        assert c.stages[i].text == c.text


def test_sobel_capture_precedes_halides_own_lifting(captures: dict[str, CapturedStmt]) -> None:
    for isa in ("x86-avx2", "arm64", "hvx128"):
        c = captures[f"sobel_{isa}"]
        assert c.target == TARGET_ALIASES[isa]
        assert c.mechanism == "subprocess" and c.error == ""
        # Halide's FindIntrinsics introduces these; the captured statement has plain arithmetic.
        for lifted in ("widening_add", "widening_shift_left", "saturating_cast"):
            assert lifted in c.lowered and lifted not in c.text
        assert "absd(" in c.text  # written by the user, so present before lifting
        assert c.stage_text("finding intrinsics") != c.text


def test_arguments_and_outputs_are_recorded(captures: dict[str, CapturedStmt]) -> None:
    sobel = captures["sobel_arm64"]
    assert sobel.arguments == (ArgInfo("input", "input_buffer", UInt(8), 2),)
    assert [(o.name.split("$")[0], o.types, o.dimensions) for o in sobel.outputs] == [
        ("sobel", (UInt(8),), 2)
    ]
    clamped = captures["clamped_boundary_x86-avx2"]
    assert clamped.arguments == (
        ArgInfo("input", "input_buffer", Int(16), 2),
        ArgInfo("k", "scalar", Int(16), 0),
    )
    assert clamped.scalar_types == {"k": Int(16)}
    tup = captures["tuple_output_arm64"]
    (out,) = tup.outputs
    assert out.types == (Int(32), Float(32)) and out.buffer_names == (f"{out.name}.0", f"{out.name}.1")


def test_pre_intrinsics_statement_is_the_same_on_all_three_isas() -> None:
    """With one vector width, x86, ARM and Hexagon (arch=hexagon: no offload) get the same statement;
    `no_bounds_query` only drops the bounds-query branch and its checks."""
    func, args = ex.sobel3x3(32, hvx=False)
    targets = ["x86-avx2", "arm64", "hvx128", "hexagon-32-noos-no_bounds_query-no_asserts-hvx_128-hvx_v66"]
    got = capture_stmts(func, args, targets)
    assert got["x86-avx2"].text == got["arm64"].text == got["hvx128"].text
    bare = got[targets[3]].text
    assert "_halide_buffer_is_bounds_query" not in bare
    assert bare.count("\n") < got["hvx128"].text.count("\n")
    assert got["x86-avx2"].producer_text("sobel" + func.name()[len("sobel") :]) in got["x86-avx2"].text


def test_hexagon_offload_statement_survives_a_halide_crash(captures: dict[str, CapturedStmt]) -> None:
    """Host target + `.hexagon()`: the loop nest runs under `for<Hexagon>`. Halide 21 aborts in LLVM
    while compiling the offloaded module; the statement was logged before that and is still captured."""
    c = captures["sobel_offload_x86-hvx"]
    stmt = c.parse()
    assert [f.device_api for f in ir.loops(stmt) if f.device_api] == ["Hexagon"]
    if c.error:
        assert c.lowered == ""


def bad_location_pipeline() -> hl.Func:
    """A pipeline Halide refuses while lowering: f computed at a loop of g, which does not use f."""
    x = hl.Var("x")
    f, g, h = hl.Func("f"), hl.Func("g"), hl.Func("h")
    f[x] = x
    g[x] = x + 1
    h[x] = f[x] + g[x]
    g.compute_root()
    f.compute_at(g, x)
    return h


def test_capture_error_when_lowering_fails() -> None:
    with pytest.raises(CaptureError, match="Halide failed to lower.*invalid location"):
        capture_stmt(bad_location_pipeline(), [], "arm64", mode="subprocess")


def test_bad_target_is_rejected_before_any_work() -> None:
    func, args = ex.sobel3x3(16)
    with pytest.raises(hl.HalideError, match="Did not understand Halide target"):
        capture_stmt(func, args, "arm-65-nowhere")


def test_inprocess_mode_refuses_when_halide_does_not_log() -> None:
    if inprocess_capture_available():
        pytest.skip("this process's Halide logs lowering (HL_DEBUG_CODEGEN was set)")
    func, args = ex.sobel3x3(16)
    with pytest.raises(CaptureError, match="HL_DEBUG_CODEGEN"):
        capture_stmt(func, args, "arm64", mode="inprocess")


def _run(script: str, *, realize: bool = False) -> subprocess.CompletedProcess[str]:
    """Run `script` in a fresh interpreter (without HL_DEBUG_CODEGEN); with `realize`, it then runs
    the Sobel pipeline `out(args)` once on the host."""
    env = {k: v for k, v in os.environ.items() if k != "HL_DEBUG_CODEGEN"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")])
    code = textwrap.dedent(script) + (textwrap.dedent(_REALIZE) if realize else "")
    return subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env, timeout=300
    )


_REALIZE = """
    import numpy as np
    args[0].set(hl.Buffer(np.zeros((8, 64), dtype=np.uint8)))
    out.realize([64, 8], hl.Target("x86-64-linux-avx2"))
"""


def test_default_capture_leaves_the_users_stderr_alone() -> None:
    r = _run(
        """
        import halide as hl
        from pitchfork.frontend.capture import capture_stmt
        from pitchfork.frontend import examples
        out, args = examples.sobel3x3(32)
        c = capture_stmt(out, args, "x86-avx2")
        print(c.mechanism)
        """,
        realize=True,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["subprocess"]
    assert r.stderr == ""


def test_inprocess_capture_matches_subprocess_capture() -> None:
    """Opting in before Halide's first use gives in-process capture, and then every later compile
    of the process (here a realize) logs its lowering to stderr: the documented price."""
    r = _run(
        """
        import json
        from pitchfork.frontend.capture import capture_stmt, enable_inprocess_capture
        from pitchfork.frontend import examples
        assert enable_inprocess_capture()
        import halide as hl
        out, args = examples.sobel3x3(16)
        a = capture_stmt(out, args, "arm64")
        b = capture_stmt(out, args, "arm64", mode="subprocess")
        print(json.dumps([a.mechanism, b.mechanism, a.text, b.text]))
        import sys; sys.stdout.flush(); sys.stderr.write("--realize--\\n"); sys.stderr.flush()
        """,
        realize=True,
    )
    assert r.returncode == 0, r.stderr
    mech_a, mech_b, text_a, text_b = json.loads(r.stdout)
    assert (mech_a, mech_b) == ("inprocess", "subprocess")
    assert canonical_temps(text_a) == canonical_temps(text_b)
    before, after = r.stderr.split("--realize--\n")
    assert before == ""  # the capture swallowed its own log
    assert INTRINSICS_MARKER in after  # ... but the user's realize logs


def test_enabling_inprocess_capture_after_halide_was_used_does_not_work() -> None:
    r = _run(
        """
        import halide as hl
        image = hl.ImageParam(hl.UInt(8), 2, "image")  # creating a parameter makes Halide read the variable
        from pitchfork.frontend.capture import enable_inprocess_capture
        print(enable_inprocess_capture())
        """
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["False"]


LOG = """\
Creating initial loop nests...
Lowering after creating initial loop nests:
produce f {
 f[0] = 1
}

Lowering after injecting tracing: (unchanged)

Lowering after vectorizing:
produce f {
 f[ramp(0, 1, 4)] = x4(1)
}

Lowering after flattening nested ramps: (unchanged)

Finding intrinsics...
Lowering after finding intrinsics:
produce f {
 f[ramp(0, 1, 4)] = x4(2)
}

Creating initial loop nests...
Lowering after creating initial loop nests:
produce g {
}

"""


def test_split_lowering_log() -> None:
    first, second = split_lowering_log(LOG)
    assert [s.name for s in first.stages] == [
        "creating initial loop nests",
        "injecting tracing",
        "vectorizing",
        "flattening nested ramps",
        "finding intrinsics",
    ]
    assert first.intrinsics_at == 4
    pre = first.pre_intrinsics
    assert pre is not None and pre.name == "flattening nested ramps" and not pre.changed
    assert pre.text == "produce f {\n f[ramp(0, 1, 4)] = x4(1)\n}\n"  # an unchanged stage repeats the text
    assert first.stages[1].text == first.stages[0].text
    assert second.intrinsics_at is None and second.pre_intrinsics is None


def test_output_info_names_tuple_buffers() -> None:
    assert OutputInfo("f", (UInt(8),), 2).buffer_names == ("f",)
    assert OutputInfo("f", (UInt(8), Int(32)), 1).buffer_names == ("f.0", "f.1")


def test_buffer_dimension_constraints_survive_the_subprocess() -> None:
    """hl.serialize_pipeline drops `dim(d).set_min/set_extent/set_stride`; the capture sends them to
    the worker, so the statement has Halide's own constraint checks and substitutions (fully_connected's
    `filter.min.0 == 0` made its two spellings of one filter address equal). A constraint over a
    scalar Param is outside the transferred language and is left out (as before), not an error."""
    a = hl.ImageParam(hl.UInt(8), 2, "A")
    b = hl.ImageParam(hl.UInt(8), 1, "B")
    p = hl.Param(hl.Int(32), "p")
    a.dim(0).set_min(0)
    a.dim(1).set_extent((a.dim(1).extent() / 4) * 4)
    b.dim(0).set_extent(hl.min(a.dim(0).extent(), 64)).set_stride(1)
    b.dim(0).set_min(p)
    x, y = hl.Var("x"), hl.Var("y")
    f = hl.Func("f")
    f[x, y] = a[x, y] + b[x]
    c = capture_stmt(f, [a, b, p], "x86-avx2", mode="subprocess")
    checks = [ln.split(",")[0].strip() for ln in c.lowered.splitlines() if "constraint_violated" in ln]
    assert "assert(A.min.0 == 0" in checks
    assert "assert((A.extent.1 % 4) == 0" in checks
    assert "assert(B.extent.0 == min(A.extent.0" in checks
    assert not any("B.min.0" in ck for ck in checks)  # the Param constraint: left out
    assert "A.min.0" not in c.text.split("produce f")[-1]  # substituted (0) inside the loop nest
