"""The local side of a mirror: a project that holds a copy of a remote one, written page by page.

``hoglab.pull`` reads the remote project through the Query and REST APIs and hands each page (and each action,
flag, cohort and experiment) to a :class:`Mirror`, which stores it and moves the watermark, in that order: a
process killed between the two re-reads that page on the next run, and :meth:`Mirror.write_events` drops the
events it already holds (by uuid), so a mirror never loses an event and never holds one twice.

    mirror = Mirror.open(store, engine, host="https://eu.posthog.com", remote_project_id=2, name="Shop")
    copied = mirror.write_events([{"uuid": ..., "event": "$pageview", "timestamp": "...", ...}, ...])
    mirror.advance(last_timestamp, last_uuid, copied)
    objects = Mirror.check_objects(experiments=[...], flags=[...], cohorts=[...], holdouts=[...],
                                   saved_metrics=[...])                            # before anything is written
    mirror.write_objects(objects)                                                   # all of them, or none

A remote's settings are checked (``checks.py``) before they are stored: the time zone when the project is made,
the objects by :meth:`Mirror.check_objects`, which raises before anything is written. A mirror made by a pull that
then stored nothing is taken back by :meth:`Mirror.discard_if_empty`: a failed first pull leaves no empty project.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from hoglab.errors import HoglabError

from ..engine.base import Engine
from ..engine.settings import quote_string
from ..experiments.rules import create_with_flag, to_utc
from ..experiments.saved_metrics import link_saved_metrics
from ..ingest.groups import CachedGroupType, GroupStore, group_key_text
from ..ingest.person_store import PersonStore
from ..ingest.persons import PersonRows, next_version
from ..ingest.rows import events_table, person_tables
from ..store import DuplicateActionName, DuplicateSavedMetricName, ProjectRecord, PullSource, Store
from .checks import (
    action_fields,
    check_timezone,
    cohort_fields,
    experiment_changes,
    experiment_fields,
    flag_fields,
    holdout_fields,
    saved_metric_fields,
)

__all__ = ["CheckedObjects", "Mirror", "MirrorError", "parse_moment"]

log = logging.getLogger("hoglab.server.pull")

# Reads of the mirror's own tables are bookkeeping, not user queries: no row cap, no time limit.
_READ = {"max_result_rows": 0, "max_execution_time": 0}
# Experiment fields a second pull brings up to date (the flag and its variants are the flag's own copy; the holdout
# and the saved metric links follow too).
_EXPERIMENT_UPDATES = ("name", "description", "start_date", "end_date", "parameters", "secondary_metrics",
                       "filters", "archived")  # fmt: skip


class MirrorError(HoglabError, ValueError):
    """The remote answered something that cannot be mirrored (a row without its uuid, a clash of flag keys)."""


def parse_moment(value: Any) -> datetime:
    """A timestamp as the Query API writes it (ISO text with or without an offset: UTC) as an aware datetime.

    >>> parse_moment("2026-01-02T03:04:05.123456Z").isoformat()
    '2026-01-02T03:04:05.123456+00:00'
    """
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip().replace(" ", "T").replace("Z", "+00:00")
    parsed = datetime.fromisoformat(text)
    return parsed.astimezone(UTC) if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _text(value: Any) -> str:
    if value is None:
        return "{}"
    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"))


@dataclass
class CheckedObjects:
    """A remote's experiment holdouts, saved metrics, experiments, flags, cohorts and actions, checked
    (:meth:`Mirror.check_objects`) and ready to store: each as ``(remote object, fields to store)``, and the warnings
    the checks gave."""

    holdouts: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    saved_metrics: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    experiments: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    flags: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    cohorts: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    actions: list[tuple[Mapping[str, Any], dict[str, Any]]] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _sql_moment(moment: datetime) -> str:
    return f"toDateTime64({quote_string(moment.strftime('%Y-%m-%d %H:%M:%S.%f'))}, 6, 'UTC')"


@dataclass
class Mirror:
    """One local project mirroring one remote project (``source`` holds the watermark)."""

    store: Store
    engine: Engine
    project: ProjectRecord
    source: PullSource
    created: bool = False  # this pull made the mirror: its source row, and its project unless ``into`` was given
    made_project: bool = False
    wrote: bool = False  # this pull stored something (events, persons, objects, an export file)

    @classmethod
    def open(
        cls,
        store: Store,
        engine: Engine,
        *,
        host: str,
        remote_project_id: int,
        name: str,
        timezone: str = "UTC",
        into: int | None = None,
    ) -> Mirror:
        """The mirror of a remote project: the one made before, else a new local project (or ``into``).

        A new project gets the remote's ``timezone``, which must be a zone ClickHouse knows, on every pull (a remote
        that answers another is misbehaving; :class:`~hoglab.errors.RemoteAnswerError` before anything is made).
        """
        timezone = check_timezone(engine, timezone)
        source = store.pulls.find(host, remote_project_id, into)
        created = source is None
        if source is None:
            with store.transaction():  # the project and its source row together: no project without its source
                if into is not None:
                    project = store.projects.get(into)
                    if project is None:
                        raise MirrorError(f"no local project with id {into}")
                else:
                    project = store.projects.create(name, timezone=timezone)
                source = store.pulls.create(host, remote_project_id, project.id)
        project = store.projects.get(source.local_project_id)
        if project is None:
            raise MirrorError(f"the local project {source.local_project_id} of this mirror was deleted")
        return cls(store, engine, project, source, created=created, made_project=created and into is None)

    def discard_if_empty(self) -> bool:
        """After a failed pull: forget this mirror when this pull made it and stored nothing in it (the project, or
        with ``into`` the source row); whether it did. Events, persons or objects already stored stay: the next
        pull resumes from them."""
        if not self.created or self.wrote:
            return False
        self.store.pulls.discard(self.source.id, with_project=self.made_project)
        return True

    def refresh(self) -> PullSource:
        self.source = self.store.pulls.get(self.source.id)
        return self.source

    # -- events ---------------------------------------------------------------------------------------------------

    def write_events(self, rows: Sequence[Mapping[str, Any]]) -> int:
        """Store the events of one page that the mirror does not hold yet (by uuid); how many were new.

        Each row has ``uuid, event, distinct_id, person_id, timestamp, properties, elements_chain, created_at``
        as the Query API answers them (``properties`` as JSON text or a dict).
        """
        if not rows:
            return 0
        moments = [parse_moment(row["timestamp"]) for row in rows]
        held = self._uuids_between(min(moments), max(moments))
        team = self.project.id
        fresh: list[tuple[int, str, str, str, str, datetime, str, str, datetime]] = []
        for row, moment in zip(rows, moments, strict=True):
            uuid = str(row.get("uuid") or "")
            if not uuid:
                raise MirrorError("an event without its uuid cannot be mirrored")
            if uuid in held:
                continue
            held.add(uuid)
            created = row.get("created_at")
            fresh.append((
                team, uuid, str(row["event"]), str(row.get("distinct_id") or ""), str(row["person_id"]), moment,
                _text(row.get("properties")), str(row.get("elements_chain") or ""),
                parse_moment(created) if created else moment,
            ))  # fmt: skip
        if fresh:
            self.wrote = True
            self.engine.insert_arrow("events", events_table(fresh))
        return len(fresh)

    def _uuids_between(self, first: datetime, last: datetime) -> set[str]:
        table = self.engine.execute(
            f"SELECT toString(uuid) AS uuid FROM events WHERE team_id = {int(self.project.id)}"
            f" AND timestamp >= {_sql_moment(first)} AND timestamp <= {_sql_moment(last)}",
            settings=_READ,
        )
        return set(table.column("uuid").to_pylist())

    def advance(self, timestamp: datetime, uuid: str, copied: int) -> None:
        """The page up to ``(timestamp, uuid)`` is stored: the next pull starts after it."""
        self.wrote = True
        self.store.pulls.advance(self.source.id, timestamp, uuid, copied)

    def file_done(self, name: str, copied: int) -> None:
        self.wrote = True
        self.store.pulls.file_done(self.source.id, name, copied)

    def event_count(self) -> int:
        table = self.engine.execute(
            f"SELECT count() AS n FROM events WHERE team_id = {int(self.project.id)}", settings=_READ
        )
        return int(table.column("n")[0].as_py())

    # -- persons --------------------------------------------------------------------------------------------------

    def write_persons(
        self, persons: Iterable[Mapping[str, Any]], distinct_ids: Iterable[Mapping[str, Any]]
    ) -> tuple[int, int]:
        """Store the remote's persons and distinct ids as the newest version of each; ``(persons, ids)`` written."""
        team = self.project.id
        rows = PersonRows()
        version = next_version()
        for person in persons:
            rows.persons.append((
                team, str(person["id"]), parse_moment(person["created_at"]), _text(person.get("properties")),
                int(bool(person.get("is_identified"))), 0, version,
            ))  # fmt: skip
        for pdi in distinct_ids:
            rows.distinct_ids.append((team, str(pdi["distinct_id"]), str(pdi["person_id"]), 0, version))
        self.wrote = self.wrote or bool(rows.persons or rows.distinct_ids)
        for table, data in person_tables(rows).items():
            self.engine.insert_arrow(table, data)
        # Capture into this project must see the copied persons, not what it cached before.
        PersonStore.for_engine(self.engine).invalidate(team)
        return len(rows.persons), len(rows.distinct_ids)

    # -- groups ---------------------------------------------------------------------------------------------------

    def write_group_types(self, types: Iterable[Mapping[str, Any]]) -> int:
        """Store the remote's group types at their own indexes (events' ``$group_N``, queries and flags name the
        index); a local type in the way is replaced by the remote's. How many were written."""
        store = GroupStore.for_engine(self.engine)
        written = 0
        with store.lock:
            state = store.state(self.project.id)
            for row in types:
                index, name = row.get("group_type_index"), row.get("group_type")
                if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index <= 4 or not name:
                    raise MirrorError(f"a group type the remote answered is not one: {dict(row)!r}")
                created = row.get("created_at")
                columns = row.get("default_columns")
                made = parse_moment(created) if created else datetime.now(UTC)
                state.put_type(CachedGroupType(index, str(name), made, row.get("name_singular"), row.get("name_plural"),
                                               list(columns) if isinstance(columns, list) else None))  # fmt: skip
                written += 1
            store.commit(state)
        self.wrote = self.wrote or bool(written)
        return written

    def write_groups(self, groups: Sequence[Mapping[str, Any]]) -> int:
        """Store one page of the remote's groups (``index, key, properties, created_at``, HogQL's names, or the
        REST API's ``group_type_index, group_key, group_properties``), each as the remote has it now."""
        store = GroupStore.for_engine(self.engine)
        now = datetime.now(UTC)
        rows = []
        for row in groups:
            index = row.get("index", row.get("group_type_index"))
            key = group_key_text(row.get("key", row.get("group_key")))
            raw = row.get("properties", row.get("group_properties"))
            properties = json.loads(raw) if isinstance(raw, str) and raw else raw or {}
            if not isinstance(index, int) or key is None or not isinstance(properties, dict):
                raise MirrorError(f"a group the remote answered cannot be mirrored: {dict(row)!r}"[:300])
            created = row.get("created_at")
            rows.append((int(index), key, properties, parse_moment(created) if created else now))
        with store.lock:
            state = store.with_groups(self.project.id, [(r[0], r[1]) for r in rows])
            for index, key, properties, created in rows:
                state.upsert(index, key, properties, created, replace=True, created_at=created)
            store.commit(state, now)
        self.wrote = self.wrote or bool(rows)
        return len(rows)

    # -- actions, flags, cohorts, experiments ---------------------------------------------------------------------

    def _write_action(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote action (matched by mapping, else by name among the live local
        ones); the local id."""
        remote_id = int(remote["id"])
        fields = dict(fields)
        name = fields["name"]
        local_id = self.store.pulls.local_id(self.source.id, "action", remote_id)
        local = self.store.actions.get(self.project.id, local_id) if local_id is not None else None
        if local is None and fields["name"] is not None and not fields["deleted"]:
            same = self.store.actions.named(self.project.id, fields["name"])
            local = same[0] if same else None
        try:
            if local is None:
                local = self.store.actions.create(self.project.id, fields, created_by_id=None)
            else:
                local = self.store.actions.update(self.project.id, local.id, fields) or local
        except DuplicateActionName as exc:
            # Another copied action took the name first (the remote renamed two): this one keeps it apart.
            fields["name"] = f"{fields['name']} (remote {remote_id})"
            log.warning("action %r: the name is taken locally (%s); copied as %r", name, exc.other_id, fields["name"])
            local = (self.store.actions.create(self.project.id, fields) if local is None
                     else self.store.actions.update(self.project.id, local.id, fields) or local)  # fmt: skip
        self.store.pulls.remember(self.source.id, "action", remote_id, local.id)
        return local.id

    def local_actions(self, value: Any) -> Any:
        """``value`` (an experiment's fields) with every action named by the remote's id renamed to the local
        copy's; an action the mirror did not copy becomes id 0, which no action has (it counts nothing, as a
        missing action does in PostHog)."""
        if isinstance(value, list):
            return [self.local_actions(v) for v in value]
        if not isinstance(value, Mapping):
            return value
        out = {k: self.local_actions(v) for k, v in value.items()}
        named = out.get("kind") == "ActionsNode" or out.get("type") == "actions"
        if named and isinstance(out.get("id"), int) and not isinstance(out.get("id"), bool):
            local = self.store.pulls.local_id(self.source.id, "action", int(out["id"]))
            if local is None:
                log.warning("an experiment names the remote action %s, which was not copied", out["id"])
            out["id"] = local if local is not None else 0
        return out

    @staticmethod
    def check_objects(
        *,
        experiments: Sequence[Mapping[str, Any]] = (),
        flags: Sequence[Mapping[str, Any]] = (),
        cohorts: Sequence[Mapping[str, Any]] = (),
        holdouts: Sequence[Mapping[str, Any]] = (),
        saved_metrics: Sequence[Mapping[str, Any]] = (),
        actions: Sequence[Mapping[str, Any]] = (),
    ) -> CheckedObjects:
        """Check every object of a remote before any is stored (``checks.py``): the first one that cannot be stored
        is a :class:`~hoglab.errors.RemoteAnswerError`; what hoglab cannot use is left out with a warning."""
        checked = CheckedObjects()
        kinds = (("flags", flags, flag_fields), ("cohorts", cohorts, cohort_fields),
                 ("holdouts", holdouts, holdout_fields), ("saved_metrics", saved_metrics, saved_metric_fields),
                 ("actions", actions, action_fields))  # fmt: skip
        for kind, items, check in kinds:
            for remote in items:
                fields, warnings = check(remote)
                getattr(checked, kind).append((remote, fields))
                checked.warnings.extend(warnings)
        for remote in experiments:
            fields, warnings = experiment_fields(remote)
            checked.experiments.append((remote, fields))
            checked.warnings.extend(warnings)
        return checked

    def write_objects(self, objects: CheckedObjects) -> None:
        """Store checked objects, all in one transaction: a failure leaves the earlier copies as they were."""
        for warning in objects.warnings:
            log.warning("%s", warning)
        with self.store.transaction():
            for remote, fields in objects.actions:  # first: experiments name them
                self._write_action(remote, fields)
            # Holdouts and saved metrics before the experiments too: their copies link to theirs.
            for remote, fields in objects.holdouts:
                self._write_holdout(remote, fields)
            for remote, fields in objects.saved_metrics:
                self._write_saved_metric(remote, fields)
            for remote, fields in objects.experiments:
                self._write_experiment(remote, fields)
            for remote, fields in objects.flags:
                self._write_flag(remote, fields)
            for remote, fields in objects.cohorts:
                self._write_cohort(remote, fields)
        self.wrote = self.wrote or bool(objects.experiments or objects.flags or objects.cohorts or objects.actions
                                        or objects.holdouts or objects.saved_metrics)  # fmt: skip

    def write_experiment(self, remote: Mapping[str, Any]) -> int:
        """Check and store one remote experiment (see :meth:`write_objects`); the local id."""
        return self._write_experiment(remote, experiment_fields(remote)[0])

    def write_flag(self, remote: Mapping[str, Any]) -> int:
        """Check and store one remote flag (see :meth:`write_objects`); the local id."""
        return self._write_flag(remote, flag_fields(remote)[0])

    def _write_experiment(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote experiment (and, when new, its flag); the local id. Actions its
        metrics and exposure name are the local copies (written before, :meth:`write_objects`), and so are its holdout
        and saved metrics; a link to one the pull did not copy is left out.
        """
        remote_id = int(remote["id"])
        fields = self.local_actions(fields)
        local_id = self.store.pulls.local_id(self.source.id, "experiment", remote_id)
        holdout_id = self._local_holdout(remote)
        links = self._local_links(remote)
        if local_id is None or self.store.experiments.get(self.project.id, local_id) is None:
            fields = {**fields, "holdout_id": holdout_id, "saved_metrics_ids": links or None}
            if self.store.flags.get_by_key(self.project.id, str(fields["feature_flag_key"])) is not None:
                raise MirrorError(
                    f"experiment {remote_id}: the local project already has a flag {fields['feature_flag_key']!r} "
                    "that is not this experiment's copy"
                )
            record, _ = create_with_flag(self.store, self.project.id, self.store.users.default().id, fields)
            self.store.pulls.remember(self.source.id, "experiment", remote_id, record.id)
            return record.id
        changes = self.local_actions(experiment_changes(remote, _EXPERIMENT_UPDATES))
        for name in ("start_date", "end_date"):
            if name in changes:
                changes[name] = to_utc(parse_moment(changes[name]), name) if changes[name] else None
        # The flag's holdout is the remote flag's own, copied by _write_flag.
        changes["holdout_id"] = holdout_id
        with self.store.transaction():
            updated = self.store.experiments.update(self.project.id, local_id, changes)
            if updated is not None:
                link_saved_metrics(self.store, updated, links, replace=True)
        return local_id

    def _local_holdout(self, remote: Mapping[str, Any]) -> int | None:
        holdout = remote.get("holdout")
        remote_holdout = remote.get("holdout_id")
        if remote_holdout is None and isinstance(holdout, Mapping):
            remote_holdout = holdout.get("id")
        if remote_holdout is None:
            return None
        return self.store.pulls.local_id(self.source.id, "holdout", int(remote_holdout))

    def _local_links(self, remote: Mapping[str, Any]) -> list[dict[str, Any]]:
        links = []
        for link in remote.get("saved_metrics") or []:
            if not isinstance(link, Mapping) or link.get("saved_metric") is None:
                continue
            local = self.store.pulls.local_id(self.source.id, "saved_metric", int(link["saved_metric"]))
            if local is not None:
                links.append({"id": local, "metadata": link.get("metadata")})
        return links

    def _write_holdout(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote holdout; the local id.

        Its groups keep the remote's value, ``holdout-<remote id>`` (``holdout_fields``): the copied flags answer it
        and the copied events carry it, so the holdout's arm is found in both.
        """
        remote_id = int(remote["id"])
        local_id = self.store.pulls.local_id(self.source.id, "holdout", remote_id)
        if local_id is not None and self.store.holdouts.get(self.project.id, local_id) is not None:
            self.store.holdouts.update(self.project.id, local_id, **fields)
            return local_id
        record = self.store.holdouts.create(self.project.id, **fields)
        self.store.pulls.remember(self.source.id, "holdout", remote_id, record.id)
        return record.id

    def _write_saved_metric(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote saved metric (its query as the remote holds it, ``uuid``
        included: experiments order their metrics by it; the actions it names renamed to their copies); the local id."""
        remote_id = int(remote["id"])
        local_id = self.store.pulls.local_id(self.source.id, "saved_metric", remote_id)
        fields = {**fields, "query": self.local_actions(fields["query"])}  # the actions it names, as copied here
        try:
            if local_id is not None and self.store.saved_metrics.get(self.project.id, local_id) is not None:
                self.store.saved_metrics.update(self.project.id, local_id, **fields)
                return local_id
            record = self.store.saved_metrics.create(self.project.id, **fields)
        except DuplicateSavedMetricName:
            raise MirrorError(
                f"saved metric {remote_id}: the local project already has a saved metric named {fields['name']!r} "
                "that is not this one's copy"
            ) from None
        self.store.pulls.remember(self.source.id, "saved_metric", remote_id, record.id)
        return record.id

    def _write_flag(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote flag (matched by mapping, else by key); the local id."""
        remote_id = int(remote["id"])
        local_id = self.store.pulls.local_id(self.source.id, "flag", remote_id)
        local = self.store.flags.get(local_id) if local_id is not None else None
        if local is None:
            local = self.store.flags.get_by_key(self.project.id, str(remote["key"]))
        if local is None:
            local = self.store.flags.create(self.project.id, str(remote["key"]), **fields)
        else:
            local = self.store.flags.update(local.id, **fields)
        self.store.pulls.remember(self.source.id, "flag", remote_id, local.id)
        return local.id

    def _write_cohort(self, remote: Mapping[str, Any], fields: dict[str, Any]) -> int:
        """Create or update the copy of a remote cohort's definition; the local id."""
        remote_id = int(remote["id"])
        local_id = self.store.pulls.local_id(self.source.id, "cohort", remote_id)
        if local_id is not None and self.store.cohorts.get(local_id, self.project.id) is not None:
            self.store.cohorts.update(local_id, name=fields["name"], description=fields["description"],
                                      filters=fields["filters"])  # fmt: skip
            return local_id
        record = self.store.cohorts.create(
            self.project.id, fields["name"], fields["filters"], description=fields["description"],
            is_static=fields["is_static"],
        )  # fmt: skip
        self.store.pulls.remember(self.source.id, "cohort", remote_id, record.id)
        return record.id
