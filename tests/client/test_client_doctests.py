"""The docstring examples of the client-side modules run (they need no network)."""

from __future__ import annotations

import doctest
import importlib
import inspect
from types import ModuleType
from typing import Any

import pytest

MODULES = [
    "hoglab.errors",
    "hoglab.frames",
    "hoglab._frames._columns",
    "hoglab._frames._tables",
    "hoglab._frames._insights",
    "hoglab.queries",
    "hoglab._queries._args",
    "hoglab.client._client",
    "hoglab.client._errors",
    "hoglab.client._retry",
    "hoglab.client._results",
    "hoglab.client._values",
]


class _Finder(doctest.DocTestFinder):
    # hoglab rewrites __module__ of its exports to "hoglab"; an object still belongs to the module whose file
    # defines it.
    def _from_module(self, module: ModuleType, object: Any) -> bool:
        if getattr(object, "__module__", None) == "hoglab":
            if inspect.isclass(object):
                return vars(module).get(object.__name__) is object
            return inspect.isfunction(object) and object.__code__.co_filename == module.__file__
        return bool(super()._from_module(module, object))  # type: ignore[misc]


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    module = importlib.import_module(name)
    tests = _Finder().find(module, name)
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    )
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"
