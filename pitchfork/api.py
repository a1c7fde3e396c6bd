"""`pitchfork.compile`: compile a Halide pipeline with PITCHFORK's instruction selection.

    prog = pitchfork.compile(out_func, [input_param], target="arm64", isel="pitchfork")
    prog.llvm_ir(); prog.assembly(); prog.object_file("sobel.o"); prog.header(); prog.stats
    result = prog(input_array, size=[W, H])      # shaped like np.asarray(out_func.realize([W, H]))
    prog(input_array, out=result)                # in place; min=[x0, y0] for an output not at 0
    call = prog.prepare(input_array); call()     # kernel only: for timing (see `prepare`)

Flow: capture Halide's vectorized statement (pitchfork.frontend.capture), parse it (stmt.py), generate
one LLVM function (codegen.py) whose vector expressions go through lift + per-ISA lowering (or, with
isel="llvm", straight to generic LLVM IR), then compile for the target. Running works for every
target: in-process JIT for x86-avx2, qemu for arm64 and hvx128 (correctness only). On x86 the call
is zero-copy (pitchfork/aot/call.py): arrays go to the kernel as they are, copied only when their
layout needs it or when an input overlaps an output (the kernel's buffers are `noalias`); the
guard-byte and input-unchanged checks run only with `check=True`.

Anything PITCHFORK cannot compile (floating point, unsupported constructs, Tuple outputs, ...) falls
back to Halide's own compiler with a warning that says why (fallback=False raises instead); a
fallback never changes results, only who selected the instructions. Running a fallback uses Halide's
JIT for this (x86) host whatever the target (the target's object file cannot run here); integer
results are the same on every target, float results can differ in the last ulp (fast-math contraction).

Errors: inputs of the wrong number, dtype or dimensionality raise TypeError; a failed Halide
assertion in the compiled code (bad sizes or strides, an output extent that is not a multiple of a
RoundUp tile, ...) raises RuntimeError quoting the assertion, never a crash.
"""

from __future__ import annotations

import gc
import os
import sys
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Sequence

import numpy as np

from pitchfork.backend.machine import CompiledModule, CompileError, compile_module, llvm_assertions_enabled
from pitchfork.frontend.capture import TARGET_ALIASES, CaptureError, CapturedStmt, capture_stmt, halide_target
from pitchfork.codegen.base import buffer_dtype
from pitchfork.codegen.ir_text import free_module, module_text
from pitchfork.codegen.loop_nest import LoopNestCodegen, Unsupported
from pitchfork.frontend.printer import to_text
from pitchfork.passes.pipeline import PassList, resolve
from pitchfork.frontend.deep import run_deep
from pitchfork.frontend.htypes import HType
from pitchfork.backend.link_check import missing_reason, undefined_calls, undefined_symbols
from pitchfork.errors import UsageError
from pitchfork.frontend.checks import (check_arguments, exact_half_literals, refuse_deep_statement,
                                       refuse_extern_stages, refuse_half_floats, refuse_huge_vectors,
                                       refuse_if_halide_rejects, refuse_runtime_services)
from pitchfork.frontend.params import halide_scalar_value, scalar_value
from pitchfork.frontend.stmt import HalideParseError
from pitchfork.targets.target_strings import machine_target, parse_target

if TYPE_CHECKING:
    from pitchfork.aot.call import PreparedCall


class PitchforkFallbackWarning(UserWarning):
    """PITCHFORK could not compile a pipeline and used Halide's own compiler instead."""


#: What makes `compile` fall back to Halide (or raise, with fallback=False): a construct codegen does
#: not handle, a statement the parser does not know, a failed capture, IR that LLVM rejects.
FALLBACK_ERRORS = (Unsupported, HalideParseError, CaptureError, CompileError)


@dataclass
class CompileStats:
    rules_fired: dict[str, int] = field(default_factory=dict)
    vector_expressions: int = 0
    capture_seconds: float = 0.0
    #: CPU seconds of the subprocess that lowered the pipeline for the capture (Halide's lowering and
    #: its log, up to the captured statement), which this process's own CPU time does not include;
    #: None when the capture ran in-process or did not report it (frontend/capture.py)
    capture_child_cpu_seconds: Optional[float] = None
    #: that subprocess's run-queue delay (seconds runnable but waiting for a CPU), read with its CPU
    capture_child_run_delay_seconds: Optional[float] = None
    selection_seconds: float = 0.0
    codegen_seconds: float = 0.0
    llvm_seconds: float = 0.0
    #: llvm_seconds split by LLVM phase (pitchfork.backend.machine.compile_module's `timings`: parse,
    #: verify, O3, print, HVX fixups, parse of the optimised text, the one emission); empty when the
    #: module was compiled in a forked child (hvx128 below v66)
    llvm_phases: dict[str, float] = field(default_factory=dict)
    #: codegen_seconds split: statement parse, loop passes, LLVM IR building (selection excluded),
    #: llvmlite's printing of the module (the rest is the checks between them)
    codegen_phases: dict[str, float] = field(default_factory=dict)
    asserts_checked: int = 0
    asserts_skipped: int = 0


@dataclass
class CompiledPipeline:
    target: str
    isel: str
    name: str
    captured: Optional[CapturedStmt]
    module: Optional[CompiledModule]
    stats: CompileStats
    fallback_reason: str = ""
    _halide: Any = None  # (pipeline, args) for the fallback
    #: assertion number written to the error slot -> the assertion's text (condition and error call)
    assertions: dict[int, str] = field(default_factory=dict)
    _call_plan: Any = field(default=None, repr=False)  # pitchfork.aot.call: argument layout, once
    _kernel_fn: Any = field(default=None, repr=False)  # the x86 JIT'd function (ctypes), once
    #: output arrays of earlier calls, reused once the caller has dropped them (pitchfork.aot.call)
    _spare_outputs: dict = field(default_factory=dict, repr=False)
    #: the Halide target string compiled for (`target` is its ISA; pitchfork/targets/target_strings.py)
    halide_target: str = ""

    def __post_init__(self) -> None:
        if not self.halide_target:
            self.halide_target = TARGET_ALIASES[self.target]

    @property
    def is_fallback(self) -> bool:
        return self.module is None

    # ---- outputs ---------------------------------------------------------------------------
    def llvm_ir(self) -> str:
        if self.module is not None:
            return self.module.llvm_ir()
        return self._halide_text("llvm_assembly", ".ll")

    def assembly(self) -> str:
        if self.module is not None:
            return self.module.assembly()
        return self._halide_text("assembly", ".s")

    def object_file(self, path: str | Path) -> Path:
        """Write an ELF object with Halide's AOT entry point `int name(struct halide_buffer_t *...)`
        (and `name_argv`), declared by `.header()`; pitchfork/aot/abi.py."""
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        if self.module is not None:
            from pitchfork.aot.abi import aot_object

            p.write_bytes(aot_object(self))
        else:
            pipeline, args = self._halide
            pipeline.compile_to_object(str(p), list(args), self.name, halide_target(self.halide_target))
        return p

    def header(self) -> str:
        """The C header for `.object_file()`, as Halide's `compile_to_header` writes it."""
        from pitchfork.aot.abi import header

        return header(self)

    def _halide_text(self, kind: str, suffix: str) -> str:
        import tempfile

        pipeline, args = self._halide
        with tempfile.TemporaryDirectory() as d:
            f = Path(d) / f"{self.name}{suffix}"
            getattr(pipeline, f"compile_to_{kind}")(str(f), list(args), self.name, halide_target(self.halide_target))
            return f.read_text()

    # ---- running ---------------------------------------------------------------------------
    def __call__(self, *inputs: Any, size: Optional[Sequence[int]] = None, min: Optional[Sequence[int]] = None,
                 out: Any = None, check: bool = False) -> Any:
        """Run on numpy arrays / hl.Buffers (and scalars) in argument order; returns an array shaped like
        `np.asarray(func.realize(size))` (a tuple of them for a pipeline with several outputs).

        `size` gives the output extents (default: the first input's), `min` the output mins (default
        0, or an `out` hl.Buffer's mins). `out` (an array, hl.Buffer or a tuple of them) is written in
        place and returned. On x86 the kernel reads the inputs' memory directly: an input is copied
        only if it is not C-contiguous/aligned or overlaps an output. `check=True` (what the tests
        use) runs through `pitchfork.backend.run` instead: copies, guard bytes around the outputs and a
        check that the inputs were not written."""
        if self.module is None:
            result = self._run_halide(inputs, size, min)
            return _copy_out(result, out)
        from pitchfork.aot.call import bind

        outs = bind(self, inputs, size, min, out, check, recycle=out is None and not check)()
        if out is None and not check:  # kept for the next call, reused once the caller drops them
            self._spare_outputs.update(enumerate(outs))
        # One array per output Func (a tuple for a multi-output pipeline, e.g. a generator with two
        # Outputs of the same dimensions).
        return outs[0] if len(outs) == 1 else tuple(outs)

    def bind(self, inputs: Sequence[Any], size: Optional[Sequence[int]] = None) -> Any:
        """The `pitchfork.backend.run.Call` that runs this pipeline on `inputs` (see `__call__`); `run_many`
        runs several of them in one emulator run."""
        from pitchfork.backend.run import Buffer, Call, Scalar

        assert self.captured is not None and self.module is not None
        args: list[Any] = [Buffer(np.zeros(1, np.int32), is_output=True)]
        if len(inputs) != len(self.captured.arguments):
            names = ", ".join(a.name for a in self.captured.arguments)
            raise TypeError(f"{self.name} takes {len(self.captured.arguments)} inputs ({names}), got {len(inputs)}")
        first_extents: Optional[list[int]] = None
        for a, value in zip(self.captured.arguments, inputs):
            if a.kind == "scalar":
                args.append(_scalar_arg(a, value))
                continue
            arr, mins = _as_array(value)
            want = buffer_dtype(a.type.elem)
            if arr.dtype != want:
                raise TypeError(f"input {a.name} must be {want}, got {arr.dtype}")
            if arr.ndim != a.dimensions:
                raise TypeError(f"input {a.name} must have {a.dimensions} dimensions, got {arr.ndim}")
            args.append(Buffer(arr))  # Buffer keeps its own reference to the array
            extents = list(reversed(arr.shape))
            strides = list(reversed([s // arr.itemsize for s in arr.strides]))
            for d in range(arr.ndim):
                args += [Scalar(mins[d]), Scalar(extents[d]), Scalar(strides[d])]
            if first_extents is None:
                first_extents = extents
        from pitchfork.aot.call import new_output, output_layout, stride_constraints

        outs = self.captured.output_buffers
        size = self._output_size(size, first_extents)
        for out in outs:
            order = output_layout(stride_constraints(self.captured.text, out.name), size)
            arr = new_output(size, buffer_dtype(out.types[0].elem), order)
            arr[...] = 0
            args.append(Buffer(arr, is_output=True))
            strides = list(reversed([s // arr.itemsize for s in arr.strides]))
            for d in range(out.dimensions):
                args += [Scalar(0), Scalar(size[d]), Scalar(strides[d])]
        return Call(self.name, args)

    def _output_size(self, size: Optional[Sequence[int]], first_extents: Optional[list[int]]) -> list[int]:
        assert self.captured is not None
        size = list(size) if size is not None else first_extents
        for out in self.captured.output_buffers:
            if size is None or len(size) != out.dimensions:
                raise TypeError(f"size must give {out.dimensions} extents for output {out.name}")
        assert size is not None
        return size

    def unpack(self, outputs: Sequence[np.ndarray]) -> Any:
        """The result of `__call__` from the output buffers of a `bind` call; raises RuntimeError
        quoting the Halide assertion that failed, if one did."""
        err, *results = outputs
        code = int(err[0])
        if code != 0:
            self._raise_assertion(code)
        return results[0] if len(results) == 1 else tuple(results)

    def prepare(self, *inputs: Any, size: Optional[Sequence[int]] = None, min: Optional[Sequence[int]] = None,
                out: Any = None) -> PreparedCall:
        """Bind arguments once for repeated kernel-only calls (benchmarks): `call = prog.prepare(img)`,
        then `call()` runs just the compiled function on the bound arrays (on x86 one ctypes call of
        the JIT'd code with the buffer pointers and dims, no allocation, no copies) and returns
        its outputs (`call.results()`), overwritten each time. Same arguments and aliasing rules as `__call__`."""
        if self.module is None:
            raise RuntimeError(f"{self.name} fell back to Halide ({self.fallback_reason}); no kernel to prepare")
        from pitchfork.aot.call import bind

        return bind(self, inputs, size, min, out, False)

    def _raise_assertion(self, code: int) -> None:
        what = self.assertions.get(code, "")
        raise RuntimeError(f"{self.name}: Halide assertion #{code} failed: {what or '(unknown)'} -- bad sizes "
                           "or strides, or an output extent that is not a multiple of the schedule's tile")

    def _run_halide(self, inputs: Sequence[Any], size: Optional[Sequence[int]],
                    mins: Optional[Sequence[int]] = None) -> Any:
        import halide as hl

        pipeline, args = self._halide
        if len(inputs) != len(args):
            raise TypeError(f"{self.name} takes {len(args)} inputs, got {len(inputs)}")
        keep = []
        first_extents: Optional[list[int]] = None
        for a, value in zip(args, inputs):
            if isinstance(a, hl.ImageParam):
                arr, _ = _as_array(value)
                want = HType.from_halide(a.type()).np_dtype
                if arr.dtype != want:
                    raise TypeError(f"input {a.name()} must be {want}, got {arr.dtype}")
                if arr.ndim != a.dimensions():
                    raise TypeError(f"input {a.name()} must have {a.dimensions()} dimensions, got {arr.ndim}")
                buf = value if isinstance(value, hl.Buffer) else hl.Buffer(arr)
                keep.append((value, arr, buf))  # param.set does not keep the array alive (SPEC 1.7)
                a.set(buf)
                if first_extents is None:
                    first_extents = list(reversed(arr.shape))
            else:
                a.set(halide_scalar_value(a, value))
        size = list(size) if size is not None else first_extents
        if size is None:
            raise TypeError(f"size must be given for {self.name} (it has no input buffer)")
        # Halide's JIT for the host: the target's own object file cannot run here, and integer
        # semantics do not depend on the target.
        try:
            if mins is not None:
                outs = pipeline.outputs()
                bufs = [hl.Buffer(f.type(), list(size)) for f in outs]
                for b in bufs:
                    b.set_min(list(mins))
                pipeline.realize(bufs[0] if len(bufs) == 1 else bufs, halide_target("x86-avx2"))
                out = bufs[0] if len(bufs) == 1 else bufs
            else:
                out = pipeline.realize(list(size), halide_target("x86-avx2"))
        except hl.HalideError as e:
            raise RuntimeError(f"{self.name} (Halide fallback): {e}") from e
        if isinstance(out, (tuple, list)):  # several outputs (or a Tuple-valued Func)
            return tuple(np.asarray(b).copy() for b in out)
        return np.asarray(out).copy()


def _copy_out(result: Any, out: Any) -> Any:
    """Write a fallback's result into the caller's `out` arrays (if any) and return them."""
    if out is None:
        return result
    results = result if isinstance(result, tuple) else (result,)
    targets = list(out) if isinstance(out, (tuple, list)) else [out]
    if len(targets) != len(results):
        raise TypeError(f"out must give {len(results)} arrays, got {len(targets)}")
    arrays = []
    for t, r in zip(targets, results):
        a = np.asarray(t)
        a[...] = r
        arrays.append(a)
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def run_many(runs: Sequence[tuple[CompiledPipeline, Sequence[Any], Optional[Sequence[int]]]]) -> list[Any]:
    """Run `(pipeline, inputs, size)` triples, returning what each `pipeline(*inputs, size=size)` would.

    Pipelines compiled by PITCHFORK for the same target run together: one JIT engine on x86, one
    harness build and one emulator run under qemu (compiling is what costs; this keeps the runs cheap).
    Their names must be distinct. Halide fallbacks run one by one. A failed assertion in any run
    raises RuntimeError for the first one that failed.
    """
    from pitchfork.backend.run import run_calls

    results: list[Any] = [None] * len(runs)
    by_target: dict[str, list[int]] = {}
    for k, (prog, inputs, size) in enumerate(runs):
        if prog.module is None:
            results[k] = prog._run_halide(inputs, size)
        else:
            by_target.setdefault(prog.target, []).append(k)
    for target, ks in by_target.items():
        mods: list[CompiledModule] = []
        for k in ks:
            if all(m is not runs[k][0].module for m in mods):
                mods.append(runs[k][0].module)  # type: ignore[arg-type]
        calls = {k: runs[k][0].bind(runs[k][1], runs[k][2]) for k in ks}
        for k, call in list(calls.items()):
            empty = [b.array for b in call.outputs[1:]]
            if any(e.size == 0 for e in empty):
                # Nothing to compute: the empty result realize() gives (not run, so no assertion on strides).
                results[k] = empty[0] if len(empty) == 1 else tuple(empty)
                del calls[k]
        for k, outs in zip(calls, run_calls(mods, target, list(calls.values()))):
            results[k] = runs[k][0].unpack(outs)
    return results


def _scalar_arg(a: Any, value: Any) -> Any:
    """A scalar parameter's call argument: integers as i32/i64 values; an f32 parameter as the i32
    bit pattern of the float32 value (the kernel reinterprets it), an f64 one as the i64 pattern."""
    from pitchfork.backend.run import Scalar

    if a.type.code == "float":
        if a.type.bits == 32:
            return Scalar(int(np.array(value, np.float32).view(np.int32)), 32)
        if a.type.bits == 64:
            return Scalar(int(np.array(value, np.float64).view(np.int64)), 64)
        raise TypeError(f"{a.name}: float{a.type.bits} parameters are not supported")
    # refuse what Halide's Param.set refuses (pitchfork/frontend/params.py)
    v = scalar_value(a.name, a.type.code, a.type.bits, value)
    return Scalar(v, 64 if a.type.bits == 64 else 32)


def _as_array(value: Any) -> tuple[np.ndarray, list[int]]:
    import halide as hl

    from pitchfork.backend.harness import dense

    if isinstance(value, hl.Buffer):  # (a dense array keeps its layout: the kernel is given its strides)
        arr = dense(np.asarray(value))
        return arr, [value.dim(d).min() for d in range(value.dimensions())]
    arr = dense(np.asarray(value))
    return arr, [0] * arr.ndim


def debug_level() -> int:
    """PITCHFORK_DEBUG: 0 (default) quiet; 1 the statement after parsing and after each loop pass, on
    stderr; 2 also the LLVM IR codegen made, after O3 and after each backend pass that rewrote it."""
    raw = os.environ.get("PITCHFORK_DEBUG", "") or "0"
    if raw not in ("0", "1", "2"):
        raise UsageError(f"PITCHFORK_DEBUG must be 0, 1 or 2, not {raw!r}")
    return int(raw)


def _log(title: str, text: str) -> None:
    print(f"pitchfork: {title}:\n{text.rstrip()}\n", file=sys.stderr, flush=True)


def compile(pipeline_or_func: Any, args: Sequence[Any], target: str = "x86-avx2", isel: str = "pitchfork",
            name: str = "pipeline", fallback: bool = True, engine: str = "greedy",
            passes: Optional[Sequence[str]] = None, disable_passes: Sequence[str] = (),
            enable_passes: Sequence[str] = ()) -> CompiledPipeline:
    """Compile a Halide Func/Pipeline (args: its ImageParams and Params, in order) for `target`: a
    short name (x86-avx2, arm64, hvx128) or a Halide target string (`arm-64-linux-arm_dot_prod`,
    `host`, ...: pitchfork/targets/target_strings.py; a feature PITCHFORK does not honour raises UsageError).
    `engine` is the lifting engine of isel=pitchfork: "greedy" (the TRS) or "egraph"
    (pitchfork/selection/egraph). The passes run are pitchfork.passes.pipeline's list for (target,
    isel) (`pitchfork compile --print-passes`): `passes` names the loop passes to run instead of the
    isel's, `enable_passes` adds shared codegen passes the isel does not run by default (the harness
    gives LLVM alone the data-movement strategies PITCHFORK uses), `disable_passes` removes passes by
    name; a name that is no pass is a UsageError listing the valid ones."""
    # Python's cyclic collector is paused while compiling, and the young generation collected once at the
    # end (inside the compile, so its cost is the compile's): the garbage a compile leaves is freed then,
    # as before. Why: a compile allocates ~10^5 container objects (parse trees, terms, llvmlite's IR, whose
    # instructions, blocks and functions point at each other), so the collector ran hundreds of times
    # during one, each young collection rescanning the survivors and each full one (the interned terms,
    # rule sets, Halide's and LLVM's Python objects: ~2 * 10^5 objects) every object in the process:
    # 11-16% of the CPU of a larger compile (matmul x86, camera_pipe arm64), with the same outputs.
    # The llvmlite module, the largest cyclic garbage, is freed by reference counting before that
    # collection (`free_module` in _compile), so the collection mostly sees what survives the compile.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _compile(pipeline_or_func, args, target, isel, name, fallback, engine, passes, disable_passes,
                        enable_passes)
    finally:
        if collecting:
            gc.enable()
            gc.collect(0)


def _compile(pipeline_or_func: Any, args: Sequence[Any], target: str, isel: str, name: str, fallback: bool,
             engine: str, passes: Optional[Sequence[str]], disable_passes: Sequence[str],
             enable_passes: Sequence[str]) -> CompiledPipeline:
    """`compile`, with the cyclic collector as `compile` leaves it."""
    import halide as hl

    if engine != "greedy":
        from pitchfork.selection.lift import ENGINES, lift_engine

        if engine not in ENGINES:
            raise UsageError(f"unknown engine {engine!r}; choose one of {', '.join(ENGINES)}")
        with lift_engine(engine):
            return compile(pipeline_or_func, args, target, isel, name, fallback, passes=passes,
                           disable_passes=disable_passes, enable_passes=enable_passes)

    spec = parse_target(target)  # a short name or a Halide target string (pitchfork/targets/target_strings.py)
    target = spec.isa
    if isel not in ("pitchfork", "llvm"):
        raise UsageError(f"unknown isel {isel!r}; choose 'pitchfork' or 'llvm'")
    plist = resolve(target, isel, None if passes is None else list(passes), list(disable_passes),
                    list(enable_passes))
    debug = debug_level()
    pipeline = pipeline_or_func if isinstance(pipeline_or_func, hl.Pipeline) else hl.Pipeline(pipeline_or_func)
    args = check_arguments(pipeline, args)  # a list, with every Param the pipeline uses (no fallback)
    stats = CompileStats()
    captured: Optional[CapturedStmt] = None
    try:
        t0 = time.perf_counter()
        try:
            captured = capture_stmt(pipeline, args, spec.halide, upto_intrinsics=True)  # reads .text only
        except CaptureError as e:
            refuse_if_halide_rejects(e, name, target)  # PipelineError: the fallback could not work either
            raise
        refuse_extern_stages(captured.text, name)
        stats.capture_seconds = time.perf_counter() - t0
        stats.capture_child_cpu_seconds = captured.child_cpu_seconds
        stats.capture_child_run_delay_seconds = captured.child_run_delay_seconds
        t0 = time.perf_counter()
        refuse_deep_statement(captured.text)  # Unsupported: falls back, naming the depth
        refuse_runtime_services(captured.text)  # Unsupported: falls back, naming the directive
        refuse_half_floats(captured, spec)  # Unsupported: falls back, naming the type and target
        cap = exact_half_literals(captured)  # Unsupported: a float16 literal with no unique value

        phases = stats.codegen_phases

        def frontend() -> LoopNestCodegen:
            t = time.perf_counter()
            stmt = cap.parse()
            refuse_huge_vectors(stmt, name)
            phases["parse"] = time.perf_counter() - t
            t = time.perf_counter()
            stmt = run_loop_passes(stmt, plist, name, debug, spec.unavailable)
            phases["loop_passes"] = time.perf_counter() - t
            t = time.perf_counter()
            cg = LoopNestCodegen(cap, stmt, target, isel, name, unavailable=spec.unavailable, passes=plist)
            cg.build()
            phases["ir_build"] = time.perf_counter() - t - cg.stats.selection_seconds
            return cg

        cg = run_deep(frontend)  # the walkers recurse per nesting level: a deep stack, bounded (deep.py)
        if debug >= 2:
            _log(f"{name}: LLVM IR from codegen", str(cg.module))
        t = time.perf_counter()
        # llvmlite's printing, the common instructions' lines formatted faster (the same text:
        # pitchfork/codegen/ir_text.py): our codegen's cost, not LLVM's
        ir_text = module_text(cg.module)
        phases["ir_print"] = time.perf_counter() - t
        t = time.perf_counter()
        # nothing reads the llvmlite module after its text: its cycles broken, reference counting frees
        # it now rather than the closing collection traversing it (pitchfork/codegen/ir_text.py)
        free_module(cg.module)
        phases["ir_free"] = time.perf_counter() - t
        stats.codegen_seconds = time.perf_counter() - t0 - cg.stats.selection_seconds
        stats.selection_seconds = cg.stats.selection_seconds
        stats.rules_fired = dict(cg.stats.rules_fired)
        stats.vector_expressions = cg.stats.vector_exprs
        stats.asserts_checked, stats.asserts_skipped = cg.stats.asserts_checked, cg.stats.asserts_skipped
        t0 = time.perf_counter()
        # The same LLVM options for both isels (machine.backend_options, HVX_ALIGN_VECTORS). The backend
        # passes of the list (hvx128, isel=pitchfork by default): 64-bit-lane products on 32-bit halves
        # (instruction selection: which instructions compute a product, so LLVM alone keeps LLVM's own),
        # pair forms only where they cost no packet.
        # Below HVX v66, what the instruction tables do not mark may still be an intrinsic LLVM cannot
        # select for that version, and LLVM aborts the process then: compiled in a forked child, so
        # it becomes a CompileError and a fallback naming the intrinsic.
        # isel=llvm on hvx128 under an LLVM built with assertions (llvmlite's PyPI wheel; scripts/install.sh
        # builds it against a release LLVM instead) likewise: LLVM's own Hexagon selection trips an assertion
        # a release LLVM does not check (depthwise_conv with no_asserts, docs/LLVMLITE.md), so a user's
        # process gets a CompileError, never an abort.
        isolate = spec.isa == "hvx128" and (spec.hvx_version < 66
                                            or (isel == "llvm" and llvm_assertions_enabled()))
        module = compile_module(ir_text, machine_target(spec), i64_halves=plist.on("hvx_i64_halves"),
                                pairs=plist.on("hvx_pairs"), isolate=isolate,
                                trace=(lambda stage, text: _log(f"{name}: LLVM IR after {stage}", text))
                                if debug >= 2 else None, timings=stats.llvm_phases)
        stats.llvm_seconds = time.perf_counter() - t0
        # read from what compile_module emitted (the object; the assembly where HVX pair forms were weighed)
        missing = (undefined_calls(module.assembly(), target) if target == "hvx128" and module.emitted("asm")
                   else undefined_symbols(module.object_bytes(), target))
        if missing:  # would fail to link at the first call: refused now (link_check.py)
            raise Unsupported(missing_reason(missing, target))
        # (the statement with its 16-bit float literals made exact: the AOT entry point parses it again, and
        # a bfloat16 literal as Halide prints it would be read as a float16 one)
        return CompiledPipeline(target, isel, name, cap, module, stats, assertions=dict(cg.assert_messages),
                                halide_target=spec.halide)
    except FALLBACK_ERRORS as e:
        if not fallback:
            raise
        reason = f"{type(e).__name__}: {e}"
        warnings.warn(f"PITCHFORK cannot compile {name} for {target} ({reason}); using Halide's own compiler",
                      PitchforkFallbackWarning, stacklevel=3)  # the caller of compile
        return CompiledPipeline(target, isel, name, captured, None, stats, reason, (pipeline, list(args)),
                                halide_target=spec.halide)


def run_loop_passes(stmt: Any, plist: PassList, name: str = "pipeline", debug: int = 0,
                    unavailable: frozenset[str] = frozenset()) -> Any:
    """`stmt` through the loop passes of `plist`, in order; with `debug` >= 1 the statement after
    parsing and after each pass on stderr (Halide's printer syntax, pitchfork.frontend.printer).
    dot_products groups products for udot: skipped when the target's features lack it."""
    if debug >= 1:
        _log(f"{name}: passes for {plist.target}, isel={plist.isel}", ", ".join(plist.names) or "(none)")
        _log(f"{name}: statement after parsing", to_text(stmt))
    for p in plist.of_kind("loop"):
        assert p.run is not None
        if p.name == "dot_products" and "arm.udot" in unavailable:
            continue
        stmt = p.run(stmt, plist.target)
        if debug >= 1:
            _log(f"{name}: statement after {p.name}", to_text(stmt))
    return stmt
