"""``hoglab.by_variant``: any trends, funnel or retention insight split by the variant each person was exposed to.

A breakdown on ``$feature/<flag>`` or ``$feature_flag_response`` reads each *event's* property, which the events
after (or before) the exposure may lack: a retention's returning events then fall in another breakdown value than
their cohort and are lost (the demo's 4-week retention by ``$feature/new-checkout`` reads 20.7% / 21.1% where the
truth is 39.3% / 38.3%). ``by_variant`` breaks down by a *person-level* value instead: the variant the experiment's
exposure rules give the person (the same rules as its results, :mod:`hoglab.translate.metric.query`:
``first_seen`` is the variant of the first exposure; under ``exclude`` persons seen with several are left out),
and keeps only exposed persons. Every event of a person carries the person's variant. For an experiment by group
the unit is the event's group (``$group_N``) and a funnel or retention counts groups.

It is an ordinary query: a HogQL breakdown (``multiIf(person_id IN (exposed to test), 'test', ...)``) and a HogQL
property filter (the exposed persons), written by the service's own exposure builder with the values inlined, so
it runs on hoglab and on any server that takes HogQL breakdowns and filters.

>>> q = hoglab.by_variant(hoglab.retention("signup", period="week"), 7)  # doctest: +SKIP
>>> client.query(q).groupby("breakdown_value")  # doctest: +SKIP
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import (
    BreakdownFilter,
    Experiment,
    FunnelsQuery,
    HogQLPropertyFilter,
    PropertyGroupFilter,
    PropertyGroupFilterValue,
    RetentionQuery,
    TrendsQuery,
)

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["by_variant", "exposed_persons_hogql"]

_PLACEHOLDER = re.compile(r"\{(p\d+)\}")
_KINDS = (TrendsQuery, FunnelsQuery, RetentionQuery)


def _inline(sql: str, values: Mapping[str, Any], timezone: str) -> str:
    """``sql`` with each ``{pN}`` replaced by its value as a HogQL literal (a filter or breakdown has no values)."""
    from ..translate.values import escape_literal

    return _PLACEHOLDER.sub(lambda m: escape_literal(values[m.group(1)], timezone=timezone), sql)


def exposed_persons_hogql(client: Client, experiment: Mapping[str, Any]) -> tuple[str, tuple[str, ...], int | None]:
    """HogQL of ``SELECT entity_id, variant`` over the experiment's exposed units (values inlined), its arms (the
    variants, and the holdout's ``holdout-<id>`` when it has one), and the group type it randomises (``None``:
    persons)."""
    from datetime import UTC, datetime

    from ._units import remote_actions, resolve_remote

    resolved, project = resolve_remote(client, experiment)
    actions = remote_actions(client, experiment.get("exposure_criteria"))
    from ..translate.metric.query import exposures_sql
    from ..translate.params import Params

    arms = tuple(dict.fromkeys((*resolved.variants, *([resolved.holdout_key] if resolved.holdout_key else []))))
    resolved = resolved.model_copy(update={"variants": arms})  # the holdout's persons are exposed units too
    p = Params()
    sql = exposures_sql(resolved, p, project, resolved.end or datetime.now(UTC), actions=actions)
    inner = _inline(sql, p.values, project.timezone)
    return " ".join(f"SELECT entity_id, variant FROM ({inner})".split()), arms, resolved.group_type_index


def _experiment_json(client: Client, experiment: Any) -> dict[str, Any]:
    if isinstance(experiment, Experiment):
        return experiment.model_dump(mode="json", by_alias=True)
    if isinstance(experiment, Mapping):
        return dict(experiment)
    if isinstance(experiment, int) and not isinstance(experiment, bool):
        return client.experiments._json(experiment)
    raise InvalidArgumentType("experiment: expected an experiment id or client.experiments.get(...)'s model.",
                              argument="experiment")  # fmt: skip


def _and(current: Any, condition: HogQLPropertyFilter) -> Any:
    """The query's filters and ``condition``, whichever form (list or AND/OR group) they take."""
    if isinstance(current, PropertyGroupFilter):
        inner = PropertyGroupFilterValue(type=current.type, values=list(current.values))
        return PropertyGroupFilter(type="AND", values=[inner, PropertyGroupFilterValue(type="AND", values=[condition])])
    return [*(current or []), condition]


def by_variant(query: Any, experiment: Any, *, client: Client | None = None) -> Any:
    """``query`` (a ``hoglab.trends``, ``hoglab.funnel`` or ``hoglab.retention``) broken down by each exposed
    person's variant of ``experiment`` (an id or model), only exposed persons kept; run it with ``client.query``.
    For an experiment by group (its flag's ``aggregation_group_type_index``), each event takes its group's variant
    and a funnel or retention counts those groups (a trend counts them with ``math="unique_group"``).

    The query must not have its own breakdown (the variant is the breakdown). ``client``: the connection that reads
    the experiment and the project's test-account filters (default: ``hoglab.connect``'s).
    """
    from ._default import default_client
    from ._query import as_query

    q = as_query(query)
    if not isinstance(q, _KINDS):
        raise InvalidArgumentType(
            f"query: by_variant splits trends, funnels and retention, not {getattr(q, 'kind', type(q).__name__)}.",
            argument="query",
        )
    current = q.breakdownFilter
    if current is not None and (current.breakdown not in (None, "", []) or current.breakdowns):
        raise InvalidArgument("query: it already has a breakdown; the variant is by_variant's breakdown.",
                              argument="query")  # fmt: skip
    client = client or default_client()
    data = _experiment_json(client, experiment)
    exposed, variants, group = exposed_persons_hogql(client, data)
    if not variants:
        raise InvalidArgument("experiment: its flag has no variants.", argument="experiment")
    update: dict[str, Any] = {}
    unit = "person_id"
    if group is not None:
        # An experiment by group: an event belongs to the variant of its group (PostHog's entity key), and the
        # insight counts those groups, as the experiment does.
        if q.aggregation_group_type_index not in (None, group):
            raise InvalidArgument(
                f"query: it counts groups of type {q.aggregation_group_type_index}, but the experiment randomises "
                f"groups of type {group}; count those (or persons, with an experiment by person).",
                argument="query",
            )
        unit = f"`$group_{group}`"
        if not isinstance(q, TrendsQuery):  # trends count groups by a series' math, not by the query's index
            update["aggregation_group_type_index"] = group
    from ..translate.values import escape_literal

    # Each variant but the last is a test of membership; exposed units not in any of them have the last one.
    tests = [f"{unit} IN (SELECT entity_id FROM ({exposed}) WHERE variant = {escape_literal(v)}), "
             f"{escape_literal(v)}" for v in variants[:-1]]  # fmt: skip
    breakdown = f"multiIf({', '.join(tests)}, {escape_literal(variants[-1])})" if tests else escape_literal(variants[0])
    members = f"{unit} IN (SELECT entity_id FROM ({exposed}) WHERE variant IN {escape_literal(list(variants))})"
    if len(members) > 2000:
        raise InvalidArgument("experiment: its exposure rules are too long for a HogQL filter (2,000 characters).",
                              argument="experiment")  # fmt: skip
    split = BreakdownFilter(breakdown=breakdown, breakdown_type="hogql", breakdown_limit=len(variants) + 1)
    update["breakdownFilter"] = split
    update["properties"] = _and(q.properties, HogQLPropertyFilter(key=members, label="exposed to the experiment"))
    return q.model_copy(update=update)
