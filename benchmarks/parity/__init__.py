"""Selection parity with Halide's own SIMD op checks (see benchmarks/parity/run.py)."""
