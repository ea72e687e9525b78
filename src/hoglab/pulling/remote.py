"""Reading the remote project, paced under its query rate, and copying what it reads into the local mirror.

The remote is read through the API a notebook uses (:class:`hoglab.Client`: retries, 429 and ``Retry-After``),
every answer through :mod:`hoglab.pulling.answers`. What is copied: events by keyset pages on ``(timestamp, uuid)``
under the 10,000-row cap (PostHog refuses OFFSET for personal keys), persons and their distinct ids, the group
types (``/groups_types/``) and groups (HogQL keyset pages over ``groups``), then experiment holdouts, saved
metrics, actions, feature flags, cohorts and experiments through the REST endpoints.

A page is checked whole before any of it is stored, and it must move the keyset forward (rows in the order asked,
after the previous page's last): a remote that ignores the keyset would otherwise be read forever.

Actions are read with the experiments: experiments name them by the remote's ids, which the mirror turns into the
local copies'. PostHog lists live actions only, so an action an experiment names that the listing lacks (a deleted
one, which PostHog's queries still read) is fetched by id.

>>> seconds_per_query("120/hour")
30.0
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from ..client import Client
from ..errors import (
    AnswerTimeout,
    Description,
    HoglabError,
    InvalidArgument,
    NotFound,
    PermissionDenied,
    RemoteAnswerError,
)
from . import answers
from .answers import Shape
from .report import PullPlan, PullReport

if TYPE_CHECKING:
    from ..server.mirror import CheckedObjects, Mirror

__all__ = [
    "PAGE_ROWS",
    "Pacer",
    "Remote",
    "RemoteGroups",
    "RemoteObjects",
    "action_ids",
    "mirror_events",
    "mirror_groups",
    "mirror_persons",
    "read_groups",
    "read_objects",
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
_PERSONS = ("SELECT toString(id) AS id, created_at, properties, is_identified FROM persons"
            " WHERE toString(id) > {after} ORDER BY toString(id)")  # fmt: skip
_GROUPS = ("SELECT concat(toString(index), ':', key) AS k, index, key, created_at, properties FROM groups"
           " WHERE concat(toString(index), ':', key) > {after} ORDER BY k")  # fmt: skip
_DISTINCT_IDS = ("SELECT distinct_id, toString(person_id) AS person_id FROM person_distinct_ids"
                 " WHERE distinct_id > {after} ORDER BY distinct_id")  # fmt: skip


def seconds_per_query(rate: str) -> float:
    """Seconds between two queries at ``rate`` (``"120/hour"``)."""
    match = _RATE.match(rate)
    if not match or int(match[1]) < 1:
        raise InvalidArgument(f"rate: {rate!r} is not like '120/hour' (a positive count per second|minute|hour|day)")
    return _PERIOD[match[2]] / int(match[1])


def _moment_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S.%f")


class Pacer:
    """At most one query per ``interval`` seconds: the pull stays under the remote's rate limit by itself.

    With a ``deadline`` (a ``clock`` moment), a wait that would pass it is :class:`~hoglab.AnswerTimeout` at once.
    """

    def __init__(
        self, interval: float, clock: Callable[[], float] = time.monotonic, deadline: float | None = None
    ) -> None:
        self.interval = interval
        self.clock = clock
        self.deadline = deadline
        self.count = 0
        self._next = 0.0

    def wait(self) -> None:
        now = self.clock()
        if self.deadline is not None and max(now, self._next) >= self.deadline:
            raise AnswerTimeout("the pull's overall timeout passed before its next query")
        if now < self._next:
            time.sleep(self._next - now)
        self._next = max(now, self._next) + self.interval
        self.count += 1


class Remote:
    """The remote project, read through the client with the pacer in front of every query; every answer checked
    (:mod:`hoglab.pulling.answers`), every error naming its endpoint."""

    def __init__(self, client: Client, pacer: Pacer) -> None:
        self.client = client
        self.pacer = pacer

    def _endpoint(self, method: str, suffix: str, label: str | None = None) -> str:
        return f"{method} {self.client.path(suffix)}" + (f" ({label})" if label else "")

    def project(self) -> dict[str, Any]:
        """The remote project (``GET /api/projects/:id/``): its id, name and time zone."""
        endpoint = self._endpoint("GET", "")
        try:
            info = answers.PROJECT.read(answers.decode(self.client.request("GET", self.client.path(""))))
        except RemoteAnswerError as exc:
            raise exc.located(endpoint) from None
        if info["id"] != self.client.project_id:
            raise RemoteAnswerError("id", f"the project asked for, {self.client.project_id}", info["id"],
                                    endpoint=endpoint)  # fmt: skip
        return info

    def hogql(self, sql: str, values: Mapping[str, Any], shape: Shape, columns: Sequence[str], label: str) -> list[
        dict[str, Any]
    ]:
        """The rows of one HogQL query, each checked as ``shape``."""
        from ..client._jobs import new_query_id
        from ..schema import HogQLQuery, QueryRequest

        self.pacer.wait()
        endpoint = self._endpoint("POST", "query/", label)
        query = HogQLQuery(query=sql, values=dict(values))
        body = QueryRequest(query=query, refresh="force_blocking", client_query_id=new_query_id()).to_json_dict()
        try:
            answer = answers.decode(self.client.request("POST", self.client.path("query/"), json=body,
                                                        idempotent=True))  # fmt: skip
            return answers.table(self._completed(answer), shape, columns)
        except RemoteAnswerError as exc:
            raise exc.located(endpoint) from None

    def _completed(self, answer: Any) -> Any:
        """The answer with its rows: a blocking answer as it is; an answer the remote chose to run asynchronously
        (``query_status``) once it has completed."""
        if not isinstance(answer, dict) or "results" in answer or not isinstance(answer.get("query_status"), dict):
            return answer
        status = answer["query_status"]
        if status.get("complete") and isinstance(status.get("results"), dict):
            return status["results"]
        from ..client._jobs import QueryJob

        if not isinstance(status.get("id"), str) or not status["id"]:
            raise RemoteAnswerError("query_status.id", "the id of the query the remote runs", status.get("id"))
        try:
            return QueryJob(self.client, status["id"]).wait()
        except HoglabError:
            raise
        except (KeyError, TypeError, ValueError) as exc:  # a status answer that is not one
            raise RemoteAnswerError("query_status", "the status of an asynchronous query",
                                    Description(f"{type(exc).__name__}: {exc}"[:200])) from None  # fmt: skip

    def count_events(self, since: datetime) -> int:
        rows = self.hogql("SELECT count() AS n FROM events WHERE timestamp >= toDateTime64({since}, 6, 'UTC')",
                          {"since": _moment_text(since)}, answers.COUNT, ("n",), "events count")  # fmt: skip
        if len(rows) != 1:
            raise RemoteAnswerError("results", "one row (a count)", Description(f"{len(rows)} rows"),
                                    endpoint=self._endpoint("POST", "query/", "events count"))  # fmt: skip
        return int(rows[0]["n"])

    def event_pages(self, since: datetime, after: datetime, after_uuid: str) -> Iterator[list[dict[str, Any]]]:
        """Pages of events after ``(after, after_uuid)`` from ``since`` on, each checked and in keyset order."""
        number = 0
        while True:
            number += 1
            label = f"events page {number}"
            values = {"since": _moment_text(since), "after": _moment_text(after), "after_uuid": after_uuid}
            page = self.hogql(_EVENTS_PAGE, values, answers.EVENT, _EVENT_COLUMNS, label)
            keys = [(row["timestamp"], row["uuid"]) for row in page]
            self._check_page(keys, (after, after_uuid), since, label, "(timestamp, uuid)")
            if not page:
                return
            yield page
            if len(page) < PAGE_ROWS:
                return
            after, after_uuid = keys[-1]

    def _check_page(self, keys: Sequence[Any], previous: Any, since: datetime | None, label: str, order: str) -> None:
        """A page moves the keyset forward: at most the LIMIT, in the order asked, after ``previous``."""
        endpoint = self._endpoint("POST", "query/", label)
        if len(keys) > PAGE_ROWS:
            raise RemoteAnswerError("results", f"at most {PAGE_ROWS:,} rows (the query's LIMIT)",
                                    Description(f"{len(keys):,} rows"), endpoint=endpoint)  # fmt: skip
        for i, key in enumerate(keys):
            if key <= previous or (since is not None and key[0] < since):
                expected = f"rows after {previous!r} in the order {order}, as the query asks"
                raise RemoteAnswerError(f"results[{i}]", expected, key, endpoint=endpoint)
            previous = key

    def keyset(self, sql: str, key: str, shape: Shape, columns: Sequence[str], what: str) -> list[dict[str, Any]]:
        """Every row of a statement paged by ``key`` (text), each page checked and moving forward."""
        rows: list[dict[str, Any]] = []
        after, number = "", 0
        while True:
            number += 1
            label = f"{what} page {number}"
            page = self.hogql(sql + f" LIMIT {PAGE_ROWS}", {"after": after}, shape, columns, label)
            self._check_page([row[key] for row in page], after, None, label, key)
            rows.extend(page)
            if len(page) < PAGE_ROWS:
                return rows
            after = str(page[-1][key])

    def rest(self, resource: str, shape: Shape, **params: Any) -> list[dict[str, Any]]:
        """Every object of a REST listing, each checked as ``shape``."""
        path = self.client.path(f"{resource}/")
        endpoint = f"GET {path}"
        try:
            return answers.objects(self.client.paginate(path, params or None, decode=answers.listing), shape)
        except RemoteAnswerError as exc:
            raise exc.located(endpoint) from None


@dataclass
class RemoteObjects:
    """The remote's objects as read and checked, ready for the mirror, and what reading them had to say.

    The objects are experiments, flags, cohorts, actions, experiment holdouts and saved metrics; the warnings say
    what was left out (actions a key may not read, an action an experiment names that the remote lacks).
    """

    experiments: list[dict[str, Any]] = field(default_factory=list)
    flags: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    holdouts: list[dict[str, Any]] = field(default_factory=list)
    saved_metrics: list[dict[str, Any]] = field(default_factory=list)

    def check(self) -> CheckedObjects:
        """Checked by the service's rules (``hoglab.server.mirror.checks``), before anything is stored."""
        from ..server.mirror import Mirror

        checked = Mirror.check_objects(experiments=self.experiments, flags=self.flags, cohorts=self.cohorts,
                                       actions=self.actions, holdouts=self.holdouts,
                                       saved_metrics=self.saved_metrics)  # fmt: skip
        checked.warnings[:0] = self.warnings
        return checked


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


def _read_actions(remote: Remote, wanted: set[int], warnings: list[str]) -> list[dict[str, Any]]:
    """The remote's live actions, and the ``wanted`` ones it does not list (deleted), fetched by id."""
    try:
        listed = {int(a["id"]): a for a in remote.rest("actions", answers.ACTION)}
    except PermissionDenied:
        warnings.append("actions not copied: the key lacks the action:read scope (metrics naming actions will "
                        "count nothing)")  # fmt: skip
        return []
    except NotFound:  # a remote without actions (an older hoglab)
        warnings.append("actions not copied: the remote has no /actions/ endpoint")
        return []
    for action_id in sorted(wanted - set(listed)):
        suffix = f"actions/{action_id}/"
        try:
            answer = answers.decode(remote.client.request("GET", remote.client.path(suffix)))
            listed[action_id] = answers.ACTION.read(answer)
        except NotFound:
            warnings.append(f"action {action_id} is named by an experiment but the remote has no such action")
        except RemoteAnswerError as exc:
            raise exc.located(remote._endpoint("GET", suffix)) from None
    return list(listed.values())


def _read_optional(remote: Remote, resource: str, shape: answers.Shape, warnings: list[str]) -> list[dict[str, Any]]:
    """A listing a remote may not have (an older hoglab without holdouts or saved metrics): none, said in a
    warning, instead of a failed pull."""
    try:
        return remote.rest(resource, shape)
    except NotFound:
        warnings.append(f"{resource.replace('_', ' ')} not copied: the remote has no /{resource}/ endpoint")
        return []


def read_objects(remote: Remote) -> RemoteObjects:
    """Read the remote's experiments and the objects they use, flags and cohorts.

    That is the experiment holdouts and saved metrics, the experiments (archived too), the actions (those an
    experiment or a saved metric names included), feature flags and cohorts; deleted flags and cohorts are left
    out.
    """
    warnings: list[str] = []
    holdouts = _read_optional(remote, "experiment_holdouts", answers.HOLDOUT, warnings)
    saved_metrics = _read_optional(remote, "experiment_saved_metrics", answers.SAVED_METRIC, warnings)
    experiments = {e["id"]: e for archived in ("false", "true")
                   for e in remote.rest("experiments", answers.EXPERIMENT, archived=archived)}  # fmt: skip
    actions = _read_actions(remote, action_ids([*experiments.values(), *saved_metrics]), warnings)
    flags = [f for f in remote.rest("feature_flags", answers.FLAG) if not f.get("deleted")]
    cohorts = [c for c in remote.rest("cohorts", answers.COHORT) if not c.get("deleted")]
    return RemoteObjects(list(experiments.values()), flags, cohorts, actions, warnings, holdouts, saved_metrics)


def read_persons(remote: Remote) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Every person and distinct id, checked."""
    persons = remote.keyset(_PERSONS, "id", answers.PERSON, ("id", "created_at", "properties", "is_identified"),
                            "persons")  # fmt: skip
    ids = remote.keyset(_DISTINCT_IDS, "distinct_id", answers.DISTINCT_ID, ("distinct_id", "person_id"),
                        "distinct ids")  # fmt: skip
    return persons, ids


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
            mirror.advance(last["timestamp"], last["uuid"], copied)
            report.events_fetched += len(page)
            report.events_copied += copied
            bar.update(len(page))


def mirror_persons(
    mirror: Mirror, report: PullReport, persons: list[dict[str, Any]], ids: list[dict[str, Any]]
) -> None:
    """Store every person and distinct id read (:func:`read_persons`)."""
    # Persons change (properties, merges), so each pull copies them whole, as the newest version of each.
    report.persons, report.distinct_ids = mirror.write_persons(persons, ids)


@dataclass
class RemoteGroups:
    """The remote's group types and groups as read and checked, or why none were read (``skipped``)."""

    types: list[dict[str, Any]] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)
    skipped: str | None = None


def read_groups(remote: Remote) -> RemoteGroups:
    """The group types and every group, checked; none, with the reason, for a key without ``group:read``.

    The types come from ``/groups_types/`` (their indexes kept), the groups from HogQL keyset pages over
    ``groups``. A remote without groups reads none too, and says why.
    """
    from ..errors import NotFound, PermissionDenied

    try:
        types = remote.rest("groups_types", answers.GROUP_TYPE)
    except (PermissionDenied, NotFound) as exc:
        return RemoteGroups(skipped=f"group types and groups not copied: {exc.detail or exc}")
    indexes = [t["group_type_index"] for t in types]
    if len(set(indexes)) != len(indexes):
        raise RemoteAnswerError("group_type_index", "each group type index once", Description(repr(indexes)),
                                endpoint=f"GET {remote.client.path('groups_types/')}")  # fmt: skip
    if not types:
        return RemoteGroups()
    # The key alone can't page across types: (index, key) as one text, in that order.
    groups = remote.keyset(_GROUPS, "k", answers.GROUP, ("k", "index", "key", "created_at", "properties"), "groups")
    return RemoteGroups(types, groups)


def mirror_groups(mirror: Mirror, report: PullReport, groups: RemoteGroups) -> None:
    """Store the group types and groups read (:func:`read_groups`), or say in the report why there are none."""
    if groups.skipped:
        report.errors.append(groups.skipped)
        return
    report.group_types = mirror.write_group_types(groups.types)
    for start in range(0, len(groups.groups), PAGE_ROWS):
        report.groups += mirror.write_groups(groups.groups[start : start + PAGE_ROWS])
