"""Reading the remote project through the API a notebook uses (:class:`hoglab.Client`: retries, 429 and
``Retry-After``), paced under its query rate, and copying what it reads into the local mirror: events by keyset
pages on ``(timestamp, uuid)`` under the 10,000-row cap (PostHog refuses OFFSET for personal keys), persons and
their distinct ids, the group types (``/groups_types/``) and groups (HogQL keyset pages over ``groups``), then
actions, feature flags, cohorts and experiments through the REST endpoints.

Actions come before experiments: experiments name them by the remote's ids, which the mirror turns into the local
copies'. PostHog lists live actions only, so an action an experiment names that the listing lacks (a deleted one,
which PostHog's queries still read) is fetched by id.

>>> seconds_per_query("120/hour")
30.0
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..client import Client
from ..errors import InvalidArgument, NotFound, PermissionDenied
from .report import PullPlan, PullReport

if TYPE_CHECKING:
    from ..server.mirror import Mirror

__all__ = [
    "PAGE_ROWS",
    "Pacer",
    "Remote",
    "action_ids",
    "mirror_events",
    "mirror_groups",
    "mirror_objects",
    "mirror_persons",
    "seconds_per_query",
]

PAGE_ROWS = 10_000
_RATE = re.compile(r"^\s*(\d+)\s*/\s*(second|minute|hour|day)\s*$")
_PERIOD = {"second": 1, "minute": 60, "hour": 3600, "day": 86400}
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



def seconds_per_query(rate: str) -> float:
    """Seconds between two queries at ``rate`` (``"120/hour"``)."""
    match = _RATE.match(rate)
    if not match or int(match[1]) < 1:
        raise InvalidArgument(f"rate: {rate!r} is not like '120/hour' (a positive count per second|minute|hour|day)")
    return _PERIOD[match[2]] / int(match[1])


def _moment_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class Pacer:
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


def _rows(answer: Mapping[str, Any]) -> list[dict[str, Any]]:
    columns = list(answer.get("columns") or [])
    return [dict(zip(columns, row, strict=True)) for row in answer.get("results") or []]


class Remote:
    """The remote project, read through the client with the pacer in front of every query."""

    def __init__(self, client: Client, pacer: Pacer) -> None:
        self.client = client
        self.pacer = pacer

    def hogql(self, sql: str, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        from ..client._query import execute
        from ..schema import HogQLQuery

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
            from ..server.mirror import parse_moment

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


def mirror_events(remote: Remote, mirror: Mirror, report: PullReport, since: datetime, lookback: timedelta,
                  progress: bool, say: Callable[[str], None]) -> None:  # fmt: skip
    """Copy the events from the watermark (less ``lookback``) on, page by page, moving the watermark per page."""
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
            from ..server.mirror import parse_moment

            mirror.advance(parse_moment(last["timestamp"]), str(last["uuid"]), copied)
            report.events_fetched += len(page)
            report.events_copied += copied
            bar.update(len(page))


def mirror_persons(remote: Remote, mirror: Mirror, report: PullReport) -> None:
    """Copy every person and distinct id."""
    # Persons change (properties, merges), so each pull copies them whole, as the newest version of each.
    persons = [row for page in remote.keyset(
        "SELECT toString(id) AS id, created_at, properties, is_identified FROM persons"
        " WHERE toString(id) > {after} ORDER BY toString(id)", "id") for row in page]  # fmt: skip
    ids = [row for page in remote.keyset(
        "SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids"
        " WHERE distinct_id > {after} ORDER BY distinct_id", "distinct_id") for row in page]  # fmt: skip
    report.persons, report.distinct_ids = mirror.write_persons(persons, ids)


def mirror_groups(remote: Remote, mirror: Mirror, report: PullReport) -> None:
    """Copy the group types (their indexes kept) and every group; a key without ``group:read`` (or a remote
    without groups) skips them, said in the report's errors."""
    from ..errors import NotFound, PermissionDenied

    try:
        types = remote.rest("groups_types")
    except (PermissionDenied, NotFound) as exc:
        report.errors.append(f"group types and groups not copied: {exc.detail or exc}")
        return
    report.group_types = mirror.write_group_types(types)
    if not types:
        return
    # One HogQL page per 10,000 groups, in (index, key) order; the key alone can't page across types.
    for page in remote.keyset(
        "SELECT concat(toString(index), ':', key) AS k, index, key, created_at, properties FROM groups"
        " WHERE concat(toString(index), ':', key) > {after} ORDER BY k", "k"):  # fmt: skip
        report.groups += mirror.write_groups(page)


def action_ids(objects: Any) -> set[int]:
    """The ids of the actions ``objects`` name (``ActionsNode`` ids, retention entities of type ``actions``).

    >>> sorted(action_ids([{"metrics": [{"source": {"kind": "ActionsNode", "id": 4}}],
    ...                     "exposure_criteria": {"exposure_config": {"kind": "ActionsNode", "id": 9}}}]))
    [4, 9]
    """
    found: set[int] = set()
    stack = [objects]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            named = node.get("kind") == "ActionsNode" or node.get("type") == "actions"
            if named and isinstance(node.get("id"), int) and not isinstance(node.get("id"), bool):
                found.add(int(node["id"]))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _actions(remote: Remote, wanted: set[int], say: Callable[[str], None]) -> list[dict[str, Any]]:
    """The remote's live actions, and the ``wanted`` ones it does not list (deleted), fetched by id."""
    try:
        listed = {int(a["id"]): a for a in remote.rest("actions")}
    except PermissionDenied:
        say("actions not copied: the key lacks the action:read scope (metrics naming actions will count nothing)")
        return []
    for action_id in sorted(wanted - set(listed)):
        try:
            listed[action_id] = remote.client.get_json(remote.client.path(f"actions/{action_id}/"))
        except NotFound:
            say(f"action {action_id} is named by an experiment but the remote has no such action")
    return list(listed.values())


def mirror_objects(remote: Remote, mirror: Mirror, report: PullReport,
                   say: Callable[[str], None] = lambda line: None) -> None:  # fmt: skip
    """Copy the actions, experiments (archived too), feature flags and cohorts."""
    experiments = {e["id"]: e for archived in ("false", "true") for e in remote.rest("experiments", archived=archived)}
    actions = _actions(remote, action_ids(list(experiments.values())), say)
    for action in actions:
        mirror.write_action(action)
    report.actions = len(actions)
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
