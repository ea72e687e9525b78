"""Every tour notebook runs with exactly what ``make lab`` installs: each module a notebook imports is the standard
library's, hoglab's, or a distribution the ``lab`` extra of pyproject.toml names (directly, or through the hoglab
extras and base dependencies it includes), never one that only ``dev`` brings (statsmodels once was).

A dependency of a dependency does not count: the notebooks would break the day that package stops pulling it in.
The imports are read from the notebooks' code cells (IPython's ``%`` and ``!`` lines and ``%%`` cells left out).
"""

from __future__ import annotations

import ast
import importlib.metadata
import json
import re
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _lab_distributions() -> set[str]:
    """The distributions the ``lab`` extra asks for by name: its own, and those of the hoglab extras it includes."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    names: set[str] = set()
    pending, seen = [*project["dependencies"], *extras["lab"]], set()
    while pending:
        requirement = Requirement(pending.pop())
        name = canonicalize_name(requirement.name)
        if name == "hoglab":
            for extra in requirement.extras - seen:
                seen.add(extra)
                pending.extend(extras[extra])
        else:
            names.add(name)
    return names


def _imported_modules(notebook: Path) -> set[str]:
    """The top-level modules a notebook's code cells import."""
    modules: set[str] = set()
    for cell in json.loads(notebook.read_text())["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] != "code" or source.lstrip().startswith("%%"):
            continue  # a %%hogql cell is HogQL, not Python
        python = "\n".join("" if re.match(r"\s*[%!]", line) else line for line in source.splitlines())
        for node in ast.walk(ast.parse(python)):
            if isinstance(node, ast.Import):
                modules.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules.add(node.module.split(".")[0])
    return modules


def test_the_lab_extra_is_what_make_lab_installs() -> None:
    makefile = (ROOT / "Makefile").read_text()
    lab_deps = re.search(r"^LAB_DEPS\s*:=\s*(.+)$", makefile, re.M)
    assert lab_deps is not None and re.search(r"\[[^]]*\blab\b[^]]*\]", lab_deps.group(1)), makefile
    assert "$(VENV)/.installed-lab" in re.search(r"^lab:.*$", makefile, re.M).group(0)  # type: ignore[union-attr]


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[n.name for n in NOTEBOOKS])
def test_a_tour_imports_only_what_the_lab_extra_installs(notebook: Path) -> None:
    allowed = _lab_distributions()
    providers = importlib.metadata.packages_distributions()
    missing: dict[str, list[str]] = {}
    for module in sorted(_imported_modules(notebook)):
        if module in sys.stdlib_module_names or module == "hoglab":
            continue
        dists = {canonicalize_name(d) for d in providers.get(module, [module])}
        if not dists & allowed:
            missing[module] = sorted(dists)
    assert not missing, f"{notebook.name} imports what the lab extra does not install: {missing}"


def test_the_check_sees_a_module_outside_the_lab_extra() -> None:
    # The check itself: duckdb is a dev tool only, so a notebook importing it would be flagged.
    assert "duckdb" not in _lab_distributions()
    assert {"statsmodels", "pandas", "matplotlib", "jupyterlab", "posthog"} <= _lab_distributions()
