"""The public surface of ``hoglab``: sorted, complete, lazily loaded, and shown under its public home."""

from __future__ import annotations

import subprocess
import sys

import hoglab


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


def test_every_lazy_name_is_exported() -> None:
    assert set(hoglab._LAZY) <= set(hoglab.__all__)


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
