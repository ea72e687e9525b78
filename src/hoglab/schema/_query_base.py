"""The fields every query kind shares, and those every insight (trends, funnels, retention, ...) shares."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import model_validator

from ._base import RequestModel
from .filters import DateRange, PropertyFilters

__all__ = ["InsightBase", "IntervalType", "QueryBase"]

IntervalType = Literal["minute", "hour", "day", "week", "month"]


class QueryBase(RequestModel):
    """Fields PostHog's clients send with any query; accepted so existing clients keep working."""

    modifiers: dict[str, Any] | None = None
    tags: dict[str, Any] | None = None
    version: int | None = None
    response: dict[str, Any] | None = None


class InsightBase(QueryBase):
    """What every insight query has: a date range, property filters, test-account filtering."""

    dateRange: DateRange | None = None
    properties: PropertyFilters | None = None
    filterTestAccounts: bool | None = False
    samplingFactor: float | None = None
    aggregation_group_type_index: int | None = None
    dataColorTheme: float | None = None

    @model_validator(mode="after")
    def _no_groups(self) -> InsightBase:
        if self.aggregation_group_type_index is not None:
            raise ValueError("Aggregating by groups (aggregation_group_type_index) is not supported by hoglab.")
        return self
