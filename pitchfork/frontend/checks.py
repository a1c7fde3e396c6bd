"""Compile-time refusals: pipelines `pitchfork.compile` must not accept, because neither PITCHFORK
nor Halide's fallback could give the caller a right answer from them.

* an argument list that is not a list, or that lacks a Param/ImageParam the pipeline reads (Halide's
  JIT would silently read the Param's global value);
* a pipeline Halide itself refuses to lower (a split factor <= 0, a GPU schedule on a CPU target):
  falling back would only fail later, when the output is written or run;
* extern stages (`define_extern`): the function they call is not ours to link or run.

Each raises pitchfork.errors.UsageError / PipelineError naming the construct (never a fallback).
Other checks raise codegen.Unsupported, a fallback to Halide's compiler with the reason: a statement
nested deeper than MAX_NESTING (`refuse_deep_statement`), one with vectors wider than MAX_LANES
(`refuse_huge_vectors`), one that calls a Halide runtime service we
do not compile (`refuse_runtime_services`: memoize, print, tracing, the profiler), and one with float16
or bfloat16 values on a target where they are not compiled (`refuse_half_floats`, `half_refusal`,
`bfloat_refusal`); `exact_half_literals` checks float16 literals and types bfloat16 ones (or refuses
them).
"""

from __future__ import annotations

import re
from typing import Any

from pitchfork.errors import PipelineError, UsageError
from pitchfork.frontend.arguments import as_argument
from pitchfork.frontend.float_literals import FLOAT16_TYPE, HALF_LITERAL, has_half_literals


def check_arguments(pipeline: Any, args: Any) -> list[Any]:
    """The argument list of `pitchfork.compile`, checked against what the pipeline uses.

    `args` must be a list or tuple (a lone ImageParam is a common slip); every Param and ImageParam the
    pipeline reads must be in it. A missing one would otherwise be read from its global value at run
    time (Halide's JIT), which is never what the caller meant, so it is refused here by name.
    """
    if not isinstance(args, (list, tuple)):
        raise UsageError(f"pitchfork.compile takes the pipeline's arguments as a list, e.g. [input, k]; got "
                         f"a {type(args).__name__} (write [x] for a single argument x)")
    given = {as_argument(a).name for a in args}
    used = [a for a in pipeline.infer_arguments() if a.name not in given]
    if used:
        names = ", ".join(a.name for a in used)
        raise PipelineError(f"the pipeline uses {names}, which {'is' if len(used) == 1 else 'are'} not in the "
                            f"argument list: pass {'it' if len(used) == 1 else 'them'} to pitchfork.compile")
    return list(args)


def refuse_if_halide_rejects(error: Exception, name: str, target: str) -> None:
    """Raise PipelineError if a capture failed because Halide refused the pipeline (a user error),
    not because of PITCHFORK's capture machinery (a timeout, say: that one may fall back)."""
    text = str(error)
    if not text.startswith("Halide failed to lower"):
        return
    m = re.search(r"\bError:\s*(.*)", text, re.S)
    why = " ".join((m.group(1) if m else text.split(":", 2)[-1]).split()) or "(Halide gives no reason)"
    raise PipelineError(f"{name}: Halide rejects this pipeline for {target}: {why}") from None


_EXTERN_RE = re.compile(r'halide_error_(?:extern_stage_failed|bounds_inference_call_failed)\("([^"]+)"')


def refuse_extern_stages(statement_text: str, name: str) -> None:
    """Raise PipelineError naming the extern functions a captured statement calls."""
    externs = sorted(set(_EXTERN_RE.findall(statement_text)))
    if externs:
        raise PipelineError(f"{name}: extern stage{'s' if len(externs) > 1 else ''} "
                            f"{', '.join(externs)} (define_extern) cannot be compiled or run by PITCHFORK")



def refuse_huge_vectors(stmt: Any, name: str) -> None:
    """Raise codegen.Unsupported (so `compile` falls back to Halide, saying why) if the parsed statement
    has vectors wider than pitchfork.limits.MAX_LANES: our code generation would exhaust memory before
    failing on them, while Halide compiles them (a 512-lane tile can lower to 1,088-1,450-lane vectors)."""
    from pitchfork.codegen.loop_nest import Unsupported
    from pitchfork.frontend.ir import widest_lanes
    from pitchfork.limits import MAX_LANES

    widest = widest_lanes(stmt)
    if widest > MAX_LANES:
        raise Unsupported(f"{name}: the schedule makes vectors of {widest} lanes; PITCHFORK compiles at most "
                          f"{MAX_LANES}")


#: Deepest parenthesis nesting of the captured statement that the Halide frontend takes on. The
#: statement parser (stmt.py) and the expression translation (codegen.py) recurse once or twice per
#: level; Halide prints every binary operation in parentheses, so nesting is expression depth. Deeper
#: pipelines go to Halide's own compiler with a reason (the FPIR passes after them are iterative).
MAX_NESTING = 200


def statement_nesting(text: str) -> int:
    """Deepest parenthesis nesting of a statement text, outside string literals (a `"` opens one and
    the next `"` not right after a backslash closes it). The parentheses outside strings are counted
    with numpy, not a Python loop over every character (a big pipeline's statement has ~10^5)."""
    if '"' in text:
        outside: list[str] = []
        start, in_string = 0, False
        for m in _QUOTE.finditer(text):
            p = m.start()
            if not in_string:
                outside.append(text[start:p])
                in_string = True
            elif text[p - 1] != "\\":
                in_string, start = False, p + 1
        if not in_string:
            outside.append(text[start:])
        text = "".join(outside)
    import numpy as np

    codes = np.frombuffer(text.encode(), np.uint8)  # ( and ) are single bytes in UTF-8, never part of others
    steps = (codes == ord("(")).astype(np.int64) - (codes == ord(")"))
    return max(0, int(np.cumsum(steps).max())) if len(steps) else 0


_QUOTE = re.compile('"')


def refuse_deep_statement(text: str) -> None:
    """Raise codegen.Unsupported (so `compile` falls back to Halide, saying why) for a statement nested
    deeper than MAX_NESTING."""
    from pitchfork.codegen.loop_nest import Unsupported

    n = statement_nesting(text)
    if n > MAX_NESTING:
        raise Unsupported(f"expression nested {n} deep (PITCHFORK's Halide frontend takes at most {MAX_NESTING})")


#: Halide runtime services a statement calls that our code generation does not provide (the runtime
#: call that marks each -> the schedule directive or target feature a user wrote)
RUNTIME_SERVICES: tuple[tuple[str, str], ...] = (
    ("halide_memoization_cache_", "memoize() (Halide's memoization cache)"),
    ("halide_print(", "print() / print_when() (Halide's runtime printing)"),
    ("halide_trace_helper(", "trace_stores() / trace_loads() / trace_realizations() (Halide's tracing)"),
    ("halide_profiler_", "the profile target feature (Halide's profiler)"),
    ("halide_error_requirement_failed(", "require() (Halide's runtime check with a formatted message)"),
)


def refuse_runtime_services(text: str) -> None:
    """Raise codegen.Unsupported (a fallback to Halide, naming the directive) for a statement that
    calls a Halide runtime service PITCHFORK does not compile, before the parser meets its parts
    (a memoized Func's cache key is a string stored into a uint8 buffer, which would otherwise be
    reported as a type error of that line)."""
    from pitchfork.codegen.loop_nest import Unsupported

    for marker, what in RUNTIME_SERVICES:
        if marker in text:
            raise Unsupported(f"{what} is not compiled by PITCHFORK")


#: a bfloat16 type named in a statement (its literals print like float16's, inside its casts)
#: (`(?<![\w.$])bfloat16(?:x\d+)?(?![\w.$])`, written to start with its literal as FLOAT16_TYPE is)
_BFLOAT = re.compile(r"bfloat16(?<![\w.$]bfloat16)(?:x\d+)?(?![\w.$])")


def half_refusal(spec: Any) -> str:
    """Why float16 is not compiled for the target `spec` (a targets.target_strings.TargetSpec), or ""
    where it is: natively as LLVM `half` where Halide 21 computes it so (x86; arm64 with arm_fp16), as
    Halide emulates it with integer / float32 code elsewhere (arm64 without arm_fp16; hvx:
    codegen/floats_half_emulated.py; float16 vectors on hvx, which Halide 21 refuses itself ("Unsupported
    HVX type: float16x8"), lane by lane as its scalar emulation). Every x86 target PITCHFORK accepts has
    avx2, which implies f16c in Halide's complete_x86_target (and in parse_target): half is converted
    with vcvtph2ps / vcvtps2ph whether or not the string names f16c (Halide's x86-64-linux-avx2-fma
    assembly has them)."""
    if spec.isa in ("x86-avx2", "arm64", "hvx128"):
        return ""
    return f"on {spec.halide} float16 is not compiled"


def _value_types(captured: Any) -> list[Any]:
    """The types of the pipeline's arguments and outputs (HTypes)."""
    return [a.type for a in captured.arguments] + [t for o in captured.output_buffers for t in o.types]


def _half_kinds(captured: Any) -> tuple[bool, bool]:
    """Whether the pipeline has float16 values, and bfloat16 ones: in its statement's casts,
    reinterprets and allocations, or its arguments' and outputs' types (a load prints no type)."""
    types = _value_types(captured)
    f16 = FLOAT16_TYPE.search(captured.text) is not None or any(t.code == "float" and t.bits == 16 for t in types)
    bf16 = _BFLOAT.search(captured.text) is not None or any(t.code == "bfloat" for t in types)
    return f16, bf16


def bfloat_refusal(spec: Any) -> str:
    """Why bfloat16 is not compiled for the target `spec`, or "" where it is: x86, arm64 and hvx128,
    where Halide computes it in float32 (codegen/floats_bfloat.py; bfloat16 vectors on hvx, which Halide 21
    refuses itself, lane by lane as its scalar emulation)."""
    return "" if spec.isa in ("x86-avx2", "arm64", "hvx128") else f"on {spec.halide} bfloat16 is not compiled"


def refuse_half_floats(captured: Any, spec: Any = None) -> None:
    """Raise codegen.Unsupported (a fallback to Halide, saying why) for a pipeline with float16 values
    on a target where they are not compiled (`half_refusal`) or bfloat16 ones where those are not
    (`bfloat_refusal`; both everywhere when `spec` is None), before the parser meets them. Halide
    prints both kinds of constant with an `h`: a literal counts as float16 unless the statement names
    bfloat16 (exact_half_literals refuses a statement with both)."""
    from pitchfork.codegen.loop_nest import Unsupported

    why = "float16 needs a target" if spec is None else half_refusal(spec)
    bwhy = "bfloat16 needs a target" if spec is None else bfloat_refusal(spec)
    refused = sorted({str(t.elem) for t in _value_types(captured)
                      if t.is_float and t.bits == 16 and (bwhy if t.code == "bfloat" else why)})
    text = captured.text
    m = _BFLOAT.search(text) if bwhy else None
    if why and m is None:
        m = FLOAT16_TYPE.search(text)
        if m is None and not _half_kinds(captured)[1] and has_half_literals(text):
            m = HALF_LITERAL.search(text)
    if not refused and m is None:
        return
    where = ""
    if m is not None:
        word = m.group(0)
        if not refused:
            refused = ["float16 or bfloat16"] if word.endswith("h") else [word.split("x")[0]]
        where = f" (statement line {text.count(chr(10), 0, m.start()) + 1})"
    reason = bwhy if refused == ["bfloat16"] else why
    native = f"; {reason}" if reason and spec is not None else ""
    raise Unsupported(f"{' / '.join(refused)} values (Halide computes them natively or emulates them per "
                      "target; PITCHFORK compiles float32, float64, native float16 and bfloat16 on x86 / "
                      f"arm64{native}){where}")


def exact_half_literals(captured: Any) -> Any:
    """The captured statement with its 16-bit float literals (`h`, exact digits: float_literals) checked
    to be values of their type, and each one typed in a statement with bfloat16 values
    (bfloat_literals.rewrite_bfloat); run after refuse_half_floats, so its `h` literals are the compiled
    kind's. codegen.Unsupported names a literal that is not a value of its type, or a statement with
    both kinds (Halide prints their constants alike)."""
    import dataclasses

    from pitchfork.codegen.loop_nest import Unsupported
    from pitchfork.frontend.bfloat_literals import rewrite_bfloat
    from pitchfork.frontend.float_literals import InexactFloatLiteral, check_half

    if not has_half_literals(captured.text):
        return captured
    f16, bf16 = _half_kinds(captured)
    if f16 and bf16:
        raise Unsupported("float16 and bfloat16 values in one pipeline with 16-bit float constants (Halide "
                          "prints both kinds alike)")
    try:
        if bf16:
            return dataclasses.replace(captured, text=rewrite_bfloat(captured.text))
        check_half(captured.text)
        return captured
    except InexactFloatLiteral as e:
        raise Unsupported(str(e)) from None
