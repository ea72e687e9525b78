"""The Query API's result cache: answers of recent queries, in memory, bounded, per process.

PostHog caches every query answer (in Redis) under ``cache_<team>_<hash of the query>`` and serves it again while
it is "fresh" (``cache_target_age``; HogQL is cached like a daily insight). hoglab keeps a small LRU in the
service process instead, bounded by entry count and bytes, and adds one rule PostHog does not need: an entry
is only served while the engine's data is unchanged (``data_version``: chDB's count of finished writes, or a
ClickHouse server's parts), so events loaded a second ago are never answered from a stale cache. Freshness then
only matters for statements that depend on the clock (``now()``, relative date ranges).

>>> from datetime import UTC, datetime
>>> cache = QueryCache(max_entries=2)
>>> now = datetime(2025, 6, 1, tzinfo=UTC)
>>> cache.put("cache_1_ab", b'"results":[]', version=7, now=now)
>>> entry = cache.get("cache_1_ab", version=7)
>>> entry.body, entry.last_refresh == now
(b'"results":[]', True)
>>> cache.get("cache_1_ab", version=8) is None   # the data changed since: a miss
True
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import orjson

from ..engine.ddl import BOOKKEEPING_TABLES

if TYPE_CHECKING:
    from ..engine.base import Engine

__all__ = [
    "LAZY_TARGET_AGE",
    "NEXT_CLIENT_REFRESH",
    "TARGET_AGE",
    "CacheEntry",
    "QueryCache",
    "cache_key",
    "data_version",
]

TARGET_AGE = timedelta(minutes=15)
"""How long an answer is fresh (PostHog's for HogQL: ``cache_target_age`` = last refresh + 15 minutes)."""
LAZY_TARGET_AGE = timedelta(hours=6)
"""Freshness for ``refresh: "lazy_async"`` (PostHog's longer "lazy" threshold)."""
NEXT_CLIENT_REFRESH = timedelta(minutes=1)
"""``next_allowed_client_refresh`` = last refresh + this (a hint to clients; nothing enforces it)."""

# Every active part of every table of the events database: any insert or merge makes new parts (part names carry
# block numbers that only grow), so the XOR of their names' hashes changes whenever the data may have changed.
_VERSION_SQL = (
    "SELECT groupBitXor(cityHash64(database, table, name)) AS version "
    "FROM system.parts WHERE database = currentDatabase() AND active "
    f"AND table NOT IN ({', '.join(repr(t) for t in BOOKKEEPING_TABLES)})"
)


def data_version(engine: Engine) -> int:
    """A number that changes whenever the engine's data may have changed.

    chDB counts its own writes (the process owns the data, so that is free); a ClickHouse server, which other
    processes may write to, is asked for its parts (one read of ``system.parts``, ~2 ms).
    """
    count = getattr(engine, "write_count", None)
    if isinstance(count, int):
        return count
    table = engine.execute(_VERSION_SQL)
    value = table.column("version")[0].as_py() if table.num_rows else 0
    return int(value or 0)


def cache_key(team_id: int, query: Mapping[str, Any], *, timezone: str) -> str:
    """PostHog's shape, ``cache_<team>_<sha256>``, of the query as sent (keys sorted) and the project's zone.

    >>> cache_key(1, {"kind": "HogQLQuery", "query": "select 1"}, timezone="UTC")[:8]
    'cache_1_'
    """
    try:
        canonical = orjson.dumps([query, timezone], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # integers beyond 64 bits (a value of 10**30): the slower encoder takes any JSON
        canonical = json.dumps([query, timezone], sort_keys=True, default=str).encode()
    digest = hashlib.sha256(canonical).hexdigest()
    return f"cache_{int(team_id)}_{digest}"


@dataclass(frozen=True)
class CacheEntry:
    """``body``: the answer's JSON members without braces and without the cache fields (added per request)."""

    body: bytes
    last_refresh: datetime
    version: int

    def age(self, now: datetime) -> timedelta:
        return now - self.last_refresh


class QueryCache:
    """A thread-safe LRU of answers. Entries larger than ``max_entry_bytes`` are not kept."""

    def __init__(
        self, *, max_entries: int = 256, max_bytes: int = 64 * 1024**2, max_entry_bytes: int = 8 * 1024**2
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.max_entry_bytes = max_entry_bytes
        self._entries: OrderedDict[str, CacheEntry] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self._overrides: dict[tuple[int, int], bool] = {}

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def size_bytes(self) -> int:
        return self._bytes

    def get(self, key: str, *, version: int) -> CacheEntry | None:
        """The entry for ``key`` computed on the same data, whatever its age (callers judge freshness)."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is None:
                return None
            if entry.version != version:
                self._drop(key)
                return None
            self._entries.move_to_end(key)
            return entry

    def put(self, key: str, body: bytes, *, version: int, now: datetime) -> None:
        if len(body) > self.max_entry_bytes:
            return
        with self._lock:
            if key in self._entries:
                self._drop(key)
            self._entries[key] = CacheEntry(body, now, version)
            self._bytes += len(body)
            while self._entries and (len(self._entries) > self.max_entries or self._bytes > self.max_bytes):
                self._drop(next(iter(self._entries)))

    def person_overrides(self, team_id: int, version: int, compute: Callable[[], bool]) -> bool:
        """Whether the project has merged persons (``runners.has_person_overrides``), asked once per data version."""
        key = (int(team_id), version)
        with self._lock:
            known = self._overrides.get(key)
        if known is not None:
            return known
        value = compute()
        with self._lock:
            if len(self._overrides) >= 4096:
                self._overrides.clear()
            self._overrides[key] = value
        return value

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._overrides.clear()
            self._bytes = 0

    def _drop(self, key: str) -> None:
        entry = self._entries.pop(key)
        self._bytes -= len(entry.body)
