"""When a request is tried again, and how long the client waits first.

Policy (documented in docs/client.md):

* **429** (throttled): retried for every method, since PostHog refuses a throttled request before running it.
  The wait is the answer's ``Retry-After`` (seconds or an HTTP date); without one, the jittered backoff below.
  A ``Retry-After`` longer than ``max_retry_after`` is not waited for: :class:`~hoglab.RateLimited` at once.
* **Connection never made** (connect error or connect timeout): retried for every method (nothing was sent).
* **Other transport errors** (read timeout, dropped connection) and **5xx**: retried only for idempotent requests,
  GET, HEAD, OPTIONS, PUT, DELETE, and ``POST /query`` (read-only: it needs only ``query:read``; async submits
  carry a ``client_query_id``, which PostHog de-duplicates). For ``POST /query`` only 502 and 503 are retried: a
  500 is a ClickHouse error and a 504 a query that hit its time limit, both of which would recur.
  PATCH and other POSTs are never retried after the request may have reached the server.
* Waits: ``min(max_backoff, backoff * 2**attempt)``, jittered to between half and all of that (so many clients
  do not come back in step); at most ``max_retries`` retries.
"""

from __future__ import annotations

import email.utils
import random
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Protocol

import httpx

__all__ = ["Clock", "RetryPolicy", "SystemClock", "parse_retry_after"]

IDEMPOTENT_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


class Clock(Protocol):
    """Time as the client sees it: replaced by a fake clock in tests so no test sleeps."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    """The real clock."""

    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class RetryPolicy:
    """How many times and how long to retry; see the module docstring for which requests qualify.

    >>> RetryPolicy(backoff=1.0, max_backoff=8.0).delay(10, rng=random.Random(0)) <= 8.0
    True
    """

    max_retries: int = 3
    backoff: float = 0.5
    max_backoff: float = 30.0
    max_retry_after: float = 120.0
    retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({500, 502, 503, 504}))
    query_retry_statuses: frozenset[int] = field(default_factory=lambda: frozenset({502, 503}))

    def delay(self, attempt: int, rng: random.Random | None = None) -> float:
        """The jittered wait before retry number ``attempt`` (0-based)."""
        ceiling = min(self.max_backoff, self.backoff * (2**attempt))
        return (rng or random).uniform(ceiling / 2, ceiling)

    def retries_transport_error(self, exc: httpx.TransportError, idempotent: bool) -> bool:
        """Whether a transport error is worth another try for this request."""
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
            return True  # the request never left: safe for any method
        return idempotent and isinstance(exc, httpx.TimeoutException | httpx.NetworkError | httpx.RemoteProtocolError)

    def retries_status(self, status: int, idempotent: bool, query_endpoint: bool) -> bool:
        """Whether an error status is worth another try for this request."""
        if status == 429:
            return True
        if not idempotent:
            return False
        statuses = self.query_retry_statuses if query_endpoint else self.retry_statuses
        return status in statuses


def parse_retry_after(value: str | None, now: datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: delta-seconds or an HTTP date; ``None`` when absent or unreadable.

    >>> parse_retry_after("27"), parse_retry_after(None), parse_retry_after("soon")
    (27.0, None, None)
    >>> parse_retry_after("Sun, 01 Jun 2025 12:00:30 GMT", now=datetime(2025, 6, 1, 12, 0, tzinfo=UTC))
    30.0
    """
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())
