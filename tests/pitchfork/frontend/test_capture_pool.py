"""The warm capture workers (pitchfork/frontend/capture_pool.py): reused across captures, the same
statement text as a fresh interpreter, a crashed or timed-out job does not poison later captures, and
a worker that cannot run falls back to the one-shot subprocess. (These tests run Halide.)"""

from __future__ import annotations

import os

import pytest

from pitchfork.frontend import capture_pool
from pitchfork.frontend import examples as ex
from pitchfork.frontend.capture import CaptureError, capture_stmt
from tests.pitchfork.frontend.test_capture import bad_location_pipeline


def _idle_pids() -> list[int]:
    return [w.proc.pid for w in capture_pool._IDLE if w.owner == os.getpid()]


@pytest.fixture(autouse=True)
def _fresh_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PITCHFORK_CAPTURE_WORKER", raising=False)
    capture_pool.shutdown()
    yield
    capture_pool.shutdown()


def test_a_worker_is_reused_across_captures() -> None:
    func, args = ex.sobel3x3(32)
    a = capture_stmt(func, args, "arm64", mode="subprocess")
    first = _idle_pids()
    assert len(first) == 1
    b = capture_stmt(func, args, "x86-avx2", mode="subprocess")
    assert _idle_pids() == first
    assert a.text and b.text


def test_worker_statement_is_the_fresh_interpreters(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte for byte, including Halide's numbered temporaries: every job runs in a child forked from
    a server that never lowered anything, so its name counters start where a fresh process's do."""
    func, args = ex.sobel3x3(32)
    warm = [capture_stmt(func, args, "hvx128", mode="subprocess") for _ in range(2)]
    monkeypatch.setenv("PITCHFORK_CAPTURE_WORKER", "off")
    cold = capture_stmt(func, args, "hvx128", mode="subprocess")
    assert warm[0].text == warm[1].text == cold.text
    assert [s.text for s in warm[1].stages] == [s.text for s in cold.stages]
    assert warm[1].lowered == cold.lowered


def test_worker_survives_a_failed_job() -> None:
    with pytest.raises(CaptureError, match="Halide failed to lower.*invalid location"):
        capture_stmt(bad_location_pipeline(), [], "arm64", mode="subprocess")
    pids = _idle_pids()
    func, args = ex.sobel3x3(32)
    assert capture_stmt(func, args, "arm64", mode="subprocess").text
    assert _idle_pids() == pids


def test_a_timed_out_job_kills_its_worker_and_the_next_capture_starts_another() -> None:
    func, args = ex.sobel3x3(32)
    capture_stmt(func, args, "arm64", mode="subprocess")
    [old] = _idle_pids()
    with pytest.raises(CaptureError, match="timed out"):
        capture_stmt(func, args, "arm64", mode="subprocess", timeout=1e-4)
    with pytest.raises(ProcessLookupError):
        os.kill(old, 0)  # gone (killed with its process group, and reaped)
    assert capture_stmt(func, args, "arm64", mode="subprocess").text
    assert _idle_pids() and _idle_pids() != [old]


def test_a_worker_that_cannot_start_falls_back_to_a_fresh_interpreter(monkeypatch: pytest.MonkeyPatch) -> None:
    func, args = ex.sobel3x3(32)
    monkeypatch.setenv("PITCHFORK_CAPTURE_WORKER", "off")
    cold = capture_stmt(func, args, "arm64", mode="subprocess")
    monkeypatch.delenv("PITCHFORK_CAPTURE_WORKER")
    monkeypatch.setattr(capture_pool, "_SOURCE", "import sys; sys.exit(3)")
    c = capture_stmt(func, args, "arm64", mode="subprocess")
    assert c.text == cold.text  # captured all the same, the one-shot way
    assert not _idle_pids()


def test_off_switch_uses_no_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PITCHFORK_CAPTURE_WORKER", "off")
    func, args = ex.sobel3x3(32)
    assert capture_stmt(func, args, "arm64", mode="subprocess").text
    assert not _idle_pids()


def test_shutdown_ends_the_workers() -> None:
    func, args = ex.sobel3x3(32)
    capture_stmt(func, args, "arm64", mode="subprocess")
    workers = list(capture_pool._IDLE)
    assert workers
    capture_pool.shutdown()
    assert all(w.proc.poll() is not None for w in workers)


def test_the_workers_buffer_halides_log() -> None:
    """A forked job makes `std::cerr` buffered (one write per buffer, not per printed token); the
    log text is the same (test_worker_statement_is_the_fresh_interpreters compares every stage).
    Checked in a fresh interpreter: it changes the process's cerr."""
    import subprocess
    import sys
    from pathlib import Path

    worker = Path(capture_pool.__file__).with_name("_capture_worker.py")
    code = f"exec(open({str(worker)!r}).read().split('if __name__')[0]); print(_buffer_halide_log() is not None)"
    r = subprocess.run([sys.executable, "-c", "import halide\n" + code], capture_output=True, text=True, check=True)
    assert r.stdout.strip() == "True"


def test_a_job_that_did_not_exit_cleanly_runs_again_unbuffered(monkeypatch: pytest.MonkeyPatch) -> None:
    """What an abort leaves in the buffer is lost, so such a job is run again with the log unbuffered.
    (Halide 21 aborts in none of the tests' pipelines, so the first run's exit status is made up.)"""
    import json

    real = capture_pool.run_job
    seen: list[bool] = []

    def run_job(job_path: str, env: dict[str, str], timeout: float) -> int:
        with open(job_path) as f:
            seen.append(json.load(f)["buffered_log"])
        code = real(job_path, env, timeout)
        return -6 if len(seen) == 1 else code  # the first run "killed by SIGABRT"

    monkeypatch.setattr(capture_pool, "run_job", run_job)
    func, args = ex.sobel3x3(32)
    c = capture_stmt(func, args, "arm64", mode="subprocess")
    assert seen == [True, False]
    assert c.text and not c.error


def _worker_namespace() -> dict:
    """The worker's functions (its source without the `__main__` dispatch), loaded in this process."""
    from pathlib import Path

    source = Path(capture_pool.__file__).with_name("_capture_worker.py").read_text().split("if __name__")[0]
    ns: dict = {"__name__": "capture_worker_under_test"}
    exec(compile(source, "_capture_worker.py", "exec"), ns)  # noqa: S102 - our own module's source
    return ns


def test_the_next_jobs_child_is_forked_before_the_job_arrives() -> None:
    """After a capture the server has one live child waiting for the next job (the fork is off the
    path). The previous job's child may still be listed for a moment as a zombie (the server forks
    the spare first and reaps the exited child after it), so zombies are not counted; the loop waits
    (on the server's progress, not a clock) until the spare is asleep on its job pipe."""
    func, args = ex.sobel3x3(32)
    capture_stmt(func, args, "arm64", mode="subprocess")
    [server] = _idle_pids()
    import time

    def live_children() -> dict[str, str]:
        states = {}
        for pid in open(f"/proc/{server}/task/{server}/children").read().split():
            try:
                states[pid] = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()[0]
            except FileNotFoundError:  # reaped between the two reads
                continue
        return {pid: st for pid, st in states.items() if st != "Z"}

    live: dict[str, str] = {}
    for _ in range(3000):  # the spare is forked right after the reply
        live = live_children()
        if list(live.values()) == ["S"]:
            break
        time.sleep(0.01)
    assert list(live.values()) == ["S"], live  # one child, asleep: waiting on its job pipe


def test_a_waiting_child_reports_its_jobs_exit_code(tmp_path: "os.PathLike[str]") -> None:
    """A job that fails (no such pipeline file) reports exit code 1 through the done pipe."""
    import json
    from pathlib import Path

    ns = _worker_namespace()
    d = Path(tmp_path)
    job = {"pipeline": str(d / "missing.hlpipe"), "target": "x86-64-linux", "stmt_out": str(d / "s"),
           "result": str(d / "r.json"), "args": [], "constraints": {}, "log": str(d / "log.txt")}
    (d / "job.json").write_text(json.dumps(job))
    pid, job_w, done_r, log_r = ns["_spare_child"]()
    os.close(log_r)
    os.write(job_w, str(d / "job.json").encode() + b"\n")
    os.close(job_w)
    status = ns["_finish"](pid, done_r)
    os.waitpid(pid, 0)
    assert status is not None and os.waitstatus_to_exitcode(status) == 0  # main() reports, exits 0
    assert json.loads((d / "r.json").read_text())["ok"] is False


def test_a_child_killed_before_reporting_gives_its_signal_status() -> None:
    """No done message (a Halide abort kills the child): the status comes from waitpid."""
    import signal

    ns = _worker_namespace()
    pid, job_w, done_r, log_r = ns["_spare_child"]()
    os.close(log_r)
    os.kill(pid, signal.SIGKILL)
    assert ns["_finish"](pid, done_r) is None
    _, status = os.waitpid(pid, 0)
    os.close(job_w)
    assert os.waitstatus_to_exitcode(status) == -signal.SIGKILL


def test_a_stop_at_job_ends_at_its_line_and_the_statement_is_the_full_runs() -> None:
    """capture_stmt(upto_intrinsics=True) through a warm worker (the server watches the child's log and
    ends the child at "Finding intrinsics..."): the same statement and stage as the full capture, the
    stages a prefix of the full run's ending at the marker, no lowered statement, no error; a later
    full capture in the same worker is complete again; a lowering that fails before the marker fails
    as a full capture does."""
    from pitchfork.frontend import capture_pool
    from pitchfork.frontend.capture import capture_stmt

    if not capture_pool.enabled():
        pytest.skip("warm capture workers are turned off")
    func, args = ex.sobel3x3(16)
    full = capture_stmt(func, args, "arm64", mode="subprocess")
    part = capture_stmt(func, args, "arm64", mode="subprocess", upto_intrinsics=True)
    assert part.text == full.text and part.stage == full.stage
    names = [st.name for st in part.stages]
    assert names == [st.name for st in full.stages][: len(names)] and len(names) < len(full.stages)
    assert names[-1] == full.stage
    assert part.lowered == "" and part.error == ""
    again = capture_stmt(func, args, "arm64", mode="subprocess")
    assert again.lowered == full.lowered and [st.text for st in again.stages] == [st.text for st in full.stages]
    with pytest.raises(CaptureError, match="Halide failed to lower.*invalid location"):  # no marker: as before
        capture_stmt(bad_location_pipeline(), [], "arm64", mode="subprocess", upto_intrinsics=True)


def test_a_capture_reports_its_lowering_childs_cpu() -> None:
    """The capture child's CPU (not in the caller's own CPU time) comes back with the statement: a stopped
    child's as the server read it at the line, a full run's as the child measured itself; pitchfork.compile
    puts it in its stats. An in-process capture has no child (None)."""
    import pitchfork
    from pitchfork.frontend import capture

    func, args = ex.sobel3x3(16)
    part = capture_stmt(func, args, "arm64", mode="subprocess", upto_intrinsics=True)
    full = capture_stmt(func, args, "arm64", mode="subprocess")
    assert part.child_cpu_seconds is not None and 0 < part.child_cpu_seconds < 60
    assert full.child_cpu_seconds is not None and 0 < full.child_cpu_seconds < 60
    for cap in (part, full):  # its run-queue delay, read with its CPU (0 on an idle machine)
        assert cap.child_run_delay_seconds is not None and 0 <= cap.child_run_delay_seconds < 60
    prog = pitchfork.compile(func, args, target="arm64", fallback=False)
    assert prog.stats.capture_child_cpu_seconds is not None and prog.stats.capture_child_cpu_seconds > 0
    assert prog.stats.capture_child_run_delay_seconds is not None
    log = "Creating initial loop nests...\nLowering after x:\nf[x] = a[x]\n\nFinding intrinsics...\n"
    inprocess = capture._build(log, "", "", "arm64", (), (), "inprocess")
    assert inprocess.child_cpu_seconds is None and inprocess.child_run_delay_seconds is None


def test_capture_jobs_leave_no_files_and_the_directory_goes_at_exit(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each subprocess capture's files (pipeline, job, log, result, statement) are removed when it is
    done, through the worker, the one-shot way and a failed job alike; the per-process job directory
    (capture._job_files) is removed when the process exits."""
    import subprocess
    import sys
    from pathlib import Path

    from pitchfork.frontend import capture

    func, args = ex.sobel3x3(32)
    capture_stmt(func, args, "arm64", mode="subprocess", upto_intrinsics=True)
    capture_stmt(func, args, "arm64", mode="subprocess")
    with pytest.raises(CaptureError):
        capture_stmt(bad_location_pipeline(), [], "arm64", mode="subprocess")
    monkeypatch.setenv("PITCHFORK_CAPTURE_WORKER", "off")
    capture_stmt(func, args, "x86-avx2", mode="subprocess")
    assert capture._job_dir is not None and capture._job_dir[0] == os.getpid()
    assert list(capture._job_dir[1].iterdir()) == []
    probe = ("from pitchfork.frontend import capture, examples as ex; f, a = ex.sobel3x3(32); "
             "capture.capture_stmt(f, a, 'arm64', mode='subprocess'); print(capture._job_dir[1])")
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                         env={**os.environ, "PYTHONPATH": str(root)})
    job_dir = Path(out.stdout.strip().splitlines()[-1])
    assert job_dir.name.startswith("pitchfork-capture-") and not job_dir.exists()


@pytest.mark.parametrize("most", [1, 7, 1 << 16])
def test_watch_finds_the_stop_line_across_reads(tmp_path: "os.PathLike[str]", monkeypatch: pytest.MonkeyPatch,
                                                most: int) -> None:
    """The server's `_watch` copies the log as it comes and ends it at the stop line, also when reads
    split the line (os.read giving at most `most` bytes); the child is killed, the result is ok. Without
    the line the whole log is copied and the child's own status is left to count (None)."""
    import subprocess
    from pathlib import Path

    worker = Path(capture_pool.__file__).with_name("_capture_worker.py")
    ns: dict = {}
    exec(worker.read_text().split("if __name__")[0], ns)
    real_read = os.read
    monkeypatch.setattr(os, "read", lambda fd, n: real_read(fd, min(n, most)))
    head = "Lowering after x:\nlet a = 1\n\nFinding intrinsics...\n"
    for text, stops in ((head + "Lowering after finding intrinsics:\nlet b = 2\n", True), ("no marker here\n", False)):
        r, w = os.pipe()
        os.write(w, text.encode())
        os.close(w)
        child = subprocess.Popen(["sleep", "60"])
        job = {"stop_at": "Finding intrinsics...", "log": str(Path(tmp_path) / "log.txt"),
               "result": str(Path(tmp_path) / "result.json")}
        status = ns["_watch"](child.pid, r, job)
        if stops:
            assert status == 0 and child.wait(timeout=30) == -9
            assert Path(job["log"]).read_text() == head
            assert '"ok": true' in Path(job["result"]).read_text()
            assert '"cpu_seconds": ' in Path(job["result"]).read_text()  # read before the kill
            assert '"run_delay_seconds": ' in Path(job["result"]).read_text()
        else:
            assert status is None and child.poll() is None
            assert Path(job["log"]).read_text() == text
            child.kill()
            child.wait()
        Path(job["result"]).unlink(missing_ok=True)
