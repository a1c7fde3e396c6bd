"""The passes `pitchfork.compile` runs, in order, for a target and an isel: the one place that says so.

As in Halide's Lower.cpp, the order is data. `PASSES` lists every pass once, in the order they run;
`passes_for(target, isel)` is the sub-list that applies; `pitchfork compile ... --print-passes` prints
it (`format_passes`). Three kinds, run in this order:

* "loop": a rewrite of the parsed loop nest (`pitchfork.frontend.ir.Stmt` -> `Stmt`), run by
  `pitchfork.api.compile` between parsing and code generation. With PITCHFORK_DEBUG=1 the statement is
  printed to stderr after each one (as Halide's HL_DEBUG_CODEGEN does).
* "codegen": a strategy LoopNestCodegen (pitchfork.codegen) uses while it emits LLVM IR, that is not
  instruction selection itself (aligned-block loads, accumulator order, reductions to one lane ...).
  Codegen asks `PassList.on(name)`.
* "backend": a step of pitchfork.backend.machine.compile_module around LLVM's O3: an LLVM option or a
  rewrite of the optimised IR. A `required` one works around a Hexagon backend abort ("Cannot select")
  or miscompile and cannot be disabled.

`resolve(target, isel, passes=None, disable=(), enable=())` is the list a compile runs: the applicable
passes (`passes`, if given, names the loop passes instead of the isel's), plus `enable` (a `shared`
codegen pass the isel does not run by default), minus `disable`. A name that is no pass is refused
with a UsageError listing the valid ones.

`shared` marks what is not instruction selection: every loop pass, and the codegen strategies that
only decide how data is moved (Halide does the same in its own lowering, e.g. AlignLoads). The
benchmark harness gives these to LLVM alone too, so its "selection only" column compares instruction
selection alone (benchmarks/harness/variants.py); `shared_passes(target)` lists them.

Invariant: the default list for a (target, isel) is exactly what compile() ran before the order was
data (the harness's static estimates are unchanged); each pass keeps the program's results bit-exact,
so disabling any optional pass changes only the code, never the values it computes. One default
depends on the compiling host (`Pass.host_default`): x86_float_gathers runs where LLVM's tuning for the
host CPU uses vgatherdps itself (codegen/float_gather_cpu.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Optional, Sequence

from pitchfork.errors import UsageError
from pitchfork.frontend import ir as H
from pitchfork.passes import dot_products, hvx_windows, stream_taps, strided_stores

Kind = Literal["loop", "codegen", "backend"]
TARGETS = ("x86-avx2", "arm64", "hvx128")
ISELS = ("pitchfork", "llvm")
BOTH = ISELS
PF = ("pitchfork",)


@dataclass(frozen=True)
class Pass:
    """One named pass. `doc`: what it does and what it keeps invariant, in one line. `targets`/`isels`:
    where it applies. `run`: a loop pass's function (statement, target) -> statement."""

    name: str
    kind: Kind
    doc: str
    targets: tuple[str, ...]
    isels: tuple[str, ...]
    run: Optional[Callable[[H.Stmt, str], H.Stmt]] = None
    required: bool = False
    #: not instruction selection, and correct for either isel (every loop pass is): `enable=` may
    #: turn it on for an isel that does not run it by default
    shared: bool = False
    #: if given, the pass is on by default only where this holds for the compiling host (a CPU-dependent
    #: strategy, asked once per process); `enable=` turns it on anyway, `disable=` off
    host_default: Optional[Callable[[], bool]] = None

    def __post_init__(self) -> None:
        if self.kind == "loop":
            object.__setattr__(self, "shared", True)

    def applies(self, target: str, isel: str) -> bool:
        return target in self.targets and isel in self.isels

    def on_by_default(self) -> bool:
        return self.host_default is None or self.host_default()


def _host_gathers_fast() -> bool:
    from pitchfork.codegen.float_gather_cpu import fast_float_gathers

    return fast_float_gathers()


PASSES: tuple[Pass, ...] = (
    # ---- loop passes (frontend statement -> statement), in order --------------------------------
    Pass("dot_products", "loop",
         "trees of widening products summed -> vector_reduce_add of interleaved operands, so dot-product "
         "instructions can be selected; same values (integer add is associative)",
         TARGETS, PF, lambda s, t: dot_products.rewrite_stmt(s, t)),
    Pass("hvx_windows", "loop",
         "narrow row loads interleaved across unrolled x steps -> one whole-register window per row, "
         "shared by the steps; same lanes read",
         ("hvx128",), PF, lambda s, t: hvx_windows.rewrite_stmt(s)),
    Pass("stream_taps", "loop",
         "16-bit add trees of one stream's taps regrouped into [1 2 1] windows (for vtmpy); same sums "
         "(wrapping add reassociated)",
         ("hvx128",), PF, lambda s, t: stream_taps.rewrite_stmt(s)),
    Pass("strided_stores", "loop",
         "consecutive strided stores that fill a dense range -> one dense store of their interleaving; "
         "same bytes written",
         ("hvx128",), PF, lambda s, t: strided_stores.rewrite_stmt(s)),
    # ---- codegen strategies (read by LoopNestCodegen) ---------------------------------------------
    Pass("hoist_allocations", "codegen",
         "loop-invariant allocations opening a loop body made once around the loop (no malloc/free per "
         "iteration); same program",
         ("arm64",), BOTH),
    # On arm64 and hvx128 the weights moved the register allocator's choices in hot loops both ways
    # (arm64 depthwise_conv p0 431 -> 434 instructions; hvx128 fully_connected 250 -> 258 packets in one
    # loop, matmul 179 -> 174 in another), unmeasured as a whole there: x86 only for now.
    Pass("branch_weights", "codegen",
         "Halide's very-likely weights on loop-entry tests and assertion branches; no effect on values",
         ("x86-avx2",), BOTH),
    Pass("widened_splats", "codegen",
         "a broadcast of a widened narrow scalar splatted narrow and widened in FPIR, so lifting sees the "
         "widening; same values",
         TARGETS, PF),
    Pass("lazy_leaves", "codegen",
         "each load leaf emitted where the selected code first uses it (fewer live vectors on x86); "
         "same values",
         ("x86-avx2",), BOTH),
    # Read where an x86 pack instruction is emitted (targets/x86.py); every emitter of a loop nest's
    # terms gets it (LoopNestCodegen.term_emitter). Expression kernels (codegen/kernel.py: `pitchfork
    # select`, the differential tests) are not compiled through this list and always have it on.
    Pass("x86_lane_order", "codegen",
         "operands of 32->16-bit packs computed in the pack's per-half lane order (no vpermq); same "
         "lanes after the pack",
         ("x86-avx2",), PF),
    Pass("hvx_aligned_loads", "codegen",
         "misaligned dense HVX loads as valign of aligned whole-register blocks shared across a row's "
         "taps; same lanes read",
         ("hvx128",), PF, shared=True),
    Pass("hvx_accumulate", "codegen",
         "an accumulation chain started from a summand nothing else reads (vmpyi_acc overwrites it); "
         "same sum",
         ("hvx128",), PF),
    Pass("hvx_pair_forms", "codegen",
         "saturating adds/subtracts over whole register pairs written as the .dv pair instruction; "
         "same lanes",
         ("hvx128",), PF),
    Pass("hvx_interleave", "codegen",
         "interleaves of whole-register operands as vshuff pairs instead of a generic shuffle; same "
         "lanes",
         ("hvx128",), PF),
    Pass("hvx_reduce", "codegen",
         "reductions to one lane computed on the pieces without restoring lane order; same result",
         ("hvx128",), PF),
    Pass("hvx_lut", "codegen",
         "gathers from byte tables of <= 256 entries as vlut32 table lookups; same bytes",
         ("hvx128",), BOTH),
    Pass("hvx_clamped_loads", "codegen",
         "dense loads through a clamped ramp (boundary conditions) as one dense load and two broadcasts "
         "instead of a lane-by-lane gather; same lanes",
         ("hvx128",), BOTH),
    Pass("x86_float_gathers", "codegen",
         "unmasked 8/16/32-lane gathers from float32 buffers as vgatherdps, 8 lanes each (off: the lanes "
         "read one by one, as Halide 21 does: it sets +prefer-no-gather, which CPUs with the GDS microcode "
         "mitigation want); on by default where LLVM's tuning for the host CPU uses vgatherdps itself "
         "(Intel Skylake and later; not Haswell or AMD Zen: codegen/float_gather_cpu.py); same bits",
         ("x86-avx2",), BOTH, shared=True, host_default=_host_gathers_fast),
    Pass("span_gathers", "codegen",
         "byte gathers with a lane-monotone index as table lookups (arm64 tbl, hvx vlut32) with the "
         "gather as fallback; same bytes",
         ("arm64", "hvx128"), BOTH),
    # ---- backend: around LLVM's O3 (pitchfork.backend.machine) ------------------------------------
    Pass("hvx_predicate_selects", "backend",
         "selects between two multi-register <N x i1> vectors (InstCombine's) as and/xor/or: LLVM 22 "
         "cannot select them; same lanes",
         ("hvx128",), BOTH, required=True),
    Pass("hvx_wide_predicate_exts", "backend",
         "zext/sext of multi-register <N x i1> done one register at a time (SelectQ2V asserts); same lanes",
         ("hvx128",), BOTH, required=True),
    Pass("hvx_wide_lane_predicate_truncs", "backend",
         "trunc <N x i16/i32> to <N x i1> as icmp ne (and x, 1), 0 (tests every byte otherwise); same lanes",
         ("hvx128",), BOTH, required=True),
    Pass("hvx_i128_mulh", "backend",
         "O3's <N x i128> high multiplies in 32x32->64-bit partial products (the backend's code ran "
         "wrong); same lanes",
         ("hvx128",), BOTH, required=True),
    Pass("hvx_i64_halves", "backend",
         "O3's 32x32->64-bit products (foldMulHigh) computed on 32-bit halves instead of scalarised; "
         "same lanes",
         ("hvx128",), PF),
    Pass("hvx_repeated_word_shuffles", "backend",
         "O3's 8/16/32-bit shuffles whose 32-bit words repeat split into groups of distinct words, combined "
         "with vor (LLVM 22 built them wrong: a splat of the wrong width); same lanes",
         ("hvx128",), BOTH, required=True),
    Pass("hvx_pairs", "backend",
         "register-pair forms kept only where the backend packs them into no more loop packets; same "
         "lanes",
         ("hvx128",), PF),
)

BY_NAME: dict[str, Pass] = {p.name: p for p in PASSES}


@dataclass(frozen=True)
class PassList:
    """The passes one compile runs (in `PASSES` order), for one target and isel."""

    target: str
    isel: str
    passes: tuple[Pass, ...]

    def on(self, name: str) -> bool:
        """Whether pass `name` runs (a name that is no pass at all is a bug: KeyError)."""
        if name not in BY_NAME:
            raise KeyError(f"no pass named {name!r}")
        return any(p.name == name for p in self.passes)

    def of_kind(self, kind: Kind) -> tuple[Pass, ...]:
        return tuple(p for p in self.passes if p.kind == kind)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.passes)


def passes_for(target: str, isel: str) -> tuple[Pass, ...]:
    """Every pass that applies to (target, isel), in run order (the default list)."""
    return tuple(p for p in PASSES if p.applies(target, isel) and p.on_by_default())


def default_passes(target: str, isel: str) -> PassList:
    return PassList(target, isel, passes_for(target, isel))


def resolve(target: str, isel: str, passes: Optional[list[str] | tuple[str, ...]] = None,
            disable: list[str] | tuple[str, ...] = (), enable: list[str] | tuple[str, ...] = ()) -> PassList:
    """The list a compile runs. `passes` names the *loop* passes to run instead of the isel's defaults
    (any isel: the benchmark harness gives LLVM alone the same loop passes, to measure instruction
    selection alone; names of loop passes for other targets are ignored); the codegen and backend
    passes are the isel's, plus `enable` (shared codegen passes run for this isel although it does not
    by default; loop-pass names belong in `passes`). `disable` removes names (a pass that does not run
    here is ignored). UsageError for a name that is no pass (listing this target's), a non-loop name in
    `passes`, a pass in `enable` that is not a shared codegen pass, or a required pass disabled."""
    mine = [p for p in PASSES if target in p.targets]

    def check(given: list[str] | tuple[str, ...]) -> None:
        for n in given:
            if n not in BY_NAME:
                raise UsageError(f"unknown pass {n!r}; the passes for {target} with isel={isel}: "
                                 f"{', '.join(p.name for p in passes_for(target, isel))}")

    check(list(disable))
    required = [n for n in disable if BY_NAME[n].required]
    if required:
        raise UsageError(f"pass {required[0]!r} cannot be disabled: {BY_NAME[required[0]].doc}")
    if passes is not None:
        check(list(passes))
        other = [n for n in passes if BY_NAME[n].kind != "loop"]
        if other:
            raise UsageError(f"passes= names loop passes ({', '.join(STATEMENT_PASSES)}); {other[0]!r} is a "
                             f"{BY_NAME[other[0]].kind} pass (use disable_passes= to turn it off)")
    check(list(enable))
    bad = [n for n in enable if BY_NAME[n].kind != "codegen" or not BY_NAME[n].shared]
    if bad:
        raise UsageError(f"pass {bad[0]!r} cannot be enabled for isel={isel}: only shared codegen passes "
                         f"({', '.join(p.name for p in PASSES if p.kind == 'codegen' and p.shared)}) can; "
                         "loop passes are chosen with passes=")
    chosen = [p for p in mine if (p.name in passes if passes is not None and p.kind == "loop"
                                  else isel in p.isels and p.on_by_default() or p.name in enable)]
    return PassList(target, isel, tuple(p for p in chosen if p.name not in set(disable)))


#: The loop passes: name -> (targets, isels that run it by default) (the benchmark harness's view).
STATEMENT_PASSES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    p.name: (p.targets, p.isels) for p in PASSES if p.kind == "loop"}


def shared_passes(target: str) -> list[str]:
    """Every pass of `target` that is not instruction selection (`Pass.shared`), loop passes first: what
    the benchmark harness runs on both sides of its "selection only" comparison."""
    return [p.name for p in PASSES if p.shared and target in p.targets and p.on_by_default()]


def statement_passes(target: str, isel: str, passes: Optional[Sequence[str]] = None,
                     disable_passes: Sequence[str] = ()) -> list[str]:
    """The names of the loop passes `compile` runs for these arguments, in order."""
    return [p.name for p in resolve(target, isel, None if passes is None else list(passes),
                                    list(disable_passes)).of_kind("loop")]


def format_passes(plist: PassList) -> str:
    """The pass list as `--print-passes` prints it: one line per pass, in order, with kind and doc."""
    lines = [f"passes for target {plist.target}, isel={plist.isel} (in order):"]
    width = max((len(p.name) for p in plist.passes), default=0)
    for i, p in enumerate(plist.passes, 1):
        req = " (required)" if p.required else ""
        lines.append(f"{i:3d}. {p.name:<{width}}  {p.kind:<7}  {p.doc}{req}")
    return "\n".join(lines)


def print_passes(target: str, isel: str = "pitchfork") -> None:
    """Print the default pass list for (target, isel) (the API twin of `--print-passes`)."""
    print(format_passes(default_passes(target, isel)))
