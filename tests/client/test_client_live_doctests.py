"""The docstring examples that need a service run against the real one, on a fresh project (``client`` in the
examples is a :class:`hoglab.Client` of it)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from hoglab.client import Client

LIVE_MODULES = ["hoglab.client._experiments", "hoglab.client._jobs", "hoglab.client._default"]


@pytest.mark.parametrize("name", LIVE_MODULES)
def test_live_doctests(name: str, live_client: Client) -> None:
    module = importlib.import_module(name)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    for test in doctest.DocTestFinder().find(module, name, globs={"client": live_client, **vars(module)}):
        runner.run(test)
    result = runner.summarize(verbose=False)
    assert result.attempted > 0, f"{name} has no examples"
    assert result.failed == 0, f"{result.failed} example(s) failed in {name}"
