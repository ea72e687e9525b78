"""``ExperimentExposureQuery``: how many persons were exposed to each variant, day by day (PostHog's shape).

Each exposed person (the exposure rules of ``hoglab.translate.metric.query``) counts once, on the day of their
first exposure in the project's zone; ``exposure_counts`` are running totals over every day from the start to the
end (or today), as PostHog's exposures chart draws them (the last ``MAX_DAYS`` days of a longer window, totals
still complete). ``$multiple`` (persons seen with several variants, ``exclude``) comes last, as in PostHog;
``total_exposures`` is each series' last value.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from hoglab.translate.metric.query import MULTIPLE_VARIANT_KEY, exposures_sql
from hoglab.translate.params import Params

from ...query.runners.base import RunContext, register
from .resolve import ResolvedExposureQuery

__all__ = ["run_exposure_query"]

MAX_DAYS = 3660


@register("ExperimentExposureQuery")
def run_exposure_query(resolved: ResolvedExposureQuery, ctx: RunContext) -> dict[str, Any]:
    """``{kind, timeseries: [{variant, days, exposure_counts}], total_exposures, date_range}``."""
    experiment = resolved.experiment
    end = experiment.end or ctx.now
    zone = ZoneInfo(ctx.timezone)
    p = Params()
    sql = f"""
        SELECT toString(toDate(first_exposure_time)) AS day, variant, count() AS exposed
        FROM ({exposures_sql(experiment, p, ctx.project, end, actions=ctx.actions)})
        GROUP BY day, variant
    """
    found: dict[str, dict[str, int]] = {}
    for row in ctx.run(sql, values=p.values).to_pylist():
        found.setdefault(str(row["variant"]), {})[str(row["day"])] = int(row["exposed"])
    first, last = experiment.start.astimezone(zone).date(), end.astimezone(zone).date()
    # A window longer than MAX_DAYS shows its last days; the totals still count every exposure before them.
    shown = min((last - first).days + 1, MAX_DAYS)
    days = [last - timedelta(days=shown - 1 - i) for i in range(shown)]
    order = [v for v in experiment.variants if v in found] + ([MULTIPLE_VARIANT_KEY] if MULTIPLE_VARIANT_KEY in found
                                                               else [])  # fmt: skip
    timeseries = [_running_totals(variant, days, found[variant]) for variant in order]
    return {
        "kind": "ExperimentExposureQuery",
        "timeseries": timeseries,
        "total_exposures": {s["variant"]: s["exposure_counts"][-1] if days else 0 for s in timeseries},
        "date_range": {
            "date_from": experiment.start.astimezone(zone).isoformat(),
            "date_to": None if experiment.end is None else experiment.end.astimezone(zone).isoformat(),
            "explicitDate": True,
        },
    }


def _running_totals(variant: str, days: list[date], per_day: dict[str, int]) -> dict[str, Any]:
    before = days[0].isoformat() if days else ""
    total, counts = sum(n for day, n in per_day.items() if day < before), []
    for day in days:
        total += per_day.get(day.isoformat(), 0)
        counts.append(total)
    return {"variant": variant, "days": [day.isoformat() for day in days], "exposure_counts": counts}
