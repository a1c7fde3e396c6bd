"""Halide frontend: capture a pipeline's vectorized statement and parse it into a typed loop nest.

    captured = capture_stmt(func, [input_param], "arm64")   # Halide's pre-"Finding intrinsics" text
    stmt = captured.parse()                                   # ir.Stmt; every Expr has .type (HType)

Modules: `capture` (getting the text out of Halide), `stmt_grammar.lark` + `stmt` (parsing and type
inference), `ir` (the nodes), `printer` (back to Halide's syntax), `htypes` (types), `examples`
(reference pipelines; imports halide), `generator` (Halide Python generators compiled with PITCHFORK:
`compile_generator`, the `pitchfork compile` command's engine).
"""

from pitchfork.halide.capture import (
    TARGET_ALIASES,
    ArgInfo,
    CapturedStmt,
    CaptureError,
    OutputInfo,
    capture_stmt,
    capture_stmts,
    enable_inprocess_capture,
    inprocess_capture_available,
)
from pitchfork.halide.generator import GeneratorError, compile_generator
from pitchfork.halide.htypes import HType
from pitchfork.halide.printer import to_text
from pitchfork.halide.stmt import HalideParseError, HalideTypeError, parse_expr, parse_stmt

__all__ = [
    "TARGET_ALIASES",
    "ArgInfo",
    "CaptureError",
    "CapturedStmt",
    "GeneratorError",
    "HType",
    "HalideParseError",
    "HalideTypeError",
    "OutputInfo",
    "capture_stmt",
    "capture_stmts",
    "compile_generator",
    "enable_inprocess_capture",
    "inprocess_capture_available",
    "parse_expr",
    "parse_stmt",
    "to_text",
]
