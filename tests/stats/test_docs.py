"""Every docstring example in hoglab.stats runs and prints what it shows."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import hoglab.stats

MODULES = sorted(
    ["hoglab.stats", *(f"hoglab.stats.{m.name}" for m in pkgutil.iter_modules(hoglab.stats.__path__))]
)


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE, verbose=False)
    assert result.failed == 0


def test_examples_are_found() -> None:
    # Guard against the finder silently skipping objects (their __module__ is rewritten).
    attempted = sum(doctest.testmod(importlib.import_module(n), verbose=False).attempted for n in MODULES)
    assert attempted >= 60
