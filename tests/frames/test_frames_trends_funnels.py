"""hoglab.frames for trends and funnels: total values, comparisons, formulas, empty answers, histograms."""

from __future__ import annotations

from typing import Any

import pandas as pd

from hoglab.frames import funnel_frame, trends_frame


def test_trends_total_value_display_has_one_row_per_series() -> None:
    answer = {
        "results": [
            {
                "label": "A",
                "data": [],
                "count": 0,
                "aggregated_value": 12,
                "breakdown_value": ["x", "y"],
                "action": {"order": 0},
            },
            {"label": "B", "data": [], "count": 0, "aggregated_value": 3, "action": {"order": 1}},
        ]
    }
    df = trends_frame(answer)
    assert df.columns.tolist() == ["series", "label", "breakdown_value", "value"]
    assert df["value"].tolist() == [12.0, 3.0] and df["breakdown_value"].iloc[0] == ("x", "y")


def test_trends_compare_and_formula_rows() -> None:
    def item(label: str, compare: str | None, action: Any) -> dict[str, Any]:
        return {
            "label": label,
            "data": [1, 2],
            "days": ["2025-06-01 10:00:00", "2025-06-01 11:00:00"],
            "compare_label": compare,
            "action": action,
        }

    df = trends_frame(
        {
            "timezone": "UTC",
            "results": [
                item("A", "current", {"order": 0}),
                item("A", "previous", {"order": 0}),
                item("A/B", None, None),
            ],
        }
    )
    assert "compare_label" in df and df["compare_label"].iloc[2] == "previous"
    assert df["series"].isna().tolist() == [False] * 4 + [True] * 2
    assert df["date"].iloc[1] == pd.Timestamp("2025-06-01 11:00", tz="UTC")


def test_empty_trends_and_funnels() -> None:
    assert trends_frame({"results": []}).empty
    df = funnel_frame({"results": []})
    assert df.empty and "conversion_rate" in df


def test_funnel_zero_first_step_gives_nan_rates() -> None:
    df = funnel_frame({"results": [{"order": 0, "count": 0, "name": "a"}, {"order": 1, "count": 0, "name": "b"}]})
    assert df["conversion_rate"].isna().all() and df["drop_off"].tolist() == [0, 0]


def test_funnel_time_to_convert_histogram() -> None:
    df = funnel_frame({"results": {"average_conversion_time": 90.0, "bins": [[60, 3], [120, 1]]}})
    assert df["seconds"].tolist() == [60.0, 120.0] and df["count"].tolist() == [3, 1]
    assert df.attrs["average_conversion_time"] == 90.0
