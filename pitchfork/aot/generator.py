"""Halide Python generators (`@hl.generator` classes) compiled by PITCHFORK, unchanged.

    prog = compile_generator("my_gen.py", "Sobel", target="arm64", isel="pitchfork", params={"lanes": 16})
    paths = write_outputs(prog, "out/")        # out/sobel.{o,a,h,ll,s}: Halide's AOT ABI (abi.py)

How a generator is instantiated without `hl.main()` (halide==21.0.0, `halide/_generator_helpers.py`):
`@hl.generator(name=...)` registers a subclass of `hl.Generator` whose constructor reads the target
from the active `hl.GeneratorContext`; `generator_params={...}` sets GeneratorParams (values are parsed
like Halide's command line: `int("16")`, a type list for `input.type`, ...). `_build_pipeline()` then
runs `configure()`/`generate()` and returns the `hl.Pipeline`; after it, each Input attribute of the
instance is the `hl.ImageParam`/`hl.Param` that the pipeline reads, in declaration order
(`_arginfos_in`). Those are what `pitchfork.compile` takes, and the compiled function's calling
convention follows the generator's: inputs in declaration order, then outputs.

Loading a file: it is imported under a private module name derived from its path, once per file
content. Halide refuses to register a generator name twice, so a file registers its generators into a
fresh registry that then updates Halide's (an edited file, or two files defining the same name, load;
the last one loaded wins, as in Halide's interactive mode).

Header-free LLVM IR (`pitchfork.aot.abi.header_free_ir`): the optimised module PITCHFORK compiled, reduced to what
`llc` needs to reproduce the assembly: the target triple and data layout, the pipeline function and
the declarations of the intrinsics it calls. Dropped: the module id and source file name, attribute
groups (`attributes #0 = {...}` and their `#0` uses: `nounwind`, inferred memory effects), metadata
(`!llvm.loop` hints that only the optimiser reads) and the `; Function Attrs` comments. Unlike
Halide's own `.ll`, there is no runtime, no `halide_buffer_t` wrapper and no filter metadata.
Compiling it with `llc -O3 -mtriple=<triple> -mcpu=<cpu> -mattr=<features>` (LLVM 22, the version
llvmlite embeds) gives the instructions of the `.s` file.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pitchfork.errors import EXIT_FILE, InputFileError, PipelineError

if TYPE_CHECKING:
    from pitchfork.api import CompiledPipeline


class GeneratorError(PipelineError):
    """The generator file, class or parameters are not usable (ambiguous, bad value, fails to load)."""


class GeneratorFileError(GeneratorError, InputFileError):
    """The generator file cannot be read: missing, a directory, not a .py file (exit code EXIT_FILE)."""

    exit_code = EXIT_FILE


@dataclass(frozen=True)
class GeneratorPipeline:
    """A generator instantiated for one target: its pipeline, the arguments `pitchfork.compile` takes
    (ImageParams and Params in declaration order) and the registered generator name."""

    name: str
    pipeline: Any  # hl.Pipeline
    arguments: list[Any]  # hl.ImageParam | hl.Param
    outputs: list[str]
    generator: Any  # the hl.Generator instance


# --------------------------------------------------------------------------------------------------
# Loading

_loaded: dict[str, tuple[str, ModuleType, list[str]]] = {}  # path -> (content hash, module, names registered)


def _registry() -> dict[str, Any]:
    from halide import _generator_helpers

    return _generator_helpers._python_generators  # the registry @hl.generator writes to


def load_module(path_or_module: str | Path | ModuleType) -> ModuleType:
    """The module holding the generators: a module object, a `.py` file path or an importable name."""
    if isinstance(path_or_module, ModuleType):
        return path_or_module
    p = Path(path_or_module)
    if p.suffix == ".py" or p.exists():
        return _load_file(p)
    try:
        return importlib.import_module(str(path_or_module))
    except ImportError as e:
        raise GeneratorError(f"no generator file or module {str(path_or_module)!r}: {e}") from e


def _load_file(path: Path) -> ModuleType:
    import halide  # noqa: F401 - the generator file imports it; fail here with a clear error if missing

    if not path.exists():
        raise GeneratorFileError(f"generator file {str(path)!r} does not exist")
    if not path.is_file():
        raise GeneratorFileError(f"generator file {str(path)!r} is not a file")
    if path.suffix != ".py":
        raise GeneratorFileError(f"generator file {str(path)!r} is not a Python file (.py)")
    key = str(path.resolve())
    try:
        source = path.read_bytes()
    except OSError as e:
        raise GeneratorFileError(f"generator file {str(path)!r}: {e.strerror or e}") from None
    digest = hashlib.sha1(source).hexdigest()
    hit = _loaded.get(key)
    if hit is not None and hit[0] == digest:
        return hit[1]
    mod_name = "pitchfork_generator_" + hashlib.sha1(key.encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Run the bytes just hashed, not spec.loader.exec_module: the loader trusts a __pycache__ entry whose
    # recorded mtime (whole seconds) and size match, so an edit of the same length within the same second
    # (a generator edited and rebuilt by a script) would run the old code. This also writes no .pyc into
    # the user's folder.
    try:
        code = compile(source, str(path), "exec")
    except SyntaxError as e:
        raise GeneratorError(f"loading {path}:{e.lineno}:{e.offset or 0}: SyntaxError: {e.msg}") from None
    # Halide refuses to register a generator name twice (outside interactive mode). A file loaded
    # again after an edit, or two files defining the same name, must still load: the file registers
    # into a fresh registry, whose entries then replace the global ones (the last file loaded wins).
    from halide import _generator_helpers as helpers

    real = helpers._python_generators
    fresh: dict[str, Any] = {}
    helpers._python_generators = fresh
    sys.modules[mod_name] = module
    try:
        exec(code, module.__dict__)
    except Exception as e:
        sys.modules.pop(mod_name, None)
        raise GeneratorError(f"loading {path}{_user_frame(e)}: {type(e).__name__}: {str(e).strip()}") from e
    finally:
        helpers._python_generators = real
    real.update(fresh)
    _loaded[key] = (digest, module, sorted(fresh))
    return module


def generators_in(module: ModuleType) -> dict[str, type]:
    """The generator classes a module defines, by Python class name and by registered name."""
    import halide as hl

    found: dict[str, type] = {}
    for attr, value in vars(module).items():
        if inspect.isclass(value) and issubclass(value, hl.Generator) and hasattr(value, "_halide_registered_name"):
            if not _defined_in(value, module):
                continue  # imported from elsewhere
            found[attr] = value
            found.setdefault(value._halide_registered_name, value)
    for name, cls in _registry().items():  # @hl.alias names, registered but not module attributes
        if inspect.isclass(cls) and _defined_in(cls, module):
            found.setdefault(name, cls)
    return found


def _where(module: ModuleType) -> str:
    """How to name a module to the user: its file for a loaded file (not the private module name)."""
    f = getattr(module, "__file__", None)
    return str(f) if f and module.__name__.startswith("pitchfork_generator_") else module.__name__


def _defined_in(cls: type, module: ModuleType) -> bool:
    # @hl.generator returns a subclass created in halide._generator_helpers; the user's class is a base.
    return any(b.__module__ == module.__name__ for b in cls.__mro__)


def find_generator(path_or_module: str | Path | ModuleType, class_name: str | None = None) -> type:
    """The generator class called `class_name` (Python class name or registered generator name) in
    a file or module; without a name, the module's only generator."""
    module = load_module(path_or_module)
    gens = generators_in(module)
    if class_name is None:
        distinct = {id(c): c for c in gens.values()}
        if len(distinct) != 1:
            names = sorted(gens) or ["none"]
            raise GeneratorError(f"{_where(module)} defines {len(distinct)} generators ({', '.join(names)}); "
                                 "name one (file.py:ClassName)")
        return next(iter(distinct.values()))
    if class_name in gens:
        return gens[class_name]
    registry = _registry()
    if class_name in registry:
        return registry[class_name]
    known = ", ".join(sorted(gens)) or "none"
    raise GeneratorError(f"no generator {class_name!r} in {_where(module)} "
                         f"(it defines: {known})")


# --------------------------------------------------------------------------------------------------
# Instantiating


def _param_value(cls: type, name: str, value: Any) -> Any:
    """Command-line strings for bool GeneratorParams: Halide's Python parser would read "false" as
    True (`bool("false")`), so parse them like Halide's C++ generators do."""
    import halide as hl

    gp = getattr(cls, name, None)
    if isinstance(gp, hl.GeneratorParam) and isinstance(gp._value, bool) and isinstance(value, str):
        low = value.strip().lower()
        if low in ("true", "1", "yes", "on"):
            return True
        if low in ("false", "0", "no", "off"):
            return False
        raise GeneratorError(f"GeneratorParam {name} is a bool; cannot parse {value!r}")
    return value


def instantiate(cls: type, target: str = "x86-avx2", params: Mapping[str, Any] | None = None) -> GeneratorPipeline:
    """Run a generator class for `target` (a short name or a Halide target string, see
    pitchfork/targets/target_strings.py) with GeneratorParams `params`; return its pipeline and arguments."""
    import halide as hl

    from pitchfork.targets.target_strings import parse_target

    values = {k: _param_value(cls, k, v) for k, v in (params or {}).items()}
    t = hl.Target(parse_target(target).halide)
    gen_name: str = getattr(cls, "_halide_registered_name", cls.__name__)
    try:
        with hl.GeneratorContext(t):
            gen = cls(generator_params=values)  # parses the GeneratorParams
    except hl.HalideError as e:
        raise GeneratorError(f"generator {gen_name}: {str(e).strip()}") from e
    except (TypeError, ValueError) as e:  # int("many") for an int GeneratorParam, ...
        raise GeneratorError(f"generator {gen_name}: bad GeneratorParam value: {e}") from e
    try:
        pipeline = gen._build_pipeline()  # configure() + generate(); unknown GeneratorParams fail here
    except hl.HalideError as e:
        raise GeneratorError(f"generator {gen_name}: {str(e).strip()}") from e
    except Exception as e:  # noqa: BLE001 - the user's generate() raised: say where, in their file
        raise GeneratorError(f"generator {gen_name}{_user_frame(e)}: {type(e).__name__}: {str(e).strip()}") from e
    inputs = [a.name for a in gen._arginfos_in]
    outputs = [a.name for a in gen._arginfos_out]
    return GeneratorPipeline(gen_name, pipeline, [getattr(gen, n) for n in inputs], outputs, gen)


def _user_frame(e: BaseException) -> str:
    """` (file.py:line)` of the innermost traceback frame outside Halide's and PITCHFORK's code."""
    import traceback

    ours = (str(Path(__file__).resolve().parent.parent), "/halide/")
    frames = [f for f in traceback.extract_tb(e.__traceback__) if not any(o in f.filename for o in ours)]
    return f" ({frames[-1].filename}:{frames[-1].lineno})" if frames else ""


def compile_generator(path_or_module: str | Path | ModuleType | type, class_name: str | None = None,
                      target: str = "x86-avx2", isel: str = "pitchfork", params: Mapping[str, Any] | None = None,
                      *, name: str | None = None, fallback: bool = True, passes: Sequence[str] | None = None,
                      disable_passes: Sequence[str] = ()) -> CompiledPipeline:
    """Compile a Halide generator with PITCHFORK.

    `path_or_module`: a `.py` file, a module (object or importable name), or the generator class
    itself. `class_name`: its Python class name or registered generator name (optional when the
    module defines one generator). `params`: GeneratorParams by name (strings are parsed as on
    Halide's command line, e.g. `{"lanes": "32", "input.type": "uint16"}`). The function is named
    `name` (default: the registered generator name) and takes the generator's inputs in declaration
    order. Falls back to Halide's compiler with a PitchforkFallbackWarning like `pitchfork.compile`.
    """
    from pitchfork.api import compile as compile_pipeline

    if isinstance(path_or_module, type):
        cls = path_or_module
    else:
        cls = find_generator(path_or_module, class_name)
    gp = instantiate(cls, target, params)
    fn = name or gp.name
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", fn):
        raise GeneratorError(f"function name {fn!r} is not a C identifier (pass name=...)")
    return compile_pipeline(gp.pipeline, gp.arguments, target=target, isel=isel, name=fn, fallback=fallback,
                            passes=passes, disable_passes=disable_passes)


# --------------------------------------------------------------------------------------------------
# Output files

def llc_command(target: Any, ll: str = "<name>.ll", ir_text: str = "") -> str:
    """The llc invocation that compiles a header-free `.ll` for `target` like PITCHFORK did (`ir_text`,
    the `.ll`'s text, adds the flags that module was emitted with, e.g. hvx128's unpacketised i64 code)."""
    from pitchfork.backend.machine import emission_flags, get_target, scheduler_options

    t = get_target(target)
    reloc = "pic" if t.reloc == "pic" else "static"
    extra = "".join(f" {f}" for f in (*emission_flags(t, ir_text), *scheduler_options(t, ir_text)))
    return (f"llc -O3 -mtriple={t.triple} -mcpu={t.cpu} -mattr={t.features} -relocation-model={reloc}{extra} "
            f"{ll}")


def header_free_outputs(prog: CompiledPipeline) -> tuple[str, str, bytes]:
    """(`.ll` text, `.s` text, `.o` bytes) of a PITCHFORK-compiled pipeline, all three from the
    header-free IR: it is parsed back and compiled without further optimisation, as `llc -O3` does.
    (`prog.assembly()` is itself emitted from the parsed optimised text, see machine._compile: LLVM's
    backend breaks ties by use-list order, which textual IR does not keep.)"""
    from pitchfork.aot.abi import header_free_ir
    from pitchfork.backend.machine import _parse, _set_align_vectors, _shared_machine, emission_options

    assert prog.module is not None
    text = header_free_ir(prog.module.llvm_ir())
    t = prog.module.target  # the machine it was compiled for (target features: pitchfork/targets/target_strings.py)
    mod = _parse(text, t)
    mod.verify()
    if t.name == "hvx128":
        _set_align_vectors(prog.module.align_vectors)
    tm = _shared_machine(t, prog.module.opt)
    with emission_options(t, text):  # hvx128: i64-vector modules unpacketised, as compile_module does
        asm = tm.emit_assembly(mod)
        obj = tm.emit_object(_parse(text, t))
    return text, asm, obj


OUTPUT_KINDS = ("o", "a", "h", "ll", "s")


def write_outputs(prog: CompiledPipeline, out_dir: str | Path,
                  kinds: tuple[str, ...] = OUTPUT_KINDS, base: str | None = None) -> dict[str, Path]:
    """Write `<name>.o` (ELF object), `<name>.a` (static library holding it), `<name>.h` (the C
    header Halide's AOT output has), `<name>.ll` and `<name>.s` to `out_dir`; returns the paths by
    kind. For a PITCHFORK compile the object holds the kernel and Halide's calling convention
    (`int name(struct halide_buffer_t *...)`, pitchfork/aot/abi.py), and `.ll`/`.s` are that
    module, header-free; for a Halide fallback all five are Halide's own. `base` names the files
    (`<base>.o`, ...: Halide's -n FILE_BASE_NAME) instead of the function name."""
    from pitchfork.aot.abi import write_library

    for kind in kinds:
        if kind not in OUTPUT_KINDS:
            raise ValueError(f"unknown output kind {kind!r} ({', '.join(OUTPUT_KINDS)})")
    with tempfile.TemporaryDirectory() as tmp:
        every = write_library(prog, tmp)
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        paths = {}
        for kind in kinds:
            paths[kind] = d / (every[kind].name if base is None else f"{base}.{kind}")
            shutil.copyfile(every[kind], paths[kind])
    return paths
