"""hoglab.frames for retention, lifecycle, stickiness and paths: answers shaped as PostHog sends them (each body
validated against PostHog's OpenAPI component first), turned into tidy frames whose numbers are restated here."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.errors import InvalidArgument
from hoglab.frames import (
    LIFECYCLE_STATUSES,
    lifecycle_frame,
    paths_frame,
    retention_frame,
    retention_table,
    stickiness_frame,
    to_frame,
)
from posthog_openapi import assert_valid

# Cohort sizes and returns of three weekly cohorts; PostHog's newer runners send every cohort the full width.
WEEKLY = [[10, 6, 3, 2], [8, 4, 1, 0], [5, 2, 0, 0]]


def _retention_answer(
    counts: list[list[int]], *, unit: str = "Week", start: str = "2025-06-02", tz: str | None = "UTC",
    date_to: str | None = None, breakdown: Any = None, step: str = "7D",
) -> dict[str, Any]:  # fmt: skip
    dates = pd.date_range(start, periods=len(counts), freq=step, tz="UTC")
    results = []
    for i, (day, row) in enumerate(zip(dates, counts, strict=True)):
        item: dict[str, Any] = {
            "date": day.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "label": f"{unit} {i}",
            "values": [{"count": c, "label": f"{unit} {k}"} for k, c in enumerate(row)],
        }
        if breakdown is not None:
            item["breakdown_value"] = breakdown
        results.append(item)
    answer: dict[str, Any] = {"results": results, "hogql": "SELECT 1"}
    if date_to:
        answer["resolved_date_range"] = {"date_from": dates[0].isoformat(), "date_to": date_to}
    if tz:
        answer["timezone"] = tz
    assert_valid(answer, "RetentionQueryResponse")
    return answer


def test_retention_cells_carry_counts_sizes_and_both_rates() -> None:
    df = retention_frame(_retention_answer(WEEKLY))
    assert list(df.columns) == ["cohort", "cohort_date", "period", "period_date", "cohort_size", "count", "rate",
                                "rate_previous"]  # fmt: skip
    assert len(df) == 12
    assert str(df["count"].dtype) == "Int64" and str(df["rate"].dtype) == "Float64"
    assert str(df["cohort_date"].dtype) == "datetime64[us, UTC]"
    for (cohort, period), row in df.set_index(["cohort", "period"]).iterrows():
        counts = WEEKLY[cohort]
        assert row["count"] == counts[period]
        assert row["cohort_size"] == counts[0]
        assert row["rate"] == pytest.approx(counts[period] / counts[0])
        previous = counts[period - 1] if period else counts[0]
        if previous:
            assert row["rate_previous"] == pytest.approx(counts[period] / previous)
        else:
            assert row["rate_previous"] is pd.NA  # nobody to come back from
        assert row["period_date"] - row["cohort_date"] == pd.Timedelta(weeks=period)
    assert df.attrs["period"] == "week" and df.attrs["hogql"] == "SELECT 1"


@pytest.mark.parametrize("date_to", ["2025-06-22T23:59:59Z", "2025-06-23T00:00:00+00:00"])  # inclusive, exclusive
def test_retention_periods_after_the_range_are_missing_not_zero(date_to: str) -> None:
    # Cohort 1 starts 2025-06-09; its period 2 starts 2025-06-23, after date_to: unknown, not zero.
    df = retention_frame(_retention_answer(WEEKLY, date_to=date_to))
    cells = df.set_index(["cohort", "period"])["count"]
    assert cells[(0, 2)] == 3 and cells[(0, 3)] is pd.NA
    assert cells[(1, 1)] == 4 and cells[(1, 2)] is pd.NA
    assert cells[(2, 0)] == 5 and cells[(2, 1)] is pd.NA
    assert df["rate"].isna().sum() == 6


def test_retention_triangle_answers_are_padded_with_missing_cells() -> None:
    triangle = [row[: len(WEEKLY) + 1 - i] for i, row in enumerate(WEEKLY)]
    df = retention_frame(_retention_answer(triangle))
    table = retention_table(df, "count")
    assert table.shape == (3, 4)
    assert table.iloc[2, 2] is pd.NA and table.iloc[0, 3] == 2
    assert list(table.columns) == [0, 1, 2, 3]


def test_retention_dates_are_shown_in_the_projects_time_zone() -> None:
    answer = _retention_answer([[3, 1], [2, 0]], unit="Day", start="2025-06-01T22:00:00", tz="Europe/Paris",
                               step="1D")  # fmt: skip
    df = retention_frame(answer)
    assert str(df["cohort_date"].dtype) == "datetime64[us, Europe/Paris]"
    assert df["cohort_date"].iloc[0] == pd.Timestamp("2025-06-02 00:00", tz="Europe/Paris")
    assert df["period_date"].iloc[1] == pd.Timestamp("2025-06-03 00:00", tz="Europe/Paris")


def test_monthly_periods_step_by_calendar_month() -> None:
    df = retention_frame(_retention_answer([[4, 2, 1]], unit="Month", start="2025-01-31"))
    assert [d.strftime("%Y-%m-%d") for d in df["period_date"]] == ["2025-01-31", "2025-02-28", "2025-03-31"]


def test_retention_breakdowns_keep_cohorts_apart() -> None:
    chrome = _retention_answer([[4, 2], [3, 0]], breakdown="Chrome")
    safari = _retention_answer([[5, 5], [1, 1]], breakdown="Safari")
    both = {**chrome, "results": chrome["results"] + safari["results"]}
    assert_valid(both, "RetentionQueryResponse")
    df = retention_frame(both)
    assert df.columns[0] == "breakdown_value"
    sizes = df[df["period"] == 0].set_index(["breakdown_value", "cohort"])["cohort_size"].to_dict()
    assert sizes == {("Chrome", 0): 4, ("Chrome", 1): 3, ("Safari", 0): 5, ("Safari", 1): 1}
    table = retention_table(df)
    assert table.index.names == ["breakdown_value", "cohort_date"]
    assert table.loc[("Safari", pd.Timestamp("2025-06-09", tz="UTC")), 1] == 1.0


def test_empty_answers_give_empty_frames_with_the_columns() -> None:
    assert list(retention_frame({"results": []}).columns)[:3] == ["cohort", "cohort_date", "period"]
    assert list(lifecycle_frame({"results": []}).columns) == ["date", "status", "count"]
    assert list(stickiness_frame({"results": []}).columns) == ["series", "label", "intervals", "persons"]
    assert len(paths_frame({"results": []}).columns) == 6


def _lifecycle_answer(days: list[str], counts: dict[str, list[float]], tz: str = "UTC") -> dict[str, Any]:
    results = [
        {
            "action": {"id": "$pageview", "name": "$pageview", "type": "events", "order": 0, "math": "total"},
            "data": values,
            "count": float(sum(values)),
            "labels": [pd.Timestamp(d).strftime("%-d-%b-%Y") for d in days],
            "days": days,
            "label": f"$pageview - {status}",
            "status": status,
        }
        for status, values in counts.items()
    ]
    answer = {"results": results, "timezone": tz}
    assert_valid(answer, "LifecycleQueryResponse")
    return answer


def test_lifecycle_is_long_form_by_date_then_status() -> None:
    days = ["2025-06-01", "2025-06-02", "2025-06-03"]
    counts = {"dormant": [0.0, -1.0, -2.0], "resurrecting": [0.0, 0.0, 1.0], "new": [4.0, 2.0, 0.0],
              "returning": [0.0, 3.0, 2.0]}  # fmt: skip
    df = lifecycle_frame(_lifecycle_answer(days, counts, tz="America/New_York"))
    assert str(df["count"].dtype) == "Int64" and str(df["date"].dtype) == "datetime64[us, America/New_York]"
    assert df["status"].tolist() == list(LIFECYCLE_STATUSES) * 3
    assert df["date"].iloc[0] == pd.Timestamp("2025-06-01", tz="America/New_York")
    for status, values in counts.items():
        assert df[df["status"] == status]["count"].tolist() == [int(v) for v in values]
    assert (df[df["status"] == "dormant"]["count"] <= 0).all()


def test_hourly_lifecycle_keeps_the_hour() -> None:
    days = ["2025-06-01 10:00:00", "2025-06-01 11:00:00"]
    df = lifecycle_frame(_lifecycle_answer(days, {"new": [1.0, 2.0]}))
    assert df["date"].dt.hour.tolist() == [10, 11]


def _stickiness_item(label: str, order: int, persons: list[int], compare: str | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "count": sum(persons),
        "data": persons,
        "days": list(range(1, len(persons) + 1)),
        "label": label,
        "labels": [f"{d} day{'' if d == 1 else 's'}" for d in range(1, len(persons) + 1)],
        "action": {"order": order, "type": "events", "name": label, "id": label},
    }
    if compare:
        item.update(compare=True, compare_label=compare)
    return item


def test_stickiness_rows_per_series_and_active_intervals() -> None:
    answer = {"results": [_stickiness_item("$pageview", 0, [5, 3, 1]), _stickiness_item("signup", 1, [2, 0, 0])]}
    assert_valid(answer, "StickinessQueryResponse")
    df = stickiness_frame(answer)
    assert list(df.columns) == ["series", "label", "intervals", "persons"]
    assert df.groupby("label")["persons"].sum().to_dict() == {"$pageview": 9, "signup": 2}
    assert df[df["series"] == 1]["intervals"].tolist() == [1, 2, 3]
    assert df.attrs["interval"] == "day"  # from PostHog's labels, "1 day", "2 days"


def test_stickiness_comparison_is_labelled() -> None:
    answer = {"results": [_stickiness_item("$pageview", 0, [5, 3], "current"),
                          _stickiness_item("$pageview", 0, [4, 1], "previous")]}  # fmt: skip
    assert_valid(answer, "StickinessQueryResponse")
    df = stickiness_frame(answer)
    previous = df[df["compare_label"] == "previous"]
    assert previous["persons"].tolist() == [4, 1] and previous["series"].tolist() == [0, 0]


def test_paths_split_step_prefixes_even_when_names_hold_underscores() -> None:
    answer = {"results": [
        {"source": "1_/home", "target": "2_/sign_up", "value": 12, "average_conversion_time": 5000.0},
        {"source": "2_/sign_up", "target": "3_purchase_done", "value": 4, "average_conversion_time": 61000.5},
    ]}  # fmt: skip
    assert_valid(answer, "PathsQueryResponse")
    df = paths_frame(answer)
    assert df[["step_from", "source", "step_to", "target"]].astype(object).values.tolist() == [
        [1, "/home", 2, "/sign_up"],
        [2, "/sign_up", 3, "purchase_done"],
    ]
    assert str(df["value"].dtype) == "Int64" and df["value"].sum() == 16
    assert np.allclose(df["average_conversion_time"], [5000.0, 61000.5])


@pytest.mark.parametrize(
    ("kind", "answer", "first_column"),
    [
        ("RetentionQuery", {"results": []}, "cohort"),
        ("LifecycleQuery", {"results": []}, "date"),
        ("StickinessQuery", {"results": []}, "series"),
        ("PathsQuery", {"results": []}, "step_from"),
    ],
)
def test_to_frame_knows_the_four_kinds(kind: str, answer: dict[str, Any], first_column: str) -> None:
    assert to_frame(answer, kind).columns[0] == first_column


def test_retention_table_refuses_other_frames() -> None:
    with pytest.raises(InvalidArgument, match="retention_frame"):
        retention_table(pd.DataFrame({"a": [1]}))


def test_response_models_read_like_their_json() -> None:
    from hoglab.schema import (
        LifecycleQueryResponse,
        PathsQueryResponse,
        RetentionQueryResponse,
        StickinessQueryResponse,
    )

    retention = _retention_answer(WEEKLY)
    model = RetentionQueryResponse.model_validate(retention)
    assert retention_frame(model)["count"].tolist() == retention_frame(retention)["count"].tolist()
    lifecycle = _lifecycle_answer(["2025-06-01", "2025-06-02"], {"new": [2.0, 1.0], "dormant": [0.0, -1.0]})
    assert lifecycle_frame(LifecycleQueryResponse.model_validate(lifecycle))["count"].tolist() == [2, 0, 1, -1]
    sticky = {"results": [_stickiness_item("$pageview", 0, [3, 1])]}
    assert stickiness_frame(StickinessQueryResponse.model_validate(sticky))["persons"].tolist() == [3, 1]
    edges = {"results": [{"source": "1_a", "target": "2_b", "value": 2.0, "average_conversion_time": 5.0}]}
    assert paths_frame(PathsQueryResponse.model_validate(edges))["value"].tolist() == [2]


def test_hourly_retention_steps_by_the_hour() -> None:
    df = retention_frame(_retention_answer([[3, 2, 1], [4, 1]], unit="Hour", start="2025-06-02T10:00:00", step="1h"))
    assert df.attrs["period"] == "hour"
    assert df["period_date"].dt.hour.tolist() == [10, 11, 12, 11, 12, 13]
    assert df["count"].tolist()[-1] is pd.NA


def test_retention_cohorts_after_the_answer_are_not_listed_as_data() -> None:
    """A date range reaching past the moment of the answer (``last_refresh``): the cohorts that start after it are
    no data and are left out; the periods after it are <NA> (issue 36: future cohorts listed as empty rows)."""
    answer = {"last_refresh": "2025-06-04T12:00:00Z",
              "resolved_date_range": {"date_from": "2025-06-02T00:00:00Z", "date_to": "2025-06-08T23:59:59Z"},
              "results": [{"date": f"2025-06-0{d}T00:00:00Z", "label": f"Day {d - 2}",
                           "values": [{"count": 0 if d > 4 else 10}, {"count": 0}]} for d in range(2, 7)]}  # fmt: skip
    df = retention_frame(answer)
    assert sorted(df["cohort"].unique().tolist()) == [0, 1, 2]
    late = df[(df["cohort"] == 2) & (df["period"] == 1)]
    assert late["count"].isna().all()
