"""The HogQL of a retention metric (PostHog's ``ExperimentRetentionMetric``, ``experiment_retention_query_builder``).

Of the exposed persons who did the **start event** after their first exposure, the share who did the **completion
event** inside the retention window after it:

* start events count from the person's first exposure on (and no later than first exposure + the conversion
  window, when one is set), between the experiment's start and its end plus the conversion window; a person's
  start is the first of them (``first_seen``) or the last (``last_seen``), and persons without one are not counted
  at all (PostHog's INNER JOIN: "of those who did X, how many came back to do Y");
* ``start_event: {"kind": "ExperimentExposureNode"}`` starts at the first exposure itself;
* a completion counts when ``trunc(completion)`` lies in ``[trunc(start) + window_start, trunc(start) + window_end]``
  (both inclusive, in ``retention_window_unit``), ``trunc`` being the start of the day (project zone) for ``day``
  windows, of the hour for ``hour``, the time itself otherwise; it must be at or after the start, no later than
  the start + ``window_end`` (30-day months, as PostHog) + one day (``day``) or hour (``hour``), and not the start
  occurrence itself (same event as start and completion is not 100% retention);
* ``only_count_matured_users``: persons whose start + ``window_end`` is still in the future are left out.

Each person counts 1 (retained) or 0 over a denominator of 1, the sums of a ratio metric (PostHog's
``RatioStatistic``): ``n`` started, ``total`` retained, ``denominator_sum`` = ``n``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from hoglab.schema import ExperimentRetentionMetric

from ..actions import Actions
from ..params import Params
from ..series import series_conditions
from .experiment import ResolvedExperiment
from .query import PLAIN, MetricShape, PerUnit, exposures_sql, window_seconds

__all__ = ["retention_sql", "retention_units"]

_UNIT_SECONDS = {"second": 1, "minute": 60, "hour": 3600, "day": 86_400, "week": 7 * 86_400, "month": 30 * 86_400}
_INTERVAL = {"second": "Second", "minute": "Minute", "hour": "Hour", "day": "Day", "week": "Week", "month": "Month"}
_TRUNCATE = {"day": "toStartOfDay", "hour": "toStartOfHour"}
_BUFFER = {"day": 86_400, "hour": 3_600}


def _truncated(column: str, unit: str) -> str:
    function = _TRUNCATE.get(unit)
    return f"{function}({column})" if function else column


def retention_units(metric: ExperimentRetentionMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                    end: datetime, shape: MetricShape = PLAIN, *, matured_before: datetime | None = None,
                    actions: Actions | None = None) -> PerUnit:  # fmt: skip
    """Each counted unit's ``value``: 1 retained, 0 not; units that did not start are not counted (no row).

    ``matured_before``: now, when only persons whose retention window has elapsed count.
    """
    unit = metric.retention_window_unit
    conversion = window_seconds(metric)
    window_end = int(metric.retention_window_end) * _UNIT_SECONDS[unit]
    exposures = exposures_sql(experiment, p, project, end, shape=shape, first_uuid=True, actions=actions)
    start_from = p.add(experiment.start)
    if metric.start_event.kind == "ExperimentExposureNode":
        starts = "SELECT entity_id, first_exposure_time AS start_timestamp, first_exposure_uuid AS start_uuid " \
                 "FROM exposures"  # fmt: skip
        having = ""
    else:
        conditions = series_conditions(None, metric.start_event, p, project=project, attr="metric.start_event")
        after = "e.timestamp >= x.first_exposure_time"
        if conversion:
            after += f" AND e.timestamp <= x.first_exposure_time + toIntervalSecond({conversion})"
        pick = "min(e.timestamp)" if metric.start_handling == "first_seen" else "max(e.timestamp)"
        pick_uuid = "argMin(e.uuid, e.timestamp)" if metric.start_handling == "first_seen" else \
            "argMax(e.uuid, e.timestamp)"  # fmt: skip
        where = " AND ".join([f"timestamp >= {start_from}",
                              f"timestamp < {p.add(end)} + toIntervalSecond({conversion})", *conditions])  # fmt: skip
        having = ""
        if matured_before is not None and window_end:
            having = f"HAVING start_timestamp + toIntervalSecond({window_end}) <= {p.add(matured_before)}"
        starts = f"""
            SELECT x.entity_id AS entity_id, {pick} AS start_timestamp, {pick_uuid} AS start_uuid
            FROM (SELECT {experiment.entity} AS entity_id, timestamp, uuid FROM events WHERE {where}) AS e
            INNER JOIN exposures AS x ON e.entity_id = x.entity_id
            WHERE {after}
            GROUP BY x.entity_id {having}
        """
    if metric.start_event.kind == "ExperimentExposureNode" and matured_before is not None and window_end:
        starts += f" WHERE first_exposure_time + toIntervalSecond({window_end}) <= {p.add(matured_before)}"
    completion = series_conditions(None, metric.completion_event, p, project=project, attr="metric.completion_event")
    completion_where = " AND ".join([f"timestamp >= {start_from}",
                                     f"timestamp < {p.add(end)} + toIntervalSecond({conversion + window_end})",
                                     *completion])  # fmt: skip
    interval = _INTERVAL[unit]
    c_time, s_time = _truncated("c.completion_timestamp", unit), _truncated("s.start_timestamp", unit)
    retained = " AND ".join([
        "c.completion_uuid != s.start_uuid",
        "c.completion_timestamp >= s.start_timestamp",
        f"c.completion_timestamp <= s.start_timestamp + toIntervalSecond({window_end + _BUFFER.get(unit, 0)})",
        f"{c_time} >= {s_time} + toInterval{interval}({int(metric.retention_window_start)})",
        f"{c_time} <= {s_time} + toInterval{interval}({int(metric.retention_window_end)})",
    ])  # fmt: skip
    entity_metrics = f"""
        SELECT x.entity_id AS entity_id, x.variant AS variant{shape.picks("x.")}, max(if({retained}, 1, 0)) AS value
        FROM exposures AS x
        INNER JOIN start_events AS s ON x.entity_id = s.entity_id
        LEFT JOIN completion_events AS c ON x.entity_id = c.entity_id
        GROUP BY x.entity_id, x.variant{shape.lead("x.")}"""
    completion_events = f"""SELECT {experiment.entity} AS entity_id, uuid AS completion_uuid,
                                   timestamp AS completion_timestamp
                            FROM events WHERE {completion_where}"""
    ctes = (("exposures", exposures), ("start_events", starts), ("completion_events", completion_events))
    return PerUnit(ctes, entity_metrics, ("value",))


def retention_sql(metric: ExperimentRetentionMetric, experiment: ResolvedExperiment, p: Params, project: Any,
                  end: datetime, shape: MetricShape = PLAIN, *, matured_before: datetime | None = None,
                  actions: Actions | None = None) -> str:  # fmt: skip
    """``variant, b.., n, total, squares, denominator_sum, denominator_squares, product`` of each variant and
    breakdown value (``$multiple`` included; the runner drops it): the sums of :func:`retention_units`.

    ``matured_before``: now, when only persons whose retention window has elapsed count.
    """
    units = retention_units(metric, experiment, p, project, end, shape, matured_before=matured_before,
                            actions=actions)
    return units.aggregate("count() AS n, sum(value) AS total, sum(value * value) AS squares, "
                           "count() AS denominator_sum, count() AS denominator_squares, sum(value) AS product",
                           shape)  # fmt: skip
