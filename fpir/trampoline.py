"""Run recursive procedures without Python recursion: the procedure is a generator that `yield`s the
argument of each recursive call and is sent the call's result.

    def size(t):                        def size(t):
        n = 1                               n = 1
        for a in t.args:                    for a in t.args:
            n += size(a)          ->            n += yield a
        return n                            return n
                                        trampoline(size, term)

`trampoline` keeps the pending calls on a heap-allocated list, so depth is bounded by memory, not by
the interpreter's recursion limit (a 10,000-deep expression is an ordinary input: Halide expressions
get that deep after inlining). A `shortcut` (e.g. a memo lookup) answers a call without starting a
generator. Invariant: the results are exactly those of the recursive version, in the same order of
evaluation.
"""

from __future__ import annotations

from typing import Any, Callable, Generator, Optional, TypeVar

A = TypeVar("A")
R = TypeVar("R")

Proc = Callable[..., Generator[Any, Any, Any]]


def trampoline(proc: Proc, *args: Any, shortcut: Optional[Callable[..., Any]] = None) -> Any:
    """proc(*args) with every `yield x` (x a tuple of arguments, or one argument) run as proc(x)."""
    stack: list[Generator[Any, Any, Any]] = [proc(*args)]
    value: Any = None
    while True:
        try:
            call = stack[-1].send(value)
        except StopIteration as done:
            stack.pop()
            if not stack:
                return done.value
            value = done.value
            continue
        call_args = call if isinstance(call, tuple) else (call,)
        if shortcut is not None:
            hit = shortcut(*call_args)
            if hit is not None:
                value = hit
                continue
        value = None
        stack.append(proc(*call_args))
