"""The demo's experiment: a legacy funnel experiment on the flag ``new-checkout``, control/test 50/50, running for
the last 30 days of the data, and the conversion each variant's exposed users are given (+15% relative).

:data:`DEMO_EXPERIMENT` holds it in the shapes the Experiments API takes; ``create_body(end)`` is the
``POST /api/projects/:id/experiments/`` body, already started, for data generated up to ``end``.

>>> DEMO_EXPERIMENT.start_for(date(2026, 6, 1)).isoformat()
'2026-05-02T00:00:00+00:00'
>>> DEMO_EXPERIMENT.create_body(date(2026, 6, 1))["feature_flag_key"]
'new-checkout'
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from typing import Any

__all__ = ["CONVERSION", "DEMO_EXPERIMENT", "FLAG_KEY", "MOBILE_CONVERSION", "DemoExperiment", "default_end", "end_of"]

FLAG_KEY = "new-checkout"
# The share of each variant's exposed users who then purchase: the effect the analysis must find.
CONVERSION = {"control": 0.30, "test": 0.345}
# The same share among exposed users on a phone or tablet (iOS and Android: $device_type Mobile or Tablet): the
# new checkout helps them (+45% relative), desktop users get the rest of test's purchases (about -1%, no effect),
# so each variant's overall share stays CONVERSION's. The segment effect the deep dive (notebook 06) must find.
MOBILE_CONVERSION = {"control": 0.30, "test": 0.435}


@dataclass(frozen=True)
class DemoExperiment:
    """The demo's running experiment, in the shapes the Experiments API takes (legacy ``filters``)."""

    name: str = "New checkout flow"
    description: str = "Does the redesigned checkout page turn more checkout visits into purchases?"
    feature_flag_key: str = FLAG_KEY
    variants: tuple[dict[str, Any], ...] = (
        {"key": "control", "name": "Control", "rollout_percentage": 50},
        {"key": "test", "name": "New checkout", "rollout_percentage": 50},
    )
    days_running: int = 30
    filters: dict[str, Any] = field(default_factory=lambda: {
        "insight": "FUNNELS",
        "events": [
            {"id": "$pageview", "name": "$pageview", "type": "events", "order": 0,
             "properties": [{"key": "$current_url", "value": "/checkout", "operator": "icontains", "type": "event"}]},
            {"id": "purchase", "name": "purchase", "type": "events", "order": 1},
        ],
        "funnel_window_interval": 14,
        "funnel_window_interval_unit": "day",
    })  # fmt: skip
    secondary_metrics: tuple[dict[str, Any], ...] = (
        {"name": "Purchases", "filters": {"insight": "TRENDS", "events": [{"id": "purchase", "order": 0}]}},
    )

    def start_for(self, end: datetime | date | None = None) -> datetime:
        """When the experiment started, for data generated up to ``end``."""
        return end_of(end) - timedelta(days=self.days_running)

    @property
    def start_date(self) -> datetime:
        """The start for the default ``end`` (today, 00:00 UTC)."""
        return self.start_for(None)

    def create_body(self, end: datetime | date | None = None) -> dict[str, Any]:
        """A ``POST /api/projects/:id/experiments/`` body creating this experiment, already started."""
        start = self.start_for(end)
        return {
            "name": self.name,
            "description": self.description,
            "feature_flag_key": self.feature_flag_key,
            "start_date": start.isoformat(),
            "parameters": {"feature_flag_variants": [dict(v) for v in self.variants], "minimum_detectable_effect": 10},
            "filters": {**self.filters, "date_from": start.isoformat()},
            "secondary_metrics": [dict(m) for m in self.secondary_metrics],
        }


DEMO_EXPERIMENT = DemoExperiment()


def default_end() -> datetime:
    """Today at 00:00 UTC: the demo's data ends there, so relative ranges (``-30d``) have data."""
    return datetime.combine(datetime.now(UTC).date(), datetime.min.time(), tzinfo=UTC)


def end_of(end: datetime | date | None) -> datetime:
    """``end`` as an aware UTC datetime (a date is its midnight, naive is UTC); ``None`` is :func:`default_end`.

    >>> end_of(date(2026, 6, 1))
    datetime.datetime(2026, 6, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    if end is None:
        return default_end()
    if not isinstance(end, datetime):
        return datetime.combine(end, datetime.min.time(), tzinfo=UTC)
    return end if end.tzinfo else end.replace(tzinfo=UTC)
