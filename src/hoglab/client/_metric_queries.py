"""Asking for a metric experiment's results: an ``ExperimentQuery`` per metric and one ``ExperimentExposureQuery``.

The metrics go back to ``/query`` exactly as the experiment holds them (not through hoglab's request models), so
a metric written by a newer PostHog, with nodes hoglab does not model, is still analysed by the server that wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import APIError
from ..schema import saved_metric_definition
from ..stats.posthog import TeamDefaults
from ._metric_results import MetricAnswer, MetricExperimentResult, team_defaults

if TYPE_CHECKING:
    from ._client import Client

__all__ = [
    "experiment_metrics",
    "experiments_config",
    "has_holdout",
    "is_metric_experiment",
    "metric_experiment_results",
    "post_query",
]

Role = Literal["primary", "secondary"]


def is_metric_experiment(experiment: Mapping[str, Any]) -> bool:
    """Whether the experiment is analysed through its metrics (``metrics``, ``metrics_secondary`` or shared
    metrics) rather than the legacy ``filters``.

    >>> is_metric_experiment({"metrics": [{"metric_type": "mean"}], "filters": {}}), is_metric_experiment({})
    (True, False)
    """
    return bool(experiment.get("metrics") or experiment.get("metrics_secondary") or experiment.get("saved_metrics"))


def _ordered(metrics: list[dict[str, Any]], order: Any) -> list[dict[str, Any]]:
    # PostHog's UI orders metrics by these uuids when the list is present; metrics it does not name keep their
    # place after the named ones.
    if not isinstance(order, Sequence) or isinstance(order, str) or not order:
        return metrics
    rank = {str(uuid): i for i, uuid in enumerate(order)}
    return sorted(metrics, key=lambda m: rank.get(str(m.get("uuid")), len(rank)))


def experiment_metrics(experiment: Mapping[str, Any]) -> list[tuple[dict[str, Any], Role]]:
    """Every metric with its role, primary ones first, each list in the experiment's chosen order.

    Shared metrics (``saved_metrics``, PostHog's ``ExperimentToSavedMetric``) join the list their ``metadata.type``
    names, as the metric PostHog analyses for the link (the saved query with the link's breakdowns,
    :func:`hoglab.schema.saved_metric_definition`).

    >>> exp = {"metrics": [{"uuid": "a", "name": "A"}, {"uuid": "b", "name": "B"}],
    ...        "metrics_secondary": [{"uuid": "c", "name": "C"}], "primary_metrics_ordered_uuids": ["b", "a"]}
    >>> [(m["name"], role) for m, role in experiment_metrics(exp)]
    [('B', 'primary'), ('A', 'primary'), ('C', 'secondary')]
    """
    lists: dict[Role, list[dict[str, Any]]] = {
        "primary": [dict(m) for m in experiment.get("metrics") or [] if isinstance(m, Mapping)],
        "secondary": [dict(m) for m in experiment.get("metrics_secondary") or [] if isinstance(m, Mapping)],
    }
    for shared in experiment.get("saved_metrics") or []:
        query = shared.get("query") if isinstance(shared, Mapping) else None
        if not isinstance(query, Mapping):
            continue
        metadata = shared.get("metadata") if isinstance(shared.get("metadata"), Mapping) else None
        role: Role = "secondary" if (metadata or {}).get("type") == "secondary" else "primary"
        saved_id = shared.get("saved_metric")
        lists[role].append(saved_metric_definition(
            dict(query), dict(metadata) if metadata else None, name=str(shared.get("name") or ""),
            saved_metric_id=saved_id if isinstance(saved_id, int) else None,
        ))  # fmt: skip
    primary = _ordered(lists["primary"], experiment.get("primary_metrics_ordered_uuids"))
    secondary = _ordered(lists["secondary"], experiment.get("secondary_metrics_ordered_uuids"))
    return [(m, "primary") for m in primary] + [(m, "secondary") for m in secondary]


def post_query(client: Client, query: Mapping[str, Any], *, refresh: bool = False) -> dict[str, Any]:
    """``POST /query`` with a query given as JSON (sent as is), answered blocking; a 202 (the server went async)
    is waited for (:func:`hoglab.client._query.execute`)."""
    from ._query import execute

    return execute(client, query, refresh=bool(refresh))


def exposure_query(experiment: Mapping[str, Any]) -> dict[str, Any]:
    """The ``ExperimentExposureQuery`` of an experiment, as PostHog's own UI writes it.

    >>> q = exposure_query({"id": 3, "name": "Copy", "feature_flag": {"key": "copy"},
    ...                     "start_date": "2025-06-01T00:00:00Z"})
    >>> q["kind"], q["experiment_id"], q["feature_flag"]["key"], q["start_date"], q["end_date"]
    ('ExperimentExposureQuery', 3, 'copy', '2025-06-01T00:00:00Z', None)
    """
    flag = experiment.get("feature_flag")
    query: dict[str, Any] = {
        "kind": "ExperimentExposureQuery",
        "experiment_id": experiment.get("id"),
        "experiment_name": experiment.get("name") or "",
        "feature_flag": dict(flag) if isinstance(flag, Mapping) else {"key": experiment.get("feature_flag_key")},
        "start_date": experiment.get("start_date"),
        "end_date": experiment.get("end_date"),
    }
    if experiment.get("exposure_criteria"):
        query["exposure_criteria"] = experiment["exposure_criteria"]
    holdout = experiment.get("holdout")
    if isinstance(holdout, Mapping) and holdout.get("id") is not None:
        # PostHog's UI sends the holdout (its ExperimentHoldoutType members), so the exposures show its row.
        query["holdout"] = {k: holdout.get(k) for k in ("id", "name", "description", "filters", "created_at",
                                                        "updated_at") if k in holdout}  # fmt: skip
    return query


def experiments_config(client: Client) -> dict[str, Any] | None:
    """The project's experiment defaults (``GET /experiments_config/``, PostHog's ``TeamExperimentsConfig``), or
    ``None`` where the server has no such endpoint or the key may not read it."""
    try:
        body = client.get_json(client.path("experiments_config/"))
    except APIError:
        return None
    return dict(body) if isinstance(body, Mapping) else None


def has_holdout(experiment: Mapping[str, Any]) -> bool:
    """Whether the experiment holds a group out (``holdout`` or ``holdout_id``).

    >>> has_holdout({"holdout": {"id": 3}}), has_holdout({"holdout_id": None})
    (True, False)
    """
    holdout = experiment.get("holdout")
    named = isinstance(holdout, Mapping) and holdout.get("id") is not None
    return named or experiment.get("holdout_id") is not None


def _answers(
    client: Client, experiment: Mapping[str, Any], refresh: bool, team: TeamDefaults | None, **extra: Any
) -> list[MetricAnswer]:
    stats_config = experiment.get("stats_config") if isinstance(experiment.get("stats_config"), Mapping) else {}
    answers = []
    for metric, role in experiment_metrics(experiment):
        query = {"kind": "ExperimentQuery", "experiment_id": experiment.get("id"), "metric": metric, **extra}
        try:
            answer = post_query(client, query, refresh=refresh)
            answers.append(MetricAnswer(metric, role, answer, stats_config=stats_config, team=team))
        except APIError as exc:
            answers.append(MetricAnswer(metric, role, None, error=str(exc.detail or exc), stats_config=stats_config,
                                        team=team))  # fmt: skip
    return answers


def metric_experiment_results(
    client: Client, experiment: Mapping[str, Any], *, refresh: bool = False, exposures: bool = True,
    team: TeamDefaults | None = None, holdout: bool | None = None,
) -> MetricExperimentResult:  # fmt: skip
    """Run every metric's ``ExperimentQuery`` (and the exposure query) of an experiment given as JSON.

    A metric the server cannot answer (a 400 such as "no exposures yet") is kept with its error, so the others
    still show; transport failures raise. ``team``: the project's defaults (read from ``experiments_config`` when
    not given), which the settings fall back to when the experiment's ``stats_config`` is silent. With a holdout
    (``holdout=None``: when the experiment has one) each metric is asked a second time with hoglab's
    ``compare_to_holdout``: every variant against the holdout arm (PostHog, which has no such option, answers each
    with an error, kept the same way).
    """
    if team is None:
        team = team_defaults(experiments_config(client))
    answers = _answers(client, experiment, refresh, team)
    compared: list[MetricAnswer] = []
    if holdout or (holdout is None and has_holdout(experiment)):
        compared = _answers(client, experiment, refresh, team, compare_to_holdout=True)
    exposure_answer: dict[str, Any] | None = None
    exposure_error: str | None = None
    if exposures:
        try:
            exposure_answer = post_query(client, exposure_query(experiment), refresh=refresh)
        except APIError as exc:
            exposure_error = str(exc.detail or exc)
    return MetricExperimentResult(
        int(experiment.get("id") or 0), dict(experiment), tuple(answers), exposure_answer, exposure_error, team=team,
        holdout_metrics=tuple(compared),
    )  # fmt: skip
