"""One benchmark on one ISA, in a child process: compile, check, time (x86), estimate statically.

Run as `python -m benchmarks.harness.worker JOB.json RESULT.json`. The job names the benchmark, ISA,
sizes, repetitions and the leave-one-out exclusion; the result is a list of rows, one per contender
(pitchfork, llvm, halide21), each with `status` "ok" or "failed" and the error that failed it. Every
step is guarded: a contender that fails to compile, is rejected by the frontend, or fails a check
becomes a failure row; the others still run. A crash (LLVM or Halide abort) kills only this process;
the parent records it. Progress goes to stdout as `@progress <json>` lines.

x86-avx2 rows: the two isels' kernels are called directly (`kernel.direct_kernel`) and Halide 21's JIT
pipeline realizes into a preallocated buffer, interleaved (`measure.time_interleaved`); outputs of the
three are compared at the timing size (`exact`). Every ISA: the weighted static estimate
(`static.py`) at the static size, x86 with the host's `-mcpu` (the validation of the method).
"""

from __future__ import annotations

import json
import sys
import time
import traceback
import warnings
from typing import Any

import numpy as np

from benchmarks.harness.variants import COMPILED, MEASURED, VARIANTS, code_key, compile_key, pass_options

ISELS = ("pitchfork", "llvm")


def _progress(**kw: Any) -> None:
    print("@progress " + json.dumps(kw), flush=True)


def _err(e: BaseException) -> str:
    msg = str(e).strip().splitlines()
    return f"{type(e).__name__}: {msg[0] if msg else ''}"[:500]


def _compile(bench: Any, pset: dict, isa: str, variant: str, engine: str = "greedy") -> Any:
    """One of our compiler's variants (benchmarks/harness/variants.py), lifting with `engine`."""
    import pitchfork
    from pitchfork.selection.synthesized import rules_config

    v = COMPILED[variant]
    kw = pass_options(isa, v)
    out, args = bench.build(isa, pset)
    with warnings.catch_warnings(), rules_config(enabled=v.synthesized) if not v.synthesized else _nothing():
        warnings.simplefilter("ignore")
        return pitchfork.compile(out, args, target=isa, isel=v.isel, name=f"{bench.name}_{variant}", fallback=False,
                                 engine=engine, **kw)


def _nothing() -> Any:
    import contextlib

    return contextlib.nullcontext()


def _compile_stats(prog: Any) -> dict[str, Any]:
    st = prog.stats
    comp = {"capture": st.capture_seconds, "selection": st.selection_seconds, "codegen": st.codegen_seconds,
            "llvm": st.llvm_seconds}
    comp["total"] = sum(comp.values())
    return {"compile": comp, "rules_fired": dict(st.rules_fired), "vector_expressions": st.vector_expressions}


def _check_output(outputs: list[np.ndarray], reference: np.ndarray) -> None:
    """The counted run must have computed the right answer, or its counts mean nothing."""
    if len(outputs) != 1 or outputs[0].shape != reference.shape or not np.array_equal(outputs[0], reference):
        raise RuntimeError("the counted run's output differs from the numpy reference")


def _share_arrays(progs: dict[str, Any], kernels: dict[str, Any], runners: dict[str, Any], h: Any,
                  values: list[Any], out_size: list[int]) -> None:
    """Time every contender on the same input and output arrays (the first kernel's), after each was
    checked on its own. At 8192x8192 a kernel's time depends on where its arrays lie in physical memory
    (conv3x3a16, one binary, one process: 12.7 or 18.7 ms by allocation, Halide 21's alike), so each
    contender timed on its own arrays made ours/Halide swing 0.85x..1.28x between runs; on shared
    arrays the ratio held at 0.85x-0.89x."""
    import numpy as np

    from benchmarks.harness.kernel import direct_kernel

    timed = [i for i in kernels if i in runners]
    if not timed:
        return
    base = kernels[timed[0]]
    for isel in timed[1:]:
        runners[isel] = direct_kernel(progs[isel], values, out_size, share=base).run
    if h is not None and "halide21" in runners and len(base.outputs) == 1 \
            and all(isinstance(v, np.ndarray) or np.isscalar(v) for v in values):
        arrays = iter(base.keep[1:])  # keep = [error slot, input buffers in order, outputs]
        h.rebind([next(arrays) if isinstance(v, np.ndarray) else v for v in values], base.outputs[0])
        runners["halide21"] = h.run


def run_job(job: dict[str, Any]) -> list[dict[str, Any]]:
    from benchmarks import registry
    from benchmarks.common import expected
    from benchmarks.harness import halide21, lean, static
    from benchmarks.harness.kernel import direct_kernel, kernel_args
    from benchmarks.harness.measure import time_interleaved
    from pitchfork.selection.synthesized import rules_config
    from pitchfork.trs.provenance import excluding_rules_from

    name, isa = job["bench"], job["isa"]
    want = [v for v in VARIANTS if v in job.get("variants", VARIANTS)]
    bench = registry.get(name)
    pi = int(job.get("param_set", 0))
    pset = bench.param_sets[pi]
    size = list(bench.quick_size if job["quick"] else bench.timing_size)
    ssize = list(bench.quick_size if job["static_size"] == "quick" else size)
    rows: dict[str, dict[str, Any]] = {v: {"bench": name, "isa": isa, "variant": v, "pset": pi, "status": "ok",
                                           "errors": [], "size": size, "static_size": ssize} for v in want}

    def fail(v: str, what: str, e: BaseException) -> None:
        rows[v]["status"] = "failed"
        rows[v]["errors"].append(f"{what}: {_err(e)}")

    progs: dict[str, Any] = {}
    # the ablation's switch (benchmarks/harness/ablation.py): synthesized rules on (default) or off
    with excluding_rules_from(job.get("exclude_rules_from")), rules_config(enabled=job.get("synthesized", True)):
        compiled_as: dict[tuple[Any, ...], str] = {}
        for isel in [v for v in COMPILED if v in want]:
            key = compile_key(isa, isel)
            if key in compiled_as:  # compiled exactly like an earlier variant: its code, not compiled again
                rows[isel]["same_code_as"] = compiled_as[key]
                continue
            compiled_as[key] = isel
            _progress(step=f"compile {isel}")
            try:
                progs[isel] = _compile(bench, pset, isa, isel, job.get("engine", "greedy"))
                rows[isel].update(_compile_stats(progs[isel]))
            except Exception as e:  # noqa: BLE001 - a failure row, never a stopped run
                fail(isel, "compile", e)
    # variants with the same code are measured once (the first of them); the others copy it below
    same: dict[str, str] = {v: r["same_code_as"] for v, r in rows.items() if r.get("same_code_as")}
    first_of: dict[str, str] = {}
    for v, prog in progs.items():
        key = code_key(prog)
        if key in first_of:
            same[v] = first_of[key]
            rows[v]["same_code_as"] = first_of[key]
        else:
            first_of[key] = v
    progs = {v: p for v, p in progs.items() if v not in same}
    if job.get("compile_only"):  # the ablation first asks whether the code differs at all
        import hashlib

        for isel, prog in progs.items():
            rows[isel]["assembly_sha1"] = hashlib.sha1(prog.assembly().encode()).hexdigest()
        return list(rows.values())

    rng = np.random.default_rng(job.get("seed", 1))
    out_size = bench.output_size(size, pset)
    if isa == "x86-avx2":
        values = bench.make_inputs(rng, size, pset)
        runners: dict[str, Any] = {}
        results: dict[str, Any] = {}
        kernels: dict[str, Any] = {}
        for isel, prog in progs.items():
            try:
                k = direct_kernel(prog, values, out_size)
                k.run()
                k.check(prog)
                kernels[isel] = k
                runners[isel] = k.run
            except Exception as e:  # noqa: BLE001
                fail(isel, "run", e)
        h = None
        if "halide21" in want:
            _progress(step="halide21 jit")
            try:
                h = halide21.halide_runner(bench, pset, values, out_size)
                h.run()
                runners["halide21"] = h.run
                rows["halide21"]["compile"] = {"total": h.compile_seconds, "what": "compile_jit"}
            except Exception as e:  # noqa: BLE001
                fail("halide21", "jit", e)
                h = None
        if h is not None:
            ref = h.result()
            for isel, k in kernels.items():
                exact = len(k.outputs) == 1 and np.array_equal(k.outputs[0], ref)
                rows[isel]["exact"] = bool(exact)
                if not exact:
                    fail(isel, "check", RuntimeError(f"output differs from Halide 21's at {size}"))
                    runners.pop(isel, None)
        _share_arrays(progs, kernels, runners, h, values, out_size)
        if runners:
            reps = job["reps"]
            _progress(step="timing", reps=reps)
            timings = time_interleaved(runners, reps, on_rep=lambda r: _progress(step="timing", rep=r, reps=reps))
            for v, t in timings.items():
                rows[v]["time"] = t.to_json()
            _progress(step="timing prog(...)")
            try:  # issue 10's column: the public call beside the bare kernel (both isels as shipped)
                lean.time_public_call(progs, {i: k for i, k in kernels.items() if i in runners and i in ISELS},
                                      values, out_size, reps, rows)
            except Exception as e:  # noqa: BLE001
                for isel in kernels:
                    rows[isel]["prog_error"] = _err(e)
        del runners, kernels
        if ssize != size:  # also time at the static size: the x86 validation compares like with like
            _progress(step="timing at the static size")
            try:
                sv = bench.make_inputs(np.random.default_rng(job.get("seed", 1)), ssize, pset)
                so = bench.output_size(ssize, pset)
                small = {isel: direct_kernel(p, sv, so).run for isel, p in progs.items()
                         if "time" in rows[isel]}
                if "time" in rows.get("halide21", {}):
                    small["halide21"] = halide21.halide_runner(bench, pset, sv, so).run
                for v, t in time_interleaved(small, max(job["reps"], 5)).items():
                    rows[v]["time_static_size"] = t.to_json()
            except Exception as e:  # noqa: BLE001
                for v in rows:
                    rows[v]["static_error"] = f"timing at the static size: {_err(e)}"
    # ---- static estimate ---------------------------------------------------------------------
    svalues = bench.make_inputs(np.random.default_rng(job.get("seed", 1)), ssize, pset)
    sout = bench.output_size(ssize, pset)
    mcpu = static.MCA_CPU.get(isa) or static.host_mcpu()
    # the ISA's own reference: camera_pipe's HVX variant uses another tone-curve LUT
    reference = np.asarray(expected(bench, svalues, pset, isa))
    for isel, prog in progs.items():
        if rows[isel]["status"] != "ok" and "compile" in " ".join(rows[isel]["errors"]):
            continue
        _progress(step=f"static {isel}")
        try:
            spec = static.our_kernel_spec(prog.name, kernel_args(prog, svalues, sout))
            t0 = time.perf_counter()
            # Both isels are counted as LLVM schedules them: on hvx128 an i64-vector module's own
            # packets, not the unpacketised code pitchfork.backend.machine emits as a qemu workaround
            # (the same rule for every contender; the counted run still checks the output).
            asm = prog.module.llvm_default_assembly() if prog.module else prog.assembly()
            run = static.counted_run(asm, prog.name, isa, spec)
            err = int(run.outputs[0][0])
            if err:
                raise static.StaticError(f"the counted run failed Halide assertion #{err}: "
                                         f"{prog.assertions.get(err, '(unknown)')}")
            _check_output(run.outputs[1:], reference)
            est = static.estimate(run.blocks, run.counts, isa, mcpu, job.get("second_mcpu"))
            rows[isel]["hot_loop"] = lean.hot_loop(run.blocks, run.counts, est, isa)
            rows[isel]["static"] = {**est.to_json(), "mcpu": mcpu if isa != "hvx128" else None,
                                    "seconds": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001
            rows[isel]["static_error"] = _err(e)
    if "halide21" in want:
        _progress(step="static halide21")
        try:
            fn = f"{name}_halide21"
            ha = halide21.halide_assembly(bench, pset, isa, fn)
            if isa != "x86-avx2":
                rows["halide21"]["compile"] = {"total": ha.compile_seconds, "what": "compile_to_assembly"}
            spec = static.halide_kernel_spec(fn, svalues, ha.args, ha.out_dtype, sout)
            t0 = time.perf_counter()
            run = static.counted_run(ha.asm, fn, isa, spec)
            if run.returned:
                raise static.StaticError(f"Halide's pipeline returned error {run.returned} in the counted run")
            _check_output(run.outputs, reference)
            est = static.estimate(run.blocks, run.counts, isa, mcpu)
            rows["halide21"]["hot_loop"] = lean.hot_loop(run.blocks, run.counts, est, isa)
            rows["halide21"]["static"] = {**est.to_json(), "mcpu": mcpu if isa != "hvx128" else None,
                                          "seconds": time.perf_counter() - t0}
        except Exception as e:  # noqa: BLE001
            rows["halide21"]["static_error"] = _err(e)
            if isa != "x86-avx2":
                fail("halide21", "assembly", e)
                if halide21.known_failure(name, isa):
                    rows["halide21"]["errors"].append(f"why: {halide21.known_failure(name, isa)}")
    for v, rep in same.items():  # the same code: the same measurement, said so
        src = rows[rep]
        rows[v].update({k: src[k] for k in MEASURED if k in src})
        if src["status"] != "ok":
            rows[v]["status"] = src["status"]
            rows[v]["errors"] += [f"{e} (the same code as {rep})" for e in src["errors"]]
    for isel in [v for v in COMPILED if v in rows]:  # on arm64/hvx128 the static estimate is the result
        if isa != "x86-avx2" and rows[isel]["status"] == "ok" and "static" not in rows[isel]:
            fail(isel, "static", RuntimeError(rows[isel].get("static_error", "no estimate")))
    return list(rows.values())


def main(argv: list[str]) -> int:
    job_path, out_path = argv
    with open(job_path) as f:
        job = json.load(f)
    try:
        rows = run_job(job)
    except Exception as e:  # noqa: BLE001 - e.g. the benchmark module does not import
        traceback.print_exc()
        rows = [{"bench": job["bench"], "isa": job["isa"], "variant": v, "pset": int(job.get("param_set", 0)),
                 "status": "failed", "errors": [f"setup: {_err(e)}"]} for v in job.get("variants", VARIANTS)]
    with open(out_path, "w") as f:
        json.dump(rows, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
