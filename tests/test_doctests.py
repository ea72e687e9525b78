"""Every docstring example of every hoglab module runs, collected here once.

Examples are attributed to the file that defines them (hoglab shows its exports under their public home, e.g.
``hoglab.Client``, so ``__module__`` does not say where an object lives). The examples of ``LIVE`` modules use
``client``, a :class:`hoglab.Client` of a fresh project on the session's real service.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType
from typing import Any

import pytest

import hoglab
from hoglab.client import Client

MODULES = sorted(
    ["hoglab", *(m.name for m in pkgutil.walk_packages(hoglab.__path__, "hoglab.") if m.name != "hoglab.__main__")]
)
LIVE = {"hoglab.client._experiments", "hoglab.client._jobs", "hoglab.client._default"}
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE | doctest.IGNORE_EXCEPTION_DETAIL


class _DefiningFileFinder(doctest.DocTestFinder):
    def _from_module(self, module: ModuleType, object: Any) -> bool:
        if inspect.isfunction(object):
            return bool(object.__code__.co_filename == module.__file__)
        if inspect.isclass(object):
            # A class shown under its public home (``hoglab.QueryJob``) has ``__module__ == "hoglab"``, so
            # ``inspect.getsourcefile`` would name hoglab/__init__.py: its methods' code says where it lives.
            files = {f.__code__.co_filename for f in vars(object).values() if inspect.isfunction(f)}
            if files:
                return module.__file__ in files
            try:
                return inspect.getsourcefile(object) == module.__file__
            except TypeError:
                return False
        return bool(super()._from_module(module, object))  # type: ignore[misc]


def run_examples(name: str, globs: dict[str, Any] | None = None) -> doctest.TestResults:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in _DefiningFileFinder().find(module, name, globs={**vars(module), **(globs or {})}):
        runner.run(test)
    return runner.summarize(verbose=False)


@pytest.mark.parametrize("name", sorted(set(MODULES) - LIVE))
def test_examples(name: str) -> None:
    assert run_examples(name).failed == 0


@pytest.mark.parametrize("name", sorted(LIVE))
def test_live_examples(name: str, live_client: Client) -> None:
    result = run_examples(name, {"client": live_client})
    assert result.attempted > 0 and result.failed == 0


def test_the_finder_finds_the_examples() -> None:
    # A finder that silently skips objects would make every test above pass: count what runs.
    examples = ("hoglab.stats.posthog._legacy.v1", "hoglab.server.hogql.values")
    found = {name: run_examples(name).attempted for name in examples}
    assert all(found.values()), found
    assert len(MODULES) > 150
