"""The public surface of ``hoglab`` and its packages: sorted, complete, resolvable, and shown under its public home.

Each export is written once: in ``hoglab`` and ``hoglab.notebook`` as the ``TYPE_CHECKING`` imports that
``hoglab._lazy`` reads; in the eager packages as the import of its defining module, with ``__all__`` beside it
(httpx's model), which the consistency test below keeps honest.
"""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import hoglab

PACKAGES = ["hoglab", "hoglab.client", "hoglab.frames", "hoglab.notebook", "hoglab.schema", "hoglab.stats",
            "hoglab.stats.posthog"]  # fmt: skip


def test_all_is_sorted_and_unique() -> None:
    # Plain sort (classes before functions), the order ruff's RUF022 keeps.
    assert hoglab.__all__ == sorted(hoglab.__all__)
    assert len(set(hoglab.__all__)) == len(hoglab.__all__)


def test_every_exported_name_resolves_and_reports_hoglab_as_its_module() -> None:
    for name in hoglab.__all__:
        value = getattr(hoglab, name)
        if callable(value):
            assert value.__module__ == "hoglab", name
    assert set(hoglab.__all__) <= set(dir(hoglab))


@pytest.mark.parametrize("name", PACKAGES)
def test_each_package_exports_a_sorted_list_of_names_that_resolve(name: str) -> None:
    package = importlib.import_module(name)
    # ruff's RUF022 order (CONSTANTS, then Classes, then functions) or a plain sort, without repeats.
    def isort_style(member: str) -> tuple[int, str]:
        return (0 if member.isupper() else 1 if member[:1].isupper() else 2, member)

    assert package.__all__ in (sorted(package.__all__), sorted(package.__all__, key=isort_style))
    assert len(set(package.__all__)) == len(package.__all__)
    for member in package.__all__:
        assert getattr(package, member) is not None, member


@pytest.mark.parametrize("name", ["hoglab.client", "hoglab.frames", "hoglab.schema", "hoglab.stats"])
def test_what_an_eager_package_imports_from_its_private_modules_it_exports(name: str) -> None:
    package = importlib.import_module(name)
    imported = {
        member
        for member, value in vars(package).items()
        if not member.startswith("_")
        and (inspect.isclass(value) or inspect.isfunction(value))
        and getattr(inspect.getmodule(value), "__name__", "").startswith(f"{name.rsplit('.', 1)[0]}.")
        and getattr(inspect.getmodule(value), "__name__", "") != name
    }
    assert imported - set(package.__all__) == set(), "imported but not in __all__"


def test_unknown_attribute_is_an_attribute_error() -> None:
    try:
        hoglab.no_such_thing  # noqa: B018
    except AttributeError as exc:
        assert "no_such_thing" in str(exc)
    else:
        raise AssertionError("expected AttributeError")


def test_import_is_light_and_never_imports_the_server() -> None:
    code = (
        "import sys, hoglab\n"
        "heavy = [m for m in ('pandas', 'httpx', 'hoglab.server', 'hoglab.client') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "hoglab.Client; hoglab.trends; hoglab.read_hogql\n"
        "assert 'hoglab.server' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
