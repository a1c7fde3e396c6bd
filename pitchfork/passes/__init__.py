"""Loop-nest passes: rewrites of the parsed Halide statement (pitchfork.frontend.ir) run by
`pitchfork.compile` between parsing and code generation, one module per pass."""
