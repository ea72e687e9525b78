"""Groups through the client: ``client.groups``, group types named by builders, and what an insight counts.

``client.groups`` has types, list and find; a builder may name a group type, which the client turns into its
index; an insight that counts groups says so (for the frames' and plots' labels: "companies", not "persons").

* ``client.groups.types()``: the project's group types (``/groups_types/``) as a frame, one row per index.
* ``client.groups.list("company", search=..., key=...)``: every group of a type (``/groups/``, following its
  cursor), a frame with ``group_key``, ``created_at`` and one column per property (``properties=False`` keeps them
  in one dict column).
* ``client.groups.find("company", "acme")``: one group, as PostHog's ``Group`` object.
* Queries built with a group type's *name* (``aggregate_by="company"``) are resolved here, against the project's
  types, before they are sent (:func:`resolve_group_types`); the types are read once per client.

For example (a sketch of a call and its answer, not run)::

    client.groups.list("company").head(1)
    ->   group_key                   created_at  name  plan
         acme       2025-06-01 10:00:00+00:00  Acme   pro
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd
from pydantic import BaseModel

from ..errors import InvalidArgument
from ..schema import RequestModel
from ..schema._base import pending_group_types

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Groups", "counted_group_type", "label_units", "plural", "resolve_group_types"]


def plural(name: str) -> str:
    """An English plural for a group type without ``name_plural`` ("company" -> "companies").

    >>> [plural(n) for n in ("company", "project", "business", "key", "match")]
    ['companies', 'projects', 'businesses', 'keys', 'matches']
    """
    if name.endswith("y") and name[-2:-1] not in tuple("aeiou"):
        return name[:-1] + "ies"
    if name.endswith(("s", "x", "z", "ch", "sh")):
        return name + "es"
    return name + "s"


class Groups:
    """``client.groups``: the project's group types and groups."""

    def __init__(self, client: Client) -> None:
        self._client = client
        self._types: list[dict[str, Any]] | None = None

    def type_list(self, *, refresh: bool = False) -> list[dict[str, Any]]:
        """The project's group types as PostHog's ``GroupType`` objects (read once per client)."""
        if self._types is None or refresh:
            body = self._client.get_json(self._client.path("groups_types/"))
            self._types = [t for t in body if isinstance(t, dict)] if isinstance(body, list) else []
        return self._types

    def types(self) -> pd.DataFrame:
        """The group types as a frame: ``group_type_index, group_type, name_singular, name_plural, created_at``."""
        rows = self.type_list(refresh=True)
        columns = ["group_type_index", "group_type", "name_singular", "name_plural", "created_at"]
        df = pd.DataFrame([{c: t.get(c) for c in columns} for t in rows], columns=columns)
        df["group_type_index"] = df["group_type_index"].astype("Int64")
        for column in ("group_type", "name_singular", "name_plural"):
            df[column] = df[column].astype("string")
        df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
        return df

    def index(self, group_type: str | int) -> int:
        """The index of a group type given by name or index (an unknown name lists the known ones)."""
        if isinstance(group_type, int) and not isinstance(group_type, bool):
            return group_type
        known = {str(t.get("group_type")): int(t["group_type_index"]) for t in self.type_list()}
        if group_type not in known:
            known = {str(t.get("group_type")): int(t["group_type_index"]) for t in self.type_list(refresh=True)}
        if group_type not in known:
            names = ", ".join(repr(n) for n in known) or "none yet"
            raise InvalidArgument(f"group type {group_type!r} is not one of the project's ({names}).",
                                  argument="group_type")  # fmt: skip
        return known[str(group_type)]

    def names(self, index: int) -> tuple[str, str]:
        """``(singular, plural)`` of a type as PostHog's UI shows it (``name_singular``/``name_plural`` if set)."""
        for t in self.type_list():
            if t.get("group_type_index") == index:
                name = str(t.get("group_type"))
                return str(t.get("name_singular") or name), str(t.get("name_plural") or plural(name))
        return f"group {index}", f"groups of type {index}"

    def list(self, group_type: str | int, *, search: str | None = None, key: str | None = None,
             properties: bool = True) -> pd.DataFrame:  # fmt: skip
        """Every group of a type, newest first: ``group_key``, ``created_at`` and the properties (one column each,
        or one ``group_properties`` dict column with ``properties=False``)."""
        params: dict[str, Any] = {"group_type_index": self.index(group_type)}
        if search:
            params["search"] = search
        if key:
            params["group_key"] = key
        items: list[dict[str, Any]] = []
        path = self._client.path("groups/")
        seen: set[str] = set()
        while True:
            body = self._client.get_json(path, params)
            items += [r for r in body.get("results") or [] if isinstance(r, dict)]
            following = body.get("next")
            cursor = _cursor_of(following) if following else None
            if not cursor or cursor in seen:
                break
            seen.add(cursor)
            params["cursor"] = cursor
        return _groups_frame(items, properties)

    def find(self, group_type: str | int, key: str) -> dict[str, Any]:
        """One group (PostHog's ``Group`` object); :class:`hoglab.errors.NotFound` if there is none."""
        found: dict[str, Any] = self._client.get_json(
            self._client.path("groups/find/"), {"group_type_index": self.index(group_type), "group_key": key}
        )
        return found


def _cursor_of(url: str) -> str | None:
    from urllib.parse import parse_qs, urlsplit

    values = parse_qs(urlsplit(url).query).get("cursor")
    return values[0] if values else None


def _groups_frame(items: list[dict[str, Any]], spread: bool) -> pd.DataFrame:
    base = ["group_type_index", "group_key", "created_at"]
    rows = []
    for item in items:
        row = {c: item.get(c) for c in base}
        raw = item.get("group_properties")
        props: dict[str, Any] = raw if isinstance(raw, dict) else {}
        if spread:
            row.update({k: v for k, v in props.items() if k not in base})
        else:
            row["group_properties"] = props
        rows.append(row)
    df = pd.DataFrame(rows, columns=None if rows else [*base, "group_properties"])
    if not df.empty:
        df["group_type_index"] = df["group_type_index"].astype("Int64")
        df["created_at"] = pd.to_datetime(df["created_at"], utc=True, format="ISO8601")
    return df


def resolve_group_types(client: Client, query: Any) -> Any:
    """``query`` with every group type a builder named replaced by its index (the model itself when none)."""
    if not isinstance(query, BaseModel) or not any(True for _ in pending_group_types(query)):
        return query
    resolved = query.model_copy(deep=True)
    for model, field, name in list(pending_group_types(resolved)):
        setattr(model, field, client.groups.index(name))
        model.group_type_names.pop(field, None)
    return resolved


def counted_group_type(query: Any) -> int | None:
    """The group type an insight counts instead of persons (``aggregation_group_type_index``, or every series'
    ``unique_group`` math in one type), else ``None``."""
    index = getattr(query, "aggregation_group_type_index", None)
    if isinstance(index, int):
        return index
    series = getattr(query, "series", None)
    if not series:
        return None
    kinds = {s.math_group_type_index if getattr(s, "math", None) == "unique_group" else None for s in series}
    return kinds.pop() if len(kinds) == 1 else None


def label_units(client: Client, query: Any, df: pd.DataFrame) -> pd.DataFrame:
    """Label what the frame counts: ``df.attrs["unit"]`` (``"companies"``; ``"persons"`` otherwise) and
    ``unit_singular``; a stickiness frame's count column is named after the unit."""
    index = counted_group_type(query) if isinstance(query, RequestModel) else None
    if index is None:
        return df
    singular, many = client.groups.names(index)
    if getattr(query, "kind", None) == "StickinessQuery" and "persons" in df.columns:
        df = df.rename(columns={"persons": many})
    df.attrs.update(unit=many, unit_singular=singular, group_type_index=index)
    return df

