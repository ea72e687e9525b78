"""Cohort membership from events: who performed what, written to the engine's ``cohort_people``.

A cohort definition (``filters.properties``) is a tree of ``AND``/``OR`` groups whose leaves are behavioural
filters ``{"type": "behavioral", "value": "performed_event", "key": <event>, "event_filters": [...],
"explicit_datetime": <since> | "time_value"/"time_interval", "negation": bool}`` — the shape of PostHog's
exposure cohorts (``experiment_rules.exposure_cohort_filters``). Each leaf is HogQL compiled for the project
(``SELECT DISTINCT person_id FROM events WHERE ...``, person merges resolved through overrides); the tree
combines them with ``UNION``/``INTERSECT``/``EXCEPT`` in one ``INSERT ... SELECT`` into ``cohort_people``.

Each calculation writes its rows under a new ``version``; readers (the HogQL ``cohort_people`` view, flag
evaluation) take the newest version of each cohort, so a new calculation replaces the old one at once. The rows of
older versions are then deleted (a lightweight ``DELETE``), so an empty calculation also replaces an older
membership: a cohort without rows has no members.

Cohorts whose leaves are person properties are not materialised: flag evaluation matches them inline, as
PostHog does. Static cohorts are not supported.

For example (a sketch of a call and its answer, not run)::

    calculate(state, project, cohort)  ->  the CohortRecord with count and last_calculation set
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hoglab.errors import HoglabError

from ..engine.ddl import DATABASE
from ..filters.hogql_filters import filters_expansion
from ..hogql import compile_hogql
from ..ingest.persons import next_version
from ..query.catalog import ENGINE_CATALOG
from ..query.runners.base import has_person_overrides
from ..store import CohortRecord, ProjectRecord
from .properties import parse_date

if TYPE_CHECKING:
    from ..engine.base import Engine
    from ..state import ServiceState

__all__ = [
    "STALE_AFTER",
    "CohortNotComputable",
    "calculate",
    "calculate_quietly",
    "is_materialised",
    "leaves",
    "members_of",
    "refresh_if_stale",
]

log = logging.getLogger("hoglab.server.flags.cohorts")

# A cohort read through the API is recalculated when its last calculation is older than this.
STALE_AFTER = timedelta(minutes=5)
# Cohorts can be as large as the project: the leaf queries get no row cap of their own.
_MAX_ROWS = 1_000_000_000
_INTERVALS = {"hour": 1 / 24, "day": 1, "week": 7, "month": 30, "year": 365}
_locks: dict[tuple[int, int], threading.Lock] = {}
_locks_guard = threading.Lock()


class CohortNotComputable(HoglabError, ValueError):
    """The definition has something membership can't be computed from here (the message says what)."""


def leaves(node: Any) -> list[Mapping[str, Any]]:
    """The filters at the leaves of a cohort's ``{"type": "AND"|"OR", "values": [...]}`` tree."""
    if not isinstance(node, Mapping):
        return []
    values = node.get("values")
    if isinstance(values, list):
        return [leaf for value in values for leaf in leaves(value)]
    return [node]


def is_materialised(cohort: CohortRecord) -> bool:
    """Whether membership lives in ``cohort_people`` (behavioural or static cohorts), not in person properties."""
    if cohort.is_static:
        return True
    return any(leaf.get("type") == "behavioral" for leaf in leaves(cohort.filters.get("properties")))


def _since(leaf: Mapping[str, Any], timezone: str, now: datetime) -> datetime | None:
    explicit = leaf.get("explicit_datetime")
    if explicit is not None:
        parsed = parse_date(explicit, timezone, now)
        if parsed is None:
            raise CohortNotComputable(f"explicit_datetime {explicit!r} is not a date")
        return parsed
    value, interval = leaf.get("time_value"), leaf.get("time_interval")
    if value is None and interval is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float | str) or interval not in _INTERVALS:
        raise CohortNotComputable(f"time_value {value!r} / time_interval {interval!r} is not a period")
    try:
        days = float(value) * _INTERVALS[str(interval)]
        return now - timedelta(days=days)
    except (ValueError, OverflowError):
        raise CohortNotComputable(f"time_value {value!r} is not a number") from None


def _leaf_sql(
    leaf: Mapping[str, Any], project: ProjectRecord, overrides: bool, until: datetime | None, now: datetime
) -> str:
    if leaf.get("type") != "behavioral" or leaf.get("value") != "performed_event":
        raise CohortNotComputable(f"only 'performed_event' behavioural filters are computed, not {dict(leaf)!r}")
    event = leaf.get("key")
    if not isinstance(event, str) or not event:
        raise CohortNotComputable("a behavioural filter needs the event name in 'key'")
    conditions = ["event = {event}"]
    values: dict[str, Any] = {"event": event}
    since = _since(leaf, project.timezone or "UTC", now)
    if since is not None:
        conditions.append("timestamp >= {since}")
        values["since"] = since
    if until is not None:
        conditions.append("timestamp < {until}")
        values["until"] = until
    event_filters = leaf.get("event_filters") or []
    if not isinstance(event_filters, list):
        raise CohortNotComputable("event_filters must be a list of property filters")
    compiled = compile_hogql(
        f"SELECT DISTINCT person_id FROM events WHERE {' AND '.join(conditions)} AND {{filters}}",
        team_id=int(project.id),
        values=values,
        timezone=project.timezone or "UTC",
        default_limit=None,
        max_limit=_MAX_ROWS,
        person_overrides=overrides,
        filters=filters_expansion({"properties": event_filters}, timezone=project.timezone or "UTC"),
        catalog=ENGINE_CATALOG,
    )
    return compiled.sql


def _everyone_sql(project: ProjectRecord) -> str:
    return compile_hogql(
        "SELECT id AS person_id FROM persons",
        team_id=int(project.id),
        default_limit=None,
        max_limit=_MAX_ROWS,
        catalog=ENGINE_CATALOG,
    ).sql


def _tree_sql(node: Any, project: ProjectRecord, overrides: bool, until: datetime | None, now: datetime) -> str:
    """SQL listing the persons of one node (a group or a leaf), negation applied."""
    if not isinstance(node, Mapping):
        raise CohortNotComputable("a cohort group must be an object")
    values = node.get("values")
    if isinstance(values, list):
        if not values:
            raise CohortNotComputable("a cohort group must have values")
        parts = [f"SELECT person_id FROM ({_tree_sql(v, project, overrides, until, now)})" for v in values]
        sql = (" INTERSECT " if node.get("type") == "AND" else " UNION DISTINCT ").join(parts)
    else:
        sql = _leaf_sql(node, project, overrides, until, now)
    if node.get("negation"):
        sql = f"SELECT person_id FROM ({_everyone_sql(project)}) EXCEPT SELECT person_id FROM ({sql})"
    return sql


def _lock(team_id: int, cohort_id: int) -> threading.Lock:
    with _locks_guard:
        return _locks.setdefault((team_id, cohort_id), threading.Lock())


def _experiment_end(state: ServiceState, project: ProjectRecord, cohort: CohortRecord) -> datetime | None:
    """The end date of the experiment whose exposure cohort this is: exposures stop counting there."""
    with state.store.db.read() as conn:
        row = conn.execute(
            "SELECT id FROM experiments WHERE team_id = ? AND exposure_cohort_id = ? ORDER BY id LIMIT 1",
            (project.id, cohort.id),
        ).fetchone()
    experiment = state.store.experiments.get(project.id, row["id"]) if row is not None else None
    return experiment.end_date if experiment is not None else None


def calculate(state: ServiceState, project: ProjectRecord, cohort: CohortRecord) -> CohortRecord:
    """Compute the cohort's members now, replace its membership and record the count.

    ``CohortNotComputable`` for a definition this can't compute (nothing is written then); engine errors pass.
    """
    engine = state.engine
    if engine is None:
        raise CohortNotComputable("the events engine is not running")
    if cohort.is_static:
        raise CohortNotComputable("static cohorts have no definition to compute")
    now = datetime.now(UTC)
    until = _experiment_end(state, project, cohort)
    team = int(project.id)
    with _lock(team, cohort.id):
        select = _tree_sql(cohort.filters.get("properties"), project, has_person_overrides(engine, team), until, now)
        version = next_version()
        engine.command(
            f"INSERT INTO {DATABASE}.cohort_people (team_id, cohort_id, person_id, version) "
            f"SELECT {team}, {int(cohort.id)}, person_id, {version} FROM ({select})",
            settings={"join_use_nulls": 1},
        )
        engine.command(
            f"DELETE FROM {DATABASE}.cohort_people WHERE team_id = {team} AND cohort_id = {int(cohort.id)}"
            f" AND version < {version}"
        )
        state.store.cohorts.mark_calculated(cohort.id, _count(engine, team, cohort.id, version))
    updated = state.store.cohorts.get(cohort.id, project.id)
    return updated if updated is not None else cohort


def _count(engine: Engine, team: int, cohort_id: int, version: int) -> int:
    table = engine.execute(
        f"SELECT count() AS n FROM {DATABASE}.cohort_people WHERE team_id = {team} AND cohort_id = {int(cohort_id)}"
        f" AND version = {int(version)}"
    )
    return int(table.column("n")[0].as_py())


def calculate_quietly(state: ServiceState, project: ProjectRecord, cohort: CohortRecord) -> CohortRecord:
    """:func:`calculate`, but a failure leaves the cohort as it was (logged): for hooks that must not fail."""
    try:
        return calculate(state, project, cohort)
    except CohortNotComputable as exc:
        log.info("cohort %s of project %s is not computed: %s", cohort.id, project.id, exc)
    except Exception:
        log.exception("computing cohort %s of project %s failed", cohort.id, project.id)
    return cohort


def refresh_if_stale(
    state: ServiceState, project: ProjectRecord, cohort: CohortRecord, *, force: bool = False
) -> CohortRecord:
    """Recalculate a materialised cohort that was never calculated, is older than ``STALE_AFTER``, or ``force``."""
    if not is_materialised(cohort) or cohort.is_static:
        return cohort
    last = cohort.last_calculation
    if force or last is None or datetime.now(UTC) - last > STALE_AFTER:
        return calculate_quietly(state, project, cohort)
    return cohort


def members_of(engine: Engine, project: ProjectRecord, person_id: str, cohort_ids: set[int]) -> set[int]:
    """Which of ``cohort_ids`` (materialised) list ``person_id`` in their newest calculation."""
    if not cohort_ids:
        return set()
    try:
        person = uuid.UUID(person_id)
    except ValueError:
        return set()
    compiled = compile_hogql(
        "SELECT DISTINCT cohort_id FROM cohort_people WHERE person_id = {person} AND cohort_id IN {cohorts}",
        team_id=int(project.id),
        values={"person": person, "cohorts": sorted(cohort_ids)},
        default_limit=None,
        catalog=ENGINE_CATALOG,
    )
    table = engine.execute(compiled.sql, settings=compiled.settings)
    return {int(value) for value in table.column("cohort_id").to_pylist()}
