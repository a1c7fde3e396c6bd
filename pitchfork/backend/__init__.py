"""Backend: LLVM target machines, O3, assembly and objects (`machine`),
reading assembly and its loops (`asm`), the post-O3 Hexagon fixups
(`hvx_fixups`, `hvx_i64`, `hvx_pairs`), and running kernels bit-exactly (`run`, `harness`)."""
