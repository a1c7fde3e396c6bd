"""The e-graph tests saturate: the on-disk store of shape outcomes (pitchfork/selection/egraph/store.py) is
off for them, so a test that patches the engine's internals sees its own saturation, never an outcome
stored by an earlier run. test_store.py turns it on, in a directory of its own."""

from __future__ import annotations

import pytest

from pitchfork.selection.egraph import store


@pytest.fixture(autouse=True)
def _no_shape_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store, "ENABLED", False)
