"""The examples in the runner modules' docstrings run (they document the SQL shapes and the date rules)."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

import pytest

import hoglab.server.query.runners as runners

MODULES = sorted(f"{runners.__name__}.{m.name}" for m in pkgutil.iter_modules(runners.__path__))


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0


def test_the_examples_are_many() -> None:
    attempted = sum(doctest.testmod(importlib.import_module(name)).attempted for name in MODULES)
    assert attempted >= 15
