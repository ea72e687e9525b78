"""``client.experiments.holdouts`` and ``client.experiments.saved_metrics``: PostHog's experiment holdouts and
saved (shared) metrics, listed as DataFrames and read and written as schema models.

Both work against hoglab and PostHog alike (``/api/projects/:id/experiment_holdouts/`` and
``/experiment_saved_metrics/``). An experiment uses them through ``client.experiments.create(..., holdout=...,
saved_metrics=[...])``; its results then compare every variant with the holdout too
(:meth:`~hoglab.MetricExperimentResult.holdout_frame`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd
import pydantic

from ..errors import InvalidArgument, InvalidArgumentType
from ..queries._args import call_errors
from ..schema import (
    ExperimentHoldout,
    ExperimentHoldoutCreate,
    ExperimentHoldoutUpdate,
    ExperimentSavedMetric,
    ExperimentSavedMetricCreate,
    ExperimentSavedMetricUpdate,
    holdout_filters,
)
from ._metric_results import metric_label

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["HOLDOUT_COLUMNS", "SAVED_METRIC_COLUMNS", "Holdouts", "SavedMetrics", "saved_metric_links"]

HOLDOUT_COLUMNS = ["id", "name", "exclusion_percentage", "variant_key", "description", "created_by", "created_at",
                   "updated_at"]  # fmt: skip
SAVED_METRIC_COLUMNS = ["id", "name", "metric", "metric_type", "uuid", "description", "tags", "created_by",
                        "created_at", "updated_at"]  # fmt: skip


def _creator(item: Mapping[str, Any]) -> str | None:
    creator = item.get("created_by")
    return str(creator.get("email")) if isinstance(creator, Mapping) and creator.get("email") else None


def _typed(df: pd.DataFrame, strings: Sequence[str]) -> pd.DataFrame:
    df["id"] = pd.array([None if pd.isna(v) else int(v) for v in df["id"]], dtype="Int64")
    for name in strings:
        df[name] = pd.array([None if v is None or pd.isna(v) else str(v) for v in df[name]], dtype=pd.StringDtype())
    for name in ("created_at", "updated_at"):
        df[name] = pd.to_datetime(pd.Series(df[name].tolist(), dtype=object), utc=True, format="ISO8601").dt.as_unit(
            "us"
        )
    return df


def _metric_json(metric: Any) -> dict[str, Any]:
    if hasattr(metric, "to_json_dict"):
        return dict(metric.to_json_dict())
    if isinstance(metric, Mapping):
        return dict(metric)
    raise InvalidArgumentType("metric: expected hoglab.mean_metric(...) and the like, or a metric dict.",
                              argument="metric")  # fmt: skip


def _patch(client: Client, path: str, update: type[pydantic.BaseModel], fields: dict[str, Any]) -> Any:
    """PATCH the ``fields`` given and return the answer's JSON.

    The ``update`` model checks them first (a mistake is an InvalidArgument before any request); only the fields
    named are sent.
    """
    if not fields:
        raise InvalidArgument("update: name at least one field to change.", argument="fields")
    with call_errors("update"):
        body = update(**fields)
    return client.request("PATCH", path, json=body.model_dump(mode="json", exclude_unset=True)).json()


def saved_metric_links(saved_metrics: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    """``saved_metrics_ids`` from what a notebook passes: saved metric ids or models (primary), ``(id, "secondary")``
    pairs, or PostHog's ``{"id", "metadata"}`` dicts.

    >>> saved_metric_links([5, (6, "secondary"), {"id": 7, "metadata": {"type": "primary"}}])
    [{'id': 5, 'metadata': {'type': 'primary'}}, {'id': 6, 'metadata': {'type': 'secondary'}}, \
{'id': 7, 'metadata': {'type': 'primary'}}]
    """
    if saved_metrics is None:
        return None
    if isinstance(saved_metrics, str | Mapping) or not isinstance(saved_metrics, Sequence):
        raise InvalidArgumentType("saved_metrics: expected a list of saved metric ids.", argument="saved_metrics")
    links = []
    for item in saved_metrics:
        role = "primary"
        if isinstance(item, tuple) and len(item) == 2:
            item, role = item
        if isinstance(item, Mapping):
            links.append(dict(item))
            continue
        if isinstance(item, ExperimentSavedMetric):
            item = item.id
        if isinstance(item, bool) or not isinstance(item, int):
            raise InvalidArgumentType(f"saved_metrics: {item!r} is not a saved metric id.", argument="saved_metrics")
        if role not in ("primary", "secondary"):
            raise InvalidArgument(f"saved_metrics: the role is 'primary' or 'secondary', got {role!r}.",
                                  argument="saved_metrics")  # fmt: skip
        links.append({"id": item, "metadata": {"type": role}})
    return links


class Holdouts:
    """The project's experiment holdouts, as ``client.experiments.holdouts``.

    >>> holdout = client.experiments.holdouts.create("Q3 holdout", exclusion_percentage=10)  # doctest: +SKIP
    >>> holdout.variant_key  # doctest: +SKIP
    'holdout-1'
    >>> client.experiments.create("Pricing", "pricing", holdout=holdout)  # doctest: +SKIP
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def _path(self, suffix: str = "") -> str:
        return self._client.path(f"experiment_holdouts/{suffix}")

    def list(self) -> pd.DataFrame:
        """Every holdout (all pages), newest first: ``exclusion_percentage`` is the share held out (%),
        ``variant_key`` the flag value its persons get."""
        rows = []
        for item in self._client.paginate(self._path()):
            holdout = ExperimentHoldout.model_validate(item)
            rows.append({**{k: item.get(k) for k in HOLDOUT_COLUMNS}, "created_by": _creator(item),
                         "exclusion_percentage": holdout.exclusion_percentage, "variant_key": holdout.variant_key})
        df = _typed(pd.DataFrame(rows, columns=HOLDOUT_COLUMNS), ("name", "variant_key", "description", "created_by"))
        df["exclusion_percentage"] = pd.to_numeric(df["exclusion_percentage"]).astype("float64")
        return df

    def get(self, holdout_id: int) -> ExperimentHoldout:
        return ExperimentHoldout.model_validate(self._client.get_json(self._path(f"{int(holdout_id)}/")))

    def create(
        self,
        name: str,
        exclusion_percentage: float | None = None,
        *,
        description: str | None = None,
        filters: Sequence[Mapping[str, Any]] | None = None,
    ) -> ExperimentHoldout:
        """A new holdout keeping ``exclusion_percentage`` % of persons out of every experiment that uses it (or
        PostHog's ``filters`` as they are)."""
        if (exclusion_percentage is None) == (filters is None):
            raise InvalidArgument("create: give exclusion_percentage or filters (one of them).",
                                  argument="exclusion_percentage")  # fmt: skip
        groups = [dict(f) for f in filters] if filters is not None else holdout_filters(exclusion_percentage or 0)
        with call_errors("create"):
            body = ExperimentHoldoutCreate(name=name, description=description, filters=groups)
        response = self._client.request("POST", self._path(), json=body.to_json_dict())
        return ExperimentHoldout.model_validate(response.json())

    def update(self, holdout_id: int, *, exclusion_percentage: float | None = None, **fields: Any) -> ExperimentHoldout:
        """Change ``name``, ``description``, ``filters`` or the ``exclusion_percentage`` (the flags of its
        experiments follow)."""
        if exclusion_percentage is not None:
            fields["filters"] = holdout_filters(exclusion_percentage)
        answer = _patch(self._client, self._path(f"{int(holdout_id)}/"), ExperimentHoldoutUpdate, fields)
        return ExperimentHoldout.model_validate(answer)

    def delete(self, holdout_id: int) -> None:
        """Delete: its experiments no longer hold anyone out."""
        self._client.request("DELETE", self._path(f"{int(holdout_id)}/"))


class SavedMetrics:
    """The project's saved (shared) metrics, as ``client.experiments.saved_metrics``.

    >>> revenue = client.experiments.saved_metrics.create(  # doctest: +SKIP
    ...     "Revenue", hoglab.mean_metric("purchase", math="sum", math_property="price"))
    >>> client.experiments.create("Pricing", "pricing", saved_metrics=[revenue])  # doctest: +SKIP
    """

    def __init__(self, client: Client) -> None:
        self._client = client

    def _path(self, suffix: str = "") -> str:
        return self._client.path(f"experiment_saved_metrics/{suffix}")

    def list(self) -> pd.DataFrame:
        """Every saved metric (all pages), by name: ``metric`` says what it measures, ``uuid`` is its query's."""
        rows = []
        for item in self._client.paginate(self._path()):
            raw = item.get("query")
            query: dict[str, Any] = dict(raw) if isinstance(raw, Mapping) else {}
            rows.append({**{k: item.get(k) for k in SAVED_METRIC_COLUMNS}, "created_by": _creator(item),
                         "metric": metric_label({**query, "name": None}), "metric_type": query.get("metric_type"),
                         "uuid": query.get("uuid"), "tags": list(item.get("tags") or [])})  # fmt: skip
        strings = ("name", "metric", "metric_type", "uuid", "description", "created_by")
        return _typed(pd.DataFrame(rows, columns=SAVED_METRIC_COLUMNS), strings)

    def get(self, saved_metric_id: int) -> ExperimentSavedMetric:
        return ExperimentSavedMetric.model_validate(self._client.get_json(self._path(f"{int(saved_metric_id)}/")))

    def create(
        self, name: str, metric: Any, *, description: str | None = None, tags: Sequence[str] | None = None
    ) -> ExperimentSavedMetric:
        """Save ``metric`` (:func:`hoglab.mean_metric` and the like, or a metric dict) under ``name``, unique in
        the project; the server gives its query a fresh ``uuid``."""
        with call_errors("create"):
            body = ExperimentSavedMetricCreate(name=name, query=_metric_json(metric), description=description,
                                               tags=list(tags) if tags is not None else None)  # fmt: skip
        response = self._client.request("POST", self._path(), json=body.to_json_dict())
        return ExperimentSavedMetric.model_validate(response.json())

    def update(self, saved_metric_id: int, *, metric: Any = None, **fields: Any) -> ExperimentSavedMetric:
        """Change ``name``, ``description``, ``tags`` or the ``metric`` (its ``uuid`` is kept)."""
        if metric is not None:
            # The saved metric keeps its query's uuid (changing it is refused); a builder's own uuid is left out.
            fields["query"] = {k: v for k, v in _metric_json(metric).items() if k != "uuid"}
        answer = _patch(self._client, self._path(f"{int(saved_metric_id)}/"), ExperimentSavedMetricUpdate, fields)
        return ExperimentSavedMetric.model_validate(answer)

    def delete(self, saved_metric_id: int) -> None:
        """Delete: every experiment that used it no longer does."""
        self._client.request("DELETE", self._path(f"{int(saved_metric_id)}/"))
