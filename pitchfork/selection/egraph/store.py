"""On-disk store of the e-graph engine's per-shape results, keyed by content, for selection.

Selection (`Budget.persist`, set in engine.SELECTION_BUDGET) saturates each expression shape (the input
alpha-renamed, canon.py) once per process; this store keeps the outcome across processes, as the
greedy engine's rule cache (pitchfork/trs/cache.py) keeps parsed rule files: a pipeline compiled again,
or for another ISA (lifting is target-agnostic), finds its shapes' outcomes without building the
egglog program or saturating.

Invariants:

* The key is a SHA-256 of everything the outcome is a function of: the canonical input (`shape_text`:
  op, type, attributes and arguments of every node), the budget, whether results are checked, the
  lifting rule set (every rule's location and text), the ops the e-graph declares, the source of every
  module that decides the outcome (pitchfork/selection/*.py, pitchfork/selection/egraph/*.py,
  pitchfork/trs/*.py, fpir/*.py), the rule files of rules/egraph/, the egglog version and the Python
  version. A change to any of them gives a new key; a stale entry is never read.
* An entry is trusted only as far as a disk can be: a stored e-graph result must still be cheaper than
  greedy's, and it is proved equal to the input again (validate.py) before it is used (engine.prove:
  in selection only if selection keeps it); a failed proof drops the entry (`drop`) and the shape is
  saturated afresh. A stored "greedy" outcome only says "the e-graph found nothing cheaper": greedy's
  own result, computed in this process, is what is used.
* Only outcomes that do not depend on the machine are stored: not an egglog failure (it may be
  transient), not a run under a wall-clock budget (`Budget.seconds`).
* The egglog prelude (engine._prelude: the declarations and rules/egraph/ compiled to egglog text) is a
  rule cache kept here too, under `egraph-prelude/` (PRELUDE_KIND), keyed by `engine_version` and the
  declared ops: a text that is a pure function of those, so the shape store can be emptied without it.
* Location, format and robustness are pitchfork/trs/cache.py's: `$PITCHFORK_CACHE_DIR` (off turns it
  off), else `$XDG_CACHE_HOME/pitchfork`, else `~/.cache/pitchfork`, subdirectory `egraph/`; written
  atomically; an unreadable or corrupt entry is a miss. `ENABLED = False` turns the store off in this
  process (tests that patch the engine's internals do).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from fpir.term import Term
from pitchfork.trs.cache import load_entry, parser_version, sources_digest, store_entry
from pitchfork.trs.rules import RuleSet

#: this process uses the store (tests that monkeypatch the engine turn it off)
ENABLED = True
_KIND = "egraph"
#: EgraphResult fields an entry keeps (the rest are per expression, or the process's own objects)
FIELDS = ("term", "source", "note", "rounds", "nodes", "saturated", "fired", "greedy_fired", "lift_unions",
          "extracted", "greedy_term", "proof")


@lru_cache(maxsize=1)
def engine_version() -> str:
    """A hash of the sources and rule files the outcome of a saturation depends on (module docstring)."""
    egglog = _egglog_version()
    # pitchfork/trs and fpir through the rule cache's own digest of them (parser_version), which a
    # compile has computed already to load its rule files: those sources are read once per process
    return sources_digest((("pitchfork/selection", "*.py"), ("pitchfork/selection/egraph", "*.py"),
                           ("rules/egraph", "*.rules")), (egglog, parser_version()))


def _egglog_version() -> str:
    """The installed egglog's version: the name of its dist-info folder beside the package
    (`egglog-13.2.0.dist-info`), else importlib.metadata's answer (which scans every installed
    distribution: ~13 ms, a fifth of the e-graph engine's start-up)."""
    import importlib.util
    import os

    try:
        spec = importlib.util.find_spec("egglog")
        for folder in (spec.submodule_search_locations or []) if spec is not None else []:
            parent = os.path.dirname(os.path.abspath(folder))
            names = sorted(e.name for e in os.scandir(parent)
                           if e.name.startswith("egglog-") and e.name.endswith(".dist-info"))
            if len(names) == 1:
                return names[0][len("egglog-"):-len(".dist-info")]
    except (OSError, ImportError, ValueError):
        pass
    try:
        from importlib.metadata import version

        return version("egglog")
    except Exception:  # noqa: BLE001 - no metadata: the sources still key the entry
        return "egglog-unknown"


#: rule-set digests, per rule set object (kept alive beside its digest, so an id is never reused)
_DIGESTS: dict[int, tuple[RuleSet, str]] = {}


def rules_digest(rs: RuleSet) -> str:
    hit = _DIGESTS.get(id(rs))
    if hit is None or hit[0] is not rs:
        h = hashlib.sha256()
        for r in rs.rules:
            h.update(f"{r.location}\0{r.text()}\n".encode("utf-8", "surrogatepass"))
        hit = _DIGESTS[id(rs)] = (rs, h.hexdigest())
    return hit[1]


def entry_path(canon: Term, rs: RuleSet, budget: Any, check: bool, declared: frozenset[str]) -> Optional[Path]:
    """Where the outcome of saturating `canon` under these settings is stored (None: store off)."""
    from fpir.diskcache import cache_dir

    d = cache_dir()
    if not ENABLED or d is None:
        return None
    h = hashlib.sha256(b"pitchfork-egraph-shape-2\0")
    for part in (engine_version(), rules_digest(rs), repr(budget), repr(check), ",".join(sorted(declared))):
        h.update(part.encode() + b"\0")
    h.update(shape_text(canon).encode("utf-8", "surrogatepass"))
    return d / _KIND / f"{h.hexdigest()}.pickle"


#: the kind (subdirectory) of the compiled prelude: a rule cache (the rule files of rules/egraph/ compiled
#: to egglog text), not a shape outcome, so it is kept apart from the shape store
PRELUDE_KIND = "egraph-prelude"


def prelude_path(declared: frozenset[str]) -> Optional[Path]:
    """Where the egglog prelude text (engine._prelude) for these declared ops is stored (None: off).
    Keyed like a shape entry by `engine_version` (the sources that compile it and rules/egraph/) and the
    declared ops; the text is a pure function of those."""
    from fpir.diskcache import cache_dir

    d = cache_dir()
    if not ENABLED or d is None:
        return None
    h = hashlib.sha256(b"pitchfork-egraph-prelude-1\0")
    for part in (engine_version(), ",".join(sorted(declared))):
        h.update(part.encode() + b"\0")
    return d / PRELUDE_KIND / f"{h.hexdigest()}.pickle"


def load_text(path: Optional[Path]) -> Optional[str]:
    """The text stored at `path`, or None."""
    got = load_entry(path) if path is not None else None
    return got if isinstance(got, str) else None


def save_text(path: Optional[Path], text: str) -> None:
    if path is not None:
        store_entry(path, text)


def shape_text(term: Term) -> str:
    """A canonical text of `term`: one line per distinct node, children first (op, type, attributes,
    child line numbers). (A pickle is not canonical: its bytes depend on which equal objects, such
    as types, happen to be one object in this process.)"""
    index: dict[Term, int] = {}
    lines = []
    for t in term.walk():  # post-order over distinct nodes
        index[t] = len(index)
        lines.append(f"{t.op}|{t.type.name}|{t.attrs!r}|{','.join(str(index[a]) for a in t.args)}")
    return "\n".join(lines)


def load(path: Optional[Path]) -> Optional[dict]:
    """The stored fields at `path` (a dict of FIELDS), or None."""
    if path is None:
        return None
    got = load_entry(path)
    if not isinstance(got, dict) or set(got) != set(FIELDS) or not isinstance(got["term"], Term):
        return None
    return got


def save(path: Optional[Path], res: Any) -> None:
    """Store `res`'s FIELDS at `path` (errors ignored: the store only changes speed)."""
    if path is None:
        return
    fields = {f: getattr(res, f) for f in FIELDS}
    fields["fired"], fields["greedy_fired"] = dict(res.fired), dict(res.greedy_fired)
    store_entry(path, fields)


def drop(path: Optional[Path]) -> None:
    """Remove the entry at `path` (one that failed its proof), if there is one."""
    if path is None:
        return
    try:
        path.unlink(missing_ok=True)
    except OSError:  # the store only changes speed
        pass


def counters(fields: dict) -> dict:
    """`fields` with its counts as Counters (as EgraphResult keeps them)."""
    return {**fields, "fired": Counter(fields["fired"]), "greedy_fired": Counter(fields["greedy_fired"])}
