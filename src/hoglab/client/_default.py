"""A process-wide default client, so ``hoglab.read_hogql(sql)`` and the notebook magic need no setup."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from ._client import Client

__all__ = ["connect", "default_client", "read_hogql"]

_lock = threading.Lock()
_default: Client | None = None


def connect(
    host: str | None = None, api_key: str | None = None, project_id: int | str | None = None, **options: Any
) -> Client:
    """Create a :class:`Client` and make it the default for :func:`read_hogql` and the notebook layer."""
    global _default
    client = Client(host, api_key, project_id, **options)
    with _lock:
        previous, _default = _default, client
    if previous is not None:
        previous.close()
    return client


def default_client() -> Client:
    """The client set by :func:`connect`, else one configured from the environment (created once)."""
    global _default
    with _lock:
        if _default is None:
            _default = Client()
        return _default


def read_hogql(sql: str, client: Client | None = None, values: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """Run a HogQL statement and return a typed DataFrame, pandas-style (``pd.read_sql``'s shape).

    ``options`` are those of :meth:`Client.hogql` (``limit``, ``all_rows``, ``parse_json``, ``output``).

    >>> df = read_hogql("select 1 + 1 as two", client=client)  # client=None: the default client
    >>> int(df.loc[0, "two"]), df.attrs["hogql"]
    (2, 'SELECT 1 + 1 AS two LIMIT 101')
    """
    return (client or default_client()).hogql(sql, values, **options)
