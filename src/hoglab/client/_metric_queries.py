"""Asking for a metric experiment's results: an ``ExperimentQuery`` per metric and one ``ExperimentExposureQuery``.

The metrics go back to ``/query`` exactly as the experiment holds them (not through hoglab's request models), so
a metric written by a newer PostHog, with nodes hoglab does not model, is still analysed by the server that wrote it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from ..errors import APIError
from ..frames.columns import json_loads
from ..schema import saved_metric_definition
from ._metric_results import MetricAnswer, MetricExperimentResult

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["experiment_metrics", "has_holdout", "is_metric_experiment", "metric_experiment_results", "post_query"]

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
    """``POST /query`` with a query given as JSON, answered blocking; a 202 (the server went async) is waited for.

    Experiment answers have no ``results`` member, so "answered" is read from the status code and
    ``query_status``, not from the body's members.
    """
    from ._jobs import QueryJob, new_query_id

    query_id = new_query_id()
    body = {"query": dict(query), "client_query_id": query_id, "refresh": "force_blocking" if refresh else "blocking"}
    response = client.request("POST", client.path("query/"), json=body, idempotent=True)
    data: dict[str, Any] = json_loads()(response.content)
    status = data.get("query_status") if isinstance(data.get("query_status"), Mapping) else None
    if response.status_code != 202 and (status is None or status.get("complete", True)):
        return data
    if status is not None and status.get("complete") and isinstance(status.get("results"), Mapping):
        return dict(status["results"])
    return QueryJob(client, str((status or {}).get("id") or query_id)).wait()


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


def has_holdout(experiment: Mapping[str, Any]) -> bool:
    """Whether the experiment holds a group out (``holdout`` or ``holdout_id``).

    >>> has_holdout({"holdout": {"id": 3}}), has_holdout({"holdout_id": None})
    (True, False)
    """
    holdout = experiment.get("holdout")
    named = isinstance(holdout, Mapping) and holdout.get("id") is not None
    return named or experiment.get("holdout_id") is not None


def _answers(client: Client, experiment: Mapping[str, Any], refresh: bool, **extra: Any) -> list[MetricAnswer]:
    answers = []
    for metric, role in experiment_metrics(experiment):
        query = {"kind": "ExperimentQuery", "experiment_id": experiment.get("id"), "metric": metric, **extra}
        try:
            answers.append(MetricAnswer(metric, role, post_query(client, query, refresh=refresh)))
        except APIError as exc:
            answers.append(MetricAnswer(metric, role, None, error=str(exc.detail or exc)))
    return answers


def metric_experiment_results(
    client: Client,
    experiment: Mapping[str, Any],
    *,
    refresh: bool = False,
    exposures: bool = True,
    holdout: bool | None = None,
) -> MetricExperimentResult:
    """Run every metric's ``ExperimentQuery`` (and the exposure query) of an experiment given as JSON.

    A metric the server cannot answer (a 400 such as "no exposures yet") is kept with its error, so the others
    still show; transport failures raise. With a holdout (``holdout=None``: when the experiment has one) each
    metric is asked a second time with hoglab's ``compare_to_holdout``: every variant against the holdout arm
    (PostHog, which has no such option, answers each with an error, kept the same way).
    """
    answers = _answers(client, experiment, refresh)
    compared: list[MetricAnswer] = []
    if holdout or (holdout is None and has_holdout(experiment)):
        compared = _answers(client, experiment, refresh, compare_to_holdout=True)
    exposure_answer: dict[str, Any] | None = None
    exposure_error: str | None = None
    if exposures:
        try:
            exposure_answer = post_query(client, exposure_query(experiment), refresh=refresh)
        except APIError as exc:
            exposure_error = str(exc.detail or exc)
    return MetricExperimentResult(
        int(experiment.get("id") or 0), dict(experiment), tuple(answers), exposure_answer, exposure_error,
        holdout_metrics=tuple(compared),
    )  # fmt: skip
