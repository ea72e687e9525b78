"""The fields every query kind shares, and those every insight (trends, funnels, retention, ...) shares."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

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
    """What every insight query has: a date range, property filters, test accounts and the group type counted.

    The group type is counted instead of persons (``aggregation_group_type_index``, 0-4): funnels, retention and
    lifecycle count groups; trends only echo it, as PostHog, and count groups by a series' ``unique_group`` math.
    """

    dateRange: DateRange | None = None
    properties: PropertyFilters | None = None
    filterTestAccounts: bool | None = False
    samplingFactor: float | None = None
    aggregation_group_type_index: int | None = Field(default=None, ge=0, le=4)
    dataColorTheme: float | None = None
