"""Which properties a project's data has, and which it types as numbers: hoglab's stand-in for PostHog's
property definitions.

PostHog types a property ``Numeric`` when ingestion sees a number for it, and its HogQL printer then reads the
property with ``toFloat(..)``. hoglab keeps no taxonomy; it samples the project's newest rows instead: a key is
numeric when every non-null value seen for it is a JSON number. The answer is kept per project and recomputed
when the data changed (the engine's data version), at most every ``REFRESH_SECONDS`` (a sample costs ~50-150 ms
on the demo's 220,000 events, which a project capturing all the time would otherwise pay on every query), from at
most ``SAMPLE_ROWS`` rows per table. The same sample's keys (:func:`sampled_keys`) are the candidates of a
did-you-mean for a property the project has never seen (``taxonomy.py``).

>>> is_numeric(["Int64", "Double", "Null"]), is_numeric(["Int64", "String"]), is_numeric(["Null"])
(True, False, False)
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from typing import Any

from .cache import data_version

__all__ = ["REFRESH_SECONDS", "SAMPLE_ROWS", "is_numeric", "numeric_properties", "sampled_keys"]

SAMPLE_ROWS = 10_000
REFRESH_SECONDS = 10.0
_NUMBER_TYPES = frozenset({"Int64", "UInt64", "Double"})
_TABLES = {"events": "events", "persons": "persons"}
_lock = threading.Lock()
# team -> (data version, when sampled, {table: numeric keys}, {table: every key seen})
_known: dict[int, tuple[int, float, dict[str, frozenset[str]], dict[str, frozenset[str]]]] = {}


def is_numeric(types: Iterable[str]) -> bool:
    """Whether JSON types seen for one key make it a number (``Null`` values do not count either way)."""
    seen = set(types) - {"Null"}
    return bool(seen) and seen <= _NUMBER_TYPES


def _sample_sql(table: str, team_id: int) -> str:
    # No ORDER BY: a sort would read every row of the project; the first parts read are a fair sample.
    return (
        "SELECT key, groupUniqArray(toString(JSONType(properties, key))) AS types "
        f"FROM (SELECT properties FROM {table} WHERE team_id = {int(team_id)} LIMIT {SAMPLE_ROWS}) "
        "ARRAY JOIN JSONExtractKeys(properties) AS key GROUP BY key"
    )


def _compute(engine: Any, team_id: int) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    numeric: dict[str, frozenset[str]] = {}
    keys: dict[str, frozenset[str]] = {}
    for hogql_table, table in _TABLES.items():
        rows = engine.execute(_sample_sql(table, team_id)).to_pylist()
        numeric[hogql_table] = frozenset(row["key"] for row in rows if is_numeric(row["types"]))
        keys[hogql_table] = frozenset(row["key"] for row in rows)
    return numeric, keys


def _sample(engine: Any, team_id: int) -> tuple[dict[str, frozenset[str]], dict[str, frozenset[str]]]:
    version = data_version(engine)
    with _lock:
        cached = _known.get(team_id)
    if cached is not None:
        known_version, taken, numeric, keys = cached
        # a project that had no properties yet is sampled again as soon as anything changed
        recent = time.monotonic() - taken < REFRESH_SECONDS and any(keys.values())
        if known_version == version or recent:
            return numeric, keys
    numeric, keys = _compute(engine, team_id)
    with _lock:
        _known[team_id] = (version, time.monotonic(), numeric, keys)
    return numeric, keys


def numeric_properties(engine: Any, team_id: int) -> dict[str, frozenset[str]]:
    """HogQL table -> keys of ``properties`` whose values are numbers in project ``team_id``'s data."""
    return _sample(engine, team_id)[0]


def sampled_keys(engine: Any, team_id: int) -> dict[str, frozenset[str]]:
    """HogQL table (``events``, ``persons``) -> every key of ``properties`` in project ``team_id``'s sample."""
    return _sample(engine, team_id)[1]
