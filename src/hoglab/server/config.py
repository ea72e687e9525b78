"""The service's settings, from command-line arguments and ``HOGLAB_*`` environment variables."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

__all__ = ["ServerConfig", "default_data_dir", "parse_bytes"]


def default_data_dir() -> Path:
    """``$HOGLAB_DATA_DIR``, else the per-user data directory (``~/.local/share/hoglab`` on Linux)."""
    env = os.environ.get("HOGLAB_DATA_DIR")
    if env:
        return Path(env).expanduser()
    try:
        from platformdirs import user_data_dir
    except ImportError:  # pragma: no cover - platformdirs ships with the [server] extra
        return Path.home() / ".local" / "share" / "hoglab"
    return Path(user_data_dir("hoglab", appauthor=False))


def _env_int(name: str, default: int) -> int:
    """A positive integer variable: 0 would mean "no time limit" to ClickHouse and "no worker" to the job pool."""
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{name} must be an integer, got {raw!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {raw!r}")
    return value


def _env_fraction(name: str, raw: str) -> float:
    """A share in (0, 1], e.g. ``0.5``."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number such as 0.5, got {raw!r}") from None
    if not 0 < value <= 1:
        raise ValueError(f"{name} must be more than 0 and at most 1, got {raw!r}")
    return value


def _env_seconds(name: str, raw: str) -> float:
    """A positive number of seconds, e.g. ``2`` or ``0.5``."""
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value


def _env_off(name: str) -> bool:
    """Whether the switch ``name`` is set to ``0``, ``off``, ``false`` or ``no`` (any case); unset means on."""
    return os.environ.get(name, "").lower() in {"0", "off", "false", "no"}


_BYTE_UNITS = {"": 1, "k": 1000, "m": 1000**2, "g": 1000**3, "t": 1000**4,
               "ki": 1024, "mi": 1024**2, "gi": 1024**3, "ti": 1024**4}  # fmt: skip


def parse_bytes(text: str | int, what: str = "a size") -> int:
    """A byte count from ``8589934592``, ``8G`` (10^9) or ``8GiB`` (2^30); 0 means "no limit" to ClickHouse.

    >>> parse_bytes("8GiB"), parse_bytes("500M"), parse_bytes(1024)
    (8589934592, 500000000, 1024)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        value = text
    else:
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]i?)?b?\s*", str(text), re.I | re.ASCII)
        if match is None:
            raise ValueError(f"{what} must be a number of bytes such as 8589934592, 8G or 8GiB, got {text!r}")
        value = int(float(match.group(1)) * _BYTE_UNITS[(match.group(2) or "").lower()])
    if value < 0:
        raise ValueError(f"{what} must not be negative, got {text!r}")
    return value


@dataclass(frozen=True)
class ServerConfig:
    """Everything the service needs to start. Rates are ``"<n>/<second|minute|hour|day>"`` strings."""

    data_dir: Path = field(default_factory=default_data_dir)
    clickhouse_url: str | None = None
    # Per personal API key, as PostHog: every endpoint (burst + sustained) and Create query on top.
    rate_limit_burst: str = "480/minute"
    rate_limit_sustained: str = "4800/hour"
    query_rate_limit: str = "120/hour"
    # Action writes compile the action: their own bucket instead of the default ones (http/ratelimit.py).
    action_write_rate_limit: str = "60/minute"
    rate_limits_enabled: bool = True
    # Engine guard rails applied to every user query (GROUP BY/ORDER BY spill to disk past half the memory).
    max_execution_time: int = 60
    max_memory_usage: int = 4 * 1024**3
    # The process's memory budget (engine/memory.py; 0: two thirds of the machine's memory) and each project's
    # share of it; one query's max_memory_usage is never more than its project's part.
    memory_budget: int = 0
    project_memory_share: float = 0.5
    # Compiling one HogQL statement: CPU seconds, and bytes of SQL printed (translate/budget.py).
    max_compile_seconds: float = 3.0
    max_compiled_sql_bytes: int = 262_144
    # Steps and property filters the actions one query names may expand to, in all (translate/budget.py).
    max_action_filters: int = 1_000
    # Event and person properties the compiler reads most become materialized columns, up to
    # materialize_max_columns per table and materialize_project_columns per project and table (engine/autoprops.py).
    auto_materialize: bool = True
    materialize_interval_seconds: int = 300
    materialize_min_uses: int = 20
    materialize_max_columns: int = 20
    materialize_project_columns: int = 10
    # An answer (sync, async or cached) above this many bytes is a 400 naming the limit (0: none).
    max_result_bytes: int = 64 * 1024**2
    # The same for an all-rows Arrow answer (POST /query/arrow/), made for large exports: larger by default.
    max_bulk_bytes: int = 1024**3
    # Fair use of the engine (query/fairness.py): queries running at once per project and per key (half the
    # read pool), async jobs waiting per project; off only to measure what one project can do to the others.
    fair_share: bool = True
    project_query_slots: int = 4
    project_async_queue: int = 32
    # Capture (ingest/writer.py): a project with more events than this waiting is written a slice of this many
    # at a time, in turn with the other projects' requests, so its big batches cannot hold up their small ones.
    capture_slice_events: int = 5_000
    # Events one capture request may carry (ingest/budget.py); what it holds is charged to the memory budget.
    capture_max_events: int = 200_000
    # A metric's timeseries (experiments/metric/timeseries.py): days computed, recalculations of one experiment
    # pending or running at once.
    timeseries_max_days: int = 366
    timeseries_max_active: int = 2
    # Async queries: worker threads in this process, and how long a status is kept.
    query_workers: int = 4
    query_status_ttl_seconds: int = 20 * 60
    experiment_results_ttl_seconds: int = 60 * 60

    @classmethod
    def from_env(cls, **overrides: Any) -> ServerConfig:
        """Defaults, then ``HOGLAB_*`` variables, then explicit ``overrides`` (``None`` values are skipped)."""
        env: dict[str, Any] = {}
        if url := os.environ.get("HOGLAB_CLICKHOUSE_URL"):
            env["clickhouse_url"] = url
        for name, key in (
            ("HOGLAB_RATE_LIMIT_BURST", "rate_limit_burst"),
            ("HOGLAB_RATE_LIMIT_SUSTAINED", "rate_limit_sustained"),
            ("HOGLAB_QUERY_RATE_LIMIT", "query_rate_limit"),
            ("HOGLAB_ACTION_WRITE_RATE_LIMIT", "action_write_rate_limit"),
        ):
            if value := os.environ.get(name):
                env[key] = value
        if _env_off("HOGLAB_RATE_LIMITS"):
            env["rate_limits_enabled"] = False
        env["max_execution_time"] = _env_int("HOGLAB_MAX_EXECUTION_TIME", cls.max_execution_time)
        if _env_off("HOGLAB_AUTO_MATERIALIZE"):
            env["auto_materialize"] = False
        for name, key in (
            ("HOGLAB_MATERIALIZE_INTERVAL", "materialize_interval_seconds"),
            ("HOGLAB_MATERIALIZE_MIN_USES", "materialize_min_uses"),
            ("HOGLAB_MATERIALIZE_MAX_COLUMNS", "materialize_max_columns"),
            ("HOGLAB_MATERIALIZE_PROJECT_COLUMNS", "materialize_project_columns"),
        ):
            env[key] = _env_int(name, getattr(cls, key))
        if memory := os.environ.get("HOGLAB_MAX_MEMORY_USAGE"):
            env["max_memory_usage"] = parse_bytes(memory, "HOGLAB_MAX_MEMORY_USAGE")
        if budget := os.environ.get("HOGLAB_MEMORY_BUDGET"):
            env["memory_budget"] = parse_bytes(budget, "HOGLAB_MEMORY_BUDGET")
        if share := os.environ.get("HOGLAB_PROJECT_MEMORY_SHARE"):
            env["project_memory_share"] = _env_fraction("HOGLAB_PROJECT_MEMORY_SHARE", share)
        if seconds := os.environ.get("HOGLAB_MAX_COMPILE_SECONDS"):
            env["max_compile_seconds"] = _env_seconds("HOGLAB_MAX_COMPILE_SECONDS", seconds)
        if sql_bytes := os.environ.get("HOGLAB_MAX_COMPILED_SQL_BYTES"):
            env["max_compiled_sql_bytes"] = parse_bytes(sql_bytes, "HOGLAB_MAX_COMPILED_SQL_BYTES")
        if result_bytes := os.environ.get("HOGLAB_MAX_RESULT_BYTES"):
            env["max_result_bytes"] = parse_bytes(result_bytes, "HOGLAB_MAX_RESULT_BYTES")
        if bulk_bytes := os.environ.get("HOGLAB_MAX_BULK_BYTES"):
            env["max_bulk_bytes"] = parse_bytes(bulk_bytes, "HOGLAB_MAX_BULK_BYTES")
        env["max_action_filters"] = _env_int("HOGLAB_MAX_ACTION_FILTERS", cls.max_action_filters)
        env["query_workers"] = _env_int("HOGLAB_QUERY_WORKERS", cls.query_workers)
        env["project_query_slots"] = _env_int("HOGLAB_PROJECT_QUERY_SLOTS", cls.project_query_slots)
        env["project_async_queue"] = _env_int("HOGLAB_PROJECT_ASYNC_QUEUE", cls.project_async_queue)
        if _env_off("HOGLAB_FAIR_SHARE"):
            env["fair_share"] = False
        env["capture_slice_events"] = _env_int("HOGLAB_CAPTURE_SLICE_EVENTS", cls.capture_slice_events)
        env["capture_max_events"] = _env_int("HOGLAB_CAPTURE_MAX_EVENTS", cls.capture_max_events)
        env["timeseries_max_days"] = _env_int("HOGLAB_TIMESERIES_MAX_DAYS", cls.timeseries_max_days)
        env["timeseries_max_active"] = _env_int("HOGLAB_TIMESERIES_MAX_ACTIVE", cls.timeseries_max_active)
        config = cls(**env)
        given = {k: v for k, v in overrides.items() if v is not None}
        if "data_dir" in given:
            given["data_dir"] = Path(given["data_dir"]).expanduser()
        return replace(config, **given)
