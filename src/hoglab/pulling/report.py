"""What a pull says before it starts (:class:`PullPlan`) and what it did (:class:`PullReport`).

>>> str(PullPlan(25_000, 3, 90.0))
'25,000 events to read in 3 queries: about 2 min at the rate limit'
"""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["PullPlan", "PullReport"]


@dataclass(frozen=True)
class PullPlan:
    """What a pull will read, said before it starts: events to read, queries they take, time at the rate."""

    events: int
    queries: int
    seconds: float

    def __str__(self) -> str:
        minutes = self.seconds / 60
        span = f"{minutes:,.0f} min" if minutes >= 1 else f"{self.seconds:,.0f} s"
        return f"{self.events:,} events to read in {self.queries:,} queries: about {span} at the rate limit"


@dataclass
class PullReport:
    """What one pull did."""

    local_project_id: int
    plan: PullPlan | None = None
    events_fetched: int = 0
    events_copied: int = 0
    files_read: int = 0
    persons: int = 0
    distinct_ids: int = 0
    group_types: int = 0
    groups: int = 0
    flags: int = 0
    cohorts: int = 0
    actions: int = 0
    experiments: int = 0
    holdouts: int = 0
    saved_metrics: int = 0
    queries: int = 0
    seconds: float = 0.0
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # what was copied but disabled or left out, and why

    def __str__(self) -> str:
        rate = f" ({self.events_fetched / self.seconds:,.0f} rows/s)" if self.seconds > 0 else ""
        return (
            f"project {self.local_project_id}: {self.events_copied:,} new events of {self.events_fetched:,} read"
            f"{f' and {self.files_read} export files' if self.files_read else ''}, {self.persons:,} persons,"
            f" {self.groups:,} groups of {self.group_types} types, {self.flags} flags, {self.cohorts} cohorts,"
            f" {self.actions} actions, {self.experiments} experiments ({self.holdouts} holdouts,"
            f" {self.saved_metrics} saved metrics);"
            f" {self.queries} queries in {self.seconds:,.1f} s{rate}"
        )
