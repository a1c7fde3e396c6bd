"""Demo: the paper's Sobel filter (Figure 2) compiled by PITCHFORK for x86 AVX2, ARM Neon and HVX.

For each ISA the Halide pipeline (pitchfork.frontend.examples.sobel3x3, the paper's schedule) is
compiled twice, with isel=llvm (LLVM alone) and isel=pitchfork; both are run (x86 in process, ARM
and HVX under qemu) and checked bit-exactly against Halide's own realize() and a numpy reference;
then the steady-state vector loop of each is compared: instructions (and VLIW packets on HVX).

    python -m benchmarks.demo_sobel [--width 512 --height 64] [--targets x86-avx2,arm64,hvx128]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

SOBEL_2B = ("u8(min(absd(u16(a_u8) + u16(b_u8) * x(2) + u16(c_u8), u16(d_u8) + u16(e_u8) * x(2) + u16(f_u8)) + "
            "absd(u16(g_u8) + u16(h_u8) * x(2) + u16(i_u8), u16(j_u8) + u16(k_u8) * x(2) + u16(l_u8)), x(255)))")
LANES = {"x86-avx2": 32, "arm64": 16, "hvx128": 128}



def main(argv: list[str] | None = None) -> int:
    import halide as hl
    from rich.console import Console
    from rich.table import Table

    import pitchfork
    from fpir import parse
    from pitchfork.backend.asm import main_vector_loop
    from pitchfork.frontend.examples import sobel3x3, sobel3x3_reference
    from pitchfork.selection.lift import lift

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--height", type=int, default=64)
    ap.add_argument("--targets", default="x86-avx2,arm64,hvx128")
    args = ap.parse_args(argv)
    console = Console(width=150)

    console.print("[bold]Figure 2b[/] (Halide IR of the Sobel inner expression):")
    console.print(f"  {SOBEL_2B}")
    console.print("[bold]lifted to FPIR[/] (Figure 2c):")
    console.print(f"  {lift(parse(SOBEL_2B))}\n")

    rng = np.random.default_rng(7)
    image = rng.integers(0, 256, (args.height, args.width), dtype=np.uint8)
    ref = sobel3x3_reference(image)
    table = Table(title=f"Sobel {args.width}x{args.height}: steady-state vector loop, LLVM alone vs PITCHFORK")
    for col in ("ISA", "lanes", "bit-exact", "LLVM insts", "PITCHFORK insts", "difference", "HVX packets",
                "rules fired", "compile s llvm/pf"):
        table.add_column(col, justify="right" if col not in ("ISA", "bit-exact") else "left")
    ok_all = True
    for target in args.targets.split(","):
        lanes = LANES[target]
        counts, packets, secs, exact, fired = {}, {}, {}, True, 0
        for isel in ("llvm", "pitchfork"):
            out, params = sobel3x3(lanes)
            params[0].set(hl.Buffer(image))
            halide_out = np.asarray(out.realize([args.width, args.height], hl.Target("x86-64-linux-avx2"))).copy()
            t0 = time.perf_counter()
            prog = pitchfork.compile(out, params, target=target, isel=isel, name="sobel")
            secs[isel] = time.perf_counter() - t0
            result = prog(image)
            exact &= bool(np.array_equal(result, ref) and np.array_equal(result, halide_out))
            loop = main_vector_loop(prog.assembly(), "sobel", target=target)
            counts[isel] = len(loop.instructions)
            packets[isel] = len(loop.packets)
            if isel == "pitchfork":
                fired = sum(prog.stats.rules_fired.values())
        ok_all &= exact
        diff = counts["llvm"] - counts["pitchfork"]
        table.add_row(target, str(lanes), "yes" if exact else "[red]NO[/]", str(counts["llvm"]),
                      str(counts["pitchfork"]), f"{diff:+d} ({diff / max(counts['llvm'], 1):+.0%})",
                      f"{packets['llvm']} -> {packets['pitchfork']}" if target == "hvx128" else "-",
                      str(fired), f"{secs['llvm']:.1f} / {secs['pitchfork']:.1f}")
    console.print(table)
    console.print("difference = LLVM-alone instructions minus PITCHFORK instructions in the steady-state loop "
                  "(positive: PITCHFORK emits fewer).")
    return 0 if ok_all else 1


if __name__ == "__main__":
    sys.exit(main())
