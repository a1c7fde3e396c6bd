"""Ahead-of-time layer: Halide-ABI entry points (`abi`, `abi_runtime`, `abi_driver`), Halide Python
generators compiled with PITCHFORK (`generator`, the `pitchfork compile` engine), and calling a
compiled pipeline from Python (`call`)."""
