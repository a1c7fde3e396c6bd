"""Write the LLVM IR `pitchfork.compile` produces for every SPEC benchmark x ISA x isel x parameter set.

    python scripts/dump_bench_ir.py OUT_DIR [--bench NAME ...] [--isa ISA ...] [--isel pitchfork|llvm ...]
                                    [--pset N ...]

Per compile `OUT_DIR/<bench>.<isa>.<isel>.p<pset>`: `.ll` (the optimised IR), `.src.ll` (codegen's IR, before
O3), `.s` (the assembly), `.o.sha1` (the object file's hash), or `.err` holding the one-line error.
Run it once on an old commit and once on a new one, then `diff -r OLD NEW`: a change that must not change
outputs (a faster selector, a rule cache) leaves every file identical. Never writes into the source tree
unless told to.
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from benchmarks.common import ISAS
    from benchmarks.registry import NAMES, get

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--bench", action="append", choices=NAMES)
    p.add_argument("--isa", action="append", choices=ISAS)
    p.add_argument("--isel", action="append", choices=("pitchfork", "llvm"))
    p.add_argument("--pset", action="append", type=int, help="only these parameter sets (index; default all)")
    args = p.parse_args(argv)
    import pitchfork

    args.out.mkdir(parents=True, exist_ok=True)
    for name in args.bench or NAMES:
        bench = get(name)
        for isa in args.isa or ISAS:
            for isel in args.isel or ("pitchfork", "llvm"):
                for pi, pset in enumerate(bench.param_sets):
                    if args.pset is not None and pi not in args.pset:
                        continue
                    stem = args.out / f"{name}.{isa}.{isel}.p{pi}"
                    t0 = time.perf_counter()
                    try:
                        out, fargs = bench.build(isa, pset)
                        prog = pitchfork.compile(out, fargs, target=isa, isel=isel, name=f"{name}_{isel}",
                                                 fallback=False)
                        stem.parent.joinpath(stem.name + ".ll").write_text(prog.llvm_ir())
                        assert prog.module is not None
                        stem.parent.joinpath(stem.name + ".src.ll").write_text(prog.module.source_ir)
                        stem.parent.joinpath(stem.name + ".s").write_text(prog.assembly())
                        digest = hashlib.sha1(prog.module.object_bytes()).hexdigest()
                        stem.parent.joinpath(stem.name + ".o.sha1").write_text(digest + "\n")
                        status = "ok"
                    except Exception as e:  # noqa: BLE001 - recorded, compared like the IR
                        stem.parent.joinpath(stem.name + ".err").write_text(f"{type(e).__name__}: {e}\n")
                        status = "error"
                    print(f"{stem.name} {status} {time.perf_counter() - t0:.2f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
