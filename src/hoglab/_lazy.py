"""Lazy exports read from one list: the ``if TYPE_CHECKING:`` imports of a package's ``__init__``.

Type checkers and IDEs read those imports (written ``from .x import Name as Name``, so they are explicit
re-exports); at run time :func:`lazy_exports` reads the same statements from the file into a table of name ->
module and returns a PEP 562 ``__getattr__`` over it, so each export is written once, and nothing is imported until
a name is first used (``import hoglab`` stays free of pandas and httpx). The same idea as
``lazy_loader.attach_stub``, with the stub inside the module.

    if TYPE_CHECKING:
        from .client import Client as Client
    __getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)

No export shares its name with a submodule (``tests/test_lazy.py`` checks it): importing the submodule would set
it on the package and hide the export.
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["lazy_exports"]


def _typing_imports(path: str, package: str) -> dict[str, str]:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"))
    exports: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for statement in node.body:
                if isinstance(statement, ast.ImportFrom):
                    base = package.rsplit(".", statement.level - 1)[0] if statement.level else ""
                    module = ".".join(part for part in (base, statement.module) if part)
                    exports.update((alias.asname or alias.name, module) for alias in statement.names)
    return exports


def lazy_exports(
    package: str, path: str, *, public_home: str | None = None, private_only: bool = False
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` whose ``__init__`` is ``path``.

    ``public_home``: shown as the ``__module__`` of what is exported (``hoglab.Client``, not
    ``hoglab.client._client.Client``) in reprs, tracebacks and docs.
    """
    exports = _typing_imports(path, package)
    names = sorted(exports)
    namespace = importlib.import_module(package).__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        home = getattr(value, "__module__", "")
        if (
            public_home
            and home.startswith("hoglab.")
            and (not private_only or "._" in home)
            and hasattr(value, "__qualname__")
        ):
            value.__module__ = public_home
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__, names
