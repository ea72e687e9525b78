"""Tabular answers (HogQLQuery, EventsQuery, ActorsQuery) to typed DataFrames; the metadata every frame keeps."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel

from .columns import convert, parse_json_column

__all__ = ["answer_warnings", "as_dict", "frame_metadata", "parse_json_columns", "table_frame"]

# The answer's fields that are too big (or too pointless) to keep on every frame: pandas deep-copies attrs.
_NOT_IN_ATTRS = frozenset({"results", "columns", "query_status"})


def as_dict(response: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    """An answer as JSON-like data: raw dicts pass through untouched (the fast path), models are dumped."""
    if isinstance(response, BaseModel):
        return response.model_dump(mode="json", by_alias=True)
    return response


def frame_metadata(response: Mapping[str, Any]) -> dict[str, Any]:
    """What ``df.attrs`` keeps of an answer: ``hogql``, ``clickhouse``, ``timings``, ``hasMore``, ``types``...

    And ``warnings``, the messages of its ``metadata.warnings`` (e.g. a property the project has never seen).

    >>> frame_metadata({"results": [[1]], "hasMore": False, "hogql": "SELECT 1"})
    {'hasMore': False, 'hogql': 'SELECT 1'}
    >>> frame_metadata({"metadata": {"warnings": [{"message": "Property 'x' has never been seen"}]}})["warnings"]
    ["Property 'x' has never been seen"]
    """
    kept = {k: v for k, v in response.items() if k not in _NOT_IN_ATTRS}
    messages = answer_warnings(response)
    if messages:
        kept["warnings"] = messages
    return kept


def answer_warnings(response: Mapping[str, Any]) -> list[str]:
    """The messages of an answer's ``metadata.warnings`` (PostHog's ``HogQLNotice`` list), in order."""
    metadata = response.get("metadata")
    notices = metadata.get("warnings") if isinstance(metadata, Mapping) else None
    if not isinstance(notices, list):
        return []
    return [str(n.get("message")) for n in notices if isinstance(n, Mapping) and n.get("message")]


def _names_and_types(response: Mapping[str, Any], width: int) -> tuple[list[str], list[str | None]]:
    types = response.get("types") or []
    columns = response.get("columns") or []
    names: list[str] = [str(c) for c in columns]
    type_texts: list[str | None] = []
    for i, item in enumerate(types):
        if isinstance(item, list | tuple):  # HogQL: [name, type] pairs
            if i >= len(names):
                names.append(str(item[0]))
            type_texts.append(str(item[1]))
        else:  # EventsQuery/ActorsQuery: plain type strings
            type_texts.append(str(item) if item is not None else None)
    while len(names) < width:
        names.append(f"column_{len(names)}")
    while len(type_texts) < len(names):
        type_texts.append(None)
    return names, type_texts


def table_frame(
    response: Mapping[str, Any] | BaseModel,
    *,
    parse_json: bool | Iterable[str] = False,
    flatten: bool | Iterable[str] = False,
) -> pd.DataFrame:
    """Rows of a tabular answer as a DataFrame whose dtypes follow ``types``; the answer's metadata in ``attrs``.

    ``parse_json=True`` decodes every string column whose cells are all JSON objects or arrays (or name the
    columns). ``flatten=True`` spreads dict columns into ``col.key`` columns, one level deep (or name the
    columns): ``person`` into ``person.uuid``, ``person.properties``...; EventsQuery's ``*`` (the whole event)
    into the event's own fields (``uuid``, ``event``, ``timestamp`` as a UTC datetime, ``distinct_id``...) and one
    ``properties.<key>`` column per property, as ``select properties.$browser`` names it (a field also selected
    on its own is not repeated).

    >>> df = table_frame({"results": [["$pageview", 3]], "columns": ["event", "c"],
    ...                   "types": [["event", "String"], ["c", "UInt64"]], "hasMore": False})
    >>> df.dtypes.astype(str).tolist(), df.attrs["hasMore"]
    (['string', 'Int64'], False)
    """
    data = as_dict(response)
    rows: Sequence[Sequence[Any]] = data.get("results") or []
    width = len(rows[0]) if rows else 0
    names, type_texts = _names_and_types(data, width)
    # One transposition, then each column converts as a whole (no per-cell Python work for common types).
    cols: list[Sequence[Any]] = list(zip(*rows, strict=True)) if rows else [() for _ in names]
    arrays = {i: convert(col, type_texts[i]) for i, col in enumerate(cols)}
    df = pd.DataFrame(arrays, copy=False)
    df.columns = pd.Index(names, dtype=object)
    if parse_json:
        parse_json_columns(df, parse_json)
    if flatten:
        df = _flatten(df, flatten)
    df.attrs.update(frame_metadata(data))
    return df


def parse_json_columns(df: pd.DataFrame, which: bool | Iterable[str]) -> None:
    """Decode, in place, the string columns named in ``which`` (``True``: every one whose cells are all JSON
    objects or arrays) into dicts and lists."""
    wanted = None if which is True else set(which)  # type: ignore[arg-type]
    for i, name in enumerate(df.columns):
        col = df.iloc[:, i]
        if wanted is not None:
            if name not in wanted:
                continue
        elif not (isinstance(col.dtype, pd.StringDtype) and _looks_like_json(col)):
            continue
        cells = col.to_numpy(dtype=object, na_value=None)  # type: ignore[call-overload]
        df.isetitem(i, parse_json_column(cells))


def _looks_like_json(col: pd.Series) -> bool:
    present = col.dropna()
    if present.empty:
        return False
    first = present.str.lstrip().str[:1]
    return bool(first.isin(["{", "["]).all())


STAR = "*"
"""EventsQuery's whole-event column: spread into the event's fields and one column per property."""
_STAR_TIMES = ("timestamp", "created_at")


def _spread(cells: Any, index: pd.Index) -> pd.DataFrame:
    flat = pd.json_normalize([c if isinstance(c, dict) else {} for c in cells], max_level=0)
    flat.index = index
    return flat


def _json_type(values: Sequence[Any]) -> str | None:
    """The ClickHouse type the JSON values of one property fit; ``None`` for mixed or nested values.

    With it ``columns.convert`` gives the frames' dtypes (``string``, ``Int64``, ``float64``, ``boolean``);
    ``None`` leaves the values as objects, untouched.

    >>> _json_type(["a", None]), _json_type([1, 2.5]), _json_type([True]), _json_type(["a", 1])
    ('Nullable(String)', 'Nullable(Float64)', 'Nullable(Bool)', None)
    """
    kinds = {type(v) for v in values if v is not None}
    if kinds == {str}:
        return "Nullable(String)"
    if kinds == {bool}:
        return "Nullable(Bool)"
    if kinds == {int}:
        return "Nullable(Int64)"
    if kinds and kinds <= {int, float}:
        return "Nullable(Float64)"
    return None


def _flatten_star(cells: Any, index: pd.Index, taken: set[str]) -> pd.DataFrame:
    event = _spread(cells, index)
    props = _spread(event.pop("properties"), index) if "properties" in event else pd.DataFrame(index=index)
    props.columns = [f"properties.{k}" for k in props.columns]
    both = pd.concat([event, props], axis=1)
    out = pd.DataFrame(index=index)
    for name in both.columns:
        if name in taken:
            continue
        values = both[name].astype(object).where(both[name].notna(), None).tolist()
        kind = "Nullable(DateTime64(6, 'UTC'))" if name in _STAR_TIMES else _json_type(values)
        out[name] = convert(values, kind)
    return out


def _flatten(df: pd.DataFrame, which: bool | Iterable[str]) -> pd.DataFrame:
    wanted = None if which is True else set(which)  # type: ignore[arg-type]
    taken = {str(n) for n in df.columns if n != STAR}
    parts: list[pd.DataFrame] = []
    for i, name in enumerate(df.columns):
        col = df.iloc[:, i]
        cells = col.to_numpy(dtype=object) if col.dtype == object else None
        is_dicts = cells is not None and len(cells) > 0 and all(isinstance(c, dict) or c is None for c in cells)
        if (wanted is None or name in wanted) and is_dicts and cells is not None:
            if name == STAR:
                parts.append(_flatten_star(cells, df.index, taken))
                continue
            flat = _spread(cells, df.index)
            flat.columns = [f"{name}.{k}" for k in flat.columns]
            parts.append(flat)
        else:
            parts.append(df.iloc[:, [i]])
    out = pd.concat(parts, axis=1) if parts else df
    out.attrs = dict(df.attrs)
    return out
