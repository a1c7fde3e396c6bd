"""Target strings: Halide's (`x86-64-linux-avx2-fma`, `arm-64-linux-arm_dot_prod`,
`hexagon-32-noos-hvx-hvx_128-hvx_v66`, `host`) and PITCHFORK's short names, parsed into a `TargetSpec`.

A `TargetSpec` names the ISA PITCHFORK generates code for (`isa`: "x86-avx2", "arm64" or "hvx128",
the name every per-ISA table, rule file and codegen switch uses), the Halide target string the
pipeline is lowered with (`halide`), and what the target's features change:

* `unavailable`: target instructions the features do not provide. Lowering rules whose right side
  uses one are not loaded (pitchfork/targets/__init__.py `load_target`): without `arm_dot_prod` no
  rule produces udot/sdot; below `hvx_v62` / `hvx_v65`, none produces the instructions the tables
  mark v62 / v65 (INSTRUCTION_FEATURES);
* `llvm_cpu` / `llvm_features`: the LLVM target machine (no `+dotprod` without arm_dot_prod, so LLVM
  does not form udot either; `hexagonv60` (no version feature, Halide's default), `hexagonv62`,
  `hexagonv65`, `hexagonv66` from the HVX version; hvx_v68 compiles as v66, the newest version the
  tables use (v68 runs it); x86 `+fma,+f16c`: avx2 implies both, as in Halide's complete_x86_target). Below v66 an intrinsic the tables do not mark may still be one LLVM cannot
  select for the version: `pitchfork.compile` compiles such modules in a forked child, so that is a
  fallback naming it.

Parsing is Halide's: the string goes through `hl.Target` (so `host` is this machine), and a string
Halide does not understand is refused naming the token it does not know, in one line. Halide
features PITCHFORK does not honour are refused by name (avx512 on x86, sve, a GPU API, user_context,
...), never silently dropped; x86 without avx2 is refused (only AVX2 is supported). `host` keeps
only the host features PITCHFORK honours (the AVX-512 ones are dropped: `host` means "this machine, as
far as PITCHFORK can target it").

Short names stay aliases: x86-avx2 (x86, avx2) = x86-64-linux-avx-avx2-fma-sse41, arm64 (arm, neon,
aarch64) = arm-64-linux-arm_dot_prod, hvx128 (hvx, hexagon) = hexagon-32-noos-hvx-hvx_128-hvx_v66.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pitchfork.errors import UsageError

#: the Halide target string each short name stands for
ALIAS_TARGETS: dict[str, str] = {
    "x86-avx2": "x86-64-linux-avx-avx2-fma-sse41",
    "arm64": "arm-64-linux-arm_dot_prod",
    "hvx128": "hexagon-32-noos-hvx-hvx_128-hvx_v66",
}

#: Halide features that only change the statement Halide lowers (which we compile as it is) or the
#: code around it that we reproduce: honoured on every ISA
NEUTRAL_FEATURES = frozenset({"no_asserts", "no_bounds_query", "no_runtime", "strict_float", "large_buffers"})
#: Halide features each ISA honours (beyond NEUTRAL_FEATURES)
ISA_FEATURES: dict[str, frozenset[str]] = {
    "x86-avx2": frozenset({"sse41", "avx", "avx2", "fma", "f16c"}),
    "arm64": frozenset({"arm_dot_prod", "arm_fp16", "armv8a", "armv81a", "armv82a", "armv83a", "armv84a",
                        "armv85a", "armv86a", "armv87a", "armv88a", "armv89a"}),
    "hvx128": frozenset({"hvx", "hvx_128", "hvx_v62", "hvx_v65", "hvx_v66", "hvx_v68"}),
}
#: target instructions (FPIR op names) and the Halide feature they need
INSTRUCTION_FEATURES: dict[str, str] = {
    "arm.udot": "arm_dot_prod",
    "arm.sdot": "arm_dot_prod",
    # vmpyh.acc (one type instance of hvx.vmpy_acc) and vaslh.acc (of hvx.vasl_acc) are v65+; the
    # gate is per op, so below v65 neither op is selected at any type
    "hvx.vmpy_acc": "hvx_v65",
    "hvx.vasl_acc": "hvx_v65",
    # vasrh.acc (the i16 instance of hvx.vasr_acc) is v65+
    "hvx.vasr_acc": "hvx_v65",
    # vasruhubsat / vasruhubrndsat (the u16 instances) are v65+
    "hvx.vasr_sat_ub": "hvx_v65",
    "hvx.vasr_rnd_sat_ub": "hvx_v65",
    # vaddubh.acc / vadduhw.acc / vaddhw.acc are v62+ (LLVM cannot select them for v60)
    "hvx.vadd_w_acc": "hvx_v62",
}
#: the newest HVX version the instruction tables are written for: a later one (v68) runs this code,
#: so LLVM is given this version for it (and qemu-hexagon 7.2 runs no v68 ELF)
TABLES_HVX_VERSION = 66
#: HVX version features, oldest first; a later one implies the earlier ones (as in Halide)
HVX_VERSIONS = ("hvx_v62", "hvx_v65", "hvx_v66", "hvx_v68")
#: host features `host` drops rather than refuses
_HOST_DROPPED_PREFIXES = ("avx512", "avxvnni", "avx10", "x86apx")


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """A parsed target: the ISA, the Halide target string (canonical, as `hl.Target.to_string()`
    prints it) and its features."""

    isa: str
    halide: str
    features: frozenset[str]

    @property
    def unavailable(self) -> frozenset[str]:
        """Target instructions (op names) the features do not provide."""
        return frozenset(op for op, feat in INSTRUCTION_FEATURES.items()
                         if op.split(".")[0] == _OP_PREFIX[self.isa] and not self.has(feat))

    def has(self, feature: str) -> bool:
        if feature in HVX_VERSIONS:
            at = HVX_VERSIONS.index(feature)
            return any(v in self.features for v in HVX_VERSIONS[at:])
        return feature in self.features

    @property
    def hvx_version(self) -> int:
        """60, 62, 65, 66 or 68 (hvx128 only)."""
        for v in reversed(HVX_VERSIONS):
            if v in self.features:
                return int(v[-2:])
        return 60

    @property
    def llvm_hvx_version(self) -> int:
        """The HVX version LLVM compiles for: the target's, at most the tables' (TABLES_HVX_VERSION)."""
        return min(self.hvx_version, TABLES_HVX_VERSION)

    @property
    def llvm_cpu(self) -> str:
        return {"x86-avx2": "haswell", "arm64": "cortex-a76"}.get(self.isa, f"hexagonv{self.llvm_hvx_version}")

    @property
    def llvm_features(self) -> str:
        if self.isa == "x86-avx2":
            # parse_target gives every avx2 target fma and f16c, as Halide's complete_x86_target does:
            # without +fma, LLVM would not fuse the a*b + c Halide's contract flags let it fuse, and
            # float results would differ from Halide's
            return "+avx2," + ",".join(("+" if f in self.features else "-") + f for f in ("fma", "f16c"))
        if self.isa == "arm64":
            return "+neon" + (",+dotprod" if self.has("arm_dot_prod") else "") + \
                (",+fullfp16" if self.has("arm_fp16") else "")
        return f"+hvxv{self.llvm_hvx_version},+hvx-length128b"

    @property
    def is_default(self) -> bool:
        """True when this is the short name's own target (the tables' and machine's defaults)."""
        return self.halide == ALIAS_TARGETS[self.isa]


_OP_PREFIX = {"x86-avx2": "x86", "arm64": "arm", "hvx128": "hvx"}


def has_feature(halide_target: str, feature: str) -> bool:
    """Whether a canonical Halide target string (`TargetSpec.halide`, `CapturedStmt.target`) names a plain
    feature such as strict_float, no_asserts or no_runtime (an HVX version implies the lower ones:
    `TargetSpec.has`)."""
    return feature in halide_target.split("-")


def parse_target(target: Any) -> TargetSpec:
    """A short name, a Halide target string (or `host`), an `hl.Target` or a TargetSpec, as a
    TargetSpec; raises UsageError (one line) for a string Halide does not understand or a feature
    PITCHFORK does not honour."""
    if isinstance(target, TargetSpec):
        return target
    if not isinstance(target, str):
        to_string = getattr(target, "to_string", None)
        if to_string is None:
            raise UsageError(f"a target must be a string or halide.Target, not {type(target).__name__}")
        target = to_string()
    return _parse(target.strip())


@lru_cache(maxsize=64)
def _parse(text: str) -> TargetSpec:
    import halide as hl

    from pitchfork.targets import ALIASES  # more short names: x86, avx2, arm, neon, aarch64, hvx, hexagon

    name = ALIASES.get(text, text)
    if name in ALIAS_TARGETS:
        return _parse(ALIAS_TARGETS[name])
    if not text:
        raise UsageError("empty target string")
    if not hl.Target.validate_target_string(text):
        raise UsageError(f"unknown target {text!r}: {_bad_token(text)}")
    t = hl.Target(text)
    tokens = t.to_string().split("-")
    arch, bits = str(t.arch).split(".")[-1].lower(), t.bits
    features = frozenset(tok for tok in tokens[3:] if not tok.startswith("tune_"))
    if text == "host":
        features = frozenset(f for f in features if not f.startswith(_HOST_DROPPED_PREFIXES))
    if arch == "x86" and bits == 64:
        isa = "x86-avx2"
        if "hvx" in features:
            raise UsageError(f"target {text!r}: Hexagon offload from an x86 host is not supported; compile for "
                             "the Hexagon core itself (hexagon-32-noos-hvx-hvx_128-hvx_v66 / hvx128)")
        if "avx2" not in features:
            raise UsageError(f"target {text!r}: x86 without avx2: PITCHFORK supports only AVX2 x86 code "
                             "(add -avx2, e.g. x86-64-linux-avx2-fma)")
        # what avx2 implies in Halide's complete_x86_target (CodeGen_X86.cpp): "All AVX2-enabled
        # architectures have F16C and FMA", so x86-64-linux-avx2 is compiled as Halide compiles it
        features |= {"sse41", "avx", "f16c", "fma"}
    elif arch == "arm" and bits == 64:
        isa = "arm64"
    elif arch == "hexagon" and bits == 32:
        isa = "hvx128"
        if "hvx_128" not in features and "hvx" not in features:
            raise UsageError(f"target {text!r}: PITCHFORK compiles Hexagon code for 128-byte HVX only "
                             "(add -hvx-hvx_128)")
        features |= {"hvx", "hvx_128"}
    else:
        raise UsageError(f"target {text!r}: PITCHFORK generates code for 64-bit x86 (AVX2), 64-bit ARM and "
                         "32-bit Hexagon HVX only")
    # Objects are ELF for Linux (x86-64, AArch64) or the bare-metal Hexagon core (backend/machine.py's
    # triples) and the default halide_malloc calls Linux's madvise: another OS would get a Linux object
    # that does not link or runs with the wrong ABI, so it is refused rather than silently ignored.
    os_name = str(t.os).split(".")[-1].lower()
    allowed_os = ("noos",) if isa == "hvx128" else ("linux",)
    if os_name not in allowed_os:
        raise UsageError(f"target {text!r}: operating system {os_name} not supported by PITCHFORK on {isa} "
                         f"(supported: {', '.join(allowed_os)})")
    honoured = ISA_FEATURES[isa] | NEUTRAL_FEATURES
    refused = sorted(features - honoured)
    if refused:
        raise UsageError(f"target {text!r}: feature{'s' if len(refused) > 1 else ''} {', '.join(refused)} "
                         f"not supported by PITCHFORK on {isa} (supported: {', '.join(sorted(honoured))})")
    out = hl.Target(text if text != "host" else "-".join([*tokens[:3], *sorted(features)]))
    return TargetSpec(isa, out.to_string(), features)


def _bad_token(text: str) -> str:
    """Which part of a target string Halide does not understand (for a one-line error)."""
    import halide as hl

    tokens = text.split("-")
    if len(tokens) < 3 or not hl.Target.validate_target_string("-".join(tokens[:3])):
        return "expected arch-bits-os[-feature...] (e.g. x86-64-linux-avx2, arm-64-linux-arm_dot_prod, " \
               "hexagon-32-noos-hvx-hvx_128-hvx_v66) or host, x86-avx2, arm64, hvx128"
    for tok in tokens[3:]:
        if not hl.Target.validate_target_string("-".join([*tokens[:3], tok])):
            return f"Halide has no target feature {tok!r}"
    return "Halide does not understand it"


def halide_target_string(target: Any) -> str:
    """The Halide target string for a short name, Halide string or TargetSpec."""
    return parse_target(target).halide


def machine_target(spec: TargetSpec) -> Any:
    """The `pitchfork.backend.machine.Target` code for `spec` is compiled for: the ISA's own for its short
    name's target, else the same with `spec`'s LLVM CPU and features."""
    import dataclasses

    from pitchfork.backend.machine import get_target

    base = get_target(spec.isa)
    if spec.is_default:
        return base
    return dataclasses.replace(base, cpu=spec.llvm_cpu, features=spec.llvm_features)
