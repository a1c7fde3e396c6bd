"""Code generation: a loop nest (pitchfork.frontend.ir) to one LLVM function (`loop_nest`, with its
mixins `memory`, `alloc`, `lut`, `span` and helpers `to_fpir`, `floats`, `reduce`, `scalars`, `powf`,
`hvx_accumulate`), FPIR terms to LLVM IR (`expr`, `lane_order`) and element-wise kernels (`kernel`)."""
