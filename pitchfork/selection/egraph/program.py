"""Running egglog program text cheaply: `run_text(eg, text)`.

`EGraph.parse_program(text)` turns egglog's parsed commands into Python objects, and `run_program`
turns them back; every command and expression carries a span holding the whole source text, so both
conversions copy the text once per span: quadratic in the text's length. The prelude (32 KB, ~300
commands) cost 270 ms of parsing against 80 ms for egglog to run it; a shape's batch of ~150 actions
a few milliseconds. egglog's own `(include "FILE")` parses a file on the Rust side, with no Python
objects in between: `run_text` writes the text to a file in a temporary folder private to this process
and runs one `include` of it (the folder is removed at exit). Where that is not possible (no writable
temporary folder, or its path would need quoting), it falls back to parse_program + run_program: the
same commands, run the same way.

Invariant: `run_text(eg, text)` returns what `eg.run_program(*eg.parse_program(text))` returns (the
outputs of the text's commands, in order); only the time differs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Optional

_LOCK = threading.Lock()
_FOLDER: list[Optional[str]] = []  # [] not tried yet; [None] unusable; [path]


def _folder() -> Optional[str]:
    with _LOCK:
        if not _FOLDER:
            try:
                d = tempfile.mkdtemp(prefix="pitchfork-egglog-")
            except OSError:
                d = None
            if d is not None and ('"' in d or "\\" in d):  # egglog's string syntax would need escapes
                shutil.rmtree(d, ignore_errors=True)
                d = None
            if d is not None:
                import atexit

                atexit.register(shutil.rmtree, d, True)
            _FOLDER.append(d)
        return _FOLDER[0]


def run_text(eg: Any, text: str, *after: Any) -> list:
    """Run egglog program `text` on `eg`, then the parsed commands `after` (one run_program call); the
    outputs of all of them, in order."""
    if not text:
        return eg.run_program(*after)
    d = _folder()
    if d is not None:
        # one file per thread (an EGraph is used only by the thread that made it)
        path = os.path.join(d, f"t{threading.get_ident()}.egg")
        try:
            Path(path).write_text(text, encoding="utf-8")
        except OSError:
            pass
        else:
            return eg.run_program(*eg.parse_program(f'(include "{path}")'), *after)
    return eg.run_program(*eg.parse_program(text), *after)
