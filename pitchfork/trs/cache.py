"""On-disk cache of parsed rule files, so loading the rules takes milliseconds instead of a lark parse.

`parse_rules_cached(text, source, parse)` returns exactly what `parse(text, source)` returns (the
caller passes the parser, `pitchfork.trs.rules.parse_rules`: this module sits below the rule files'
module and knows nothing of their grammar): the first time from the parser (which then stores the
result), afterwards from a pickle of the parsed `Rule` objects. Rules are plain data (frozen dataclasses of raw syntax trees and patterns,
no interned terms), so a pickle round trip gives equal objects.

Invariants:

* The key is a SHA-256 of the rule text, its source name (errors and `Rule.location` carry it) and the
  parser's own version: a hash of the source of every module that decides what a parsed rule is
  (pitchfork/trs/*.py and fpir/*.py: grammar, op table, type rules) plus the Python version. Any change
  to a rule file or to the parser gives a new key; a stale entry is never read.
* Only successful parses are stored; a file with an error is parsed (and reported) every time.
* The cache lives outside the source tree: `$PITCHFORK_CACHE_DIR`, else `$XDG_CACHE_HOME/pitchfork`,
  else `~/.cache/pitchfork`. `PITCHFORK_CACHE_DIR=off` turns it off. An unreadable, truncated or corrupt
  entry is silently parsed again and rewritten; an unwritable directory only means no cache.
* Entries are written to a temporary file and renamed, so a concurrent reader sees a whole entry or none.

The entries are pickles read back by this process: like __pycache__, the directory must be writable by
its user only (it is created 0700).
"""

from __future__ import annotations

import gc
import hashlib
import os
import pickle
import sys
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import Callable, Optional, cast

from fpir.diskcache import cache_dir

#: the number of rule entries kept; older ones are removed when a new one is written
MAX_ENTRIES = 512
_FORMAT = b"pitchfork-rules-1\n"


_ROOT = Path(__file__).resolve().parents[2]


def sources_digest(globs: tuple[tuple[str, str], ...], extra: tuple[str, ...] = ()) -> str:
    """A SHA-256 of the Python version, `extra` (e.g. a library's version) and every file matching each
    (folder relative to the repository root, glob pattern) pair, by relative path and content: the key
    part that makes an on-disk entry stale when the code or data that produced it changes."""
    h = hashlib.sha256(repr(sys.version_info[:3]).encode())
    for part in extra:
        h.update(part.encode() + b"\0")
    for folder, pattern in globs:
        for p in sorted((_ROOT / folder).glob(pattern)):
            h.update(str(p.relative_to(_ROOT)).encode() + b"\0")
            h.update(p.read_bytes())
    return h.hexdigest()


@lru_cache(maxsize=1)
def parser_version() -> str:
    """A hash of the parser's own source: every module of pitchfork/trs and fpir, and the Python version."""
    return sources_digest((("pitchfork/trs", "*.py"), ("fpir", "*.py")))


def entry_path(text: str, source: str, kind: str = "rules") -> Optional[Path]:
    d = cache_dir()
    if d is None:
        return None
    h = hashlib.sha256(_FORMAT)
    for part in (parser_version(), source, text):
        h.update(part.encode("utf-8", "surrogatepass") + b"\0")
    return d / kind / f"{h.hexdigest()}.pickle"


def load_entry(path: Path) -> Optional[object]:
    """The object stored at `path`, or None if there is none or it cannot be read back whole."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    if not data.startswith(_FORMAT):
        return None
    # The cyclic collector is paused while unpickling: every object `loads` makes is reachable from
    # its result when it returns, so the collections its thousands of allocations would trigger (a cold
    # `pitchfork lift` unpickles ~6,000 rule objects) cannot free any of them; they would only re-walk
    # what exists already. Re-enabled on the way out only if it was on.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return pickle.loads(data[len(_FORMAT):])
    except Exception:  # noqa: BLE001 - any corrupt entry is just a miss
        return None
    finally:
        if collecting:
            gc.enable()


def store_entry(path: Path, value: object) -> None:
    """Write `value` at `path` atomically; any failure (read-only disk, no space) is ignored."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".pickle")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_FORMAT)
                pickle.dump(value, f, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(path.parent)
    except (OSError, pickle.PicklingError, RecursionError):
        return


def _prune(d: Path) -> None:
    entries = list(d.glob("*.pickle"))
    if len(entries) <= MAX_ENTRIES:
        return
    entries.sort(key=lambda p: p.stat().st_mtime)
    for p in entries[:len(entries) - MAX_ENTRIES]:
        try:
            p.unlink()
        except OSError:
            pass


def parse_rules_cached(text: str, source: str, parse: Callable[[str, str], list]) -> list:
    """`parse(text, source)` (pitchfork.trs.rules.parse_rules), through the disk cache."""
    return cast(list, cached(text, source, "rules", lambda: parse(text, source), lambda hit: isinstance(hit, list)))


def cached(text: str, source: str, kind: str, make: Callable[[], object],
           valid: Callable[[object], bool]) -> object:
    """`make()`, through the disk cache under `kind`: keyed by `text`, `source` and the parser's version
    (which includes the Python version, on which a marshalled code object's format depends); an entry
    `valid` refuses is made and stored again. Serves the parsed rule files (`parse_rules_cached`) and
    the generated matchers (pitchfork/trs/matchgen.py: a module's marshalled code and its constants)."""
    path = entry_path(text, source, kind=kind)
    if path is not None:
        hit = load_entry(path)
        if hit is not None and valid(hit):
            return hit
    value = make()
    if path is not None:
        store_entry(path, value)
    return value
