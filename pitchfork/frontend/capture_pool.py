"""Warm capture workers: the subprocess capture without a fresh interpreter per pipeline.

`pitchfork.frontend.capture` lowers each pipeline in a subprocess (Halide reads `HL_DEBUG_CODEGEN` once
per process). Starting that interpreter and importing Halide is most of a capture's cost (~0.35 s
against tens of milliseconds of lowering), so this module keeps such processes alive and reuses them
across compiles in one process: each is a fork server (`_capture_worker.serve`) that has imported
Halide once and forks a child per job, so a job runs exactly as in a fresh interpreter (same log text,
same Halide name counters) and a Halide abort kills only that job's child.

Invariants:
* A job's result is what the one-shot subprocess gives: `run_job` returns the child's exit status in
  `subprocess.run`'s convention (negative: killed by that signal), and the job's log, statement and
  result files are written by the child exactly as the one-shot worker writes them.
* A worker is reused only by the environment it was started with (a changed `os.environ` starts a new
  one), by one job at a time; idle workers are kept up to `MAX_IDLE`, the rest are closed.
* Anything wrong with a worker itself (it would not start, its pipe broke, its reply was not a status)
  raises `WorkerUnavailable`, and the caller runs the job the one-shot way instead; a job that runs past
  its timeout kills the worker (and the job's child) and raises `WorkerTimeout`.
* Workers end with this process: they exit on EOF on stdin, which the parent's exit closes (and an
  `atexit` hook closes them explicitly). `PITCHFORK_CAPTURE_WORKER=off` disables them (one-shot
  subprocesses, as before).
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

#: Idle workers kept for reuse (more are started while several captures run at once, then closed).
MAX_IDLE = 2
#: Seconds a worker may take to start (import Halide) before it counts as unavailable.
START_TIMEOUT = 120.0

_SOURCE = (Path(__file__).with_name("_capture_worker.py")).read_text()


class WorkerUnavailable(RuntimeError):
    """The warm worker could not run the job (not the job's own failure): run it the one-shot way."""


class WorkerTimeout(RuntimeError):
    """The job ran past its timeout; the worker and its child were killed."""


def enabled() -> bool:
    """Whether captures use warm workers (`PITCHFORK_CAPTURE_WORKER=off` / `0` turns them off)."""
    return os.environ.get("PITCHFORK_CAPTURE_WORKER", "on").lower() not in ("off", "0", "no", "false")


class _Worker:
    """One fork server process and the unread part of its replies."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env_key = _env_key(env)
        self.owner = os.getpid()  # a forked copy of this process must not talk on the same pipes
        self.cwd = tempfile.mkdtemp(prefix="pitchfork-capture-worker-")  # nothing there can shadow a module
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-c", _SOURCE, "--serve"], cwd=self.cwd, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                start_new_session=True,  # its own process group: a timeout kills it and its child together
            )
        except OSError as e:
            raise WorkerUnavailable(f"cannot start a capture worker: {e}") from e
        self._buf = b""
        try:
            ready = self._line(START_TIMEOUT)
        except TimeoutError:
            ready = None
        if ready != "ready":
            self.kill()
            raise WorkerUnavailable("the capture worker did not start")

    def _line(self, timeout: float) -> str | None:
        """The next reply line, None at EOF; raises TimeoutError after `timeout` seconds."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select([fd], [], [], left)
            if not ready:
                continue
            chunk = os.read(fd, 65536)
            if not chunk:
                return None
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace").strip()

    def run(self, job_path: str, timeout: float) -> int:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(job_path.encode() + b"\n")
            self.proc.stdin.flush()
        except (BrokenPipeError, OSError) as e:
            self.close()
            raise WorkerUnavailable(f"capture worker pipe: {e}") from e
        try:
            line = self._line(timeout)
        except TimeoutError:
            self.kill()
            raise WorkerTimeout from None
        try:
            status = int(json.loads(line)["status"]) if line is not None else None
        except (ValueError, KeyError, TypeError):
            status = None
        if status is None:
            self.kill()
            raise WorkerUnavailable(f"capture worker ended or replied {line!r}")
        return os.waitstatus_to_exitcode(status)  # -N when the job's child was killed by signal N

    def alive(self) -> bool:
        return self.proc.poll() is None

    def close(self) -> None:
        """EOF on its stdin ends the server after its current job."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
            self.proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.kill()
            return
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._cleanup()

    def kill(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            pass
        for f in (self.proc.stdin, self.proc.stdout):
            try:
                if f is not None:
                    f.close()
            except OSError:
                pass
        self._cleanup()

    def _cleanup(self) -> None:
        try:
            os.rmdir(self.cwd)
        except OSError:
            pass


def _env_key(env: dict[str, str]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(env.items()))


_LOCK = threading.Lock()
_IDLE: list[_Worker] = []


def _take(env: dict[str, str]) -> _Worker:
    key = _env_key(env)
    with _LOCK:
        while _IDLE:
            w = _IDLE.pop()
            if w.owner != os.getpid():  # inherited through a fork: the parent's, left alone
                continue
            if w.env_key == key and w.alive():
                return w
            w.close()
    return _Worker(env)  # started outside the lock: concurrent captures start theirs in parallel


def _give_back(w: _Worker) -> None:
    with _LOCK:
        if w.alive() and len(_IDLE) < MAX_IDLE:
            _IDLE.append(w)
            return
    w.close()


def run_job(job_path: str, env: dict[str, str], timeout: float) -> int:
    """Run the one-shot worker's job `job_path` (its "log" key names the file for Halide's stderr) in
    a warm worker started with `env`; returns the job's exit status (subprocess convention)."""
    w = _take(env)
    code = w.run(job_path, timeout)  # WorkerUnavailable / WorkerTimeout: the worker is gone already
    _give_back(w)
    return code


def shutdown() -> None:
    """Close every idle worker (also run at exit)."""
    with _LOCK:
        idle = [w for w in _IDLE if w.owner == os.getpid()]
        _IDLE.clear()
    for w in idle:
        w.close()


atexit.register(shutdown)
