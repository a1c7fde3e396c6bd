"""benchmarks/compile_time.py: its inputs and its report (the measurements themselves are not asserted on:
no timing assertions). The batch file has 1,000 distinct lines that all lift; the markdown table, the plot
and the RESULTS.md section replacement work on a results dict of the shape the run produces."""

from __future__ import annotations

from pathlib import Path

from benchmarks import compile_time as ct


def test_batch_lines_are_distinct_and_lift() -> None:
    from fpir import parse

    lines = ct.batch_lines()
    assert len(lines) == 1000 and len(set(lines)) == 1000
    lift = ct._lift_module()
    rules = lift.lift_rules()
    lifted = [str(lift.lift(parse(x), rules)) for x in lines[:22]]
    assert sum(a != b for a, b in zip(lifted, lines)) >= 20  # the idioms do lift


def _data(root: str) -> dict:
    cell = {"pitchfork.total": 1.0, "pitchfork.capture": 0.4, "pitchfork.selection": 0.1, "pitchfork.codegen": 0.2,
            "pitchfork.llvm": 0.3, "pitchfork.n": 16, "llvm.total": 0.9, "llvm.capture": 0.4, "llvm.selection": 0.0,
            "llvm.codegen": 0.2, "llvm.llvm": 0.3, "llvm.n": 16, "halide21.total": 1.2, "halide21.n": 15}
    sel = {"cold": {"wall_median": 0.2, "cpu_median": 0.15}, "batch": {"per_second_wall": 600, "per_second_cpu": 700},
           "micro": {"select_per_isa": {i: {"cpu_per_expr": 1e-3} for i in ct.ISAS},
                     "lift_per_rule_count": {"172": {"cpu_per_expr": 1e-3}},
                     "lift_cpu_by_sum_size": {"widen": {"80": 0.01, "640": 0.08}},
                     "ratio_640_over_80": {"widen": 8.0}},
           "memory": {"terms": 20000, "tracemalloc_peak_mb": 80, "maxrss_growth_during_lift_mb": 110}}
    return {"host": {"date": "today", "cpus": 2, "load": 1.0}, "selection": {root: sel},
            "compile": {"rows": [{"bench": "add", "isa": "arm64", "root": root, "median": {},
                                  "errors": {"halide21": "HalideError: no"}}],
                        "summary": {root: {"x86-avx2": cell}}}}


def test_report_and_results_section(tmp_path: Path) -> None:
    data = _data("/x/after")
    md = ct.markdown(data)
    assert md.startswith("## Compile time")
    assert "| after | x86-avx2 | 1.00 (0.40 / 0.10 / 0.20 / 0.30) | 10% | 0.90 (0.40 / 0.00 / 0.20 / 0.30) | " \
           "1.20 (n=15) | 1.11x | 0.83x |" in md
    assert "add / arm64 / after / halide21: HalideError: no" in md
    assert "| 20000-term sum (widen)" in md and "80 / 110" in md
    ct.plot(data, tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000
    results = tmp_path / "RESULTS.md"
    history = "## Session 15\nkept\n\n## Compile time, session 12 run\nold rows, kept too\n"
    results.write_text("# R\n\n" + history)
    ct.write_results(md, results)  # the first generated run: right under the title, above the history
    assert results.read_text() == f"# R\n\n{ct.BEGIN_MARK}\n{md.rstrip()}\n{ct.END_MARK}\n\n{history}"
    newer = md.replace("today", "tomorrow")
    ct.write_results(newer, results)  # the next run replaces it, and only it
    assert results.read_text() == f"# R\n\n{ct.BEGIN_MARK}\n{newer.rstrip()}\n{ct.END_MARK}\n\n{history}"
    fresh = tmp_path / "new.md"
    ct.write_results(md, fresh)
    assert fresh.read_text() == f"{ct.BEGIN_MARK}\n{md.rstrip()}\n{ct.END_MARK}\n"



def test_paired_figures_compare_the_same_benchmarks() -> None:
    """Halide 21 failed on one benchmark (as on softmax hvx128): the paired figures leave that benchmark
    out of PITCHFORK's median too, and the per-benchmark ratios' median does not depend on the others."""
    def row(bench: str, ours: float, llvm: float, halide: float | None) -> dict:
        med = {"pitchfork": {"total": ours}, "llvm": {"total": llvm}}
        if halide is not None:
            med["halide21"] = {"total": halide}
        return {"bench": bench, "isa": "hvx128", "root": "/x/after", "median": med, "errors": {}}

    rows = [row("a", 1.0, 2.0, 2.0), row("b", 2.0, 1.0, 1.0), row("c", 3.0, 3.0, 2.0), row("d", 9.0, 9.0, None)]
    cell = ct.summarize(rows)["/x/after"]["hvx128"]
    assert cell["pitchfork.total"] == 2.5 and cell["halide21.total"] == 2.0  # each over its own benchmarks
    assert cell["halide21.same.pitchfork"] == 2.0 and cell["halide21.same.other"] == 2.0  # a, b, c only
    assert cell["halide21.paired"] == 1.5 and cell["halide21.same.n"] == 3 and cell["halide21.wins"] == 1
    assert cell["llvm.same.n"] == 4 and cell["llvm.paired"] == 1.0 and cell["llvm.wins"] == 3
    md = ct.markdown({"host": {"date": "today", "cpus": 2, "load": 1.0},
                      "compile": {"rows": rows, "summary": {"/x/after": {"hvx128": cell}}}})
    assert ("| after | hvx128 | 2.50 / 2.50 (n=4) = 1.00x | 1.00x | 3 of 4 | 2.00 / 2.00 (n=3) = 1.00x | 1.50x "
            "| 1 of 3 |") in md

def test_cpu_with_the_capture_child_is_compared_with_halides_cpu() -> None:
    """Checkouts whose compiles report the capture child's CPU: PITCHFORK's CPU with it against Halide 21's
    CPU per benchmark (paired median, how many not more), and against LLVM alone's CPU with its own child;
    rows without the figure (an older checkout) are left out of it."""
    def row(bench: str, ours: float, child: float | None, halide: float) -> dict:
        pf = {"total": 1.0, "cpu": ours}
        if child is not None:
            pf.update(cpu_capture_child=child, cpu_with_capture=ours + child)
        med = {"pitchfork": pf, "llvm": {"total": 1.0, "cpu": ours, "cpu_with_capture": 2 * ours},
               "halide21": {"total": 1.0, "cpu": halide}}
        return {"bench": bench, "isa": "arm64", "root": "/x/after", "median": med, "errors": {}}

    rows = [row("a", 0.3, 0.1, 0.5), row("b", 0.4, 0.2, 0.5), row("c", 0.2, None, 0.1)]
    cell = ct.summarize(rows)["/x/after"]["arm64"]
    assert cell["halide21.cpu_same.n"] == 2 and cell["halide21.cpu_wins"] == 1
    assert abs(cell["halide21.cpu_paired"] - 1.0) < 1e-9  # 0.4 / 0.5 and 0.6 / 0.5
    assert abs(cell["pitchfork.cpu_with_capture"] - 0.5) < 1e-9
    md = ct.markdown({"host": {"date": "today", "cpus": 2, "load": 1.0},
                      "compile": {"rows": rows, "summary": {"/x/after": {"arm64": cell}}}})
    assert "| after | arm64 | 0.30 (+ 0.00) | 0.50 | 1.00x (1 of 2) | 0.30 (+ 0.00) | 0.50 |" in md


# A stand-in for the harness's child (`compile_time --child`), run as a real subprocess: it announces each
# contender as the child does, and its "llvm" contender hits a real LLVM abort (usdot needs +i8mm, which the
# arm64 target lacks: LLVM aborts in instruction selection, as llvmlite's assertion-enabled LLVM did on
# depthwise_conv hvx128 with isel=llvm), unless it is skipped.
_CHILD = """
import json, sys
from benchmarks.compile_time import CONTENDER_MARK
USDOT_IR = '''
declare <4 x i32> @llvm.aarch64.neon.usdot.v4i32.v16i8(<4 x i32>, <16 x i8>, <16 x i8>)
define <4 x i32> @f(<4 x i32> %a, <16 x i8> %b, <16 x i8> %c) {
  %r = call <4 x i32> @llvm.aarch64.neon.usdot.v4i32.v16i8(<4 x i32> %a, <16 x i8> %b, <16 x i8> %c)
  ret <4 x i32> %r
}
'''
skip = sys.argv[2::2]
ran = []
for k in ("pitchfork", "llvm", "halide21"):
    if k in skip:
        continue
    print(CONTENDER_MARK, k, file=sys.stderr, flush=True)
    if k == "llvm":
        from pitchfork.backend.machine import compile_module
        compile_module(USDOT_IR, "arm64")
    ran.append(k)
print(json.dumps({"bench": "add", "isa": "arm64", "median": {k: {"total": 1.0} for k in ran}, "errors": {}}))
"""


def test_a_contender_that_aborts_the_child_is_one_error_line() -> None:
    import os
    import sys

    root = Path(ct.__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    row = ct.run_child([sys.executable, "-c", _CHILD], root, env)
    # Before: the child's death lost the whole benchmark ({"child": <stderr tail>}, no contender measured).
    assert sorted(row["median"]) == ["halide21", "pitchfork"]
    assert list(row["errors"]) == ["llvm"]
    assert row["errors"]["llvm"].startswith("killed by SIGABRT: LLVM ERROR: Cannot select")
    assert "\n" not in row["errors"]["llvm"]
    md = ct.markdown({"host": {"date": "today", "cpus": 2, "load": 1.0},
                      "compile": {"rows": [{**row, "root": "/x/after"}], "summary": {}}})
    assert "* add / arm64 / after / llvm: killed by SIGABRT: LLVM ERROR: Cannot select" in md


def test_a_death_no_contender_is_named_for_stays_the_child_error() -> None:
    import os
    import sys

    root = Path(ct.__file__).resolve().parent.parent
    row = ct.run_child([sys.executable, "-c", "import os; os.abort()"], root, dict(os.environ))
    assert row == {"median": {}, "errors": {"child": "killed by SIGABRT: "}}


def test_the_child_skips_contenders_and_names_each_before_it_runs(capsys) -> None:  # type: ignore[no-untyped-def]
    row = ct.child("add", "x86-avx2", 1, skip=("llvm", "halide21"))
    assert list(row["median"]) == ["pitchfork"] and row["errors"] == {}
    assert capsys.readouterr().err.splitlines() == [f"{ct.CONTENDER_MARK} pitchfork"] * 2  # warm-up + 1 round


def test_crash_line_is_the_assertion_with_a_short_path() -> None:
    # the stderr of the depthwise_conv hvx128 isel=llvm child that llvmlite's LLVM aborted (session 15)
    err = (f"{ct.CONTENDER_MARK} llvm\npython3: /root/miniconda3/envs/buildenv/conda-bld/llvmdev_1779838404695/work/"
           "llvm/lib/CodeGen/TargetRegisterInfo.cpp:226: const llvm::TargetRegisterClass* getMinimalPhysRegClass("
           "const llvm::TargetRegisterInfo*, llvm::MCRegister, TypeT) [with TypeT = llvm::MVT]: Assertion `BestRC && "
           "\"Couldn't find the register class\"' failed.\n")
    line = ct.crash_line(-6, err)
    assert line.startswith("killed by SIGABRT: python3: llvm/lib/CodeGen/TargetRegisterInfo.cpp:226: ")
    assert line.endswith("Assertion `BestRC && \"Couldn't find the register class\"' failed.")
    assert ct.crash_line(3, "") == "exit status 3: "


def test_timed_children_keep_their_bytecode_outside_the_tree(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The cold-lift children compile a module once (the warm-up) into OUT/pycache, even when the calling
    shell says PYTHONDONTWRITEBYTECODE, so later runs read bytecode instead of compiling source again."""
    import sys

    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    _, _, out = ct._timed_run([sys.executable, "-c", "import sys, benchmarks.micro_lift; "
                               "print(sys.dont_write_bytecode, sys.pycache_prefix)"], tmp_path)
    assert out.split() == ["False", str(tmp_path / "pycache")]
    assert list((tmp_path / "pycache").rglob("micro_lift.*.pyc"))


def test_schedstat_and_proc_stat_parsing() -> None:
    """The run-queue delay is schedstat's second field (ns); the host's steal the 8th value of /proc/stat's
    aggregate `cpu` line, not a per-CPU line's; a kernel without the column counts 0."""
    assert ct.schedstat_run_delay_ns("1979128 40100 17\n") == 40100
    stat = ("cpu  3932782 4034426 301776 2643992 5188 0 5158 558899 0 0\n"
            "cpu0 1966391 2017213 150888 1321996 2594 0 2579 279449 0 0\n"
            "intr 12345 0\n")
    assert ct.stat_steal_ticks(stat) == 558899
    assert ct.stat_steal_ticks("cpu  1 2 3 4 5 6 7\n") == 0
    try:
        ct.stat_steal_ticks("cpu0 1 2 3 4 5 6 7 8\n")
    except ValueError as e:
        assert "cpu" in str(e)
    else:
        raise AssertionError("a text without the aggregate line must not read as no steal")


def test_waits_of_a_real_run_are_read_and_reported() -> None:
    """Over a real piece of work in pitchfork.compile's frontend thread (`run_deep`, a thread that ends
    before the compile does, so read inside it), the figures exist and are consistent (no values asserted: they depend on the load);
    the report gets one row of them per checkout and ISA."""
    import pitchfork.api as api

    run_deep = api.run_deep
    with ct._Waits() as w:
        assert api.run_deep(lambda: sum(range(200_000))) == sum(range(200_000))
    assert len(w.frontend_tids) == 1 and api.run_deep is run_deep  # read inside the thread; put back
    row = {"total": 0.5}
    w.add_to(row, 0.2)
    assert row["run_delay"] >= 0 and row["steal"] >= 0
    assert abs(row["rest"] - (0.3 - row["run_delay"])) < 1e-12
    child = {"total": 0.5}
    w.add_to(child, 0.2, 0.04)  # a capture child's delay, which the process's threads do not hold
    assert abs(child["run_delay"] - (row["run_delay"] + 0.04)) < 1e-12
    assert abs(child["rest"] - (row["rest"] - 0.04)) < 1e-12
    med = {"pitchfork": {"total": 0.5, "cpu": 0.2, "cpu_with_capture": 0.3, "run_delay": 0.05, "rest": 0.15,
                         "steal": 0.01},
           "halide21": {"total": 0.4, "cpu": 0.35, "run_delay": 0.03, "rest": 0.02, "steal": 0.0}}
    rows = [{"bench": "add", "isa": "arm64", "root": "/x/after", "median": med, "errors": {}}]
    cell = ct.summarize(rows)["/x/after"]["arm64"]
    md = ct.markdown({"host": {"date": "today", "cpus": 2, "load": 1.0},
                      "compile": {"rows": rows, "summary": {"/x/after": {"arm64": cell}}}})
    assert "| after | arm64 | 500 / 300 / 50 / 150 / 10 | - | 400 / 350 / 30 / 20 / 0 |" in md
