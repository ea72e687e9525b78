"""Evaluate a project's flags for one request: load what the flags need, then :func:`evaluate_flag` each.

Only what is needed is read. Flags whose conditions use only properties the request sends
(``person_properties``) are decided without touching the engine. Otherwise the person of the distinct id comes
from the ingestion's in-process person cache (``ingest.PersonStore``: the same persons the tables hold, loaded
once per project and kept current by capture), and cohort membership from ``cohort_people``. The request's
``person_properties`` override the stored ones. Flags rolled out by group read the project's group types and
the requester's groups (``groups``), their stored properties (``ingest.GroupStore``) only when the request's
``group_properties`` lack a key the flag's conditions use; the request's override the stored ones. Inactive and
deleted flags are left out of the answer, as PostHog leaves them out (an SDK then reads them as off).

For example (a sketch of a call and its answer, not run)::

    evaluation = evaluate_request(state, project, parse_flags_request(body))
    [(m.key, m.value) for m in evaluation.matches]  ->  [("new-checkout", "test")]
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..ingest import GroupStore, PersonStore
from ..ingest.groups import group_key_text
from ..store import CohortRecord, FlagRecord, ProjectRecord
from . import cohorts as cohort_membership, continuity
from .evaluate import FlagMatch, FlagSpec, Person, evaluate_flag, filter_kind
from .request import FlagsRequest

if TYPE_CHECKING:
    from ..state import ServiceState

__all__ = ["FLAG_VERSION", "Evaluation", "cohort_ids", "evaluate_request", "flag_spec", "load_cohorts", "project_flags"]

log = logging.getLogger("hoglab.server.flags")

# hoglab keeps no flag history; every flag reports version 1 (PostHog counts edits from 1).
FLAG_VERSION = 1


@dataclass(frozen=True)
class Evaluation:
    """The request's answer: matches in flag-id order, the specs they came from, and whether any failed."""

    matches: list[FlagMatch]
    specs: dict[str, FlagSpec] = field(default_factory=dict)
    errors: bool = False
    with_experiment: frozenset[int] = frozenset()


def flag_spec(record: FlagRecord) -> FlagSpec:
    return FlagSpec(
        record.id, record.key, record.filters or {}, record.ensure_experience_continuity, version=FLAG_VERSION
    )


def project_flags(state: ServiceState, project: ProjectRecord) -> list[FlagRecord]:
    """The project's flags that SDKs see: active and not deleted."""
    return [f for f in state.store.flags.list(project.id) if f.active and not f.deleted]


def _filters_of(spec: FlagSpec) -> list[Mapping[str, Any]]:
    found: list[Mapping[str, Any]] = []
    for group in spec.groups:
        properties = group.get("properties")
        if isinstance(properties, list):
            found += [p for p in properties if isinstance(p, Mapping)]
    return found


def _needs_person(spec: FlagSpec, overrides: Mapping[str, Any]) -> bool:
    """Whether the flag needs more than the request gives: stored properties, cohorts, or a hash key override."""
    if spec.ensure_experience_continuity:
        return True
    for flt in _filters_of(spec):
        kind = filter_kind(flt)
        if kind == "cohort" or (kind == "person" and flt.get("key") not in overrides):
            return True
    return False


def cohort_ids(specs: Sequence[FlagSpec]) -> set[int]:
    ids: set[int] = set()
    for spec in specs:
        for flt in _filters_of(spec):
            if filter_kind(flt) == "cohort":
                try:
                    ids.add(int(flt.get("value")))  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    continue
    return ids


def load_cohorts(state: ServiceState, project: ProjectRecord, ids: set[int]) -> dict[int, CohortRecord]:
    """The cohorts flags refer to, and the cohorts those refer to (nested cohort filters), in this project."""
    found: dict[int, CohortRecord] = {}
    pending = set(ids)
    while pending:
        cohort = state.store.cohorts.get(pending.pop(), project.id)
        if cohort is None or cohort.deleted or cohort.id in found:
            continue
        found[cohort.id] = cohort
        for leaf in cohort_membership.leaves(cohort.filters.get("properties")):
            if leaf.get("type") == "cohort":
                try:
                    pending.add(int(leaf.get("value")))  # type: ignore[arg-type]
                except (TypeError, ValueError):
                    continue
    return found


def _lookup_persons(
    state: ServiceState, team_id: int, distinct_ids: Sequence[str]
) -> dict[str, tuple[str, dict[str, Any]]]:
    """distinct id -> (person id, stored properties), for the ids that have a person."""
    if state.engine is None:
        return {}
    store = PersonStore.for_engine(state.engine)
    found: dict[str, tuple[str, dict[str, Any]]] = {}
    with store.lock:
        persons = store.state_for(team_id, distinct_ids)
        for distinct_id in distinct_ids:
            person_id = persons.pdi.get(distinct_id)
            person = persons.persons.get(person_id) if person_id is not None else None
            if person_id is not None:
                found[distinct_id] = (person_id, dict(person.properties) if person is not None else {})
    return found


def _hash_keys(
    state: ServiceState,
    project: ProjectRecord,
    request: FlagsRequest,
    specs: Sequence[FlagSpec],
    persons: Mapping[str, tuple[str, dict[str, Any]]],
) -> dict[str, str]:
    keys = [s.key for s in specs if s.ensure_experience_continuity]
    if not keys:
        return {}
    mine = persons.get(request.distinct_id)
    anon = persons.get(request.anon_distinct_id) if request.anon_distinct_id else None
    if request.anon_distinct_id:
        owners = [p[0] for p in (mine, anon) if p is not None]
        continuity.remember_hash_key(state.store, project.id, owners, keys, request.anon_distinct_id)
    stored = continuity.hash_keys(state.store, project.id, [p[0] for p in (mine, anon) if p is not None], keys)
    if request.anon_distinct_id:
        # Before the person exists (identify not ingested yet) the anonymous id is the hash key, as it will be.
        return {key: stored.get(key, request.anon_distinct_id) for key in keys}
    return stored


def _has_experiment(state: ServiceState, project: ProjectRecord) -> frozenset[int]:
    with state.store.db.read() as conn:
        rows = conn.execute("SELECT DISTINCT feature_flag_id FROM experiments WHERE team_id = ?", (project.id,))
        return frozenset(int(row[0]) for row in rows.fetchall())


def _person(state: ServiceState, project: ProjectRecord, request: FlagsRequest, specs: Sequence[FlagSpec]) -> Person:
    """Everything about the requester that the flags needing more than the request use (may raise)."""
    wanted = [request.distinct_id] + ([request.anon_distinct_id] if request.anon_distinct_id else [])
    persons = _lookup_persons(state, int(project.id), wanted)
    person_id, stored = persons.get(request.distinct_id, (None, {}))
    cohorts = load_cohorts(state, project, cohort_ids(specs))
    materialised = {c.id: c for c in cohorts.values() if cohort_membership.is_materialised(c)}
    for cohort in materialised.values():
        if cohort.last_calculation is None and not cohort.is_static:
            cohort_membership.calculate_quietly(state, project, cohort)  # first use: compute it once
    members: set[int] = set()
    if person_id is not None and materialised and state.engine is not None:
        members = cohort_membership.members_of(state.engine, project, person_id, set(materialised))
    inline = {c.id: c.filters for c in cohorts.values() if c.id not in materialised}
    return Person(
        distinct_id=request.distinct_id,
        properties={**stored, **request.person_properties},
        cohort_members=frozenset(members),
        inline_cohorts=inline,
        hash_keys=_hash_keys(state, project, request, specs, persons),
        timezone=project.timezone or "UTC",
    )


def _group_context(
    state: ServiceState, project: ProjectRecord, request: FlagsRequest, specs: Sequence[FlagSpec]
) -> dict[str, Any]:
    """``groups``, ``group_properties`` and ``group_types`` of the requester for the group flags (may raise)."""
    groups = {str(name): key for name, raw in request.groups.items() if (key := group_key_text(raw)) is not None}
    given = {str(n): dict(v) for n, v in request.group_properties.items() if isinstance(v, Mapping)}
    if not specs or state.engine is None:
        return {"groups": groups, "group_properties": given}
    store = GroupStore.for_engine(state.engine)
    types = {t.index: t.name for t in store.types(int(project.id))}
    properties = dict(given)
    for spec in specs:
        name = types.get(spec.aggregation_group_type_index)
        key = groups.get(name) if name is not None else None
        if name is None or key is None:
            continue
        keys = {f.get("key") for f in _filters_of(spec) if filter_kind(f) == "group"}
        if keys <= set(given.get(name, {})):
            continue  # the request says all the flag reads
        stored = store.group(int(project.id), int(spec.aggregation_group_type_index), key)
        properties[name] = {**(stored.properties if stored else {}), **given.get(name, {})}
    return {"groups": groups, "group_properties": properties, "group_types": types}


def evaluate_request(state: ServiceState, project: ProjectRecord, request: FlagsRequest) -> Evaluation:
    """Every active flag of the project (or those of ``flag_keys_to_evaluate``) for the requester."""
    if request.disable_flags:
        return Evaluation([])
    records = project_flags(state, project)
    if request.flag_keys is not None:
        records = [r for r in records if r.key in request.flag_keys]
    specs = [flag_spec(r) for r in records]
    by_group = [s for s in specs if s.aggregation_group_type_index is not None]
    needy = [s for s in specs if s.aggregation_group_type_index is None and _needs_person(s, request.person_properties)]
    needy_keys = {s.key for s in needy}
    failed: set[str] = set()
    try:
        context = _group_context(state, project, request, by_group)
    except Exception:
        log.exception("flags of project %s: loading the groups of %r failed", project.id, request.distinct_id)
        context, failed = {}, {s.key for s in by_group}
    light = Person(request.distinct_id, dict(request.person_properties), timezone=project.timezone or "UTC",
                   **context)  # fmt: skip
    person, errors = light, bool(failed)
    if needy:
        try:
            person = dataclasses.replace(_person(state, project, request, needy), **context)
        except Exception:
            # As PostHog: flags that need the database fail alone; the rest are still answered.
            log.exception("flags of project %s: loading the person of %r failed", project.id, request.distinct_id)
            errors = True
            failed |= needy_keys
    matches = [
        FlagMatch(s.key, False, None, "database_error", None, failed=True)
        if s.key in failed
        else evaluate_flag(s, person if s.key in needy_keys else light)
        for s in specs
    ]
    return Evaluation(matches, {s.key: s for s in specs}, errors, _has_experiment(state, project))
