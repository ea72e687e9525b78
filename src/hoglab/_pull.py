"""``hoglab pull``: a local, uncapped copy of a PostHog (or hoglab) project, kept fresh by incremental pulls.

It reads the remote through the same API a notebook uses (:class:`hoglab.Client`: retries, 429 and
``Retry-After``) and writes into a local hoglab data dir (``hoglab.server.mirror.Mirror``):

* events by keyset pages on ``(timestamp, uuid)`` under the 10,000-row cap (PostHog refuses OFFSET for personal
  keys), each page stored before the watermark moves past it;
* persons and their distinct ids, then feature flags, cohorts and experiments through the REST endpoints;
* at most ``rate`` queries (``"120/hour"``, the seed contract's limit) by itself, with the expected time said
  before it starts (docs/pull.md has the arithmetic);
* a second run continues from the watermark, re-reading ``lookback`` of events before it so late-arriving ones are
  caught; events already held are skipped by uuid, so a killed or repeated pull loses and doubles nothing.

Exports (PostHog's batch exports, Parquet or JSONL files under a folder) go through the same path:
``pull(..., from_export="exports/")`` reads each file once and then tops up through the API.

>>> report = pull("https://eu.posthog.com", 12345, data_dir="mirror/")  # doctest: +SKIP
>>> report.events_copied, report.local_project_id  # doctest: +SKIP
(1204331, 1)
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .client import Client
from .errors import ConfigurationError, InvalidArgument

if TYPE_CHECKING:
    from .local import LocalService
    from .server.mirror import Mirror

__all__ = ["PullPlan", "PullReport", "pull"]

PAGE_ROWS = 10_000
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day)\s*$")
_PERIOD = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_EVENT_COLUMNS = ("uuid", "event", "distinct_id", "person_id", "timestamp", "properties", "elements_chain",
                  "created_at")  # fmt: skip
_EVENTS_PAGE = (
    "SELECT toString(uuid) AS uuid, event, distinct_id, toString(person_id) AS person_id, timestamp, properties,"
    " elements_chain, created_at FROM events"
    " WHERE timestamp >= toDateTime64({since}, 6, 'UTC')"
    " AND (timestamp > toDateTime64({after}, 6, 'UTC')"
    " OR (timestamp = toDateTime64({after}, 6, 'UTC') AND toString(uuid) > {after_uuid}))"
    f" ORDER BY timestamp, toString(uuid) LIMIT {PAGE_ROWS}"
)


def _seconds_per_query(rate: str) -> float:
    match = _RATE.match(rate)
    if not match or int(match[1]) < 1:
        raise InvalidArgument(f"rate: {rate!r} is not like '120/hour' (a positive count per second|minute|hour|day)")
    return _PERIOD[match[2]] / int(match[1])


def _duration(text: str, argument: str) -> timedelta:
    match = _DURATION.match(text)
    if not match:
        raise InvalidArgument(f"{argument}: {text!r} is not like '1h', '30m' or '2d'")
    return timedelta(seconds=int(match[1]) * _SECONDS[match[2]])


def _moment_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


@dataclass(frozen=True)
class PullPlan:
    """What a pull will read, said before it starts: events to read, queries they take, time at the rate."""

    events: int
    queries: int
    seconds: float

    def __str__(self) -> str:
        minutes = self.seconds / 60
        span = f"{minutes:,.0f} min" if minutes >= 1 else f"{self.seconds:,.0f} s"
        return f"{self.events:,} events to read in {self.queries:,} queries: about {span} at the rate limit"


@dataclass
class PullReport:
    """What one pull did."""

    local_project_id: int
    plan: PullPlan | None = None
    events_fetched: int = 0
    events_copied: int = 0
    files_read: int = 0
    persons: int = 0
    distinct_ids: int = 0
    flags: int = 0
    cohorts: int = 0
    experiments: int = 0
    queries: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        rate = f" ({self.events_fetched / self.seconds:,.0f} rows/s)" if self.seconds > 0 else ""
        return (
            f"project {self.local_project_id}: {self.events_copied:,} new events of {self.events_fetched:,} read"
            f"{f' and {self.files_read} export files' if self.files_read else ''}, {self.persons:,} persons,"
            f" {self.flags} flags, {self.cohorts} cohorts, {self.experiments} experiments;"
            f" {self.queries} queries in {self.seconds:,.1f} s{rate}"
        )


class _Pacer:
    """At most one query per ``interval`` seconds: the pull stays under the remote's rate limit by itself."""

    def __init__(self, interval: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.interval = interval
        self.clock = clock
        self.count = 0
        self._next = 0.0

    def wait(self) -> None:
        now = self.clock()
        if now < self._next:
            time.sleep(self._next - now)
        self._next = max(now, self._next) + self.interval
        self.count += 1


def _local(service: LocalService | None, data_dir: str | Path | None) -> tuple[Any, Any, Callable[[], None]]:
    """The store and engine to write into, and how to let go of them."""
    if service is not None:
        return service.state.store, service.state.engine, lambda: None
    from .server.config import ServerConfig
    from .server.engine import open_engine
    from .server.store import Store

    config = ServerConfig.from_env(data_dir=data_dir)
    store = Store.open_at(config.data_dir)
    try:
        engine = open_engine(config)
    except Exception as exc:
        store.close()
        raise ConfigurationError(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it, or pull from Python into the running service: hoglab.pull(..., service=service)"
        ) from None

    def close() -> None:
        engine.close()
        store.close()

    return store, engine, close


def _rows(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    columns = list(answer.get("columns") or [])
    return [dict(zip(columns, row, strict=True)) for row in answer.get("results") or []]


class _Remote:
    """The remote project, read through the client with the pacer in front of every query."""

    def __init__(self, client: Client, pacer: _Pacer) -> None:
        self.client = client
        self.pacer = pacer

    def hogql(self, sql: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        from .client._query import execute
        from .schema import HogQLQuery

        self.pacer.wait()
        return _rows(execute(self.client, HogQLQuery(query=sql, values=dict(values)), refresh="force_blocking"))

    def count_events(self, since: datetime) -> int:
        rows = self.hogql("SELECT count() AS n FROM events WHERE timestamp >= toDateTime64({since}, 6, 'UTC')",
                          {"since": _moment_text(since)})  # fmt: skip
        return int(rows[0]["n"]) if rows else 0

    def event_pages(self, since: datetime, after: datetime, after_uuid: str) -> Iterator[list[dict[str, Any]]]:
        while True:
            values = {"since": _moment_text(since), "after": _moment_text(after), "after_uuid": after_uuid}
            page = self.hogql(_EVENTS_PAGE, values)
            if not page:
                return
            yield page
            if len(page) < PAGE_ROWS:
                return
            from .server.mirror import parse_moment

            after, after_uuid = parse_moment(page[-1]["timestamp"]), str(page[-1]["uuid"])

    def keyset(self, sql: str, key: str) -> Iterator[list[dict[str, Any]]]:
        after = ""
        while True:
            page = self.hogql(sql + f" LIMIT {PAGE_ROWS}", {"after": after})
            if page:
                yield page
            if len(page) < PAGE_ROWS:
                return
            after = str(page[-1][key])

    def rest(self, resource: str, **params: Any) -> list[dict[str, Any]]:
        return self.client.paginate(self.client.path(f"{resource}/"), params or None)


def _mirror_events(remote: _Remote, mirror: Mirror, report: PullReport, since: datetime, lookback: timedelta,
                   progress: bool, say: Callable[[str], None]) -> None:  # fmt: skip
    source = mirror.refresh()
    after, after_uuid = since, ""
    if source.events_after_timestamp is not None:
        # Re-read the look-back window before the watermark: events that arrived late land there.
        after = max(since, source.events_after_timestamp - lookback)
    count = remote.count_events(after)
    pages = math.ceil(count / PAGE_ROWS)
    report.plan = PullPlan(count, pages, pages * remote.pacer.interval)
    say(str(report.plan))
    from tqdm.auto import tqdm

    with tqdm(total=count, unit="rows", unit_scale=True, desc="events", disable=not progress, delay=0.5) as bar:
        for page in remote.event_pages(since, after, after_uuid):
            copied = mirror.write_events(page)
            last = page[-1]
            from .server.mirror import parse_moment

            mirror.advance(parse_moment(last["timestamp"]), str(last["uuid"]), copied)
            report.events_fetched += len(page)
            report.events_copied += copied
            bar.update(len(page))


def _mirror_persons(remote: _Remote, mirror: Mirror, report: PullReport) -> None:
    # Persons change (properties, merges), so each pull copies them whole, as the newest version of each.
    persons = [row for page in remote.keyset(
        "SELECT toString(id) AS id, created_at, properties, is_identified FROM persons"
        " WHERE toString(id) > {after} ORDER BY toString(id)", "id") for row in page]  # fmt: skip
    ids = [row for page in remote.keyset(
        "SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids"
        " WHERE distinct_id > {after} ORDER BY distinct_id", "distinct_id") for row in page]  # fmt: skip
    report.persons, report.distinct_ids = mirror.write_persons(persons, ids)


def _mirror_objects(remote: _Remote, mirror: Mirror, report: PullReport) -> None:
    experiments = {e["id"]: e for archived in ("false", "true") for e in remote.rest("experiments", archived=archived)}
    for experiment in experiments.values():
        mirror.write_experiment(experiment)
    report.experiments = len(experiments)
    flags = remote.rest("feature_flags")
    for flag in flags:
        mirror.write_flag(flag)
    report.flags = len(flags)
    cohorts = remote.rest("cohorts")
    for cohort in cohorts:
        mirror.write_cohort(cohort)
    report.cohorts = len(cohorts)


def pull(
    host: str | None = None,
    project: int | str | None = None,
    *,
    key: str | None = None,
    key_env: str = "POSTHOG_PERSONAL_API_KEY",
    into: int | None = None,
    since: str | datetime | None = None,
    data_dir: str | Path | None = None,
    service: LocalService | None = None,
    rate: str = "120/hour",
    lookback: str = "1h",
    from_export: str | Path | None = None,
    persons: bool = True,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
    client: Client | None = None,
) -> PullReport:
    """Copy a remote project (PostHog or hoglab at ``host``, project id ``project``) into a local data dir.

    The key comes from ``key`` or the ``key_env`` variable (a personal API key with ``query:read``,
    ``experiment:read``, ``feature_flag:read`` and ``cohort:read``). The copy goes into ``data_dir`` (default:
    ``$HOGLAB_DATA_DIR``) or into a ``service`` started in this process (``hoglab.local.start_local_service``);
    ``into`` names an existing local project, else the mirror's own project is made (and found again next time).
    ``since``: the earliest events to copy (a date or ISO text; default: everything). ``rate``: queries the pull
    allows itself. ``from_export``: a folder of batch-export files read first. ``say`` receives progress lines.
    ``client``: a ready :class:`hoglab.Client` of the remote (its host and project are used), e.g. with a
    transport of your own.
    """
    say = say or (lambda line: None)
    if client is not None:
        host, project = client.host, client.project_id
    if from_export is None and (host is None or project is None):
        raise ConfigurationError("pull needs --from HOST and --project ID (or an export folder)")
    interval = _seconds_per_query(rate)
    window = _duration(lookback, "lookback")
    start = datetime(1970, 1, 1, tzinfo=UTC)
    if since is not None:
        from .server.mirror import parse_moment

        try:
            start = parse_moment(since)
        except ValueError:
            raise InvalidArgument(f"since: {since!r} is not a date or an ISO datetime") from None
    secret = key or os.environ.get(key_env)
    if client is None and host is not None and not secret:
        raise ConfigurationError(f"no personal API key for {host}: set {key_env} (or name another variable)")
    began = time.monotonic()
    store, engine, close = _local(service, data_dir)
    try:
        from .server.mirror import Mirror

        if client is None and host is not None:
            client = Client(host, secret, project, progress=False)
        name, timezone = f"Export of {from_export}", "UTC"
        if client is not None:
            info = client.get_json(client.path(""))
            name, timezone = str(info.get("name") or f"Mirror of {project}"), str(info.get("timezone") or "UTC")
        origin = host.rstrip("/") if host is not None else f"export:{Path(str(from_export)).resolve()}"
        mirror = Mirror.open(store, engine, host=origin, remote_project_id=int(project or 0), name=name,
                             timezone=timezone, into=into)  # fmt: skip
        report = PullReport(mirror.project.id)
        if from_export is not None:
            from ._pull_export import read_export

            read_export(Path(from_export), mirror, report, since=start, progress=progress, say=say)
        if client is not None:
            remote = _Remote(client, _Pacer(interval))
            with client:
                _mirror_events(remote, mirror, report, start, window, progress, say)
                if persons:
                    _mirror_persons(remote, mirror, report)
                _mirror_objects(remote, mirror, report)
            report.queries = remote.pacer.count
        report.seconds = time.monotonic() - began
        say(str(report))
        return report
    finally:
        close()
