"""``hoglab._lazy``: an export that shares its name with a subpackage (``hoglab.pull``, the function, lives in
``hoglab/pull/``) stays the export whichever is imported first, in a fresh interpreter each time."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.parametrize(
    "first",
    [
        "import hoglab.pull",  # the subpackage first: the import system sets it on hoglab, the export must win
        "from hoglab import pull",  # the export first, then the subpackage below
        "from hoglab.pull.remote import Pacer",  # a module inside the subpackage first
    ],
)
def test_the_export_wins_over_the_subpackage_of_its_name(first: str) -> None:
    code = (
        f"{first}\n"
        "import sys, hoglab, hoglab.pull\n"
        "from hoglab import PullReport, pull\n"
        "assert hoglab.pull is pull and callable(pull) and pull.__module__ == 'hoglab', hoglab.pull\n"
        "assert sys.modules['hoglab.pull'].pull is pull and sys.modules['hoglab.pull'].PullReport is PullReport\n"
        "assert not any(m.startswith('hoglab.server') for m in sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_other_attributes_of_the_package_are_set_as_usual() -> None:
    code = (
        "import hoglab, hoglab.queries, hoglab.frames\n"
        "assert hoglab.queries.__name__ == 'hoglab.queries' and hoglab.frames.__name__ == 'hoglab.frames'\n"
        "hoglab.anything = 1\n"
        "assert hoglab.anything == 1\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
