"""``hoglab._lazy``: exports load on first use, and no export shares its name with a submodule (``hoglab.pull`` is
the function only; its home is ``hoglab/pulling/``), checked in a fresh interpreter where imports matter."""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "first",
    [
        "import hoglab.pulling",  # the package that holds the function, imported first
        "from hoglab import pull",  # the export first
        "from hoglab.pulling.remote import Pacer",  # a module inside that package first
    ],
)
def test_hoglab_pull_is_the_function_whichever_is_imported_first(first: str) -> None:
    code = (
        f"{first}\n"
        "import importlib.util, sys, hoglab, hoglab.pulling\n"
        "from hoglab import PullReport, pull\n"
        "assert hoglab.pull is pull and callable(pull) and pull.__module__ == 'hoglab', hoglab.pull\n"
        "assert hoglab.pulling.pull is pull and hoglab.pulling.PullReport is PullReport\n"
        "assert importlib.util.find_spec('hoglab.pull') is None  # a function, not also a module\n"
        "assert not any(m.startswith('hoglab.server') for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("package", ["hoglab", "hoglab.notebook"])
def test_no_export_shares_its_name_with_a_submodule(package: str) -> None:
    module = importlib.import_module(package)
    submodules = {info.name for info in pkgutil.iter_modules(module.__path__)}
    assert submodules and not submodules & set(module.__all__), submodules & set(module.__all__)


def test_other_attributes_of_the_package_are_set_as_usual() -> None:
    code = (
        "import hoglab, hoglab.queries, hoglab.frames\n"
        "assert hoglab.queries.__name__ == 'hoglab.queries' and hoglab.frames.__name__ == 'hoglab.frames'\n"
        "hoglab.anything = 1\n"
        "assert hoglab.anything == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
