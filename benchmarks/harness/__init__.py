"""The cross-ISA benchmark harness (`pitchfork bench`, `python -m benchmarks`).

Modules: `run` (driver, CLI options, progress), `worker` (one benchmark x ISA in a child process),
`kernel` (raw kernel arguments, zero-copy x86 calls), `measure` (interleaved timing), `halide21`
(Halide's own compiler as a contender), `asmblocks` (basic blocks, loops, counter instrumentation),
`static` (weighted llvm-mca / packet estimate), `report` (RESULTS.md, PNGs); `profile` (a tool, not
part of a run: native perf samples per loop of an x86 kernel, ours beside Halide 21's).
"""
