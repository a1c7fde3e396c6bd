"""Subprocess half of `pitchfork.frontend.capture`: lower serialized pipelines, one per job.

Two ways to run it, both with `HL_DEBUG_CODEGEN` already in the environment so that Halide reads the
variable at its first use:

* `python -c <this file's source> JOB.json`, stderr redirected to the log file: one job, then exit.
* `python -c <this file's source> --serve` (the warm worker, `pitchfork.frontend.capture_pool`): a fork
  server. It imports Halide once, then reads job file paths from stdin, one a line; for each, a child
  forked from it sends its stderr (Halide's log) to the job's "log" file and runs the job, and the
  server writes one line `{"status": <wait status>}` to stdout when the child is done. The child is
  forked before its job arrives (right after the previous job's reply, while the caller works) and
  waits for the job on a pipe, so neither the fork nor the child's exit is on a capture's path. The server itself never builds or lowers
  a pipeline, so every child starts from the state of a fresh interpreter that has imported Halide:
  Halide's process-wide name counters (CSE's `t123`, the `v16` of split variables) and its
  once-per-process reading of `HL_DEBUG_CODEGEN` are those of the one-shot run, so both ways log the
  same text. A Halide abort (LLVM asserts are fatal) kills only that child. EOF on stdin ends the server.
  A job with "stop_at" (a log line, e.g. `Finding intrinsics...`): the child's stderr is a pipe the
  server reads into the job's log file; at that line the server kills the child, the log ends with the
  line, the result is `{"ok": true, "stopped_at": ...}` and the status a clean exit's (`_watch`). The
  one-shot way ignores "stop_at" (it lowers to the end).

Every job first sets `std::cerr`'s precision so that Halide logs float constants exactly
(`exact_float_log`: the log's first line then says so).

It imports nothing but the standard library and `halide` (so it cannot be shadowed by, or depend on,
pitchfork's own modules) and writes `{"ok": true}` or `{"error": "..."}` to the result file, with
"cpu_seconds": the child's CPU time (a "stop_at" child's as the server read it when the line came,
`_task_schedstat`), what the capture cost beside the caller's own CPU, and "run_delay_seconds": the time
it was runnable but waiting for a CPU (read with it; absent where /proc has no schedstat).
"""

from __future__ import annotations

import functools
import json
import sys


def _halide_type(hl, code: str, bits: int):
    if code == "int":
        return hl.Int(bits)
    if code == "uint":
        return hl.Bool() if bits == 1 else hl.UInt(bits)
    if code == "float":
        return hl.Float(bits)
    if code == "bfloat":
        return hl.BFloat(bits)
    raise ValueError(f"cannot make a Halide parameter of type code {code!r}")


def _arguments(hl, pipeline, specs: list[dict]) -> list:
    """The compile arguments in the caller's order. Parameters the pipeline does not use are not in
    the deserialized pipeline, so they are recreated by name, type and dimensions."""
    inferred = {a.name: a for a in pipeline.infer_arguments()}
    out = []
    for spec in specs:
        if spec["name"] in inferred:
            out.append(inferred[spec["name"]])
            continue
        t = _halide_type(hl, spec["code"], spec["bits"])
        if spec["kind"] == "scalar":
            out.append(hl.Argument(hl.Param(t, spec["name"])))
        else:
            out.append(hl.Argument(hl.ImageParam(t, spec["dimensions"], spec["name"])))
    return out


def _constraint_expr(hl, tree, images):
    """capture._expr_tree's JSON back to an Expr; `images` maps buffer names to the ImageParams
    that stand for them (a name such as `input.stride.1` is `images["input"].dim(1).stride()`)."""
    if isinstance(tree, int):
        return hl.Expr(tree)
    if isinstance(tree, str):
        name, field, d = tree.rsplit(".", 2)
        return getattr(images[name].dim(int(d)), field)()
    op, a, b = tree[0], _constraint_expr(hl, tree[1], images), _constraint_expr(hl, tree[2], images)
    if op == "min":
        return hl.min(a, b)
    if op == "max":
        return hl.max(a, b)
    return {"+": a + b, "-": a - b, "*": a * b, "/": a / b, "%": a % b}[op]


def _restore_buffers(hl, params: dict, constraints: dict) -> None:
    """Replace each buffer parameter by a fresh ImageParam of the same name, type and dimensions
    carrying the caller's dimension constraints: a constraint such as `(A.extent.0/4)*4` must refer
    to the very parameter the pipeline uses, and only an ImageParam makes such expressions."""
    images = {}
    for name, c in constraints.items():
        p = params.get(name)
        if p is not None and "dims" in c:
            images[name] = hl.ImageParam(p.type(), p.dimensions(), name)
    for name, img in images.items():
        c = constraints[name]
        for dc in c["dims"]:
            e = hl.Expr() if dc["expr"] is None else _constraint_expr(hl, dc["expr"], images)
            dim = img.dim(dc["dim"])
            {"min": dim.set_min, "extent": dim.set_extent, "stride": dim.set_stride}[dc["field"]](e)
        if "host_alignment" in c:
            img.set_host_alignment(c["host_alignment"])
        params[name] = img.parameter()


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    result: dict = {"ok": True}
    exact_float_log()  # before Halide logs anything: its first line is then the marker
    try:
        import halide as hl

        with open(job["pipeline"], "rb") as f:
            data = f.read()
        params = hl.deserialize_parameters(data)
        # what serialization drops (capture.argument_constraints): Param ranges, host alignments,
        # buffer dimension constraints
        for name, c in job.get("constraints", {}).items():
            p = params.get(name)
            if p is None:
                continue
            if "host_alignment" in c:
                p.set_host_alignment(c["host_alignment"])
            for key, set_value in (("min", p.set_min_value), ("max", p.set_max_value)):
                if key in c:  # a float bound through an exact float64 (a bare Python float is float32)
                    v = c[key]
                    set_value(hl.cast(p.type(), hl.f64(v) if isinstance(v, float) else v))
        _restore_buffers(hl, params, job.get("constraints", {}))
        pipeline = hl.deserialize_pipeline(data, params)
        args = _arguments(hl, pipeline, job["args"])
        target = hl.Target(job["target"])
        pipeline.compile_to_lowered_stmt(job["stmt_out"], args, hl.StmtOutputFormat.Text, target)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises CaptureError
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    sys.stderr.flush()
    import os
    import time

    result["cpu_seconds"] = time.process_time()  # this process's CPU: a forked child's since its fork
    sched = _task_schedstat(os.getpid())
    if sched is not None:
        result["run_delay_seconds"] = sched[1]
    with open(job["result"], "w") as f:
        json.dump(result, f)
    return 0


def _buffer_halide_log():
    """Make Halide's log (`std::cerr`) buffered; returns a function that flushes it, or None if this
    C++ library is not the one understood here (the log then stays unbuffered, as in the one-shot run).
    (`_prepare_buffering()` then calling what it returns.)

    Why: `std::cerr` is unit-buffered and synchronised with C stdio, so Halide's printer makes one
    write(2) per token: ~140,000 system calls for one small pipeline's log, most of its lowering
    time. `std::ios_base::sync_with_stdio(false)` (exported by libstdc++) gives cerr a buffered file
    buffer on fd 2; the `unitbuf` flag is cleared in cerr's `ios_base`, found through the Itanium C++
    ABI's virtual-base offset (libstdc++'s `ios_base` layout is part of its stable ABI: vptr,
    precision, width, then the flags), and only if the flags read exactly cerr's initial
    `skipws | dec | unitbuf`. The text is the same; what an abort leaves unflushed is lost, so the
    parent runs a job that did not exit cleanly again unbuffered (capture.py)."""
    apply = _prepare_buffering()
    return None if apply is None else apply()


@functools.lru_cache(maxsize=1)
def _cerr_base():
    """(libstdc++, the address of `std::cerr`, the address of its `ios_base`), or None if this C++
    library is not the one understood here. The `ios_base` is cerr's virtual base, found through the
    Itanium C++ ABI's virtual-base offset; libstdc++'s `ios_base` layout is part of its stable ABI:
    vptr, precision (+8), width (+16), then the flags (+24). Looked up once per process (~0.8 ms in a
    fresh child; a forked child inherits the server's answer)."""
    import ctypes

    try:
        cxx = ctypes.CDLL("libstdc++.so.6")
        cerr = ctypes.addressof(ctypes.c_char.in_dll(cxx, "_ZSt4cerr"))
        vtable = ctypes.c_void_p.from_address(cerr).value
        if not vtable:
            return None
        offset = ctypes.c_int64.from_address(vtable - 24).value  # offset of the virtual base basic_ios
    except (OSError, AttributeError, ValueError):
        return None
    if not 0 < offset <= 64:
        return None
    return cxx, cerr, cerr + offset


#: the precision Halide's float constants are printed with in the capture log (`exact_float_log`)
EXACT_PRECISION = 23
#: the log's first line when its float constants are exact (pitchfork.frontend.float_literals)
EXACT_FLOATS_MARKER = f"pitchfork: float constants printed with precision {EXACT_PRECISION}"


def exact_float_log(restore: bool = False):
    """Make Halide's log print float constants exactly enough to read them back bit for bit, and say
    so in the log: `std::cerr`'s precision set to EXACT_PRECISION, then EXACT_FLOATS_MARKER written to
    fd 2 as the log's first line. Returns a function that puts the old precision back (what an
    in-process capture needs; a child just exits), or None (nothing changed, no marker) if cerr's
    layout is not the one understood here (`_cerr_base`, checked by its precision and width reading
    sane values).

    Why: Halide's statement printer writes a FloatImm with the stream's precision (6 unless set) in
    fixed notation, in scientific notation below 1e-6 (`0.000312f`, `-2.596302e-07f`): not the constant
    the pipeline computes with. With 23 decimals a fixed-notation value of magnitude >= 1e-6 (its first
    significant digit at most 7 places after the point, where Halide's log10 test rounds) has >= 17
    significant digits and a scientific one 24: enough to read back every float64 exactly (17
    significant digits round-trip a double; glibc prints and Python parses correctly rounded), and so
    every float32 / float16 / bfloat16 value, which are doubles. Nothing else in the log prints floats."""
    import ctypes
    import os

    found = _cerr_base()
    if found is None:
        return None
    base = found[2]
    precision = ctypes.c_int64.from_address(base + 8)
    width = ctypes.c_int64.from_address(base + 16)
    old = precision.value
    if not (0 <= old <= 64 and width.value == 0):
        return None
    precision.value = EXACT_PRECISION
    os.write(2, (EXACT_FLOATS_MARKER + "\n").encode())

    def put_back() -> None:
        precision.value = old

    return put_back


def _prepare_buffering():
    """The lookups `_buffer_halide_log` needs (libstdc++'s symbols, cerr's flags word), done without
    changing anything: returns a function that makes the log buffered and returns its flush, or None.
    A spare child (`_spare_child`) prepares while it waits for its job, so the lookups (~0.8 ms in a
    freshly forked child) are not on a capture's path; nothing Halide-visible changes until applied."""
    import ctypes

    found = _cerr_base()
    if found is None:
        return None
    cxx, cerr, base = found
    try:
        flags = ctypes.c_uint32.from_address(base + 24)
        skipws, dec, unitbuf = 0x1000, 0x2, 0x2000
        if flags.value != skipws | dec | unitbuf:
            return None
        sync = cxx._ZNSt8ios_base15sync_with_stdioEb
        sync.argtypes, sync.restype = [ctypes.c_bool], ctypes.c_bool
        flush = cxx._ZNSo5flushEv  # std::ostream::flush()
        flush.argtypes, flush.restype = [ctypes.c_void_p], ctypes.c_void_p
    except (OSError, AttributeError, ValueError):
        return None

    def apply():
        sync(False)
        flags.value = skipws | dec
        return lambda: flush(cerr)

    return apply


def _run_child(job_path: str, done_fd: int, log_fd: int, buffering=None) -> None:
    """In the forked child: stdin/stdout away from the server's pipes, stderr to the job's log (or, for a
    job with "stop_at", to the server's log pipe `log_fd`); when the job is over (log flushed, files
    closed), its exit code on `done_fd`, then exit. `buffering`: what `_prepare_buffering` returned
    before the job came (None: prepared here, if the job asks for a buffered log)."""
    import os

    code = 1
    flush = None
    try:
        with open(job_path) as f:
            job = json.load(f)
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null, 1)  # stdout is the server's reply pipe: nothing else may write to it
        if job.get("stop_at"):
            os.dup2(log_fd, 2)  # the server reads the log and ends this child at the line
        else:
            fd = os.open(job["log"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(fd, 2)
        os.close(log_fd)
        if job.get("buffered_log"):
            apply = buffering if buffering is not None else _prepare_buffering()
            flush = None if apply is None else apply()
        code = main(job_path)
    except BaseException:  # noqa: BLE001 - reported through the log and the exit status
        import traceback

        traceback.print_exc()
    finally:
        if flush is not None:
            flush()
        sys.stderr.flush()
        try:
            os.write(done_fd, f"{code}\n".encode())
        except OSError:
            pass
        os._exit(code)


def _spare_child() -> tuple[int, int, int, int]:
    """Fork the child that will run the next job, before the job arrives: it waits for the job's path
    on a pipe, so the fork (copying this process's page tables) and the child's start are not paid
    while a capture waits. Returns (pid, the job pipe's write end, the done pipe's read end, the log
    pipe's read end: the child's stderr for a job with "stop_at")."""
    import os

    job_r, job_w = os.pipe()
    done_r, done_w = os.pipe()
    log_r, log_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(job_w)
        os.close(done_r)
        os.close(log_r)
        buffering = _prepare_buffering()  # while no job waits (applied only if the job asks for it)
        data = b""
        while not data.endswith(b"\n"):
            chunk = os.read(job_r, 4096)
            if not chunk:  # the server ended (or has no job for it): exit without running anything
                os._exit(0)
            data += chunk
        os.close(job_r)
        _run_child(data.decode().strip(), done_w, log_w, buffering)  # never returns
    os.close(job_r)
    os.close(done_w)
    os.close(log_w)
    return pid, job_w, done_r, log_r


def _finish(pid: int, done_r: int) -> int | None:
    """The job's wait status from the child's done message (it exits right after writing it; reaped
    later, by `_reap`), or, if it died without one (a signal: Halide aborts), from waitpid (None: the
    child is reaped already)."""
    import os

    msg = b""
    while not msg.endswith(b"\n"):
        chunk = os.read(done_r, 64)
        if not chunk:
            break
        msg += chunk
    os.close(done_r)
    if msg.endswith(b"\n"):
        return (int(msg.decode()) & 0xFF) << 8  # the wait status of an exit with that code
    return None


def _watch(pid: int, log_r: int, job: dict) -> int | None:
    """A "stop_at" job (`job`, the job file's contents, read once by `serve`): copy the child's log from `log_r` to the job's log file until a line equal to
    job["stop_at"] (e.g. `Finding intrinsics...`, logged right after the statement the caller reads);
    then the log file ends with that line, the child is killed (what Halide would lower after it is
    not needed), `{"ok": true}` is the job's result, and the status is a clean exit's (0). If the line
    never comes, the whole log is copied and None is returned (the child's own status counts)."""
    import os
    import signal

    line = b"\n" + job["stop_at"].encode() + b"\n"
    # The log goes to the file as it comes (while Halide lowers: off the capture's path); `tail` keeps
    # the last bytes read, so a line split across two reads is found too.
    tail = b"\n"  # a newline in front, so that a first line is found too
    found = False
    sched: tuple[float, float] | None = None
    with open(job["log"], "wb") as f:
        while True:
            chunk = os.read(log_r, 1 << 16)
            if not chunk:
                break
            seen = tail + chunk
            k = seen.find(line)
            if k >= 0:  # the line ends in this chunk (it is longer than `tail`)
                sched = _task_schedstat(pid)
                os.kill(pid, signal.SIGKILL)
                f.write(seen[len(tail):k + len(line)])
                found = True
                break
            f.write(chunk)
            tail = seen[-(len(line) - 1):]
    os.close(log_r)
    if not found:
        return None
    result = {"ok": True, "stopped_at": job["stop_at"]}
    if sched is not None:
        result["cpu_seconds"], result["run_delay_seconds"] = sched
    with open(job["result"], "w") as f:
        json.dump(result, f)
    return 0


def _task_schedstat(pid: int) -> tuple[float, float] | None:
    """The CPU time process `pid` has used and the time it was runnable but waiting for a CPU, in
    seconds, from the kernel's scheduler statistics (the first two fields of /proc/PID/task/*/schedstat:
    nanoseconds, per thread; None where they cannot be read). Read by the server for a "stop_at" child
    just before killing it: the capture's CPU, which the caller's own CPU time does not include (the
    child is the server's) and which a loaded machine does not inflate as it does wall time, and its
    run-queue delay, which is what a loaded machine adds."""
    import os

    cpu = delay = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                fields = f.read().split()
            cpu, delay = cpu + int(fields[0]), delay + int(fields[1])
    except (OSError, ValueError, IndexError):
        return None
    return cpu / 1e9, delay / 1e9


def serve() -> int:
    """The fork server (see the module docstring)."""
    import ctypes  # noqa: F401 - what a child's buffered log uses: imported once here, not per job
    import os

    import halide  # noqa: F401 - imported once here, inherited by every forked child

    _cerr_base()  # looked up once here, inherited by every forked child
    spare = _spare_child()
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    for line in sys.stdin:
        job_path = line.strip()
        if not job_path:
            continue
        pid, job_w, done_r, log_r = spare
        os.write(job_w, job_path.encode() + b"\n")
        os.close(job_w)
        try:
            with open(job_path) as f:
                job = json.load(f)
        except (OSError, ValueError):
            job = {}  # the child fails on it the same way and reports that
        watched = isinstance(job, dict) and bool(job.get("stop_at"))
        status = _watch(pid, log_r, job) if watched else None
        if not watched:
            os.close(log_r)
        if status is None:
            status = _finish(pid, done_r)
        else:
            os.close(done_r)
        reaped = status is None
        if reaped:
            _, status = os.waitpid(pid, 0)
        out.write(json.dumps({"status": status}) + "\n")
        out.flush()
        # while the caller works with this job's result: the next job's child, and the exited one reaped
        spare = _spare_child()
        if not reaped:
            os.waitpid(pid, 0)
    pid, job_w, done_r, log_r = spare
    os.close(job_w)  # EOF: the spare child exits without a job
    os.close(done_r)
    os.close(log_r)
    os.waitpid(pid, 0)
    return 0


if __name__ == "__main__":
    sys.exit(serve() if sys.argv[1] == "--serve" else main(sys.argv[1]))
