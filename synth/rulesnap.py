"""The rule set a synthesis task is planned against, shipped with the task and keyed into the cache.

A task's verdict depends on the rules the current TRS has (what it already makes of the left side,
the cost to beat). Those are the hand-written rule files and the synthesized ones, which a run
changes as it goes (the lift stage's new rules are in before the lowering stages are planned). A
`RuleSnapshot` holds the synthesized files' texts (rules/synthesized/ merged with the run's output
folder) and a digest of the hand-written files; `stage_digest(stage)` hashes what one stage's tasks
read (lifting: lift rules; lowering: lift rules and that ISA's lowering rules), and goes into the
task's cache key. A worker (local process, Dask worker, or this process) `activate`s the snapshot
before running a task: the texts are written once to a private folder named by the digest and the
compiler's synthesized-rule loader is pointed at it (pitchfork.selection.synthesized.set_directory), which
drops the rule sets it cached. So a long-lived worker that ran an earlier stage or an earlier run
gives the same answer as a fresh one, and a cached result is reused only for the same rules.

Invariant: two snapshots with equal `stage_digest(stage)` make `run_task` of that stage's tasks
return the same results (hand-written files are hashed, not shipped: a worker whose own copy differs
refuses the task with a clear reason instead of answering from other rules).
"""

from __future__ import annotations

import hashlib
import tempfile
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Optional

from synth.stages import ISA_STEMS

ROOT = Path(__file__).resolve().parent.parent
WITHDRAWN = "withdrawn.txt"


@dataclass(frozen=True)
class RuleSnapshot:
    #: (file name, text) of the synthesized rule files and withdrawn.txt, sorted by name
    files: tuple[tuple[str, str], ...]
    #: (rule file path relative to rules/, sha1 of its text) of every hand-written rule file
    hand: tuple[tuple[str, str], ...]
    #: names of the output folder's rules that the base folder has too (`take`): the run found a rule
    #: with the very text (so the name) of a committed one. A bring-up hides the committed rules by
    #: name (`Options.hide`); these are the run's own and stay in (`hidden`, synth/tasks.py `_without`)
    own: tuple[str, ...] = ()

    def text(self, name: str) -> str:
        return dict(self.files).get(name, "")

    @property
    def digest(self) -> str:
        return _sha(repr((self.files, self.hand)) + (repr(self.own) if self.own else ""))

    def stage_digest(self, stage: str) -> str:
        """What the tasks of `stage` ("lift" or "lower:<isa>") depend on."""
        names = ["lift.rules", WITHDRAWN]
        hand = [h for h in self.hand if h[0].startswith("lift/")]
        if stage.startswith("lower:"):
            stem = ISA_STEMS[stage.split(":", 1)[1]]
            names.append(f"lower_{stem}.rules")
            hand += [h for h in self.hand if h[0] in (f"lower/{stem}.rules", "lower/generic.rules")]
        return _sha(repr(([(n, self.text(n)) for n in names], hand)) + (repr(self.own) if self.own else ""))[:16]


def _sha(s: str) -> str:
    return hashlib.sha1(s.encode()).hexdigest()


def hand_digests(root: Path = ROOT) -> tuple[tuple[str, str], ...]:
    rules = root / "rules"
    out = []
    for sub in ("lift", "lower"):
        for p in sorted((rules / sub).glob("*.rules")):
            out.append((f"{sub}/{p.name}", _sha(p.read_text())))
    return tuple(out)


def _rule_name(line: str) -> str:
    if not line.strip() or line.lstrip().startswith("#") or ":" not in line:
        return ""
    return line.split(":", 1)[0].strip()


def take(out_dir: Path, base_dir: Optional[Path] = None) -> RuleSnapshot:
    """The synthesized rules a run works with: those of `base_dir` (default rules/synthesized/) and
    of its output folder `out_dir` (its rules added to the base's; the same folder counts once)."""
    from pitchfork.selection.synthesized import SYNTH_DIR

    base = Path(base_dir or SYNTH_DIR)
    dirs = [base] if Path(out_dir).resolve() == base.resolve() else [base, Path(out_dir)]
    names = sorted({p.name for d in dirs if d.is_dir() for p in d.iterdir()
                    if p.suffix == ".rules" or p.name == WITHDRAWN})
    files = []
    own: set[str] = set()
    for name in names:
        lines: list[str] = []
        seen: set[str] = set()
        for i, d in enumerate(dirs):
            p = d / name
            if not p.is_file():
                continue
            for ln in p.read_text().splitlines():
                key = _rule_name(ln) if name != WITHDRAWN else ln.split("#", 1)[0].strip()
                if key and key in seen:
                    if i > 0 and name != WITHDRAWN:
                        own.add(key)  # the same rule (its name hashes its text), kept once
                    continue
                if key:
                    seen.add(key)
                lines.append(ln)
        files.append((name, "\n".join(lines) + ("\n" if lines else "")))
    return RuleSnapshot(tuple(files), hand_digests(), tuple(sorted(own)))


_ROOT_DIR: Optional[Path] = None
_ACTIVE: Optional[str] = None
_OWN: frozenset[str] = frozenset()


def hidden(hide: Iterable[str]) -> frozenset[str]:
    """The rule names a hide list (`Options.hide`) takes out under the active snapshot: `hide` less
    its `RuleSnapshot.own`, the run's rules that equal a hidden committed rule (same text, same name)
    and stay in."""
    return frozenset(hide) - _OWN


def materialize(snap: RuleSnapshot) -> Path:
    """The snapshot's files in a private folder named by its digest (written once per process)."""
    global _ROOT_DIR
    if _ROOT_DIR is None:
        _ROOT_DIR = Path(tempfile.mkdtemp(prefix="pitchfork-synth-rules-"))
    d = _ROOT_DIR / snap.digest[:16]
    if not d.is_dir():
        tmp = _ROOT_DIR / f".{snap.digest[:16]}.partial"
        tmp.mkdir(parents=True, exist_ok=True)
        for name, text in snap.files:
            (tmp / name).write_text(text)
        tmp.rename(d)
    return d


class ForeignRules(Exception):
    """This process's hand-written rule files differ from the ones the task was planned with."""


def activate(snap: RuleSnapshot) -> None:
    """Make the compiler's rule loaders read this snapshot's synthesized rules (no-op when it is the
    active one already)."""
    global _ACTIVE, _OWN
    if _ACTIVE == snap.digest:
        return
    mine = hand_digests()
    if mine != snap.hand:
        differ = sorted({n for n, _ in set(mine) ^ set(snap.hand)})
        raise ForeignRules(f"hand-written rule files differ on this worker: {', '.join(differ[:4])}")
    from pitchfork.selection.synthesized import set_directory

    set_directory(materialize(snap))
    _ACTIVE, _OWN = snap.digest, frozenset(snap.own)


@contextmanager
def active(snap: RuleSnapshot) -> Iterator[RuleSnapshot]:
    """`activate` for a `with` block in this process; the previous loader folder is restored after."""
    global _ACTIVE, _OWN
    from pitchfork.selection.synthesized import _DIRECTORY, set_directory

    prev, prev_active, prev_own = _DIRECTORY, _ACTIVE, _OWN
    try:
        activate(snap)
        yield snap
    finally:
        set_directory(prev)
        _ACTIVE, _OWN = prev_active, prev_own
