"""The local side of a mirror: a project that holds a copy of a remote one, written page by page.

``hoglab.pull`` reads the remote project through the Query and REST APIs and hands each page (and each action,
flag, cohort and experiment) to a :class:`Mirror`, which stores it and moves the watermark, in that order: a
process killed between the two re-reads that page on the next run, and :meth:`Mirror.write_events` drops the
events it already holds (by uuid), so a mirror never loses an event and never holds one twice.

    mirror = Mirror.open(store, engine, host="https://eu.posthog.com", remote_project_id=2, name="Shop")
    copied = mirror.write_events([{"uuid": ..., "event": "$pageview", "timestamp": "...", ...}, ...])
    mirror.advance(last_timestamp, last_uuid, copied)
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from hoglab.errors import HoglabError
from hoglab.schema import ExperimentCreate

from ..engine.base import Engine
from ..engine.settings import quote_string
from ..errors import ValidationFailed
from ..experiments.rules import create_with_flag, to_utc, usable_metric_fields
from ..filters.actions import check_steps, normalized_step
from ..flags.patterns import invalid_patterns
from ..ingest.groups import GroupStore, GroupType, group_key_text
from ..ingest.person_store import PersonStore
from ..ingest.persons import PersonRows, next_version
from ..ingest.rows import events_table, person_tables
from ..store import DuplicateActionName, ProjectRecord, PullSource, Store

__all__ = ["Mirror", "MirrorError", "parse_moment"]

log = logging.getLogger("hoglab.server.pull")

# Reads of the mirror's own tables are bookkeeping, not user queries: no row cap, no time limit.
_READ = {"max_result_rows": 0, "max_execution_time": 0}
# Experiment fields a second pull brings up to date (the flag and its variants are the flag's own copy).
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


def _disabled_patterns(what: str, filters: Mapping[str, Any]) -> None:
    """Say which regex conditions of a copied definition never match here: RE2 cannot compile their pattern
    (a lookaround, a backreference), so they are stored as the remote has them and evaluate as PostHog's flags
    service evaluates a pattern it cannot compile, as not matching; the rest of the copy goes on."""
    for problem in invalid_patterns(filters):
        log.warning("%s: the condition %s is disabled (never matches)", what, problem)


def _sql_moment(moment: datetime) -> str:
    return f"toDateTime64({quote_string(moment.strftime('%Y-%m-%d %H:%M:%S.%f'))}, 6, 'UTC')"


@dataclass
class Mirror:
    """One local project mirroring one remote project (``source`` holds the watermark)."""

    store: Store
    engine: Engine
    project: ProjectRecord
    source: PullSource

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
        """The mirror of a remote project: the one made before, else a new local project (or ``into``)."""
        source = store.pulls.find(host, remote_project_id, into)
        if source is None:
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
        return cls(store, engine, project, source)

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
        self.store.pulls.advance(self.source.id, timestamp, uuid, copied)

    def file_done(self, name: str, copied: int) -> None:
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
                state.put_type(GroupType(index, str(name), parse_moment(created) if created else datetime.now(UTC),
                                         row.get("name_singular"), row.get("name_plural"),
                                         list(columns) if isinstance(columns, list) else None))  # fmt: skip
                written += 1
            store.commit(state)
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
        return len(rows)

    # -- actions, flags, cohorts, experiments ---------------------------------------------------------------------

    def write_action(self, remote: Mapping[str, Any]) -> int:
        """Create or update the copy of a remote action (matched by mapping, else by name among the live local
        ones); the local id. Steps keep PostHog's ten keys; steps hoglab refuses (a CSS selector, a pattern RE2
        can't compile) are kept as copied, with the reason in ``bytecode_error``, and a query using the action
        says it (PostHog keeps such an action too, with its compile error)."""
        remote_id = int(remote["id"])
        raw = remote.get("steps")
        steps = [normalized_step(s) for s in (raw if isinstance(raw, list) else []) if isinstance(s, Mapping)]
        error = None
        try:
            steps = check_steps(steps, timezone=self.project.timezone or "UTC")
        except ValidationFailed as exc:
            error = f"{exc.attr}: {exc.detail}" if exc.attr else str(exc.detail)
            log.warning("action %r (remote id %s) is copied but can't be used here: %s", remote.get("name"),
                        remote_id, error)  # fmt: skip
        name = remote.get("name")
        fields: dict[str, Any] = {
            "name": None if name is None else str(name)[:400],
            "description": str(remote.get("description") or ""),
            "tags": [str(t) for t in remote.get("tags") or [] if isinstance(t, str | int)],
            "steps": steps,
            "deleted": bool(remote.get("deleted")),
            "bytecode_error": error,
        }
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

    def write_experiment(self, remote: Mapping[str, Any]) -> int:
        """Create or update the copy of a remote experiment (and, when new, its flag); the local id. Actions its
        metrics and exposure name are the local copies (:meth:`write_action` first)."""
        remote_id = int(remote["id"])
        local_id = self.store.pulls.local_id(self.source.id, "experiment", remote_id)
        if local_id is None or self.store.experiments.get(self.project.id, local_id) is None:
            given = {k: self.local_actions(remote[k]) for k in ExperimentCreate.model_fields
                     if remote.get(k) is not None}  # fmt: skip
            fields = usable_metric_fields(given)  # a metric hoglab can't run must not stop the copy
            fields.setdefault("feature_flag_key", (remote.get("feature_flag") or {}).get("key"))
            if self.store.flags.get_by_key(self.project.id, str(fields["feature_flag_key"])) is not None:
                raise MirrorError(
                    f"experiment {remote_id}: the local project already has a flag {fields['feature_flag_key']!r} "
                    "that is not this experiment's copy"
                )
            record, _ = create_with_flag(self.store, self.project.id, self.store.users.default().id, fields)
            self.store.pulls.remember(self.source.id, "experiment", remote_id, record.id)
            return record.id
        changes: dict[str, Any] = {}
        for name in _EXPERIMENT_UPDATES:
            if name not in remote:
                continue
            value = self.local_actions(remote[name])
            if name in ("start_date", "end_date"):
                value = to_utc(parse_moment(value), name) if value else None
            elif name == "description":
                value = value or ""
            elif name == "archived":
                value = bool(value)
            changes[name] = value
        self.store.experiments.update(self.project.id, local_id, changes)
        return local_id

    def write_flag(self, remote: Mapping[str, Any]) -> int:
        """Create or update the copy of a remote flag (matched by mapping, else by key); the local id."""
        remote_id = int(remote["id"])
        fields: dict[str, Any] = {
            "name": str(remote.get("name") or ""),
            "filters": dict(remote.get("filters") or {}),
            "active": bool(remote.get("active", True)),
            "ensure_experience_continuity": bool(remote.get("ensure_experience_continuity")),
        }
        _disabled_patterns(f"flag {remote.get('key')!r} (remote id {remote_id})", fields["filters"])
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

    def write_cohort(self, remote: Mapping[str, Any]) -> int:
        """Create or update the copy of a remote cohort's definition; the local id."""
        remote_id = int(remote["id"])
        name, description = str(remote.get("name") or ""), str(remote.get("description") or "")
        filters = dict(remote.get("filters") or {})
        _disabled_patterns(f"cohort {name!r} (remote id {remote_id})", filters)
        local_id = self.store.pulls.local_id(self.source.id, "cohort", remote_id)
        if local_id is not None and self.store.cohorts.get(local_id, self.project.id) is not None:
            self.store.cohorts.update(local_id, name=name, description=description, filters=filters)
            return local_id
        record = self.store.cohorts.create(
            self.project.id, name, filters, description=description, is_static=bool(remote.get("is_static"))
        )
        self.store.pulls.remember(self.source.id, "cohort", remote_id, record.id)
        return record.id
