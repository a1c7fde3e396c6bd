"""Loading machine-made rules (rules/synthesized/), with the switches that turn them off.

`pitchfork-synth` writes `rules/synthesized/lift.rules` and `rules/synthesized/lower_<isa>.rules`,
one rule per line with its provenance as a trailing comment: `# from: sobel3x3,add; ...`. The
compiler loads them by default. Two switches, for ablations:

* `configure(enabled=False)` (the `--no-synthesized` CLI flag): hand-written rules only;
* leave-one-out (the harness's `--exclude-rules-from add`): drop every synthesized rule whose
  provenance names that benchmark, so a benchmark is not measured with rules learned from itself.
  Set by `pitchfork.trs.provenance.excluding_rules_from("add")` (a context), by
  `configure(exclude_from={"add"})`, or per call (`lift_rules(exclude_from="add")`,
  `load_target(isa, exclude_from="add")`); all three are honoured together.

`rules_config(...)` does the same for a `with` block. `load_rules(path, exclude_from=...)` is the
loader itself. The lifting and lowering rule sets are cached per setting, so switching is cheap.

A third switch, for the ISA bring-up (synth/bringup.py, issue 29 part (b)): *synthesized-only
lowering*. `set_lowering_only(DIR)` / `lowering_only_config(DIR)`, or for a whole process and its
children the environment variable PITCHFORK_LOWERING_ONLY=DIR, makes a target's lowering TRS the rules
of DIR/lower_<isa stem>.rules alone: neither the hand-written rules/lower/<isa>.rules nor the committed
rules/synthesized/lower_<isa>.rules are loaded (the generic expansion, rules/lower/generic.rules, is
not ISA lowering and stays). Lifting is unchanged, so a compile with it differs from the default one
in the lowering only. A target without that file in DIR is refused, never compiled with no rules.
"""

from __future__ import annotations

import os
import re
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable, Iterator, Optional

from pitchfork.trs.rules import Rule, parse_rules

SYNTH_DIR = Path(__file__).resolve().parents[2] / "rules" / "synthesized"
_FROM = re.compile(r"#.*?\bfrom:\s*([^;]*)")


@dataclass(frozen=True)
class SynthConfig:
    enabled: bool = True
    exclude_from: frozenset[str] = frozenset()


_CONFIG = SynthConfig()
#: where the synthesized rule files are read from (None: SYNTH_DIR); set by `set_directory`, or
#: for a whole process (and its children: the ablation harness measuring a synthesis run's output
#: folder) by the environment variable PITCHFORK_SYNTH_DIR
_DIRECTORY: Optional[Path] = Path(os.environ["PITCHFORK_SYNTH_DIR"]) if os.environ.get("PITCHFORK_SYNTH_DIR") else None


#: synthesized-only lowering: the folder whose lower_<isa stem>.rules are a target's whole lowering TRS
#: (None: the hand-written rules plus the synthesized ones, the default); see the module doc
_LOWERING_ONLY: Optional[Path] = (Path(os.environ["PITCHFORK_LOWERING_ONLY"])
                                  if os.environ.get("PITCHFORK_LOWERING_ONLY") else None)


def lowering_only() -> Optional[Path]:
    """The synthesized-only lowering folder in force, or None (hand-written lowering)."""
    return _LOWERING_ONLY


def set_lowering_only(path: Optional[str | Path]) -> Optional[Path]:
    """Lower with DIR/lower_<isa stem>.rules alone from now on (None: the hand-written lowering);
    returns the previous setting. Targets are loaded per setting (the setting is part of their cache
    key), so nothing needs dropping."""
    global _LOWERING_ONLY
    prev = _LOWERING_ONLY
    _LOWERING_ONLY = None if path is None else Path(path)
    return prev


@contextmanager
def lowering_only_config(path: Optional[str | Path]) -> Iterator[Optional[Path]]:
    """`set_lowering_only(path)` for a `with` block."""
    prev = set_lowering_only(path)
    try:
        yield _LOWERING_ONLY
    finally:
        set_lowering_only(prev)


def rules_directory() -> Path:
    """The folder the synthesized rule files (and withdrawn.txt) are loaded from."""
    return _DIRECTORY if _DIRECTORY is not None else SYNTH_DIR


def set_directory(path: Optional[str | Path]) -> Optional[Path]:
    """Load synthesized rules from `path` (None: rules/synthesized/) from now on; returns the previous
    setting. The cached rule sets are dropped (pitchfork-synth points each task at the rule set it
    was planned with, synth/rulesnap.py)."""
    global _DIRECTORY
    prev = _DIRECTORY
    _DIRECTORY = None if path is None else Path(path)
    if prev != _DIRECTORY:
        for clear in _ON_DIRECTORY_CHANGE:
            clear()
    return prev


#: what `set_directory` calls when the folder changes: the caches of the loaders above this module
#: (the lifting rule set, pitchfork/selection/greedy.py; the targets' rule sets, pitchfork/targets),
#: which register themselves, so this module imports neither of them
_ON_DIRECTORY_CHANGE: list[Callable[[], None]] = []


def on_directory_change(clear: Callable[[], None]) -> None:
    """Call `clear` (a cache's `cache_clear`) whenever `set_directory` changes the folder."""
    _ON_DIRECTORY_CHANGE.append(clear)


def current() -> SynthConfig:
    return _CONFIG


def configure(enabled: Optional[bool] = None, exclude_from: Optional[Iterable[str]] = None) -> SynthConfig:
    """Set the process-wide switches (unspecified ones keep their value); returns the previous setting."""
    global _CONFIG
    prev = _CONFIG
    _CONFIG = SynthConfig(
        prev.enabled if enabled is None else enabled,
        prev.exclude_from if exclude_from is None else frozenset(exclude_from),
    )
    return prev


@contextmanager
def rules_config(
    enabled: Optional[bool] = None, exclude_from: Optional[Iterable[str]] = None
) -> Iterator[SynthConfig]:
    prev = configure(enabled, exclude_from)
    try:
        yield _CONFIG
    finally:
        configure(prev.enabled, prev.exclude_from)


def effective(
    include_synthesized: Optional[bool] = None, exclude_from: Optional[str | Iterable[str]] = None
) -> tuple[bool, frozenset[str]]:
    """(load synthesized rules?, benchmarks whose rules to drop) for a loader call: explicit arguments,
    the process-wide setting and the provenance context (pitchfork/trs/provenance.py) combined."""
    from pitchfork.trs.provenance import excluded_benchmark

    inc = _CONFIG.enabled if include_synthesized is None else include_synthesized
    if not inc:
        return False, frozenset()
    excl = set(_CONFIG.exclude_from)
    if isinstance(exclude_from, str):
        excl.add(exclude_from)
    elif exclude_from is not None:
        excl |= set(exclude_from)
    ctx = excluded_benchmark()
    if ctx:
        excl.add(ctx)
    return True, frozenset(excl)


def provenance(line: str) -> tuple[str, ...]:
    """The benchmarks (or expression files) a rule line says it came from."""
    m = _FROM.search(line)
    if not m:
        return ()
    return tuple(s.strip() for s in m.group(1).split(",") if s.strip())


def withdrawn(directory: str | Path = "") -> dict[str, str]:
    """Rule name -> reason, from `<directory>/withdrawn.txt` (default rules/synthesized/): verified
    rules that the benchmark harness measured to make code slower. Synthesis finds them again (its
    cost model prefers them), so the writer skips them and the compiler does not load them."""
    p = Path(directory or rules_directory()) / "withdrawn.txt"
    out: dict[str, str] = {}
    if p.exists():
        for ln in p.read_text().splitlines():
            name, _, why = ln.partition("#")
            if name.strip():
                out[name.strip()] = why.strip()
    return out


def load_rules(path: str | Path, exclude_from: Iterable[str] = ()) -> list[Rule]:
    """The rules of a synthesized rule file, without those whose provenance names a benchmark in
    `exclude_from` and those withdrawn (`withdrawn`). Dropped lines are blanked (not removed) so
    errors keep their line numbers."""
    p = Path(path)
    if not p.exists():
        return []
    excluded = set(exclude_from)
    gone = withdrawn(p.parent)
    lines = p.read_text().splitlines()
    lines = ["" if (excluded & set(provenance(ln))) or ln.split(":", 1)[0].strip() in gone else ln
             for ln in lines]
    from pitchfork.trs.cache import parse_rules_cached

    return parse_rules_cached("\n".join(lines), str(p), parse_rules)


def synthesized_files(stem: str) -> list[Path]:
    """<rules_directory()>/<stem>.rules (stem: "lift" or "lower_<isa stem>") when it exists."""
    p = rules_directory() / f"{stem}.rules"
    return [p] if p.exists() else []


def synthesized_rules(stem: str, config: Optional[SynthConfig] = None) -> list[Rule]:
    cfg = config or _CONFIG
    if not cfg.enabled:
        return []
    return [r for p in synthesized_files(stem) for r in load_rules(p, cfg.exclude_from)]
