"""Running the frontend's recursive walkers on statements of any realistic depth, with a bound.

The statement parser (lark's tree transformer), the loop-nest rewrites (ir_walk.map_children and the
passes built on it), the expression converter and the code generator's statement walker recurse once
per nesting level of Halide's statement; a large pipeline nests deeply (every LetStmt is a level: a
local Laplacian of 8 levels, interpolate's 10 pyramid levels), which ran into Python's default limit
of 1000 frames (an uncaught RecursionError after seconds of work).

`run_deep(fn)` runs `fn` in a thread with a STACK_BYTES stack and Python's recursion limit raised to
FRAME_LIMIT for the duration (Python frames of pure-Python recursion cost little C stack; the C
calls between them, e.g. `tuple(generator)`, a few hundred bytes each: 256 MiB holds FRAME_LIMIT
frames with a wide margin). Past the bound, the RecursionError becomes `Unsupported` naming the
limit, so `pitchfork.compile` falls back to Halide with that reason: never a traceback. `fn` runs in
a copy of the caller's context (contextvars), so settings made with context variables hold inside it.
"""

from __future__ import annotations

import contextvars
import sys
import threading
from typing import Callable, TypeVar

T = TypeVar("T")

#: Python frames allowed while the frontend runs (about 20 per statement level in the deepest walkers)
FRAME_LIMIT = 200_000
#: the worker thread's stack
STACK_BYTES = 512 * 1024 * 1024
_lock = threading.Lock()


def run_deep(fn: Callable[[], T]) -> T:
    """`fn()` with room for FRAME_LIMIT frames; a RecursionError beyond it raises `Unsupported`."""
    from pitchfork.codegen.base import Unsupported

    result: list[T] = []
    error: list[BaseException] = []
    # A new thread starts with an empty context: the caller's context variables (the lifting engine,
    # pitchfork.selection.lift.lift_engine; leave-one-out, pitchfork.trs.provenance) are carried over.
    ctx = contextvars.copy_context()

    def work() -> None:
        try:
            result.append(ctx.run(fn))
        except BaseException as e:  # noqa: BLE001 - re-raised in the calling thread
            error.append(e)

    with _lock:  # the recursion limit is the interpreter's: one deep run at a time
        old_stack = threading.stack_size()
        old_limit = sys.getrecursionlimit()
        try:
            threading.stack_size(STACK_BYTES)
            t = threading.Thread(target=work, name="pitchfork-frontend")
            sys.setrecursionlimit(max(old_limit, FRAME_LIMIT))
            t.start()
            t.join()
        finally:
            sys.setrecursionlimit(old_limit)
            threading.stack_size(old_stack)
    if error:
        e = error[0]
        if isinstance(e, RecursionError):
            raise Unsupported(f"statement nested deeper than PITCHFORK's frontend walks ({FRAME_LIMIT} Python "
                              "frames)") from None
        raise e
    return result[0]
