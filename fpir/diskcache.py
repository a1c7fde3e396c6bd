"""Where PITCHFORK keeps what it derives from its own sources (parsed rule files, parser tables), and a
lark parser built through that cache.

The directory is outside the source tree: `$PITCHFORK_CACHE_DIR`, else `$XDG_CACHE_HOME/pitchfork`, else
`~/.cache/pitchfork`; `PITCHFORK_CACHE_DIR=off` turns caching off. Everything stored there is keyed by a
hash of what it was derived from, so a stale entry is never used, and a missing, unreadable or corrupt
entry is rebuilt: the cache changes how fast things load, never what they are.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

ENV = "PITCHFORK_CACHE_DIR"


def cache_dir() -> Optional[Path]:
    """The cache directory (not created here), or None when caching is off."""
    env = os.environ.get(ENV)
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg else Path.home() / ".cache"
    return base / "pitchfork"


def lark_parser(grammar: str, name: str, **options: Any) -> Any:
    """`lark.Lark(grammar, **options)` with its grammar analysis cached on disk (LALR only). Lark stores a
    hash of the grammar and options in the file and rebuilds (and rewrites) on a mismatch or a bad file."""
    from lark import Lark

    d = cache_dir()
    if d is not None and options.get("parser") == "lalr":
        try:
            (d / "lark").mkdir(parents=True, exist_ok=True, mode=0o700)
            return Lark(grammar, cache=str(d / "lark" / f"{name}.pickle"), **options)
        except OSError:
            pass
    return Lark(grammar, **options)
