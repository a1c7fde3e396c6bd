"""Halide frontend: capture a pipeline's vectorized statement and parse it into a typed loop nest.

    captured = capture_stmt(func, [input_param], "arm64")   # pitchfork.frontend.capture
    stmt = captured.parse()                                   # ir.Stmt; every Expr has .type (HType)

Modules: `capture` (+ `_capture_worker`, `float_literals`: getting the text out of Halide),
`stmt_grammar.lark` + `stmt` (parsing and type inference), `ir` (the nodes), `ir_walk` (traversal),
`printer` (back to Halide's syntax), `htypes` (types), `checks` / `params` (argument checks and scalar
parameters), `examples` (reference pipelines; imports halide). Nothing here emits code.
"""
