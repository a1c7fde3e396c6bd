"""`pitchfork compile`: compile a Halide Python generator with PITCHFORK's instruction selection.

    pitchfork compile my_gen.py:Sobel --target arm64 -o out/            # out/sobel.{o,a,h,ll,s}
    pitchfork compile my_gen.py --target hvx128 --isel llvm -p lanes=64 -o out/
    pitchfork compile mypkg.gens:Blur --target x86-avx2 -p input.type=uint16 --name blur_u16 -o out/

The generator is named `FILE.py[:CLASS]` or `MODULE[:CLASS]`; CLASS is the Python class name or the
registered generator name and may be left out when the file defines one generator. `-p NAME=VALUE`
sets GeneratorParams (parsed as on Halide's generator command line). Writes `<name>.o` (ELF object),
`<name>.a` (static library) and `<name>.h`: a drop-in for Halide's ahead-of-time output, entry point
`int name(struct halide_buffer_t *in, ..., scalars, struct halide_buffer_t *out)` (see
pitchfork/aot/abi.py); `<name>.ll` (header-free LLVM IR of that object) and `<name>.s`; then prints the
statistics (rules fired, selection / LLVM / capture time). When PITCHFORK cannot compile the pipeline
it says why and writes Halide's own outputs instead (exit status 0; 3 with --no-fallback). Exit
status (docs/ERRORS.md): 2 bad usage, 4 a file that cannot be read or written (the generator, -o),
6 a generator that does not load or build, a bad GeneratorParam, or a pipeline Halide rejects
(`-p lanes=-4`, a GPU schedule) or that has extern stages.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path
from typing import Any

NAME = "compile"
HELP = "compile a Halide generator (file.py:Class) to an object file, LLVM IR and assembly"

TARGETS = ("x86-avx2", "arm64", "hvx128")


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("generator", help="FILE.py[:CLASS] or MODULE[:CLASS] (CLASS: class or generator name)")
    p.add_argument("--target", "-t", default="x86-avx2", choices=TARGETS, help="target ISA (default x86-avx2)")
    p.add_argument("--isel", choices=("pitchfork", "llvm"), default="pitchfork",
                   help="pitchfork: lift to FPIR + per-ISA rules; llvm: LLVM's own selection (baseline)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a GeneratorParam (repeatable), e.g. -p lanes=32 -p input.type=uint16")
    p.add_argument("-o", "--output-dir", default=".", metavar="DIR", help="where to write the files (default .)")
    p.add_argument("--name", help="function (and file) name (default: the registered generator name)")
    p.add_argument("--emit", default="o,a,h,ll,s", help="comma-separated outputs among o, a, h, ll, s (default all)")
    p.add_argument("--no-fallback", action="store_true",
                   help="fail (exit 3) instead of falling back to Halide's compiler")
    p.add_argument("--rules", action="store_true", help="list every rule fired with its count")


def _split_generator(spec: str) -> tuple[str, str | None]:
    # "C:\\x.py" style drive letters do not occur here; split on the last ':' after the file part
    if ":" in spec:
        path, cls = spec.rsplit(":", 1)
        return path, cls or None
    return spec, None


def _params(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        if "=" not in item:
            raise ValueError(f"-p expects NAME=VALUE, got {item!r}")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def run(args: argparse.Namespace) -> int:
    from pitchfork.errors import EXIT_UNSUPPORTED, InputFileError, UsageError
    from pitchfork.api import FALLBACK_ERRORS, PitchforkFallbackWarning
    from pitchfork.aot.abi import AbiError
    from pitchfork.aot.generator import compile_generator, write_outputs

    kinds = tuple(k.strip() for k in args.emit.split(",") if k.strip())
    bad = [k for k in kinds if k not in ("o", "a", "h", "ll", "s")]
    if bad or not kinds:
        raise UsageError(f"unknown --emit kinds {bad} (o, a, h, ll, s)")
    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputFileError(f"-o {out_dir}: not a directory")
    path, cls = _split_generator(args.generator)
    try:
        params = _params(args.param)
    except ValueError as e:
        raise UsageError(str(e)) from None
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PitchforkFallbackWarning)
        try:
            prog = compile_generator(path, cls, args.target, args.isel, params, name=args.name,
                                     fallback=not args.no_fallback)
        except FALLBACK_ERRORS as e:
            print(f"pitchfork compile: PITCHFORK cannot compile this pipeline: {type(e).__name__}: "
                  f"{' '.join(str(e).split())}", file=sys.stderr)
            return EXIT_UNSUPPORTED
    for w in caught:
        if issubclass(w.category, PitchforkFallbackWarning):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    try:
        paths = write_outputs(prog, out_dir, kinds)
    except AbiError as e:
        print(f"pitchfork compile: {' '.join(str(e).split())}", file=sys.stderr)
        return EXIT_UNSUPPORTED
    except OSError as e:
        where = e.filename or out_dir
        raise InputFileError(f"cannot write to {where}: {e.strerror or e}") from None
    _report(prog, paths, args)
    return 0


def _report(prog: Any, paths: dict, args: argparse.Namespace) -> None:
    from pitchfork.aot.generator import llc_command

    st = prog.stats
    how = "Halide's compiler (fallback)" if prog.is_fallback else f"PITCHFORK, isel={prog.isel}"
    print(f"{prog.name}: {args.target}, {how}")
    for p in paths.values():
        print(f"  wrote {p}")
    if prog.is_fallback:
        print(f"  fallback reason: {prog.fallback_reason}")
        return
    fired = st.rules_fired
    print(f"  rules fired: {sum(fired.values())} ({len(fired)} distinct) in {st.vector_expressions} vector "
          "expressions")
    if args.rules:
        for name, n in sorted(fired.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"    {n:5d}  {name}")
    print(f"  capture {st.capture_seconds:.3f} s, selection {st.selection_seconds:.3f} s, "
          f"codegen {st.codegen_seconds:.3f} s, LLVM {st.llvm_seconds:.3f} s")
    if "ll" in paths:
        print(f"  reproduce: {llc_command(args.target, str(paths['ll']), prog.module.llvm_ir())}")
