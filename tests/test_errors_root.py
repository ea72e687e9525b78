"""One error root: every exception class hoglab defines descends from ``hoglab.HoglabError``."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import hoglab
from hoglab.errors import HoglabError


def test_every_exception_class_of_every_module_descends_from_the_root() -> None:
    strays = []
    for info in pkgutil.walk_packages(hoglab.__path__, "hoglab."):
        if info.name == "hoglab.__main__":
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == info.name
            if defined_here and issubclass(value, BaseException) and not issubclass(value, HoglabError):
                strays.append(f"{info.name}.{name}")
    assert strays == []


def test_errors_keep_the_builtins_they_specialise() -> None:
    from hoglab.server.hogql import HogQLError
    from hoglab.server.ingest import IngestError
    from hoglab.stats import StatsInputError

    assert issubclass(HogQLError, ValueError) and issubclass(IngestError, ValueError)
    assert issubclass(StatsInputError, ValueError)
    assert issubclass(hoglab.NotFound, LookupError) and issubclass(hoglab.InvalidArgumentType, TypeError)
