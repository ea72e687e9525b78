"""An experiment metric's results day by day: PostHog's ``timeseries_results/`` and ``recalculate_timeseries/``.

Each day of the experiment (in the project's zone, from the start date to the end date or today) holds the
*cumulative* ``ExperimentQuery`` answer from the start to that day's end (to now for today), stored per
(experiment, metric uuid, fingerprint) in ``store.experiment_timeseries``. A recalculation
(:func:`start_recalculation`) deletes the stored days of that uuid and fingerprint and fills them again in the
background, on the query service's async pool (its per-project quota, fairness and cancellation), each day through
the query service itself (cache, limits, the same runner as ``/query``); a day that fails keeps its error.

PostHog fills the days with a nightly workflow; hoglab has none, so :func:`timeseries_answer` starts the
recalculation itself when nothing is stored yet and the experiment holds a metric of that uuid (its own, or a
linked saved metric's) whose fingerprint (:func:`hoglab.schema.metric_fingerprint`) is the one asked for (then it
answers ``pending``).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, date, datetime, time, timedelta
from typing import TYPE_CHECKING, Any
from zoneinfo import ZoneInfo

import pydantic

from hoglab.schema import metric_fingerprint, parse_metric, saved_metric_definition, validation_error_body

from ...errors import APIException, InternalError, Throttled, ValidationFailed
from ...query.cache import cache_key
from ...query.jobs import iso
from ...query.request import prepare, resolve
from ...query.service import QueryService
from ...store.db import utcnow

if TYPE_CHECKING:
    from ...state import ServiceState
    from ...store import ExperimentRecord, ProjectRecord, RecalculationRecord

__all__ = [
    "ANSWER_EXTRAS",
    "MAX_ACTIVE",
    "MAX_DAYS",
    "experiment_days",
    "fail_orphans",
    "fingerprint_of",
    "start_recalculation",
    "timeseries_answer",
]

log = logging.getLogger("hoglab.server.experiments.timeseries")

ANSWER_EXTRAS = frozenset({"is_cached", "cache_key", "last_refresh", "next_allowed_client_refresh",
                           "cache_target_age", "timezone", "calculation_trigger", "query_metadata", "query_status",
                           "timings", "step_sessions"})  # fmt: skip
"""Members of a query answer a stored day leaves out (PostHog stores the response without ``step_sessions``)."""
MAX_DAYS = 366
"""Days a metric's timeseries may hold (``HOGLAB_TIMESERIES_MAX_DAYS``): each is an ``ExperimentQuery`` and a
stored answer, so an experiment started in 1900 must not cost 46,000 of them."""
MAX_ACTIVE = 2
"""Recalculations one experiment may have pending or running at once, whatever their fingerprints
(``HOGLAB_TIMESERIES_MAX_ACTIVE``)."""
ORPHAN_MESSAGE = "The service restarted before the recalculation finished; recalculate again."


def experiment_days(start: datetime, end: datetime | None, now: datetime, zone: str,
                    limit: int | None = None) -> list[tuple[date, datetime]]:  # fmt: skip
    """Each day of the experiment in the project's zone, with the moment its cumulative answer runs to: the
    day's end, the experiment's end on its last day, now on today's; the first ``limit`` days only if given.

    >>> days = experiment_days(datetime(2026, 1, 10, 9, tzinfo=UTC), None, datetime(2026, 1, 11, 15, tzinfo=UTC),
    ...                        "UTC")
    >>> [(d.isoformat(), t.isoformat()) for d, t in days]
    [('2026-01-10', '2026-01-11T00:00:00+00:00'), ('2026-01-11', '2026-01-11T15:00:00+00:00')]
    """
    tz = ZoneInfo(zone)
    stop = min(end, now) if end is not None else now
    first, last = start.astimezone(tz).date(), stop.astimezone(tz).date()
    days: list[tuple[date, datetime]] = []
    day = first
    while day <= last and (limit is None or len(days) < limit):
        day_end = datetime.combine(day + timedelta(days=1), time(), tz).astimezone(UTC)
        days.append((day, min(day_end, stop)))
        day += timedelta(days=1)
    return days


def fingerprint_of(record: ExperimentRecord, metric: Mapping[str, Any]) -> str:
    """The fingerprint PostHog gives the experiment's metric (its stored ``fingerprint`` when it has one)."""
    stored = metric.get("fingerprint")
    if isinstance(stored, str) and stored:
        return stored
    method = (record.stats_config or {}).get("method") if isinstance(record.stats_config, Mapping) else None
    parameters = record.parameters if isinstance(record.parameters, Mapping) else {}
    return metric_fingerprint(metric, record.start_date, method, record.exposure_criteria,
                              bool(getattr(record, "only_count_matured_users", False)),
                              parameters.get("excluded_variants"))  # fmt: skip


def _experiment_metrics(state: ServiceState, record: ExperimentRecord) -> list[dict[str, Any]]:
    """The experiment's own metrics, then its linked saved metrics as analysed (PostHog files a saved metric's
    days under the saved query's ``uuid``; the link's breakdowns apply: ``saved_metric_definition``)."""
    own = [dict(m) for m in [*(record.metrics or []), *(record.metrics_secondary or [])] if isinstance(m, Mapping)]
    for link in state.store.saved_metrics.links([record.id]).get(record.id, []):
        saved = link.saved_metric
        own.append(saved_metric_definition(dict(saved.query), link.metadata, saved_metric_id=saved.id, name=saved.name))
    return own


def _request_body(request: RecalculationRecord) -> dict[str, Any]:
    return {"id": request.id, "experiment_id": request.experiment_id, "metric_uuid": request.metric_uuid,
            "fingerprint": request.fingerprint, "status": request.status,
            "created_at": iso(request.created_at)}  # fmt: skip


def _day_answer(service: QueryService, state: ServiceState, project: ProjectRecord, experiment_id: int,
                metric: dict[str, Any], query_to: datetime) -> dict[str, Any]:  # fmt: skip
    """The cumulative ``ExperimentQuery`` answer up to ``query_to``, through the query service."""
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment_id, "metric": metric}}
    prepared = resolve(prepare(body, team_id=project.id, timezone=project.timezone or "UTC"), project, state.store)
    resolved: Any = prepared.query
    experiment = resolved.experiment
    end = query_to if experiment.end is None else min(experiment.end, query_to)
    moved = resolved.model_copy(update={"experiment": experiment.model_copy(update={"end": end})})
    key = cache_key(project.id, moved.model_dump(mode="json", by_alias=True, exclude_none=True),
                    timezone=project.timezone or "UTC")  # fmt: skip
    _, answer = service.answer(project, replace(prepared, query=moved, cache_key=key))
    return {k: v for k, v in json.loads(answer).items() if k not in ANSWER_EXTRAS}


def _run(state: ServiceState, request: RecalculationRecord, cancelled: threading.Event) -> None:
    repo = state.store.experiment_timeseries
    repo.set_request_status(request.id, "in_progress")
    try:
        project = state.store.projects.get(request.team_id)
        record = state.store.experiments.get(request.team_id, request.experiment_id)
        if project is None or record is None or record.start_date is None:
            raise ValidationFailed("The experiment is gone or was never started.")
        service = QueryService.of(state)
        zone = project.timezone or "UTC"
        limit = int(getattr(state.config, "timeseries_max_days", MAX_DAYS))  # the start may have moved since
        for day, query_to in experiment_days(record.start_date, record.end_date, utcnow(), zone, limit=limit):
            if cancelled.is_set():
                raise InternalError("The recalculation was cancelled.")
            try:
                answer = _day_answer(service, state, project, request.experiment_id, request.metric, query_to)
            except APIException as exc:
                repo.save_day(request.team_id, request.experiment_id, request.metric_uuid, request.fingerprint,
                              day.isoformat(), query_to, error=str(exc.detail))  # fmt: skip
                continue
            repo.save_day(request.team_id, request.experiment_id, request.metric_uuid, request.fingerprint,
                          day.isoformat(), query_to, result=answer)  # fmt: skip
    except BaseException as exc:
        repo.set_request_status(request.id, "failed", str(getattr(exc, "detail", "") or exc)[:500])
        raise
    repo.set_request_status(request.id, "completed")


def _submit(state: ServiceState, request: RecalculationRecord) -> None:
    jobs = state.query_jobs
    if jobs is None:
        raise InternalError("The query service is not running.")

    def work(tag: str, cancelled: threading.Event) -> bytes:
        _run(state, request, cancelled)
        return json.dumps({"recalculation": request.id}).encode()

    try:
        jobs.submit(request.team_id, f"experiment-timeseries-{request.id}", work)
    except Exception:
        state.store.experiment_timeseries.set_request_status(request.id, "failed", "Could not start it.")
        raise


def start_recalculation(state: ServiceState, project: ProjectRecord, record: ExperimentRecord,
                        body: Mapping[str, Any]) -> tuple[int, dict[str, Any]]:  # fmt: skip
    """``POST recalculate_timeseries/``: ``(201, the new request)``, or ``(200, the active one)`` for a fingerprint
    already being recalculated (PostHog's idempotency)."""
    metric, fingerprint = body.get("metric"), body.get("fingerprint")
    if not metric:
        raise ValidationFailed("metric is required", attr="metric")
    if not fingerprint:
        raise ValidationFailed("fingerprint is required", attr="fingerprint")
    if record.start_date is None:
        raise ValidationFailed("Cannot recalculate timeseries for experiment that hasn't started")
    if not isinstance(metric, dict):
        raise ValidationFailed("metric must be an experiment metric object.", attr="metric")
    if not isinstance(fingerprint, str) or len(fingerprint) > 200:
        raise ValidationFailed("fingerprint must be a string of at most 200 characters.", attr="fingerprint")
    try:
        parsed = parse_metric(metric)
    except pydantic.ValidationError as exc:
        error = validation_error_body(exc, metric)
        raise ValidationFailed(error.detail, attr="metric" + (f"__{error.attr}" if error.attr else "")) from None
    if not parsed.uuid:
        raise ValidationFailed("The metric needs its uuid: its days are stored under it.", attr="metric__uuid")
    max_days = int(getattr(state.config, "timeseries_max_days", MAX_DAYS))
    days = len(experiment_days(record.start_date, record.end_date, utcnow(), project.timezone or "UTC",
                               limit=max_days + 1))  # fmt: skip
    if days > max_days:
        raise ValidationFailed(
            f"The experiment runs more than {max_days} days, the most a metric's timeseries is computed for "
            "(HOGLAB_TIMESERIES_MAX_DAYS): set a later start date or an end date.",
            code="timeseries_too_long",
        )
    max_active = int(getattr(state.config, "timeseries_max_active", MAX_ACTIVE))
    request, created = state.store.experiment_timeseries.start_request(
        project.id, record.id, parsed.uuid, fingerprint, metric, max_active=max_active
    )
    if request is None:
        raise Throttled(
            5,
            f"This experiment already has {max_active} timeseries recalculations pending or running, the most it "
            "may have at once (HOGLAB_TIMESERIES_MAX_ACTIVE): try again when they have finished.",
        )
    if created:
        _submit(state, request)
    return (201 if created else 200), _request_body(request)


def _status(rows: list[Any], days: int) -> str:
    if not rows:
        return "pending"
    if all(r.status == "failed" for r in rows):
        return "failed"
    if len(rows) >= days and all(r.status == "completed" for r in rows):
        return "completed"
    return "partial"


def timeseries_answer(state: ServiceState, project: ProjectRecord, record: ExperimentRecord, metric_uuid: str | None,
                      fingerprint: str | None) -> dict[str, Any]:  # fmt: skip
    """``GET timeseries_results/``: every day of the experiment with its stored answer (``null`` while missing),
    the failures, PostHog's status (``pending`` nothing stored, ``failed`` only failures, ``completed`` every day,
    else ``partial``) and the latest recalculation's."""
    if not metric_uuid:
        raise ValidationFailed("metric_uuid query parameter is required", attr="metric_uuid")
    if not fingerprint:
        raise ValidationFailed("fingerprint query parameter is required", attr="fingerprint")
    if record.start_date is None:
        raise ValidationFailed("Experiment has not been started yet")
    repo = state.store.experiment_timeseries
    rows = repo.days(project.id, record.id, metric_uuid, fingerprint)
    latest = repo.latest_request(project.id, record.id, metric_uuid, fingerprint)
    if not rows and latest is None:
        # No nightly job here: the first reader of a metric the experiment holds starts its days.
        for metric in _experiment_metrics(state, record):
            if metric.get("uuid") == metric_uuid and fingerprint_of(record, metric) == fingerprint:
                start_recalculation(state, project, record, {"metric": metric, "fingerprint": fingerprint})
                latest = repo.latest_request(project.id, record.id, metric_uuid, fingerprint)
                break
    days = experiment_days(record.start_date, record.end_date, utcnow(), project.timezone or "UTC")
    stored = {r.day: r for r in rows}
    timeseries = {d.isoformat(): (stored[d.isoformat()].result if d.isoformat() in stored else None) for d, _ in days}
    errors = {r.day: r.error for r in rows if r.status == "failed"}
    active = latest is not None and latest.status in ("pending", "in_progress")
    return {
        "experiment_id": record.id,
        "metric_uuid": metric_uuid,
        "status": _status(rows, len(days)),
        "timeseries": timeseries,
        "errors": errors or None,
        "computed_at": iso(max(r.updated_at for r in rows)) if rows else None,
        "created_at": iso(min(r.created_at for r in rows)) if rows else None,
        "updated_at": iso(max(r.updated_at for r in rows)) if rows else None,
        "recalculation_status": latest.status if active and latest is not None else None,
        "recalculation_created_at": iso(latest.created_at) if active and latest is not None else None,
        "formatted_results": None,
    }


def fail_orphans(state: ServiceState) -> None:
    """On start: recalculations a previous process left pending or running will never finish; say so."""
    count = state.store.experiment_timeseries.fail_unfinished(ORPHAN_MESSAGE)
    if count:
        log.info("%d experiment timeseries recalculations were left unfinished by a previous run", count)
