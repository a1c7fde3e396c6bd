"""Modules imported on first use, so a process that never evaluates numpy or Z3 semantics does not pay
for loading them (`pitchfork lift` from a cold process: numpy and z3 are a third of its start-up).

    from fpir.lazy import numpy as np, z3

`np.where(...)` imports numpy the first time an attribute is read; each attribute read once is kept on
the proxy, so later reads cost one dictionary lookup. The proxies are for the modules that only *use*
numpy/Z3 inside functions (the op table's semantics); `isinstance(x, np.ndarray)` works too (it reads an
attribute). Invariant: the attribute values are the real module's, so behaviour is unchanged.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A stand-in for module `name`, importing it when an attribute is first read."""

    def __init__(self, name: str) -> None:
        object.__setattr__(self, "_lazy_name", name)

    def _module(self) -> ModuleType:
        return importlib.import_module(object.__getattribute__(self, "_lazy_name"))

    def __getattr__(self, attr: str) -> Any:  # only called for names not cached yet
        value = getattr(self._module(), attr)
        object.__setattr__(self, attr, value)
        return value

    def __dir__(self) -> list[str]:
        return dir(self._module())

    def __repr__(self) -> str:
        return f"<lazy module {object.__getattribute__(self, '_lazy_name')!r}>"


numpy: Any = LazyModule("numpy")
z3: Any = LazyModule("z3")
