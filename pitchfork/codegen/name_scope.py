"""A function's value names registered as llvmlite does, with one Python call per named value.

Every instruction llvmlite builds registers its name in its function's `NameScope`: `register`
calls `deduplicate`, which calls `is_used` once or twice, and an unnamed value ('' is always taken)
gets the next `.N`. That chain was about half of `Instruction.__init__`'s time (cProfile, sobel3x3
arm64: ~2,000 named values a compile). `fast_names(fn)` gives `fn` a scope whose `register` does the
same in one call, sharing the old scope's set of used names and counters (so any object still holding
the old scope sees the same state).

Invariant: every name is the one llvmlite's own `NameScope.register` gives, in the same order. The
first call checks that on a sample sequence against llvmlite's scope (`_self_check`); if any name
differs (another llvmlite), scopes are left as they are.
"""

from __future__ import annotations

from llvmlite import ir
from llvmlite.ir._utils import DuplicatedNameError, NameScope


class _FastScope(NameScope):
    """`NameScope` with `register` (and its `deduplicate` / `is_used` calls) in one method."""

    def register(self, name: str, deduplicate: bool = False) -> str:
        used = self._useset
        if name in used:
            if not deduplicate:
                raise DuplicatedNameError(name)
            base, counts = name, self._basenamemap
            while name in used:  # llvmlite's deduplicate: "{base}.{n}", n counting per base name
                ident = counts[base] + 1
                counts[base] = ident
                name = f"{base}.{ident}"
        used.add(name)
        return name


#: None until the first call's self-check; then whether `fast_names` replaces scopes
_checked: list[bool] = []
_SAMPLE = ("", "", "a", "a", ".3", "", "", "a.1", "a", "b", "", ".9")


def _self_check() -> bool:
    """Whether `_FastScope` names a sample (repeats, unnamed values, names that look deduplicated)
    exactly as llvmlite's `NameScope` does."""
    try:
        ours, theirs = _FastScope(), NameScope()
        if not (hasattr(theirs, "_useset") and hasattr(theirs, "_basenamemap")):
            return False
        if [ours.register(n, True) for n in _SAMPLE] != [theirs.register(n, True) for n in _SAMPLE]:
            return False
        for s in (ours, theirs):  # a duplicate without deduplication is an error in both
            try:
                s.register("a")
                return False
            except DuplicatedNameError:
                pass
        return ours.register("c") == theirs.register("c")
    except Exception:  # noqa: BLE001 - an llvmlite whose NameScope differs: keep its own
        return False


def fast_names(fn: ir.Function) -> None:
    """Give `fn` a `_FastScope` sharing its current scope's names (see the module docstring)."""
    if not _checked:
        _checked.append(_self_check())
    scope = fn.scope
    if _checked[0] and type(scope) is NameScope:
        fast = _FastScope.__new__(_FastScope)
        fast.__dict__.update(scope.__dict__)  # the same set and counter objects
        fn.scope = fast
