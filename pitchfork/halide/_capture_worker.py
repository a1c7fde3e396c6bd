"""Subprocess half of `pitchfork.halide.capture`: lower one serialized pipeline for one target.

Run as `python -c <this file's source> JOB.json` with `HL_DEBUG_CODEGEN` already in the environment
and stderr redirected to the log file, so that this fresh Halide reads the variable at its first use.
It imports nothing but the standard library and `halide` (so it cannot be shadowed by, or depend on,
pitchfork's own modules) and writes `{"ok": true}` or `{"error": "..."}` to the result file.
"""

from __future__ import annotations

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


def main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    result: dict = {"ok": True}
    try:
        import halide as hl

        with open(job["pipeline"], "rb") as f:
            data = f.read()
        params = hl.deserialize_parameters(data)
        # what serialization drops (capture.argument_constraints): Param ranges, host alignments
        for name, c in job.get("constraints", {}).items():
            p = params.get(name)
            if p is None:
                continue
            if "host_alignment" in c:
                p.set_host_alignment(c["host_alignment"])
            if "min" in c:
                p.set_min_value(hl.cast(p.type(), c["min"]))
            if "max" in c:
                p.set_max_value(hl.cast(p.type(), c["max"]))
        pipeline = hl.deserialize_pipeline(data, params)
        args = _arguments(hl, pipeline, job["args"])
        target = hl.Target(job["target"])
        pipeline.compile_to_lowered_stmt(job["stmt_out"], args, hl.StmtOutputFormat.Text, target)
    except Exception as e:  # noqa: BLE001 - reported to the parent, which raises CaptureError
        result = {"ok": False, "error": f"{type(e).__name__}: {e}"}
    sys.stderr.flush()
    with open(job["result"], "w") as f:
        json.dump(result, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
