"""``client.experiments.units``: one row per exposed unit of an experiment, each metric's value as the server sums it.

Against hoglab, one ``ExperimentUnitsQuery`` posted to ``POST /query/arrow/`` answers every row as Arrow: the
server resolves the stored experiment and runs the per-unit stage its ``ExperimentQuery`` runner aggregates
(``hoglab.translate.metric.units``), so the frame's per-variant sums are the results' statistics.

PostHog has neither the endpoint nor the kind: the toolkit then writes the same HogQL itself, from the experiment
and project it reads over the API, with the same builder (``hoglab.translate``, imported only then; it needs none
of the service's dependencies), and pages it by unit id (keyset: PostHog refuses OFFSET to personal API keys).
The metrics are hoglab's reading of PostHog's rules (docs/api.md, "ExperimentQuery").

The frame (one row per unit, ``df.attrs["columns"]`` says which column is which metric's):

* ``entity_id`` (string: a person's id, or a group's key), ``variant`` (string), ``first_exposure_time``
  (tz-aware, UTC);
* per metric, named by its label: a mean's or retention's value (float; NaN for a unit the metric does not count,
  e.g. a retention metric's units without its start event), a funnel's 0/1 conversion and ``<label> step``
  (Int64, the furthest metric step reached), a ratio's ``<label> numerator`` and ``<label> denominator``, and with
  CUPED ``<label> covariate``;
* each property asked for, numbers as numbers (Int64 or Float64), ``true``/``false`` as booleans, else strings:
  the person's (a group's) property, else, where the unit lacks it, its first exposure event's;
  ``df.attrs["property_sources"]`` counts, per property, the units whose value came from ``person`` (``group``),
  the ``exposure event``, or neither (``missing``). A property no unit has is a :class:`~hoglab.QueryWarning`.

The holdout's units are rows too (``variant`` is the holdout's arm, ``holdout-<id>``).
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import HoglabError, InvalidArgument, InvalidArgumentType, QueryWarning
from ..frames.experiments import metric_label
from ._metric_queries import experiment_metrics

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["UNIT_COLUMNS", "experiment_units", "remote_actions", "resolve_remote", "units_frame"]

UNIT_COLUMNS = ("entity_id", "variant", "first_exposure_time")
PAGE_SIZE = 50_000
"""Units per page against PostHog (its cap on one HogQL answer)."""


def _pick_metrics(experiment: Mapping[str, Any], metric: Any) -> list[dict[str, Any]]:
    """``None``: every metric of the experiment (primary, then secondary); else one or a list of: a metric (model
    or dict), its position in that list, or its name."""
    known = [m for m, _ in experiment_metrics(experiment)]
    if metric is None:
        return known
    chosen = list(metric) if isinstance(metric, list | tuple) else [metric]
    out = []
    for item in chosen:
        if hasattr(item, "to_json_dict"):
            out.append(dict(item.to_json_dict()))
        elif isinstance(item, Mapping):
            out.append(dict(item))
        elif isinstance(item, int) and not isinstance(item, bool):
            if not 0 <= item < len(known):
                raise InvalidArgument(f"metric: the experiment has {len(known)} metrics, not #{item}.",
                                      argument="metric")  # fmt: skip
            out.append(known[item])
        elif isinstance(item, str):
            named = [m for m in known if metric_label(m) == item or m.get("uuid") == item]
            if not named:
                labels = ", ".join(repr(metric_label(m)) for m in known) or "none"
                raise InvalidArgument(f"metric: no metric named {item!r} (the experiment has {labels}).",
                                      argument="metric")  # fmt: skip
            out.append(named[0])
        else:
            raise InvalidArgumentType(
                "metric: expected None (every metric), a metric, its index or name, or a list of them.",
                argument="metric",
            )
    return out


def _properties(properties: Sequence[str] | str | None) -> list[str]:
    if properties is None:
        return []
    if isinstance(properties, str):
        properties = [properties]
    if not all(isinstance(p, str) and p for p in properties):
        raise InvalidArgumentType("properties: expected a list of property names.", argument="properties")
    return list(dict.fromkeys(properties))


def _typed(values: pd.Series) -> pd.Series:
    """A property column read as text: numbers, booleans, else strings."""
    text = values.astype("string")
    present = text.dropna()
    if present.empty:
        return text
    lowered = present.str.lower()
    if lowered.isin(["true", "false"]).all():
        return text.str.lower().map({"true": True, "false": False}).astype("boolean")
    numbers = pd.to_numeric(present, errors="coerce")
    if numbers.notna().all():
        whole = bool((numbers == numbers.round()).all()) and bool((numbers.abs() < 2**53).all())
        full = pd.to_numeric(text, errors="coerce")
        return full.astype("Int64") if whole else full.astype("Float64")
    return text


def units_frame(raw: pd.DataFrame, metrics: Sequence[Mapping[str, Any]], properties: Sequence[str]) -> pd.DataFrame:
    """The server's columns (``m<i>_<name>``, ``p<j>``) renamed and typed (see the module)."""
    out = pd.DataFrame({
        "entity_id": raw["entity_id"].astype("string"),
        "variant": raw["variant"].astype("string"),
        "first_exposure_time": pd.to_datetime(raw["first_exposure_time"], utc=True),
    })  # fmt: skip
    columns: dict[str, list[str]] = {}
    taken = set(UNIT_COLUMNS)
    for i, metric in enumerate(metrics):
        label = metric_label(metric)
        base = label if label not in taken else f"{label} #{i}"
        counted = raw[f"m{i}_counted"].fillna(0).astype(int) == 1
        names = []
        for column in [c[len(f"m{i}_") :] for c in raw.columns if c.startswith(f"m{i}_")]:
            if column == "counted":
                continue
            name = base if column == "value" else f"{base} {column}"
            values = raw[f"m{i}_{column}"]
            if column == "step":
                # A unit without metric events has reached step 0 (the exposure alone).
                out[name] = pd.to_numeric(values, errors="coerce").where(counted).fillna(0).astype("Int64")
            else:
                out[name] = pd.to_numeric(values, errors="coerce").astype(float).where(counted)
            names.append(name)
            taken.add(name)
        columns[label] = names
    sources: dict[str, dict[str, int]] = {}
    for j, prop in enumerate(properties):
        name = prop if prop not in taken else f"person.{prop}"
        out[name] = _typed(raw[f"p{j}"]) if f"p{j}" in raw else pd.Series(pd.NA, index=raw.index, dtype="string")
        taken.add(name)
        if f"s{j}" in raw:
            said = raw[f"s{j}"].fillna("").astype(str).replace("", "missing")
            sources[name] = {str(k): int(v) for k, v in said.value_counts().items()}
        else:
            sources[name] = {"unknown": len(raw)}
    out.attrs["columns"] = columns
    out.attrs["property_sources"] = sources
    return out


def _property_warnings(df: pd.DataFrame, properties: Sequence[str]) -> list[str]:
    """A note per property no exposed unit has (on its person or group, or on its first exposure event)."""
    notes = []
    for name, counts in (df.attrs.get("property_sources") or {}).items():
        if len(df) and counts.get("missing", 0) == len(df):
            notes.append(f"property {name!r}: no exposed unit has it, on its person nor on its first exposure event "
                         "(a name this project has not seen?); the column is empty.")  # fmt: skip
    return notes


def _variants(experiment: Mapping[str, Any]) -> tuple[str, ...]:
    flag = experiment.get("feature_flag") or {}
    variants = ((flag.get("filters") or {}).get("multivariate") or {}).get("variants")
    if not variants:
        variants = (experiment.get("parameters") or {}).get("feature_flag_variants") or []
    return tuple(str(v.get("key")) for v in variants if isinstance(v, Mapping) and v.get("key"))


def _group(experiment: Mapping[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """The flag's ``aggregation_group_type_index`` (an experiment by group), for a service that knows groups."""
    flag = experiment.get("feature_flag") or {}
    index = (flag.get("filters") or {}).get("aggregation_group_type_index") if isinstance(flag, Mapping) else None
    return {"group_type_index": index} if index is not None and "group_type_index" in fields else {}


def _holdout_key(experiment: Mapping[str, Any]) -> str | None:
    """The holdout arm's flag value (``holdout-<id>``), when the experiment has a holdout."""
    from ..schema import holdout_variant_key

    holdout = experiment.get("holdout")
    if not isinstance(holdout, Mapping) or holdout.get("id") is None:
        return None
    return holdout_variant_key(int(holdout["id"]), holdout.get("filters"))


def _moment(text: Any) -> datetime | None:
    if not text:
        return None
    value = datetime.fromisoformat(str(text).replace("Z", "+00:00"))
    return (value if value.tzinfo else value.replace(tzinfo=UTC)).astimezone(UTC)


def resolve_remote(client: Client, experiment: Mapping[str, Any]) -> tuple[Any, Any]:
    """The experiment (as the HogQL builders read it) and the project's settings they need (time zone, test
    account filters), from what the API answers: for HogQL the toolkit writes itself with ``hoglab.translate``,
    the service's own builders, imported only now."""
    from ..schema import ExperimentExposureCriteria, ExperimentStatsConfig
    from ..translate.metric.experiment import ResolvedExperiment

    start = _moment(experiment.get("start_date"))
    if start is None:
        raise InvalidArgument("experiment: a draft (no start_date) has no exposed units yet.", argument="experiment")
    resolved = ResolvedExperiment(
        experiment_id=int(experiment.get("id") or 0), flag_key=str(experiment.get("feature_flag_key")),
        variants=_variants(experiment), start=start, end=_moment(experiment.get("end_date")),
        exposure_criteria=ExperimentExposureCriteria.model_validate(experiment.get("exposure_criteria") or {}),
        stats_config=ExperimentStatsConfig.model_validate(experiment.get("stats_config") or {}).model_dump(
            mode="json", exclude_none=True),
        only_count_matured_users=bool(experiment.get("only_count_matured_users")),
        holdout_key=_holdout_key(experiment),
        **_group(experiment, ResolvedExperiment.model_fields),
    )  # fmt: skip
    settings = client.get_json(f"/api/projects/{client.project_id}/") or {}
    project = SimpleNamespace(timezone=settings.get("timezone") or "UTC",
                              test_account_filters=settings.get("test_account_filters") or [])  # fmt: skip
    return resolved, project


def _names_an_action(document: Any) -> bool:
    """Whether ``document`` (a metric, an exposure config) reads an action anywhere in it."""
    if isinstance(document, Mapping):
        if document.get("kind") == "ActionsNode" or document.get("type") == "actions":
            return True
        return any(_names_an_action(value) for value in document.values())
    if isinstance(document, list | tuple):
        return any(_names_an_action(item) for item in document)
    return False


def remote_actions(client: Client, *documents: Any) -> dict[int, Any]:
    """The project's actions as the service's builders read them (``ActionDefinition`` by id), read over the API
    only when one of ``documents`` uses an action: without them the builders would compile an action into a
    condition no event meets (the service's rule for an action the project does not have), and a metric or an
    exposure by action would silently count nothing.

    >>> _names_an_action({"source": {"kind": "ActionsNode", "id": 3}}), _names_an_action({"kind": "EventsNode"})
    (True, False)
    """
    if not any(_names_an_action(document) for document in documents):
        return {}
    from ..translate.actions import ActionDefinition

    actions: dict[int, Any] = {}
    for item in client.actions._all():  # every live action, paged as the client lists them
        if isinstance(item, Mapping) and isinstance(item.get("id"), int):
            steps = tuple(item.get("steps") or ())
            actions[item["id"]] = ActionDefinition(item["id"], item.get("name"), steps, bool(item.get("deleted")))
    return actions


def remote_units_sql(resolved: Any, project: Any, metrics: Sequence[Mapping[str, Any]], properties: Sequence[str],
                     *, actions: Mapping[int, Any], after: str | None = None,
                     limit: int | None = None) -> tuple[str, dict[str, Any]]:  # fmt: skip
    """The HogQL (and values) of the units, written here for a server without ``ExperimentUnitsQuery`` (PostHog),
    by the service's own builder, for the experiment and project :func:`resolve_remote` read."""
    from ..schema import parse_metric
    from ..stats.posthog import resolve_cuped
    from ..translate.metric.units import units_sql
    from ..translate.params import Params

    now = datetime.now(UTC)
    p = Params()
    parsed = [parse_metric(dict(m)) for m in metrics]
    cuped = resolve_cuped(resolved.stats_config)  # the experiment's own setting: PostHog's answer has no team's
    sql = units_sql(resolved, parsed, properties, p, project, resolved.end or now, now, after=after, limit=limit,
                    actions=actions, cuped_days=cuped.lookback_days if cuped.enabled else None)  # fmt: skip
    return sql, p.values


def _remote_pages(client: Client, experiment: Mapping[str, Any], metrics: Sequence[Mapping[str, Any]],
                  properties: Sequence[str], page_size: int) -> pd.DataFrame:  # fmt: skip
    from ..frames import table_frame
    from ..schema import HogQLQuery
    from ._query import execute
    from ._values import encode_values

    resolved, project = resolve_remote(client, experiment)
    actions = remote_actions(client, experiment.get("exposure_criteria"), metrics)
    pages: list[pd.DataFrame] = []
    after: str | None = None
    while True:
        sql, values = remote_units_sql(resolved, project, metrics, properties, actions=actions, after=after,
                                       limit=page_size)  # fmt: skip
        with warnings.catch_warnings():
            # A property read on the exposure event is only the fallback for a unit whose person lacks it: the
            # server's "never seen on this project's events" is no news (the frame warns when no unit has it).
            for name in properties:
                warnings.filterwarnings("ignore", message=f"Property {re.escape(repr(name))} has never been seen on "
                                        "this project's events", category=QueryWarning)  # fmt: skip
            page = table_frame(execute(client, HogQLQuery(query=sql, values=encode_values(client, values) or None)))
        pages.append(page)
        if len(page) < page_size or page.empty:
            break
        after = str(page["entity_id"].iloc[-1])
    non_empty = [p for p in pages if len(p)] or pages[:1]
    df = pd.concat(non_empty, ignore_index=True) if len(non_empty) > 1 else non_empty[0]
    df.attrs["pages"] = len(pages)
    return df


def experiment_units(
    client: Client, experiment: Mapping[str, Any], metric: Any = None,
    properties: Sequence[str] | str | None = None, *, page_size: int = PAGE_SIZE,
) -> pd.DataFrame:  # fmt: skip
    """The units frame of an experiment given as JSON (see the module)."""
    from ._bulk import ARROW_STREAM, _is_unsupported

    metrics = _pick_metrics(experiment, metric)
    props = _properties(properties)
    if isinstance(page_size, bool) or not isinstance(page_size, int) or page_size < 1:
        raise InvalidArgument(f"page_size: expected a positive integer, got {page_size!r}.", argument="page_size")
    raw: pd.DataFrame | None = None
    if client._bulk_rows is not False:
        query = {"kind": "ExperimentUnitsQuery", "experiment_id": experiment.get("id"), "metrics": metrics,
                 "properties": props}  # fmt: skip
        try:
            response = client.request("POST", client.path("query/arrow/"), json={"query": query}, idempotent=True)
        except HoglabError as error:
            if not _is_unsupported(error) or client._bulk_rows is True:
                raise
            client._bulk_rows = False
        else:
            if response.headers.get("content-type", "").startswith(ARROW_STREAM):
                import pyarrow as pa  # only for an Arrow answer: against PostHog the toolkit needs no pyarrow

                from ..frames.arrow import arrow_frame

                client._bulk_rows = True
                raw = arrow_frame(pa.ipc.open_stream(response.content).read_all())
            else:
                client._bulk_rows = False
    if raw is None:
        raw = _remote_pages(client, experiment, metrics, props, page_size)
    df = units_frame(raw, metrics, props)
    df.attrs["experiment_id"] = experiment.get("id")
    for note in _property_warnings(df, props):
        df.attrs["warnings"] = [*df.attrs.get("warnings", []), note]
        warnings.warn(QueryWarning(note), stacklevel=3)
    if metric is None and not metrics:
        note = _no_metrics_note(experiment)
        df.attrs["warnings"] = [*df.attrs.get("warnings", []), note]
        warnings.warn(QueryWarning(note), stacklevel=3)
    return df


def _no_metrics_note(experiment: Mapping[str, Any]) -> str:
    """Why a units frame has no metric column, and the call that gives one: a legacy experiment's target metric
    is an insight filter (``filters``), which has no per-unit stage; its funnel or trend events name the builder.

    >>> _no_metrics_note({"id": 3, "filters": {"insight": "FUNNELS", "events": [{"id": "purchase"}]}}).split("pass ")[1]
    "metric=hoglab.funnel_metric(['purchase'])."
    """
    filters = experiment.get("filters") or {}
    events = [str(e.get("id")) for e in filters.get("events") or [] if isinstance(e, Mapping) and e.get("id")]
    where = f"Experiment {experiment.get('id')} has no metrics of PostHog's current kind"
    if not events:
        return f"{where}: the frame has the exposed units only. Pass metric=... (hoglab.mean_metric, funnel_metric)."
    if str(filters.get("insight", "")).upper() == "FUNNELS":
        call = f"hoglab.funnel_metric({events!r})"
    else:
        call = f"hoglab.mean_metric({events[0]!r})"
    return (f"{where} (its target metric is a legacy insight filter, which has no per-unit values): the frame has "
            f"the exposed units only. For its metric per unit pass metric={call}.")  # fmt: skip
