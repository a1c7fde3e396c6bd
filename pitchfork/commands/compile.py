"""`pitchfork compile`: compile a Halide Python generator with PITCHFORK's instruction selection.

    pitchfork compile my_gen.py:Sobel --target arm64 -o out/            # out/sobel.{o,a,h,ll,s}
    pitchfork compile my_gen.py --target hvx128 --isel llvm -p lanes=64 -o out/
    pitchfork compile mypkg.gens:Blur --target x86-avx2 -p input.type=uint16 --name blur_u16 -o out/
    pitchfork compile my_gen.py --target hvx128 --print-passes               # the passes, in order
    pitchfork compile my_gen.py --target hvx128 --disable-pass stream_taps -o out/
    pitchfork compile gen.py -g blur -o out -e static_library,c_header -f blur_pf target=arm-64-linux-arm_dot_prod lanes=32

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

Halide's generator command line (what `hl.main()` takes) works too: `-g NAME` (the generator's
registered name), `-f FUNCTION_NAME`, `-n FILE_BASE_NAME`, `-o DIR`, `-r RUNTIME_NAME` (Halide's
standalone runtime for the target, with or without a generator), `-e` with Halide's output names
(static_library, c_header or h, object or o, assembly, llvm_assembly; without -e and with -g:
static_library and c_header, as Halide's default), and after the options `target=TARGET` and
`NAME=VALUE` GeneratorParams. `--target` / `target=` take short names (x86-avx2, arm64, hvx128) or
Halide target strings (`x86-64-linux-avx2-fma`, `arm-64-linux-arm_dot_prod`,
`hexagon-32-noos-hvx-hvx_128-hvx_v66`, `host`; pitchfork/targets/target_strings.py). Other Halide outputs
(stmt, bitcode, registration, ...) and several targets are refused in one line.

`--print-passes` prints the passes that would run for --target and --isel (pitchfork.passes.pipeline:
name, kind, what it does), minus any `--disable-pass NAME` (repeatable), and exits without loading the
generator; an unknown or required pass name is refused (exit 2) with the valid names.
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
#: this command takes the words argparse leaves (Halide's `target=...` and `NAME=VALUE`)
EXTRA_ARGS = True
#: Halide's `-e` output names -> ours
HALIDE_EMIT = {"static_library": "a", "c_header": "h", "h": "h", "object": "o", "o": "o", "assembly": "s",
               "llvm_assembly": "ll", "a": "a", "s": "s", "ll": "ll"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("generator", nargs="?",
                   help="FILE.py[:CLASS] or MODULE[:CLASS] (CLASS: class or generator name)")
    p.add_argument("--target", "-t", default=None,
                   help="x86-avx2 (default), arm64, hvx128 or a Halide target string (arm-64-linux-arm_dot_prod, host, ...)")
    p.add_argument("-g", dest="generator_name", metavar="GENERATOR_NAME",
                   help="the generator's registered name (Halide's -g; same as FILE.py:NAME)")
    p.add_argument("-r", dest="runtime_name", metavar="RUNTIME_NAME",
                   help="also (or only) write Halide's standalone runtime for the target, RUNTIME_NAME.a / .o "
                        "(Halide's -r; honours -e static_library / object)")
    p.add_argument("-n", dest="file_base", metavar="FILE_BASE_NAME", help="output file base name (default: the function name)")
    p.add_argument("--isel", choices=("pitchfork", "llvm"), default="pitchfork",
                   help="pitchfork: lift to FPIR + per-ISA rules; llvm: LLVM's own selection (baseline)")
    p.add_argument("-p", "--param", action="append", default=[], metavar="NAME=VALUE",
                   help="set a GeneratorParam (repeatable), e.g. -p lanes=32 -p input.type=uint16")
    p.add_argument("-o", "--output-dir", default=".", metavar="DIR", help="where to write the files (default .)")
    p.add_argument("--name", "-f", help="function (and file) name (default: the registered generator name)")
    p.add_argument("--emit", "-e", default=None,
                   help="comma-separated outputs among o, a, h, ll, s or Halide's names (static_library, c_header, "
                        "object, assembly, llvm_assembly); default all (with -g: static_library,c_header)")
    p.add_argument("--no-fallback", action="store_true",
                   help="fail (exit 3) instead of falling back to Halide's compiler")
    p.add_argument("--rules", action="store_true", help="list every rule fired with its count")
    p.add_argument("--print-passes", action="store_true",
                   help="print the passes for --target/--isel in order (name, kind, what it does) and exit")
    p.add_argument("--disable-pass", action="append", default=[], metavar="NAME",
                   help="do not run pass NAME (repeatable; --print-passes lists them)")


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


def _emit_kinds(emit: str | None, halide_style: bool) -> tuple[str, ...]:
    from pitchfork.errors import UsageError

    if emit is None:
        return ("a", "h") if halide_style else ("o", "a", "h", "ll", "s")
    words = [k.strip() for k in emit.split(",") if k.strip()]
    bad = [k for k in words if k not in HALIDE_EMIT]
    if bad or not words:
        raise UsageError(f"cannot emit {', '.join(bad) or 'nothing'}: choose among static_library, c_header, object, "
                         "assembly, llvm_assembly (or a, h, o, s, ll)")
    return tuple(dict.fromkeys(HALIDE_EMIT[k] for k in words))


def _write_runtime(name: str, halide_target: str, kinds: tuple[str, ...], out_dir: Path) -> None:
    """Halide's standalone runtime for `halide_target` as `<name>.a` and/or `<name>.o` (Halide's -r:
    only static_library and object are honoured; static_library when neither is asked for)."""
    import re

    import halide as hl

    from pitchfork.errors import InputFileError, UsageError

    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
        raise UsageError(f"-r {name!r}: not a C identifier")
    want = [k for k in kinds if k in ("a", "o")] or ["a"]
    types = {"a": hl.OutputFileType.static_library, "o": hl.OutputFileType.object}
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputFileError(f"cannot write to {out_dir}: {e.strerror or e}") from None
    hl.compile_standalone_runtime({types[k]: str(out_dir / f"{name}.{k}") for k in want}, hl.Target(halide_target))
    for k in want:
        print(f"{name}: Halide's runtime for {halide_target}: wrote {out_dir / f'{name}.{k}'}")


def _settings(args: argparse.Namespace) -> tuple[str, dict[str, str]]:
    """(target, GeneratorParams) from --target, -p and Halide's trailing `target=...` / `NAME=VALUE`."""
    from pitchfork.errors import UsageError

    try:
        params = _params(args.param)
    except ValueError as e:
        raise UsageError(str(e)) from None
    target = args.target
    for word in getattr(args, "extra", []):
        if word.startswith("-") or "=" not in word:
            raise UsageError(f"unrecognized argument {word!r} (Halide-style settings are NAME=VALUE)")
        k, v = (x.strip() for x in word.split("=", 1))
        if k == "target":
            if target is not None and target != v:
                raise UsageError(f"two targets: --target {target} and target={v}")
            target = v
        else:
            params[k] = v
    if target is not None and "," in target:
        raise UsageError(f"target={target}: one target at a time (Halide's multi-target libraries are not supported)")
    return target or "x86-avx2", params


def run(args: argparse.Namespace) -> int:
    from pitchfork.errors import EXIT_UNSUPPORTED, InputFileError, UsageError
    from pitchfork.api import FALLBACK_ERRORS, PitchforkFallbackWarning
    from pitchfork.aot.abi import AbiError
    from pitchfork.codegen.parallel import PitchforkSerialNote
    from pitchfork.aot.generator import compile_generator, write_outputs
    from pitchfork.passes.pipeline import format_passes, resolve
    from pitchfork.targets.target_strings import parse_target

    if args.generator is not None and "=" in args.generator and not Path(args.generator).exists():
        # `pitchfork compile -r rt -o out target=host`: the first KEY=VALUE word took the generator's place
        args.extra = [args.generator, *getattr(args, "extra", [])]
        args.generator = None
    kinds = _emit_kinds(args.emit, args.generator_name is not None or args.runtime_name is not None)
    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise InputFileError(f"-o {out_dir}: not a directory")
    if args.runtime_name is not None:
        target, _ = _settings(args)
        _write_runtime(args.runtime_name, parse_target(target).halide, kinds, out_dir)
        if args.generator is None:
            return 0
    if args.generator is None:
        raise UsageError("name a generator (FILE.py[:CLASS] or MODULE[:CLASS]) or a runtime (-r RUNTIME_NAME)")
    path, cls = _split_generator(args.generator)
    if args.generator_name is not None:
        if cls is not None and cls != args.generator_name:
            raise UsageError(f"two generator names: {args.generator} and -g {args.generator_name}")
        cls = args.generator_name
    target, params = _settings(args)
    args.target = target
    isa = parse_target(target).isa  # UsageError naming the bad token or feature, before the generator runs
    plist = resolve(isa, args.isel, None, args.disable_pass)  # UsageError on a bad pass name
    if args.print_passes:
        print(format_passes(plist))
        return 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", PitchforkFallbackWarning)
        warnings.simplefilter("always", PitchforkSerialNote)
        try:
            prog = compile_generator(path, cls, args.target, args.isel, params, name=args.name,
                                     fallback=not args.no_fallback, disable_passes=args.disable_pass)
        except FALLBACK_ERRORS as e:
            print(f"pitchfork compile: PITCHFORK cannot compile this pipeline: {type(e).__name__}: "
                  f"{' '.join(str(e).split())}", file=sys.stderr)
            return EXIT_UNSUPPORTED
    for w in caught:
        if issubclass(w.category, (PitchforkFallbackWarning, PitchforkSerialNote)):
            print(f"warning: {w.message}", file=sys.stderr)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)
    try:
        paths = write_outputs(prog, out_dir, kinds, base=args.file_base)
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
        print(f"  reproduce: {llc_command(prog.module.target, str(paths['ll']), prog.module.llvm_ir())}")
