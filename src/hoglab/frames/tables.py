"""Tabular answers (HogQLQuery, EventsQuery, ActorsQuery) to typed DataFrames; the metadata every frame keeps."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pandas as pd
from pydantic import BaseModel

from .columns import convert, parse_json_column

__all__ = ["as_dict", "frame_metadata", "parse_json_columns", "table_frame"]

# The answer's fields that are too big (or too pointless) to keep on every frame: pandas deep-copies attrs.
_NOT_IN_ATTRS = frozenset({"results", "columns", "query_status"})


def as_dict(response: Mapping[str, Any] | BaseModel) -> Mapping[str, Any]:
    """An answer as JSON-like data: raw dicts pass through untouched (the fast path), models are dumped."""
    if isinstance(response, BaseModel):
        return response.model_dump(mode="json", by_alias=True)
    return response


def frame_metadata(response: Mapping[str, Any]) -> dict[str, Any]:
    """What ``df.attrs`` keeps of an answer: ``hogql``, ``clickhouse``, ``timings``, ``hasMore``, ``types``...

    >>> frame_metadata({"results": [[1]], "hasMore": False, "hogql": "SELECT 1"})
    {'hasMore': False, 'hogql': 'SELECT 1'}
    """
    return {k: v for k, v in response.items() if k not in _NOT_IN_ATTRS}


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
    columns). ``flatten=True`` spreads dict columns (EventsQuery's ``*`` and ``person``) into ``col.key``
    columns, one level deep (or name the columns).

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


def _flatten(df: pd.DataFrame, which: bool | Iterable[str]) -> pd.DataFrame:
    wanted = None if which is True else set(which)  # type: ignore[arg-type]
    parts: list[pd.DataFrame] = []
    for i, name in enumerate(df.columns):
        col = df.iloc[:, i]
        cells = col.to_numpy(dtype=object) if col.dtype == object else None
        is_dicts = cells is not None and len(cells) > 0 and all(isinstance(c, dict) or c is None for c in cells)
        if (wanted is None or name in wanted) and is_dicts and cells is not None:
            flat = pd.json_normalize([c if c is not None else {} for c in cells], max_level=0)
            flat.columns = [f"{name}.{k}" for k in flat.columns]
            flat.index = df.index
            parts.append(flat)
        else:
            parts.append(df.iloc[:, [i]])
    out = pd.concat(parts, axis=1) if parts else df
    out.attrs = dict(df.attrs)
    return out
