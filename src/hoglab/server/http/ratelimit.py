"""Per-key rate limits as token buckets, PostHog's numbers by default (480/minute and 4,800/hour).

Each personal API key has one bucket per rate of a *group*: ``default`` (burst + sustained, every endpoint) and
``query`` (Create query, 120/hour: docs/api.md, "Rate limits"). A request must fit in every bucket of its group;
a refused request takes nothing, and the 429 says when the emptiest bucket will have room again (``Retry-After``).

>>> limiter = RateLimiter({"default": [Rate.parse("2/minute")]})
>>> limiter.acquire("key:1"), limiter.acquire("key:1"), limiter.acquire("key:1") > 0
(0.0, 0.0, True)
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import Throttled

if TYPE_CHECKING:
    from ..config import ServerConfig

__all__ = ["ACTION_WRITE_GROUP", "DEFAULT_GROUP", "QUERY_GROUP", "Rate", "RateLimiter", "query_rate_limited"]

DEFAULT_GROUP = "default"
QUERY_GROUP = "query"
ACTION_WRITE_GROUP = "action_write"
"""Creating, changing and deleting actions: each write compiles the action, so it has its own, lower rate."""

_PERIODS = {
    "s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0,
    "m": 60.0, "min": 60.0, "minute": 60.0, "minutes": 60.0,
    "h": 3600.0, "hour": 3600.0, "hours": 3600.0,
    "d": 86400.0, "day": 86400.0, "days": 86400.0,
}  # fmt: skip
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(\d*)\s*([a-z]+)\s*$")


@dataclass(frozen=True)
class Rate:
    """``count`` requests per ``period_seconds``."""

    count: int
    period_seconds: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """``"480/minute"``, ``"120/hour"``, ``"10/5s"``; ``ValueError`` says what is wrong.

        >>> Rate.parse("120/hour")
        Rate(count=120, period_seconds=3600.0)
        """
        match = _RATE.match(text.lower())
        if not match or match.group(3) not in _PERIODS:
            raise ValueError(f"a rate looks like '480/minute' (units: second, minute, hour, day), got {text!r}")
        count, multiple, unit = int(match.group(1)), int(match.group(2) or 1), match.group(3)
        if count < 1 or multiple < 1:
            raise ValueError(f"a rate needs at least 1 request per period, got {text!r}")
        return cls(count, multiple * _PERIODS[unit])


class _Bucket:
    __slots__ = ("tokens", "updated")

    def __init__(self, tokens: float, updated: float) -> None:
        self.tokens = tokens
        self.updated = updated


class RateLimiter:
    """Thread-safe token buckets per (identity, group, rate). ``enabled=False`` lets everything through."""

    def __init__(
        self,
        groups: Mapping[str, Sequence[Rate]],
        *,
        enabled: bool = True,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.groups = {name: tuple(rates) for name, rates in groups.items()}
        self.enabled = enabled
        self._clock = clock
        self._lock = threading.Lock()
        self._buckets: dict[tuple[str, str, int], _Bucket] = {}

    @classmethod
    def from_config(cls, config: ServerConfig) -> RateLimiter:
        return cls(
            {
                DEFAULT_GROUP: [Rate.parse(config.rate_limit_burst), Rate.parse(config.rate_limit_sustained)],
                QUERY_GROUP: [Rate.parse(config.query_rate_limit)],
                ACTION_WRITE_GROUP: [Rate.parse(getattr(config, "action_write_rate_limit", "60/minute"))],
            },
            enabled=config.rate_limits_enabled,
        )

    def acquire(self, identity: str, group: str = DEFAULT_GROUP) -> float:
        """Take one request from every bucket of ``group``: ``0.0`` if it fits, else seconds to wait (nothing taken)."""
        if not self.enabled:
            return 0.0
        rates = self.groups.get(group)
        if rates is None:
            raise KeyError(f"no rate-limit group {group!r}")
        with self._lock:
            now = self._clock()
            buckets: list[_Bucket] = []
            wait = 0.0
            for index, rate in enumerate(rates):
                refill = rate.count / rate.period_seconds
                bucket = self._buckets.get((identity, group, index))
                if bucket is None:
                    bucket = self._buckets[(identity, group, index)] = _Bucket(float(rate.count), now)
                bucket.tokens = min(float(rate.count), bucket.tokens + (now - bucket.updated) * refill)
                bucket.updated = now
                if bucket.tokens < 1.0:
                    wait = max(wait, (1.0 - bucket.tokens) / refill)
                buckets.append(bucket)
            if wait > 0:
                return wait
            for bucket in buckets:
                bucket.tokens -= 1.0
            return 0.0

    def check(self, identity: str, group: str = DEFAULT_GROUP) -> None:
        """``acquire`` or raise ``Throttled`` (429 with ``Retry-After``)."""
        wait = self.acquire(identity, group)
        if wait > 0:
            raise Throttled(wait)


def query_rate_limited(scope: str = "query:read") -> Callable[..., Any]:
    """The dependency of ``POST /query``: the key must hold ``scope``, and the ``query`` bucket (not the default
    ones, as PostHog picks one throttle set per request) is charged.

    >>> @router.post("/api/projects/{project_id}/query/")  # doctest: +SKIP
    ... def create_query(auth: AuthContext = Depends(query_rate_limited())): ...
    """
    from .auth import require_scope

    return require_scope(scope, throttle=QUERY_GROUP)
