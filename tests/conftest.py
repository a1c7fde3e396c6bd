"""Test-suite options shared by every test directory.

`extended` marks extra instances of a check that CI already runs on a representative subset (more
random expressions of the same generator, ...): they are collected but skipped unless pytest is given
`--extended` (CI, `python3 -m pytest -q -n 2`, runs without it). `python3 -m pytest -q -n 2 --extended
-m extended` runs just them. `slow` tests run in CI as before; the marker only labels them.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--extended", action="store_true", default=False,
                     help="also run the tests marked `extended` (skipped by default and in CI)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if config.getoption("--extended"):
        return
    skip = pytest.mark.skip(reason="extended set: run with --extended")
    for item in items:
        if item.get_closest_marker("extended") is not None:
            item.add_marker(skip)
