"""Recent event properties, for ``requires_flag_implementation`` (``state.sample_event_properties``).

PostHog decides whether an experiment's metric events already carry flag information by sampling them: up to
20 property sets per metric event from the last 7 days (any event when none is named). The endpoint's rule
(``experiment_rules.requires_flag_implementation``) then looks for a ``$feature/<key>`` property in them.

For example (a sketch of a call and its answer, not run)::

    sample_event_properties(state, project, ["purchase"])  ->  [{"$feature/new-checkout": "test", ...}, ...]
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..hogql import HogQLError, compile_hogql
from ..query.catalog import ENGINE_CATALOG
from ..store import ProjectRecord

if TYPE_CHECKING:
    from ..state import ServiceState

__all__ = ["MAX_EVENTS", "SAMPLE_SIZE", "sample_event_properties"]

log = logging.getLogger("hoglab.server")

SAMPLE_SIZE = 20
# The event list comes from a query parameter: bound the number of queries one request can cause.
MAX_EVENTS = 50
_QUERY = (
    "SELECT properties FROM events WHERE {where} AND timestamp >= now() - INTERVAL 7 DAY "
    "ORDER BY timestamp DESC LIMIT {size}"
)


def _sample(state: ServiceState, project: ProjectRecord, event: str | None) -> list[Mapping[str, Any]]:
    assert state.engine is not None
    where = "event = {event}" if event is not None else "true"
    try:
        compiled = compile_hogql(
            _QUERY.format(where=where, size=SAMPLE_SIZE),
            team_id=int(project.id),
            values={"event": event} if event is not None else None,
            timezone=project.timezone or "UTC",
            default_limit=None,
            catalog=ENGINE_CATALOG,
        )
    except HogQLError as exc:
        # A name no event can have (text that isn't valid Unicode, say): nothing to sample.
        log.info("not sampling event %r: %s", event, exc)
        return []
    table = state.engine.execute(compiled.sql, settings=compiled.settings)
    samples: list[Mapping[str, Any]] = []
    for text in table.column("properties").to_pylist():
        try:
            properties = orjson.loads(text or "{}")
        except orjson.JSONDecodeError:
            continue
        if isinstance(properties, dict):
            samples.append(properties)
    return samples


def sample_event_properties(
    state: ServiceState, project: ProjectRecord, events: Sequence[str]
) -> Sequence[Mapping[str, Any]]:
    """Up to ``SAMPLE_SIZE`` property sets of the last 7 days per event of ``events`` (of any event if empty)."""
    if state.engine is None:
        return []
    names: Sequence[str | None] = list(dict.fromkeys(events))[:MAX_EVENTS] if events else [None]
    samples: list[Mapping[str, Any]] = []
    for name in names:
        samples += _sample(state, project, name)
    return samples
