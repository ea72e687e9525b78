"""Lazy exports read from one list: the ``if TYPE_CHECKING:`` imports of a package's ``__init__``.

Type checkers and IDEs read those imports (written ``from .x import Name as Name``, so they are explicit
re-exports); at run time :func:`lazy_exports` reads the same statements from the file, so each export is written
once, and nothing is imported until a name is first used (``import hoglab`` stays free of pandas and httpx).
The same idea as ``lazy_loader.attach_stub``, with the stub inside the module.

An export may share its name with a subpackage (``hoglab.pull``, the function, and ``hoglab/pull/``, its home):
importing the subpackage sets it as an attribute of its parent, which would hide the export, so the package's
module refuses that one assignment and the export stays what the name means (``sys.modules`` still holds the
subpackage, so ``import hoglab.pull`` and ``from hoglab.pull import PullReport`` work as usual).

    if TYPE_CHECKING:
        from .client import Client as Client
    __getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
"""

from __future__ import annotations

import ast
import importlib
import types
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
    package: str, path: str, *, public_home: str | None = None
) -> tuple[Callable[[str], Any], Callable[[], list[str]], list[str]]:
    """``(__getattr__, __dir__, __all__)`` for ``package`` whose ``__init__`` is ``path``.

    ``public_home``: shown as the ``__module__`` of what is exported (``hoglab.Client``, not
    ``hoglab.client._client.Client``) in reprs, tracebacks and docs.
    """
    exports = _typing_imports(path, package)
    names = sorted(exports)
    module = importlib.import_module(package)
    namespace = module.__dict__

    class _ExportsFirst(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            # The import system sets each imported subpackage on its parent; an export of that name wins.
            if name in exports and isinstance(value, types.ModuleType) and value.__name__ == f"{package}.{name}":
                return
            super().__setattr__(name, value)

    module.__class__ = _ExportsFirst

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if public_home and getattr(value, "__module__", "").startswith("hoglab.") and hasattr(value, "__qualname__"):
            value.__module__ = public_home
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__, names
