"""The docstring examples of the client-side modules run: most need no network; those of ``LIVE_MODULES`` run
against the real service on a fresh project (``client`` in them is a :class:`hoglab.Client` of it)."""

from __future__ import annotations

import doctest
import importlib
import inspect
from types import ModuleType
from typing import Any

import pytest

from hoglab.client import Client

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
LIVE_MODULES = ["hoglab.client._experiments", "hoglab.client._jobs", "hoglab.client._default"]


class _Finder(doctest.DocTestFinder):
    # hoglab rewrites __module__ of its exports to "hoglab"; an object still belongs to the module whose file
    # defines it.
    def _from_module(self, module: ModuleType, object: Any) -> bool:
        if getattr(object, "__module__", None) == "hoglab":
            if inspect.isclass(object):
                return vars(module).get(object.__name__) is object
            return inspect.isfunction(object) and object.__code__.co_filename == module.__file__
        return bool(super()._from_module(module, object))  # type: ignore[misc]


def _run(name: str, globs: dict[str, Any] | None = None) -> None:
    module = importlib.import_module(name)
    tests = _Finder().find(module, name, globs={**vars(module), **(globs or {})})
    runner = doctest.DocTestRunner(
        optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL
    )
    for test in tests:
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"


@pytest.mark.parametrize("name", MODULES)
def test_doctests(name: str) -> None:
    _run(name)


@pytest.mark.parametrize("name", LIVE_MODULES)
def test_live_doctests(name: str, live_client: Client) -> None:
    _run(name, {"client": live_client})
