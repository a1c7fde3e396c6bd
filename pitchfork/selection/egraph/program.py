"""Running egglog program text cheaply: `run_text(eg, text)`.

`EGraph.parse_program(text)` turns egglog's parsed commands into Python objects, and `run_program`
turns them back; every command and expression carries a span holding the whole source text, so both
conversions copy the text once per span: quadratic in the text's length. The prelude (32 KB, ~300
commands) cost 270 ms of parsing against 80 ms for egglog to run it; a shape's batch of ~150 actions
a few milliseconds. egglog's own `(include "FILE")` parses a file on the Rust side, with no Python
objects in between: `run_text` writes the text to a file in a temporary folder private to this process
(in /dev/shm where there is one: memory, no disk) and runs one `include` of it (the folder is removed at
exit). The file is rewritten in place without truncating it first: on ext4 a file truncated to zero
and written again is flushed to disk when closed (`auto_da_alloc`), ~8 ms a write on this machine's
/tmp against ~3 us without. Where a file is not possible (no writable temporary folder, or its path
would need quoting), it falls back to parse_program + run_program: the same commands, run the same
way.

Invariant: `run_text(eg, text)` returns what `eg.run_program(*eg.parse_program(text))` returns (the
outputs of the text's commands, in order); only the time differs.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
from typing import Any, Optional

_LOCK = threading.Lock()
_FOLDER: list[Optional[str]] = []  # [] not tried yet; [None] unusable; [path]


def _folder() -> Optional[str]:
    with _LOCK:
        if not _FOLDER:
            d = None
            for base in ("/dev/shm", None):  # memory first; None: the platform's temporary folder
                if base is not None and not os.path.isdir(base):
                    continue
                try:
                    d = tempfile.mkdtemp(prefix="pitchfork-egglog-", dir=base)
                    break
                except OSError:
                    continue
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
        # one file per process and thread (an EGraph is used only by the thread that made it; a forked
        # child inherits the folder)
        path = os.path.join(d, f"p{os.getpid()}-t{threading.get_ident()}.egg")
        data = text.encode("utf-8")
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.ftruncate(fd, len(data))  # what an earlier, longer text left beyond it
            finally:
                os.close(fd)
        except OSError:
            pass
        else:
            return eg.run_program(*eg.parse_program(f'(include "{path}")'), *after)
    return eg.run_program(*eg.parse_program(text), *after)
