"""Capture Halide's vectorized statement just before its "Finding intrinsics" pass.

Halide (21.0.0) lowers a pipeline through ~45 passes. With the environment variable
`HL_DEBUG_CODEGEN` at 2 or more it prints each pass's result to stderr (`Lowering after <pass>:`
followed by the statement and a blank line, or `Lowering after <pass>: (unchanged)`). The statement
logged last before the line `Finding intrinsics...` is vectorized and simplified but still written in
plain integer operations: the input PITCHFORK lifts. `compile_to_lowered_stmt` cannot give it to us,
since its output has been through Halide's own lifting.

How the log is obtained
-----------------------
Halide reads `HL_DEBUG_CODEGEN` once per process, at its first debug check (creating an
`ImageParam` or calling a scheduling directive is enough), and caches it; nothing in the Python
bindings changes it later (the `debug` target feature only adds runtime tracing). So:

* **subprocess** (the default, always works): serialize the pipeline (`hl.serialize_pipeline`, which
  keeps algorithm and schedule; the lowered statement is identical), lower it in a process that
  started with `HL_DEBUG_CODEGEN=2,Lower.cpp`, with stderr sent to a file, and read that file: a child
  forked per job from a warm worker that has imported Halide (`capture_pool.py`; the same log as a
  fresh interpreter's), else a fresh interpreter. The user's process and stderr are untouched, and a
  Halide abort (LLVM asserts are fatal) kills only the child; the statement is recovered if the log
  got that far. Costs the lowering (~0.1-0.2 s with its log) plus ~0.35 s for the first. Embedded
  `hl.Buffer`s and extern stages serialize too; a pipeline Halide cannot serialize raises.
  Serialization drops Param ranges, ImageParam host alignments and buffer dimension constraints
  (`argument_constraints`); the worker restores them, so the statement keeps Halide's checks on them
  and the substitutions Halide makes with them (`filter.min.0` -> 0).
* **in-process**: if this process's Halide already logs lowering (the user set `HL_DEBUG_CODEGEN`
  before using Halide, or called `enable_inprocess_capture()` first), the log is read from file
  descriptor 2, redirected to a temporary file around `compile_to_lowered_stmt`. Every other compile
  in the process (every `realize`) then logs to stderr too; that is the price of this mode and why it
  is opt-in.

Float constants: Halide prints them with std::cerr's precision, 6 by default; the capture child sets it
so that they print exactly (`_capture_worker.exact_float_log`, pitchfork/frontend/float_literals.py),
an in-process capture sets and restores it around the lowering, and a statement with float literals
from a log without the precision marker is refused (`_build`).

The log filter `2,Lower.cpp` keeps only the messages of Halide's `Lower.cpp` (the pass logs and the
`Finding intrinsics...` marker), which halves the log compared with a bare `2`.

Targets: for one vector width the statement is the same for x86, ARM and `hexagon-32-...` targets
(only the argument checks change with `no_asserts`/`no_bounds_query`); a host target with `hvx`
and a `.hexagon()` schedule wraps the loop nest in `for<Hexagon> (f.s0.__outermost, 0, 1)`.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pitchfork.frontend import capture_pool
from pitchfork.frontend.arg_estimates import ArgEstimates, argument_estimates, integer_constant
from pitchfork.frontend._capture_worker import EXACT_FLOATS_MARKER
from pitchfork.frontend.arguments import as_argument
from pitchfork.frontend.float_literals import literal_suffixes
from pitchfork.frontend.htypes import HType
from pitchfork.targets.target_strings import ALIAS_TARGETS

if TYPE_CHECKING:
    import halide as hl

    from pitchfork.frontend.embedded import EmbeddedBuffer
    from pitchfork.frontend.ir import Stmt

#: The value of HL_DEBUG_CODEGEN used for capture: pass logs of Lower.cpp only.
DEBUG_CODEGEN = "2,Lower.cpp"
#: The pass log line that follows the statement we want.
INTRINSICS_MARKER = "Finding intrinsics..."
#: Short names for the three ISAs of the paper, and the Halide targets they stand for (defined with
#: the rest of the target-string handling, pitchfork/targets/target_strings.py)
TARGET_ALIASES: dict[str, str] = ALIAS_TARGETS


def halide_target(target: str) -> Any:
    """The `hl.Target` of a PITCHFORK target name (an alias of TARGET_ALIASES or a Halide target string)."""
    import halide as hl

    return hl.Target(TARGET_ALIASES.get(target, target))

Mode = Literal["auto", "subprocess", "inprocess"]

_HEADER_RE = re.compile(r"^Lowering after (.+?):?( \(unchanged\))?$")
_START_MARKER = "Creating initial loop nests..."
#: the log lines split_lowering_log reads: a start marker, the intrinsics marker, a stage header
#: (searched in the log with a newline in front, so that every line starts after a newline: the
#: search then only stops at newlines)
_LOG_LINE_RE = re.compile(r"\n(?:(?P<start>Creating initial loop nests\.\.\.)|(?P<intrinsics>Finding intrinsics\.\.\.)"
                          r"|Lowering after (?P<name>[^\n]+?):?(?P<unchanged> \(unchanged\))?)(?=\n|\Z)")
_WORKER_SOURCE = (Path(__file__).with_name("_capture_worker.py")).read_text()
_FD2_LOCK = threading.Lock()


class CaptureError(RuntimeError):
    """Halide did not produce the pre-"Finding intrinsics" statement (compile error, crash, ...)."""


# --------------------------------------------------------------------------------------------------
# Results
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ArgInfo:
    """A pipeline argument: `kind` is "input_buffer", "output_buffer" or "scalar"; `type` is the
    element type (of the buffer) or the scalar's type."""

    name: str
    kind: Literal["input_buffer", "output_buffer", "scalar"]
    type: HType
    dimensions: int

    @property
    def is_buffer(self) -> bool:
        return self.kind != "scalar"


@dataclass(frozen=True, slots=True)
class OutputInfo:
    """An output Func: its name, value types (several for a Tuple) and dimensions. Its buffers in
    the statement are named `name` (one value) or `name.0`, `name.1`, ... (a Tuple)."""

    name: str
    types: tuple[HType, ...]
    dimensions: int

    @property
    def buffer_names(self) -> tuple[str, ...]:
        if len(self.types) == 1:
            return (self.name,)
        return tuple(f"{self.name}.{i}" for i in range(len(self.types)))

    def buffers(self) -> tuple[OutputInfo, ...]:
        """One single-valued output per buffer: itself, or for a Tuple `f.0`, `f.1`, ... (Halide gives
        each Tuple element its own output buffer: its AOT signature takes them in this order, and
        `realize` returns them as one Realization)."""
        if len(self.types) == 1:
            return (self,)
        return tuple(OutputInfo(n, (t,), self.dimensions) for n, t in zip(self.buffer_names, self.types))


@dataclass(frozen=True, slots=True)
class Stage:
    """One logged lowering pass: its name (`vectorizing`, ...), the statement after it, and whether
    the pass changed the statement (an unchanged stage repeats the previous text)."""

    name: str
    text: str
    changed: bool


@dataclass(frozen=True, slots=True)
class Lowering:
    """The logged passes of one `lower()` call; `intrinsics_at` is the number of stages logged before
    `Finding intrinsics...` (None if the log stops earlier)."""

    stages: tuple[Stage, ...]
    intrinsics_at: int | None

    @property
    def pre_intrinsics(self) -> Stage | None:
        if not self.intrinsics_at:
            return None
        return self.stages[self.intrinsics_at - 1]


@dataclass(frozen=True, slots=True)
class CapturedStmt:
    """What `capture_stmt` returns.

    `text` is the statement just before "Finding intrinsics", `stage` the pass it was logged after,
    `stages` every pass logged by that lowering (in order), `lowered` the final statement of
    `compile_to_lowered_stmt`. If Halide failed after logging `text` (an LLVM assertion while
    compiling Hexagon offload code, say), `lowered` is "" and `error` says what happened.
    """

    target: str
    text: str
    stage: str
    stages: tuple[Stage, ...]
    arguments: tuple[ArgInfo, ...]
    outputs: tuple[OutputInfo, ...]
    lowered: str
    mechanism: Literal["subprocess", "inprocess"]
    error: str = ""
    #: buffers embedded in the pipeline that the statement reads (their contents: frontend/embedded.py)
    embedded: tuple[EmbeddedBuffer, ...] = ()
    #: every argument's and output buffer's estimates, as Halide's metadata carries them
    #: (frontend/arg_estimates.py; the AOT `name_metadata`)
    estimates: tuple[ArgEstimates, ...] = ()
    #: the CPU seconds of the subprocess that lowered (up to the statement, for a capture stopped
    #: there), as it reported them: not in the caller's own CPU time; None in-process or if unknown
    child_cpu_seconds: float | None = None
    #: the seconds that subprocess was runnable but waiting for a CPU (schedstat's run delay, read as
    #: its CPU is): with child_cpu_seconds, what of the capture's wall the machine's load explains
    child_run_delay_seconds: float | None = None

    @property
    def buffer_types(self) -> dict[str, HType]:
        """Element type of every buffer argument, by the name loads and stores use."""
        out = {a.name: a.type for a in self.arguments if a.is_buffer}
        for o in self.outputs:
            out.update(zip(o.buffer_names, o.types, strict=True))
        return out

    @property
    def output_buffers(self) -> tuple[OutputInfo, ...]:
        """The output buffers in argument order, one single-valued OutputInfo each (a Tuple output
        is several: `OutputInfo.buffers`)."""
        return tuple(b for o in self.outputs for b in o.buffers())

    @property
    def scalar_types(self) -> dict[str, HType]:
        return {a.name: a.type for a in self.arguments if not a.is_buffer}

    def stage_text(self, name: str) -> str:
        """The statement after the pass called `name` (e.g. "vectorizing")."""
        for s in self.stages:
            if s.name == name:
                return s.text
        raise KeyError(name)

    def producer_text(self, func: str) -> str:
        """The text of the `produce <func> { ... }` block of the captured statement."""
        return extract_block(self.text, f"produce {func} {{")

    def parse(self) -> Stmt:
        """Parse `text` into the loop-nest AST, with the buffer arguments' element types filled in."""
        from pitchfork.frontend.stmt import parse_stmt

        return parse_stmt(self.text, buffers=self.buffer_types)


def extract_block(text: str, opener: str) -> str:
    """The lines from the first line whose stripped text is `opener` to its closing brace."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.strip() == opener:
            indent = len(line) - len(line.lstrip())
            for j in range(i + 1, len(lines)):
                if lines[j].rstrip() == " " * indent + "}":
                    return "\n".join(lines[i : j + 1]) + "\n"
            break
    raise KeyError(opener)


# --------------------------------------------------------------------------------------------------
# Log parsing
# --------------------------------------------------------------------------------------------------


def split_lowering_log(log: str) -> list[Lowering]:
    """Split a HL_DEBUG_CODEGEN log into its `lower()` calls and their logged stages.

    Line by line, a line is a start marker, the intrinsics marker, a stage header, or other text; a
    changed stage's text is the lines after its header up to the first empty line (lines inside it
    are not read as markers or headers). The lines that matter are found by regex searches, not a
    Python loop over its lines (a big pipeline's log has ~10^5 lines), and a stage's text is skipped
    with one `find` of its end: the regex never scans inside a statement (most of the log)."""
    lowerings: list[Lowering] = []
    stages: list[Stage] = []
    intrinsics_at: int | None = None
    last_text = ""
    log = "\n" + log  # offsets below are in this text
    pos = 0  # where the next search starts: a newline, or the end of the last match
    while True:
        m = _LOG_LINE_RE.search(log, pos)
        if m is None:
            break
        pos = m.end()
        if m.group("start") is not None:
            if stages or intrinsics_at is not None:
                lowerings.append(Lowering(tuple(stages), intrinsics_at))
                stages, intrinsics_at, last_text = [], None, ""
            continue
        if m.group("intrinsics") is not None:
            if intrinsics_at is None:
                intrinsics_at = len(stages)
            continue
        name = m.group("name")
        if m.group("unchanged"):
            stages.append(Stage(name, last_text, changed=False))
            continue
        end = m.end()  # the header line's newline (or the end of the log)
        k = log.find("\n\n", end)
        if k < 0:  # the text runs to the end of the log
            rest = log[end + 1:]
            last_text = rest if rest.endswith("\n") else rest + "\n"
            pos = len(log)
        else:
            last_text = log[end + 1:k] + "\n"
            pos = k  # the next line read is the blank one after the text (a match needs its newline)
        stages.append(Stage(name, last_text, changed=True))
    if stages or intrinsics_at is not None:
        lowerings.append(Lowering(tuple(stages), intrinsics_at))
    return lowerings


# --------------------------------------------------------------------------------------------------
# Arguments and targets
# --------------------------------------------------------------------------------------------------


def resolve_target(target: str | hl.Target) -> str:
    """A Halide target string; accepts the aliases of `TARGET_ALIASES` and `hl.Target` objects."""
    if isinstance(target, str):
        return TARGET_ALIASES.get(target, target)
    return target.to_string()


def _as_pipeline(func_or_pipeline: Any) -> hl.Pipeline:
    import halide as hl

    if isinstance(func_or_pipeline, hl.Pipeline):
        return func_or_pipeline
    if isinstance(func_or_pipeline, hl.Func):
        return hl.Pipeline(func_or_pipeline)
    if isinstance(func_or_pipeline, (list, tuple)):
        return hl.Pipeline(list(func_or_pipeline))
    raise TypeError(f"expected a halide.Func or halide.Pipeline, got {type(func_or_pipeline).__name__}")


def argument_info(args: Sequence[Any]) -> tuple[ArgInfo, ...]:
    """Name, kind, type and dimensions of each argument (ImageParam, Param, Buffer or Argument)."""
    import halide as hl

    out = []
    for a in args:
        arg = as_argument(a)
        kind = {
            hl.ArgumentKind.InputBuffer: "input_buffer",
            hl.ArgumentKind.OutputBuffer: "output_buffer",
            hl.ArgumentKind.InputScalar: "scalar",
        }[arg.kind]
        out.append(ArgInfo(arg.name, kind, HType.from_halide(arg.type), arg.dimensions))  # type: ignore[arg-type]
    return tuple(out)


def argument_constraints(args: Sequence[Any]) -> dict[str, dict[str, Any]]:
    """What `hl.serialize_pipeline` drops and Halide's checks depend on, by argument name: a scalar
    Param's constant `min`/`max` (`set_range`: Halide asserts them, halide_error_param_too_small/large),
    an ImageParam's `host_alignment` (halide_error_unaligned_host_ptr) and its dimension constraints
    (`dim(d).set_min/set_extent/set_stride`, under "dims": halide_error_constraint_violated; Halide
    also substitutes them into the statement, e.g. `filter.min.0` becomes 0, which lets equal
    addresses print equal). The subprocess worker puts them back on the deserialized parameters."""
    import halide as hl

    out: dict[str, dict[str, Any]] = {}
    buffers = {}
    for a in args:
        param = a.parameter() if isinstance(a, hl.ImageParam) else None
        if param is not None:
            buffers[param.name()] = param.dimensions()
    for a in args:
        param = a.parameter() if isinstance(a, (hl.ImageParam, hl.Param)) else None
        if param is None:
            continue
        c: dict[str, Any] = {}
        if param.is_buffer():
            if param.host_alignment() != param.type().bytes():
                c["host_alignment"] = int(param.host_alignment())
            c["dims"] = _dim_constraints(param, buffers)
        else:
            for key, e in (("min", param.min_value()), ("max", param.max_value())):
                if e.defined():
                    try:
                        # a float bound exactly (float16 / bfloat16 ones evaluate only as float64:
                        # Halide's Python binding has no scalar of their types)
                        # an integer bound read from its printed form, as arg_estimates reads it (a
                        # JIT compile per bound otherwise)
                        c[key] = (float(hl.evaluate(hl.cast(hl.Float(64), e))) if param.type().is_float()
                                  else v if (v := integer_constant(e)) is not None else int(hl.evaluate(e)))
                    except Exception:  # noqa: BLE001 - a non-constant bound is not transferred
                        pass
        if c:
            out[param.name()] = c
    return out


#: binary operators a transferred dimension constraint may use (`_expr_tree`)
_CONSTRAINT_OPS = ("+", "-", "*", "/", "%", "min", "max")


def _dim_constraints(param: Any, buffers: dict[str, int]) -> list[dict[str, Any]]:
    """[{"dim": d, "field": "min"|"extent"|"stride", "expr": tree or None}] for every dimension and
    field of a buffer parameter (None: unconstrained), each as an `_expr_tree` over the fields of
    `buffers` (argument name -> dimensions). A constraint outside that small language (none of the
    benchmarks' or tests') is left out, as serialization leaves it out: the compiled code then
    accepts buffers Halide would refuse, and computes them correctly."""
    out = []
    for d in range(param.dimensions()):
        for field, get in (("min", param.min_constraint), ("extent", param.extent_constraint),
                           ("stride", param.stride_constraint)):
            e = get(d)
            out.append({"dim": d, "field": field, "expr": _expr_tree(e, buffers) if e.defined() else None})
    return out


def _expr_tree(e: Any, buffers: dict[str, int]) -> Any:
    """A scalar int32 Halide Expr as JSON: an int, a buffer field's name (`input.stride.1`, of a
    buffer in `buffers`), or [op, a, b] with op in _CONSTRAINT_OPS; None if it is anything else."""
    from pitchfork.frontend import ir as H
    from pitchfork.frontend.stmt import HalideParseError, parse_expr

    text = str(e)
    m = re.fullmatch(r"<halide\.Expr of type int32: (.*)>", text, re.S)
    if m is None:
        return None
    names = set(re.findall(r"[A-Za-z_][\w.$]*", m.group(1))) - {"min", "max"}
    try:
        node = parse_expr(m.group(1), variables={n: HType("int", 32) for n in names})
    except HalideParseError:
        return None

    def go(n: Any) -> Any:
        if isinstance(n, H.IntImm):
            return int(n.value)
        if isinstance(n, H.Variable):
            m = re.fullmatch(r"(.+)\.(min|extent|stride)\.(\d+)", n.name)
            if m is None or m.group(1) not in buffers or int(m.group(3)) >= buffers[m.group(1)]:
                raise LookupError
            return n.name
        if isinstance(n, H.BinOp) and n.op in _CONSTRAINT_OPS:
            a, b = go(n.a), go(n.b)
            return None if a is None or b is None else [n.op, a, b]
        raise LookupError

    try:
        return go(node)
    except LookupError:
        return None


def output_info(pipeline: hl.Pipeline) -> tuple[OutputInfo, ...]:
    return tuple(
        OutputInfo(f.name(), tuple(HType.from_halide(t) for t in f.types()), f.dimensions())
        for f in pipeline.outputs()
    )


# --------------------------------------------------------------------------------------------------
# In-process capture
# --------------------------------------------------------------------------------------------------


@contextmanager
def capture_fd2() -> Iterator[list[str]]:
    """Redirect file descriptor 2 (where Halide's std::cerr writes) to a temporary file; on exit the
    yielded list holds the captured text. Process-wide: another thread's stderr output during the
    window is captured too."""
    box: list[str] = []
    with _FD2_LOCK, tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            yield box
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            box.append(tmp.read().decode("utf-8", errors="replace"))


_inprocess_state: bool | None = None


def inprocess_capture_available() -> bool:
    """Whether this process's Halide logs lowering passes (decided at Halide's first use; probed once
    with a one-line pipeline, whose log is swallowed)."""
    global _inprocess_state
    if _inprocess_state is None:
        import halide as hl

        x = hl.Var("x")
        f = hl.Func("pitchfork_probe")
        f[x] = x
        with capture_fd2() as box, tempfile.TemporaryDirectory() as d:
            f.compile_to_lowered_stmt(
                str(Path(d) / "p.stmt"), [], hl.StmtOutputFormat.Text, hl.Target("x86-64-linux")
            )
        # Level 1 prints the marker but not the statements; a filter may drop either.
        _inprocess_state = INTRINSICS_MARKER in box[0] and "\nLowering after " in box[0]
    return _inprocess_state


def enable_inprocess_capture() -> bool:
    """Ask Halide to log lowering in this process (sets HL_DEBUG_CODEGEN if unset). Works only if
    called before Halide's first debug check (in practice: before any pipeline is built; creating an
    ImageParam or scheduling a Func already reads the variable). Returns whether in-process capture
    is now available. Afterwards every compile in the process logs its passes to stderr."""
    os.environ.setdefault("HL_DEBUG_CODEGEN", DEBUG_CODEGEN)
    return inprocess_capture_available()


#: a capture subprocess's CPU seconds and run-queue delay as it reported them (None: not reported)
ChildCost = tuple[float | None, float | None]


def _capture_inprocess(pipeline: hl.Pipeline, args: Sequence[Any], target: str,
                       ) -> tuple[str, str, str, ChildCost]:
    import halide as hl

    from pitchfork.frontend._capture_worker import exact_float_log

    with tempfile.TemporaryDirectory() as d:
        out = Path(d) / "lowered.stmt"
        with capture_fd2() as box:
            put_back = exact_float_log()  # this process's cerr: its precision restored below
            try:
                pipeline.compile_to_lowered_stmt(
                    str(out), [as_argument(a) for a in args], hl.StmtOutputFormat.Text, hl.Target(target)
                )
                error = None
            except Exception as e:  # noqa: BLE001 - re-raised below with the log's verdict
                error = e
            finally:
                if put_back is not None:
                    put_back()
        log = box[0]
        if error is not None and INTRINSICS_MARKER not in log:
            raise CaptureError(f"Halide failed to lower for {target}: {error}") from error
        return log, out.read_text() if out.exists() else "", "" if error is None else str(error), (None, None)


# --------------------------------------------------------------------------------------------------
# Subprocess capture
# --------------------------------------------------------------------------------------------------


#: this process's directory for subprocess capture jobs: (the pid that created it, its path)
_job_dir: tuple[int, Path] | None = None
_job_dir_lock = threading.Lock()
_job_ids = itertools.count()
_JOB_FILES = (("pipeline", "pipeline.hlpipe"), ("job", "job.json"), ("log", "log.txt"), ("result", "result.json"),
              ("stmt", "lowered.stmt"))


def _job_files() -> dict[str, Path]:
    """Fresh paths for one subprocess capture job's files, in one directory per process (created at the
    first capture, removed at exit), named after this process and a job counter so that concurrent
    captures (threads, or a forked copy of this process, which makes its own directory) never share one.

    Why not a temporary directory per job: removing a directory (rmdir) took ~3 ms here (ext4, load 6),
    on every capture's path; the job's files are unlinked instead (`_capture_subprocess`), which is
    cheap, and nothing in the directory outlives its job."""
    global _job_dir
    with _job_dir_lock:
        if _job_dir is None or _job_dir[0] != os.getpid() or not _job_dir[1].is_dir():
            _job_dir = (os.getpid(), Path(tempfile.mkdtemp(prefix="pitchfork-capture-")))
        d = _job_dir[1]
        stem = f"{os.getpid()}-{next(_job_ids)}"
    return {key: d / f"{stem}-{name}" for key, name in _JOB_FILES}


@atexit.register
def _remove_job_dir() -> None:
    if _job_dir is not None and _job_dir[0] == os.getpid():  # a forked copy leaves its parent's alone
        shutil.rmtree(_job_dir[1], ignore_errors=True)


def _capture_subprocess(
    data: bytes, arguments: Sequence[ArgInfo], target: str, timeout: float,
    constraints: dict[str, dict[str, Any]] | None = None, upto_intrinsics: bool = False,
) -> tuple[str, str, str, ChildCost]:
    """Lower in a fresh interpreter; returns (log, lowered statement, error description or "", the
    lowering process's CPU seconds and run-queue delay as it reported them, each None if it did not).
    `upto_intrinsics`: a warm worker ends the lowering at the intrinsics marker (the log then ends
    there, and the lowered statement is "")."""
    files = _job_files()
    try:
        return _run_job(files, data, arguments, target, timeout, constraints, upto_intrinsics)
    finally:
        _remove_job_files(files)


def _remove_job_files(files: dict[str, Path]) -> None:
    """Unlink whatever a job wrote, read or not."""
    for path in files.values():
        try:
            path.unlink()
        except FileNotFoundError:
            pass


def _job_spec(
    files: dict[str, Path], data: bytes, arguments: Sequence[ArgInfo], target: str,
    constraints: dict[str, dict[str, Any]] | None,
) -> dict[str, Any]:
    """A capture job for `_capture_worker` (the serialized pipeline written to its file)."""
    files["pipeline"].write_bytes(data)
    return {
        "pipeline": str(files["pipeline"]),
        "target": target,
        "stmt_out": str(files["stmt"]),
        "result": str(files["result"]),
        "args": [
            {
                "name": a.name,
                "kind": "scalar" if a.kind == "scalar" else "buffer",
                "code": a.type.code,
                "bits": a.type.bits,
                "dimensions": a.dimensions,
            }
            for a in arguments
        ],
        "constraints": constraints or {},
        "log": str(files["log"]),  # the warm worker's child sends its stderr there
    }


def _run_job(
    files: dict[str, Path], data: bytes, arguments: Sequence[ArgInfo], target: str, timeout: float,
    constraints: dict[str, dict[str, Any]] | None, upto_intrinsics: bool,
) -> tuple[str, str, str, ChildCost]:
    """`_capture_subprocess` with the job's file paths `files` (`_job_files`)."""
    job = _job_spec(files, data, arguments, target, constraints)
    if upto_intrinsics:  # the warm worker stops the child at this log line (_capture_worker._watch)
        job["stop_at"] = INTRINSICS_MARKER
    env = dict(os.environ, HL_DEBUG_CODEGEN=DEBUG_CODEGEN)
    returncode = None
    job_file = files["job"]
    if not capture_pool.enabled():
        job_file.write_text(json.dumps(job))
    else:
        try:
            # The log buffered (_capture_worker._buffer_halide_log) unless the job did not exit
            # cleanly: then again unbuffered, so the log holds what Halide wrote before it died.
            for buffered in (True, False):
                job_file.write_text(json.dumps(dict(job, buffered_log=buffered)))
                returncode = capture_pool.run_job(str(job_file), env, timeout)
                if returncode == 0:
                    break
        except capture_pool.WorkerTimeout:
            raise CaptureError(f"lowering for {target} timed out after {timeout} s") from None
        except capture_pool.WorkerUnavailable:
            returncode = None  # the one-shot way below
            job_file.write_text(json.dumps(job))
    if returncode is None:
        returncode = _run_one_shot(job_file, files["log"], env, target, timeout)
    log = files["log"].read_text(errors="replace")
    # not read when the lowering may have been stopped: whether it got that far is a race
    stmt_file = files["stmt"]
    lowered = stmt_file.read_text() if stmt_file.exists() and not upto_intrinsics else ""
    result_path = files["result"]
    result = json.loads(result_path.read_text()) if result_path.exists() else None
    why = ""
    if result is not None and not result["ok"]:
        why = result["error"]
    elif result is None or returncode != 0:
        tail = "\n".join(log.strip().splitlines()[-3:])
        why = f"lowering process exited with status {returncode}: {tail}"
    if INTRINSICS_MARKER not in log:
        raise CaptureError(f"Halide failed to lower for {target}: {why}")
    cost = [result.get(k) if result is not None else None for k in ("cpu_seconds", "run_delay_seconds")]
    return log, lowered, why, (cost[0] if isinstance(cost[0], (int, float)) else None,
                               cost[1] if isinstance(cost[1], (int, float)) else None)


def _run_one_shot(job_file: Path, log_file: Path, env: dict[str, str], target: str, timeout: float) -> int:
    """The job `job_file` in a fresh interpreter (no warm worker), its stderr to `log_file`; returns its
    exit status."""
    with open(log_file, "wb") as log:
        try:
            proc = subprocess.run(
                [sys.executable, "-c", _WORKER_SOURCE, str(job_file)],
                cwd=job_file.parent,  # so nothing in the caller's directory can shadow a module
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=log,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as e:
            raise CaptureError(f"lowering for {target} timed out after {timeout} s") from e
    return proc.returncode


# --------------------------------------------------------------------------------------------------
# Entry points
# --------------------------------------------------------------------------------------------------


def _build(
    log: str,
    lowered: str,
    error: str,
    target: str,
    arguments: tuple[ArgInfo, ...],
    outputs: tuple[OutputInfo, ...],
    mechanism: Literal["subprocess", "inprocess"],
    child: ChildCost = (None, None),
) -> CapturedStmt:
    lowerings = [lw for lw in split_lowering_log(log) if lw.pre_intrinsics is not None]
    if not lowerings:
        raise CaptureError(f"no statement logged before {INTRINSICS_MARKER!r} for {target}")
    lw = lowerings[0]
    pre = lw.pre_intrinsics
    assert pre is not None
    if not log.startswith(EXACT_FLOATS_MARKER + "\n") and literal_suffixes(pre.text):
        raise CaptureError(f"Halide's log printed the float constants of the {target} statement rounded (this "
                           "C++ library's std::cerr precision could not be set: _capture_worker.exact_float_log)")
    return CapturedStmt(target, pre.text, pre.name, lw.stages, arguments, outputs, lowered, mechanism, error,
                        child_cpu_seconds=child[0], child_run_delay_seconds=child[1])


def _choose_mode(mode: Mode) -> Literal["subprocess", "inprocess"]:
    if mode == "auto":
        return "inprocess" if inprocess_capture_available() else "subprocess"
    if mode == "inprocess" and not inprocess_capture_available():
        raise CaptureError(
            "Halide in this process does not log lowering: HL_DEBUG_CODEGEN was not set before Halide's "
            "first use (call pitchfork.frontend.capture.enable_inprocess_capture() first, or use mode='subprocess')"
        )
    return mode  # type: ignore[return-value]


def capture_stmts(
    func_or_pipeline: Any,
    args: Sequence[Any],
    targets: Sequence[str | hl.Target],
    *,
    mode: Mode = "auto",
    timeout: float = 300.0,
    upto_intrinsics: bool = False,
) -> dict[str, CapturedStmt]:
    """`capture_stmt` for several targets; keys are the targets as given (strings) or their
    `to_string()`. Subprocess captures run concurrently."""
    import halide as hl

    pipeline = _as_pipeline(func_or_pipeline)
    arguments = argument_info(args)
    outputs = output_info(pipeline)
    keys = [t if isinstance(t, str) else t.to_string() for t in targets]
    resolved = [resolve_target(t) for t in targets]
    for r in resolved:
        hl.Target(r)  # validate early, in this process, with Halide's own error message
    how = _choose_mode(mode)
    if how == "inprocess":
        pairs = [_capture_inprocess(pipeline, args, r) for r in resolved]
    else:
        data = hl.serialize_pipeline(pipeline)
        assert isinstance(data, bytes)
        constraints = argument_constraints(args)
        if len(resolved) == 1:  # what pitchfork.compile asks for: no thread to start and join
            pairs = [_capture_subprocess(data, arguments, resolved[0], timeout, constraints, upto_intrinsics)]
        else:
            with ThreadPoolExecutor(max_workers=max(1, min(len(resolved), os.cpu_count() or 1))) as ex:
                pairs = list(ex.map(lambda r: _capture_subprocess(data, arguments, r, timeout, constraints,
                                                                  upto_intrinsics), resolved))
    caps = {
        k: _build(log, lowered, error, r, arguments, outputs, how, cost)
        for k, r, (log, lowered, error, cost) in zip(keys, resolved, pairs, strict=True)
    }
    estimates = argument_estimates(args, pipeline)  # the caller's objects: serialization drops them
    return {k: dataclasses.replace(_with_embedded(cap, pipeline, args), estimates=estimates)
            for k, cap in caps.items()}


def _with_embedded(cap: CapturedStmt, pipeline: hl.Pipeline, args: Sequence[Any]) -> CapturedStmt:
    """The contents of the embedded buffers the statement reads, which its text lacks, from Halide's
    C output of the pipeline (compiled only when there are any; pitchfork/frontend/embedded.py)."""
    from pitchfork.frontend.embedded import EmbeddedBufferError, from_c_source, halide_c_source, referenced_buffers

    known = [a.name for a in cap.arguments] + [b.name for b in cap.output_buffers]
    names = referenced_buffers(cap.text, known)
    if not names:
        return cap
    try:
        embedded = from_c_source(halide_c_source(pipeline, args, cap.target), names)
    except EmbeddedBufferError as e:
        raise CaptureError(str(e)) from None
    return dataclasses.replace(cap, embedded=embedded)


def capture_stmt(
    func_or_pipeline: Any,
    args: Sequence[Any],
    target: str | hl.Target,
    *,
    mode: Mode = "auto",
    timeout: float = 300.0,
    upto_intrinsics: bool = False,
) -> CapturedStmt:
    """Lower `func_or_pipeline` (a `hl.Func`, a list of Funcs, or a `hl.Pipeline`) with arguments
    `args` (ImageParams, Params, Buffers or Arguments, in the order of the compiled function) for
    `target` (a Halide target string, an alias from `TARGET_ALIASES`, or a `hl.Target`) and return
    the statement Halide logs just before "Finding intrinsics".

    `mode`: "auto" captures in-process when this process's Halide already logs lowering, else in a
    subprocess; "subprocess" and "inprocess" force one (see the module docstring).

    `upto_intrinsics=True` (what `pitchfork.compile` asks for: it reads only `text`): a subprocess
    capture through a warm worker stops Halide's lowering once the statement is logged, so `stages` end
    at "Finding intrinsics" and `lowered` is ""; `text` is the same either way."""
    key = target if isinstance(target, str) else target.to_string()
    return capture_stmts(func_or_pipeline, args, [target], mode=mode, timeout=timeout,
                         upto_intrinsics=upto_intrinsics)[key]
