"""``client.experiments``: PostHog's Experiments API, with listings as DataFrames and results as objects."""

from __future__ import annotations

import builtins
import json
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import APIError, InvalidArgument, InvalidArgumentType
from ..queries._args import call_errors
from ..schema import Cohort, Experiment, ExperimentCreate, ExperimentHoldout, ExperimentUpdate, ShipVariant
from ._actions import resolve_action_names
from ._errors import json_or_none
from ._experiment_objects import Holdouts, SavedMetrics, saved_metric_links
from ._legacy_results import ExperimentResult
from ._metric_queries import is_metric_experiment, metric_experiment_results
from ._metric_results import MetricExperimentResult

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["Experiments"]

LIST_COLUMNS = [
    "id", "name", "status", "feature_flag_key", "variants", "start_date", "end_date", "archived",
    "flag_id", "flag_active", "exposure_cohort", "description", "created_by", "created_at", "updated_at",
    "parameters", "filters", "secondary_metrics",
]  # fmt: skip
_DATES = ("start_date", "end_date", "created_at", "updated_at")


def _variants(variants: Any) -> list[dict[str, Any]] | None:
    """``["control", "test"]`` (equal split), ``{"control": 50, "test": 50}`` or PostHog's variant dicts."""
    if variants is None:
        return None
    if isinstance(variants, Mapping):
        return [{"key": k, "rollout_percentage": v} for k, v in variants.items()]
    if isinstance(variants, Sequence) and not isinstance(variants, str):
        if all(isinstance(v, str) for v in variants):
            n = len(variants)
            # Whole percentages that sum to 100 (the flag serializer insists): the remainder goes to the first.
            shares = [100 // n + (1 if i < 100 % n else 0) for i in range(n)] if n else []
            return [{"key": k, "rollout_percentage": p} for k, p in zip(variants, shares, strict=True)]
        if all(isinstance(v, Mapping) for v in variants):
            return [dict(v) for v in variants]
    raise InvalidArgumentType(
        "variants: expected a list of keys, a {key: rollout_percentage} dict or a list of variant dicts.",
        argument="variants",
    )


def _moment(argument: str, value: bool | datetime | str | None) -> datetime | None:
    if value is None or value is False:
        return None
    if value is True:
        return datetime.now(UTC)
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if isinstance(value, str):
        try:
            return _moment(argument, datetime.fromisoformat(value.replace("Z", "+00:00")))
        except ValueError:
            pass
    raise InvalidArgument(
        f"{argument}: expected True (now), a datetime or an ISO date-time, got {value!r}.", argument=argument
    )


def _metric_list(metrics: Sequence[Any] | None) -> list[dict[str, Any]] | None:
    if metrics is None:
        return None
    if isinstance(metrics, Mapping | str) or not isinstance(metrics, Sequence):
        raise InvalidArgumentType(
            "metrics: expected a list of hoglab.mean_metric(...) and the like.", argument="metrics"
        )
    return [m.to_json_dict() if hasattr(m, "to_json_dict") else dict(m) for m in metrics]


def metric_fields(
    metrics: Sequence[Any] | None,
    metrics_secondary: Sequence[Any] | None,
    stats_config: str | Mapping[str, Any] | None,
    exposure_criteria: Mapping[str, Any] | None,
) -> dict[str, Any]:
    """The metric experiment's fields of a create or update body (only those given).

    >>> metric_fields([{"uuid": "a", "metric_type": "funnel", "series": []}], None, "frequentist", None)
    {'metrics': [{'uuid': 'a', 'metric_type': 'funnel', 'series': []}], 'primary_metrics_ordered_uuids': ['a'], \
'stats_config': {'method': 'frequentist'}}
    """
    fields: dict[str, Any] = {}
    lists = (
        ("metrics", "primary_metrics_ordered_uuids", metrics),
        ("metrics_secondary", "secondary_metrics_ordered_uuids", metrics_secondary),
    )
    for name, order, given in lists:
        items = _metric_list(given)
        if items is None:
            continue
        fields[name] = items
        uuids = [m.get("uuid") for m in items]
        if items and all(uuids):  # PostHog's UI shows metrics in this order
            fields[order] = uuids
    if isinstance(stats_config, str):
        fields["stats_config"] = {"method": stats_config}
    elif stats_config is not None:
        fields["stats_config"] = dict(stats_config)
    if exposure_criteria is not None:
        fields["exposure_criteria"] = dict(exposure_criteria)
    return fields


def list_frame(items: list[dict[str, Any]]) -> pd.DataFrame:
    """Experiments as rows; the nested flag flattened to ``flag_id``, ``flag_active`` and ``variants`` (keys)."""
    rows = []
    for item in items:
        flag = item.get("feature_flag") or {}
        multivariate = ((flag.get("filters") or {}).get("multivariate") or {}).get("variants") or []
        variants = [v.get("key") for v in multivariate] or [
            v.get("key") for v in (item.get("parameters") or {}).get("feature_flag_variants") or []
        ]
        creator = item.get("created_by") or {}
        status = "draft" if not item.get("start_date") else ("running" if not item.get("end_date") else "complete")
        rows.append(
            {
                **{k: item.get(k) for k in LIST_COLUMNS},
                "status": status,
                "variants": variants,
                "flag_id": flag.get("id"),
                "flag_active": flag.get("active"),
                "created_by": creator.get("email") if isinstance(creator, Mapping) else None,
            }
        )
    df = pd.DataFrame(rows, columns=LIST_COLUMNS)
    df["id"] = pd.array(df["id"].tolist(), dtype="Int64")
    for name in ("flag_id", "exposure_cohort"):
        df[name] = pd.array([None if pd.isna(v) else int(v) for v in df[name]], dtype="Int64")
    for name in ("archived", "flag_active"):
        df[name] = pd.array([None if v is None or v is np.nan else bool(v) for v in df[name]], dtype="boolean")
    for name in ("name", "status", "feature_flag_key", "description", "created_by"):
        df[name] = pd.array([None if v is None or v is np.nan else str(v) for v in df[name]], dtype=pd.StringDtype())
    for name in _DATES:
        df[name] = pd.to_datetime(pd.Series(df[name].tolist(), dtype=object), utc=True, format="ISO8601").dt.as_unit(
            "us"
        )
    return df


class Experiments:
    """The project's experiments (``/api/projects/:id/experiments/``), as ``client.experiments``.

    ``list()`` gives a DataFrame, ``get``/``create``/``update`` give :class:`~hoglab.schema.Experiment` models, and
    ``results``/``secondary_results`` give :class:`~hoglab.ExperimentResult` objects. With ``client`` a
    :class:`~hoglab.Client` of a running service:

    >>> exp = client.experiments.create("Pricing page copy", "pricing-copy", variants=["control", "test"])
    >>> exp.feature_flag.key, exp.feature_flag.active  # a draft: its flag stays off until launch
    ('pricing-copy', False)
    >>> client.experiments.launch(exp.id).feature_flag.active
    True
    >>> df = client.experiments.list()
    >>> df.loc[df.id == exp.id, ["name", "status", "variants"]].values.tolist()
    [['Pricing page copy', 'running', ['control', 'test']]]
    >>> client.experiments.requires_flag_implementation()  # no event carries $feature/pricing-copy yet
    True
    >>> client.experiments.delete(exp.id)

    ``holdouts`` and ``saved_metrics`` are the project's holdouts and saved metrics (:class:`Holdouts`,
    :class:`SavedMetrics`).
    """

    def __init__(self, client: Client) -> None:
        self._client = client
        self.holdouts = Holdouts(client)
        self.saved_metrics = SavedMetrics(client)

    def _path(self, suffix: str = "") -> str:
        return self._client.path(f"experiments/{suffix}")

    def list(self, archived: bool | None = False, *, search: str | None = None) -> pd.DataFrame:
        """Every experiment (all pages) as a DataFrame, newest first; ``archived=True`` only archived ones,
        ``None`` both. Dates are tz-aware UTC; ``variants`` holds the variant keys."""
        return list_frame(self._items(archived, search))

    def get(self, experiment_id: int) -> Experiment:
        """One experiment, with its feature flag."""
        return Experiment.model_validate(self._client.get_json(self._path(f"{int(experiment_id)}/")))

    def create(
        self,
        name: str,
        feature_flag_key: str,
        *,
        variants: Sequence[str] | Mapping[str, float] | Sequence[Mapping[str, Any]] | None = None,
        description: str | None = None,
        start: bool | datetime | str = False,
        end: datetime | str | None = None,
        filters: Mapping[str, Any] | None = None,
        parameters: Mapping[str, Any] | None = None,
        secondary_metrics: Sequence[Mapping[str, Any]] | None = None,
        minimum_detectable_effect: float | None = None,
        metrics: Sequence[Any] | None = None,
        metrics_secondary: Sequence[Any] | None = None,
        stats_config: str | Mapping[str, Any] | None = None,
        exposure_criteria: Mapping[str, Any] | None = None,
        holdout: int | ExperimentHoldout | None = None,
        saved_metrics: Sequence[Any] | None = None,
    ) -> Experiment:
        """Create an experiment and its feature flag.

        A legacy experiment takes its target metric as ``filters``; a metric experiment (PostHog's current kind)
        takes ``metrics`` and ``metrics_secondary``.

        Parameters
        ----------
        name
            The experiment's name.
        feature_flag_key
            The key of the feature flag made with it.
        variants
            ``["control", "test"]`` (an equal split), ``{"control": 50, "test": 50}`` or PostHog's variant dicts;
            control/test 50/50 when not given.
        description
            Free text.
        start
            ``True`` launches it now; a datetime or ISO text launches it then; ``False`` (the default) leaves a
            draft.
        end
            When it ends (a datetime or ISO text).
        filters
            The legacy target metric (``{"insight": "FUNNELS", "events": [...]}``).
        parameters
            PostHog's ``parameters`` dict; ``variants`` and ``minimum_detectable_effect`` are written into it.
        secondary_metrics
            The legacy secondary metrics (PostHog's dicts).
        minimum_detectable_effect
            The planned effect, in percent (``10``: 10%).
        metrics, metrics_secondary
            Lists of :func:`hoglab.mean_metric`, :func:`hoglab.funnel_metric`, :func:`hoglab.ratio_metric` (or
            their dicts), shown in the order given.
        stats_config
            ``"bayesian"`` (PostHog's default), ``"frequentist"`` or PostHog's whole dict.
        exposure_criteria
            PostHog's (``{"filterTestAccounts": True, "multiple_variant_handling": "first_seen",
            "exposure_config": {...}}``).
        holdout
            An id or a :meth:`holdouts.create <Holdouts.create>` result: keeps the holdout's persons out of every
            variant (the flag answers them ``holdout-<id>``).
        saved_metrics
            Saved metrics to link: ids or models (primary), ``(id, "secondary")`` pairs, or PostHog's
            ``{"id", "metadata"}`` dicts.
        """
        params = dict(parameters or {})
        if variants is not None:
            params["feature_flag_variants"] = _variants(variants)
        if minimum_detectable_effect is not None:
            params["minimum_detectable_effect"] = minimum_detectable_effect
        with call_errors("create"):
            body = ExperimentCreate(
                name=name,
                feature_flag_key=feature_flag_key,
                description=description,
                start_date=_moment("start", start),
                end_date=_moment("end", end),
                filters=dict(filters) if filters is not None else None,
                parameters=params or None,
                secondary_metrics=[dict(m) for m in secondary_metrics] if secondary_metrics else None,
                holdout_id=holdout.id if isinstance(holdout, ExperimentHoldout) else holdout,
                saved_metrics_ids=saved_metric_links(saved_metrics),
                **metric_fields(metrics, metrics_secondary, stats_config, exposure_criteria),
            )
        payload = resolve_action_names(self._client, body.to_json_dict())  # metrics may name actions by name
        response = self._client.request("POST", self._path(), json=payload)
        return Experiment.model_validate(response.json())

    def update(self, experiment_id: int, **fields: Any) -> Experiment:
        """Change fields (``name``, ``description``, ``start_date``, ``end_date``, ``filters``, ``parameters``,
        ``secondary_metrics``, ``archived``, the metric fields, ``holdout_id``, ``saved_metrics_ids``); an unknown
        field is an :class:`~hoglab.InvalidArgument`."""
        if not fields:
            raise InvalidArgument("update: name at least one field to change.", argument="fields")
        with call_errors("update"):
            body = ExperimentUpdate(**fields)
        payload = resolve_action_names(self._client, body.model_dump(mode="json", by_alias=True, exclude_unset=True))
        response = self._client.request("PATCH", self._path(f"{int(experiment_id)}/"), json=payload)
        return Experiment.model_validate(response.json())

    def archive(self, experiment_id: int) -> Experiment:
        """Archive (hidden from ``list()`` unless asked)."""
        return self.update(experiment_id, archived=True)

    def launch(self, experiment_id: int, at: datetime | None = None) -> Experiment:
        """Start a draft now (or ``at``): sets ``start_date``, which activates its flag."""
        return self.update(experiment_id, start_date=_moment("at", at or True))

    def stop(self, experiment_id: int, at: datetime | None = None) -> Experiment:
        """End a running experiment now (or ``at``): sets ``end_date``."""
        return self.update(experiment_id, end_date=_moment("at", at or True))

    def ship_variant(
        self,
        experiment_id: int,
        variant: str,
        *,
        conclusion: str | None = None,
        conclusion_comment: str | None = None,
        release_to_everyone: bool = False,
    ) -> Experiment:
        """Serve ``variant`` to everyone (its flag's split 100/0) and end the experiment if it is running.

        ``conclusion`` is PostHog's: ``won``, ``lost``, ``inconclusive``, ``stopped_early`` or ``invalid``.
        ``release_to_everyone`` also puts a catch-all release condition first (persons outside the experiment's
        conditions get the variant too).
        """
        with call_errors("ship_variant"):
            body = ShipVariant(variant_key=variant, conclusion=conclusion, conclusion_comment=conclusion_comment,
                               release_to_everyone=release_to_everyone)  # fmt: skip
        response = self._client.request("POST", self._path(f"{int(experiment_id)}/ship_variant/"),
                                        json=body.to_json_dict())  # fmt: skip
        return Experiment.model_validate(response.json())

    def history(
        self,
        *,
        status: str | Sequence[str] = ("running", "complete"),
        roles: str | Sequence[str] = ("primary", "secondary"),
        archived: bool | None = None,
        search: str | None = None,
        refresh: bool = False,
    ) -> pd.DataFrame:
        """The project's experiments as data: one row per experiment × metric × arm, on one scale.

        Each arm's ``estimate`` is its relative lift over the experiment's baseline (control) and
        ``standard_error`` that lift's delta-method standard error, computed here from the arms' sufficient
        statistics whatever method the experiment itself uses (Bayesian or frequentist, CUPED or not), so lifts
        of different experiments can be pooled: ``hoglab.stats.meta_analysis(client.experiments.history(),
        metric="...")``. The baseline's own row has no estimate.

        Parameters
        ----------
        status
            ``"running"``, ``"complete"`` or both (the default); drafts have no results.
        roles
            ``"primary"``, ``"secondary"`` or both (the default) metrics.
        archived
            ``None`` (the default) archived experiments too, ``False`` without them, ``True`` only them.
        search
            Only experiments whose name contains this text (the server's ``search``).
        refresh
            Recompute every result instead of reading the server's cache.

        Returns
        -------
        pandas.DataFrame
            The columns of :data:`hoglab.client.HISTORY_COLUMNS` with real dtypes (tz-aware dates, nullable
            integers and booleans); ``shipped`` is whether the flag now serves this arm to everyone (PostHog's
            ``ship_variant``), ``decision`` the experiment's ``conclusion``; ``error`` says why a metric has no
            numbers. The listing is paged; one ``ExperimentQuery`` per metric (legacy experiments: ``/results/``).
        """
        from ._history import experiment_history

        return experiment_history(self._client, status=status, roles=roles, archived=archived, search=search,
                                  refresh=refresh)  # fmt: skip

    def _items(self, archived: bool | None, search: str | None) -> builtins.list[dict[str, Any]]:
        """Every experiment of the listing as JSON (all pages), ``archived`` as :meth:`list` reads it."""
        params: dict[str, Any] = {"search": search} if search else {}
        if archived is None:
            items = self._client.paginate(self._path(), params)
            if not any(i.get("archived") for i in items):  # PostHog hides archived unless asked
                items += self._client.paginate(self._path(), {**params, "archived": "true"})
            seen: set[Any] = set()
            return [i for i in items if not (i.get("id") in seen or seen.add(i.get("id")))]  # type: ignore[func-returns-value]
        items = self._client.paginate(self._path(), {**params, **({"archived": "true"} if archived else {})})
        # Older servers ignore the filter: apply it here too.
        return [i for i in items if bool(i.get("archived")) == archived]

    def delete(self, experiment_id: int) -> None:
        """Delete. Newer PostHog refuses DELETE (405) and soft-deletes through ``PATCH {"deleted": true}``."""
        try:
            self._client.request("DELETE", self._path(f"{int(experiment_id)}/"))
        except APIError as exc:
            if exc.status != 405:
                raise
            self._client.request("PATCH", self._path(f"{int(experiment_id)}/"), json={"deleted": True})

    def results(
        self,
        experiment_id: int,
        refresh: bool = False,
        *,
        experiment: Experiment | None = None,
        holdout: bool | None = None,
    ) -> ExperimentResult | MetricExperimentResult:
        """The experiment's results (``refresh=True`` bypasses the server's cache), for either kind of experiment.

        A metric experiment (``metrics``/``metrics_secondary``, PostHog's current kind) gives a
        :class:`~hoglab.MetricExperimentResult`: one ``ExperimentQuery`` per metric, primary then secondary, and
        the ``ExperimentExposureQuery``; ``to_frame()`` is a row per (metric, variant). A legacy experiment
        (``filters``) gives an :class:`~hoglab.ExperimentResult` from ``/results/``. ``experiment`` saves the
        request that reads the experiment when the caller already has it.

        An experiment with a holdout also gets every metric against the holdout arm (hoglab's
        ``compare_to_holdout``, :meth:`~hoglab.MetricExperimentResult.holdout_frame`); ``holdout=False`` skips
        those queries, ``True`` asks them whatever the experiment says.
        """
        body = self._json(experiment if experiment is not None else experiment_id)
        if is_metric_experiment(body):
            return metric_experiment_results(self._client, body, refresh=refresh, holdout=holdout)
        # The experiment rides along: its planned MDE, dates and split feed the result's recommendation.
        return replace(self.legacy_results(experiment_id, refresh), experiment=body)

    def metric_results(
        self, experiment: int | Experiment, refresh: bool = False, *, exposures: bool = True,
        holdout: bool | None = None,
    ) -> MetricExperimentResult:  # fmt: skip
        """A metric experiment's results: an ``ExperimentQuery`` per metric (and the exposures unless
        ``exposures=False``), whatever the experiment holds; see :meth:`results`."""
        return metric_experiment_results(self._client, self._json(experiment), refresh=refresh, exposures=exposures,
                                         holdout=holdout)  # fmt: skip

    def units(
        self,
        experiment: int | Experiment,
        metric: Any = None,
        properties: Sequence[str] | str | None = None,
        *,
        page_size: int = 50_000,
    ) -> pd.DataFrame:
        """One row per exposed unit (person, or group for an experiment by group), with each metric's value.

        The columns are ``entity_id``, ``variant``, ``first_exposure_time`` (tz-aware), each metric's value exactly
        as the results compute it (capped, windowed, CUPED covariate when on) and the unit's ``properties``, with
        real dtypes.

        ``metric``: ``None`` for every metric of the experiment, or one or a list of: a metric
        (``hoglab.mean_metric(...)``), its position or its name. Each metric's per-variant sums over the frame are its
        ``ExperimentQuery`` statistics (``df.attrs["columns"]`` maps each metric to its columns). Against hoglab the
        rows come in one Arrow answer; against PostHog the same HogQL is paged (``page_size`` units a page).

        >>> df = client.experiments.units(7, properties=["plan"])  # doctest: +SKIP
        >>> df.groupby("variant")["Purchase value"].agg(["count", "sum"])  # doctest: +SKIP
        """
        from ._units import experiment_units

        return experiment_units(self._client, self._json(experiment), metric, properties, page_size=page_size)

    def _json(self, experiment: int | Experiment) -> dict[str, Any]:
        """The experiment as JSON: the given model, else read as sent (its metrics go back to ``/query`` as the
        server wrote them)."""
        if isinstance(experiment, Experiment):
            return experiment.model_dump(mode="json", by_alias=True)
        return self._client.get_json(self._path(f"{int(experiment)}/")) or {}

    def legacy_results(self, experiment_id: int, refresh: bool = False) -> ExperimentResult:
        """A legacy experiment's primary metric from ``GET /experiments/:id/results/`` (see :meth:`results`)."""
        params = {"refresh": "true"} if refresh else None
        raw = self._client.get_json(self._path(f"{int(experiment_id)}/results/"), params)
        return ExperimentResult(int(experiment_id), raw or {})

    def secondary_results(self, experiment_id: int, index: int, refresh: bool = False) -> ExperimentResult:
        """The results of secondary metric ``index`` (0-based, as in ``secondary_metrics``)."""
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            raise InvalidArgument(f"index: expected a metric index >= 0, got {index!r}.", argument="index")
        params: dict[str, Any] = {"id": index, **({"refresh": "true"} if refresh else {})}
        raw = self._client.get_json(self._path(f"{int(experiment_id)}/secondary_results/"), params)
        return ExperimentResult(int(experiment_id), raw or {}, metric=f"secondary metric {index}")

    def create_exposure_cohort(self, experiment_id: int) -> Cohort | None:
        """Create the cohort of people exposed to the experiment; PostHog answers ``{"cohort": {...}}``."""
        response = self._client.request(
            "POST", self._path(f"{int(experiment_id)}/create_exposure_cohort_for_experiment/")
        )
        body = json_or_none(response)
        cohort = body.get("cohort") if isinstance(body, Mapping) else None
        return Cohort.model_validate(cohort) if isinstance(cohort, Mapping) else None

    def requires_flag_implementation(self, filters: Mapping[str, Any] | None = None) -> bool:
        """Whether the metric's events lack ``$feature/<flag>`` properties (the SDK isn't sending flag info).

        ``filters`` is a legacy insight filter (``{"events": [{"id": "signup"}]}``); lists go as JSON text.
        """
        params = {k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in (filters or {}).items()}
        body = self._client.get_json(self._path("requires_flag_implementation/"), params)
        return bool(body.get("result")) if isinstance(body, Mapping) else bool(body)
