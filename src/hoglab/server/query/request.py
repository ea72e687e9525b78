"""A ``POST /query`` body, validated: the query model (overrides applied), its execution mode, id and cache key.

>>> execution_mode(QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}}))
'blocking'
>>> execution_mode(QueryRequest.model_validate({"query": {"kind": "HogQLQuery", "query": "select 1"}, "refresh": True}))
'force_blocking'
"""

from __future__ import annotations

import threading
import uuid
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ValidationError

from hoglab.schema import HogQLFilters, HogQLQuery, QueryRequest, validation_error_body
from hoglab.translate.actions import ActionDefinition

from ..errors import ValidationFailed
from ..filters.actions import action_to_expr
from ..hogql.catalog import WithActions, actions_version
from .bounds import check_compile_budget
from .cache import cache_key
from .catalog import ENGINE_CATALOG
from .runners import RESOLVERS, RUNNERS, load_runners
from .served import check_served

if TYPE_CHECKING:
    from ..store import ActionRepository, ProjectRecord, Store

__all__ = [
    "ASYNC_MODES",
    "WRAPPER_KINDS",
    "Prepared",
    "execution_mode",
    "prepare",
    "project_actions",
    "project_catalog",
    "resolve",
    "unwrap_source",
]

ASYNC_MODES = frozenset({"async", "lazy_async", "force_async"})
_FILTER_OVERRIDE_KEYS = frozenset({"date_from", "date_to", "properties", "breakdown_filter", "explicitDate"})


@dataclass(frozen=True)
class Prepared:
    """A validated request: the query model (overrides applied), its kind, mode, id and cache key, and the
    project's actions as they were when it was resolved (what ``ActionsNode`` and ``matchesAction`` read)."""

    request: QueryRequest
    query: BaseModel
    kind: str
    mode: str
    query_id: str
    client_query_id: str | None
    cache_key: str
    actions: tuple[ActionDefinition, ...] = ()


WRAPPER_KINDS = frozenset({"DataTableNode", "InsightVizNode", "DataVisualizationNode"})
"""PostHog's display nodes: POST /query runs their ``source`` and answers what the source answers."""
_MAX_WRAPPERS = 4


def unwrap_source(data: dict[str, Any]) -> dict[str, Any]:
    """The body with a wrapper node (``DataTableNode``, ``InsightVizNode``, ``DataVisualizationNode``) replaced by
    its ``source``, as PostHog's query endpoint runs it; display settings (columns, chart options) are dropped.

    >>> unwrap_source({"query": {"kind": "DataTableNode", "source": {"kind": "HogQLQuery", "query": "select 1"}}})
    {'query': {'kind': 'HogQLQuery', 'query': 'select 1'}}
    """
    query = data.get("query")
    for _ in range(_MAX_WRAPPERS):
        # A kind that is not a string ([] or {}) is the schema's 400, not a wrapper: it must not be hashed here.
        if not isinstance(query, dict) or not isinstance(kind := query.get("kind"), str) or kind not in WRAPPER_KINDS:
            break
        source = query.get("source")
        if not isinstance(source, dict):
            raise ValidationFailed(f"{kind} needs a 'source' query to run.", attr="query__source")
        query = source
    return {**data, "query": query} if query is not data.get("query") else data


def execution_mode(request: QueryRequest) -> str:
    """PostHog's ``refresh`` → execution mode (docs/api.md, "Query"): ``async: true`` wins; ``true`` forces a blocking
    run; omitted, ``false`` and ``force_cache`` mean ``blocking`` on this endpoint."""
    if request.async_:
        return "async"
    refresh = request.refresh
    if refresh is True:
        return "force_blocking"
    if refresh is None or refresh is False or refresh == "force_cache":
        return "blocking"
    return str(refresh)


def prepare(data: dict[str, Any], *, team_id: int, timezone: str, path_kind: str | None = None) -> Prepared:
    """Validate a request body; 400s as PostHog words them (unknown kind, kind mismatch, field errors)."""
    check_compile_budget(data)  # before any heavy work: a 400k-item list must not be validated first
    load_runners()
    data = unwrap_source(data)
    query = data.get("query")
    kind = query.get("kind") if isinstance(query, dict) else None
    if path_kind is not None and isinstance(query, dict) and kind != path_kind:
        raise ValidationFailed(
            f'Query kind mismatch: path kind "{path_kind}" does not match body kind "{kind}".', attr="query__kind"
        )
    if isinstance(kind, str) and kind not in RUNNERS:
        raise ValidationFailed(f"Unsupported query kind: {kind}", attr="query__kind")
    try:
        request = QueryRequest.model_validate(data)
    except ValidationError as exc:
        body = validation_error_body(exc, data)
        raise ValidationFailed(body.detail, attr=body.attr) from None
    except RecursionError:
        raise ValidationFailed("Input is nested too deeply.") from None
    model: BaseModel = request.query
    check_served(model)  # a field hoglab accepts but does not compute with is a 400 naming it
    if request.variables_override:
        raise ValidationFailed(
            "Insight variables are not supported by hoglab: bind values with `values`.", attr="variables_override"
        )
    if request.filters_override:
        model = _apply_filters_override(model, request.filters_override)
    query_kind = str(getattr(model, "kind", kind))
    dumped = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    return Prepared(
        request=request,
        query=model,
        kind=query_kind,
        mode=execution_mode(request),
        query_id=request.client_query_id or uuid.uuid4().hex,
        client_query_id=request.client_query_id,
        cache_key=cache_key(team_id, dumped, timezone=timezone),
    )


# The actions read per store (its repository object, so two stores never share an entry, even over a data dir
# removed and made again at the same path) and project: (revision, definitions).
_ACTIONS: weakref.WeakKeyDictionary[ActionRepository, dict[int, tuple[int, tuple[ActionDefinition, ...]]]] = (
    weakref.WeakKeyDictionary()
)
_ACTIONS_LOCK = threading.Lock()


def project_actions(store: Store | None, project_id: int) -> tuple[ActionDefinition, ...]:
    """The project's actions (deleted ones too: queries still read those by id), as the compiler reads them.

    Read on every request, so kept in memory and read again only when the project's actions revision moved (one
    index read; revisions only grow, as actions are never removed): 500 actions cost ~10 ms to load and ~5 ms to
    fingerprint, an unchanged set almost nothing. Another process writing to the same store moves the revision
    too, so it is seen on the next request.
    """
    if store is None:
        return ()
    repository = store.actions
    revision = repository.revision(project_id)
    if revision == 0:
        return ()
    with _ACTIONS_LOCK:
        kept = _ACTIONS.get(repository, {}).get(project_id)
    if kept is not None and kept[0] == revision:
        return kept[1]
    actions = tuple(
        ActionDefinition(r.id, r.name, tuple(r.steps), r.deleted, r.bytecode_error)
        for r in repository.list(project_id, include_deleted=True)
    )
    for action in actions:
        _ = action.fingerprint  # taken once here, outside any request's compile
    # A write between revision() and list() leaves a newer list under the older revision: the next request sees
    # the revision moved and reads again, so nothing stale is kept.
    with _ACTIONS_LOCK:
        _ACTIONS.setdefault(repository, {})[project_id] = (revision, actions)
    return actions


def project_catalog(actions: tuple[ActionDefinition, ...]) -> WithActions:
    """What the compiler is handed for a project's request: the engine's columns, the project's actions and the
    actions' conditions (``filters/actions.py`` ``action_to_expr``) that ``matchesAction`` expands them with."""
    return WithActions(ENGINE_CATALOG, actions, action_to_expr)


def resolve(prepared: Prepared, project: ProjectRecord, store: Store | None) -> Prepared:
    """The query with the stored objects it names read in (its kind's resolver) and the project's actions,
    keyed on both for the cache: changing an action gives its queries new keys."""
    resolver = RESOLVERS.get(prepared.kind)
    model = prepared.query
    if resolver is not None:
        if store is None:
            raise ValidationFailed(f"{prepared.kind} needs the service's store, which this service runs without.")
        model = resolver(prepared.query, project, store)
    actions = project_actions(store, project.id)
    if resolver is None and not actions:
        return prepared
    keyed: dict[str, Any] = model.model_dump(mode="json", by_alias=True, exclude_none=True)
    if actions:
        # Any query may name an action (a series, a metric, matchesAction in HogQL text): all of them key on the
        # definitions, which change rarely; a project without actions keeps the keys it always had.
        keyed = {"query": keyed, "actions": actions_version(actions)}
    key = cache_key(project.id, keyed, timezone=project.timezone or "UTC")
    return replace(prepared, query=model, cache_key=key, actions=actions)


def _apply_filters_override(model: BaseModel, override: Mapping[str, Any]) -> BaseModel:
    # PostHog's dashboard filters on a HogQL query: a date range and extra properties for {filters}.
    if not isinstance(model, HogQLQuery):
        raise ValidationFailed("filters_override is supported for HogQLQuery only.", attr="filters_override")
    unknown = sorted(set(override) - _FILTER_OVERRIDE_KEYS)
    if unknown:
        raise ValidationFailed(
            f"Unknown field {unknown[0]!r}: it is not part of this request.", attr="filters_override"
        )
    if override.get("breakdown_filter"):
        raise ValidationFailed(
            "A breakdown does not apply to a HogQL query.", attr="filters_override__breakdown_filter"
        )
    filters = model.filters.model_dump(exclude_none=True) if model.filters else {}
    if override.get("date_from") is not None or override.get("date_to") is not None:
        filters["dateRange"] = {"date_from": override.get("date_from"), "date_to": override.get("date_to")}
    if override.get("properties"):
        filters["properties"] = [*(filters.get("properties") or []), *override["properties"]]
    try:
        return model.model_copy(update={"filters": HogQLFilters.model_validate(filters)})
    except ValidationError as exc:
        body = validation_error_body(exc, filters)
        raise ValidationFailed(body.detail, attr="filters_override" + (f"__{body.attr}" if body.attr else "")) from None
