"""Placeholder names for the values a translator writes into HogQL, so values never become HogQL text."""

from __future__ import annotations

from typing import Any

__all__ = ["Params"]


class Params:
    """Placeholder names for values: ``params.add(v)`` → ``"{p3}"``, all values in ``params.values``."""

    def __init__(self, prefix: str = "p") -> None:
        self.prefix = prefix
        self.values: dict[str, Any] = {}

    def add(self, value: Any) -> str:
        name = f"{self.prefix}{len(self.values)}"
        self.values[name] = value
        return "{" + name + "}"
