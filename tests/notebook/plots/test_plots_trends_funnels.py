"""Trend and funnel plots, checked on the drawn artists; the package's import hygiene and docstring examples."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from matplotlib.testing.compare import compare_images
from matplotlib.ticker import PercentFormatter

from hoglab.frames import funnel_frame, trends_frame
from hoglab.notebook import plot_funnel, plot_trends
from hoglab.notebook.plots.common import CONTROL_COLOUR, PALETTE

DAYS = ["2025-06-01", "2025-06-02", "2025-06-03", "2025-06-04"]


def _trend(label: str, data: list[float], breakdown: Any = None, order: int = 0, **extra: Any) -> dict[str, Any]:
    item = {
        "label": label,
        "data": data,
        "days": extra.pop("days", DAYS),
        "count": sum(data),
        "action": {"order": order},
    }
    if breakdown is not None:
        item["breakdown_value"] = [breakdown]
    return item | extra


def _lines(ax: plt.Axes) -> dict[str, Any]:
    return {line.get_label(): line for line in ax.get_lines()}


# ----------------------------------------------------------------------------------------------------- trends


def test_trends_draw_a_line_per_breakdown_with_the_values_per_date() -> None:
    df = trends_frame(
        {
            "timezone": "UTC",
            "results": [
                _trend("$pageview", [3, 5, 4, 6], "Chrome"),
                _trend("$pageview", [1, 0, 2, 2], "Safari"),
                _trend("$pageview", [7, 7, 7, 7], "$$_posthog_breakdown_other_$$"),
            ],
        }
    )
    ax = plot_trends(df, ylabel="pageviews")
    lines = _lines(ax)
    assert list(lines) == ["Chrome", "Safari", "Other"]
    for name, part in zip(lines, (df.iloc[0:4], df.iloc[4:8], df.iloc[8:12]), strict=True):
        assert list(lines[name].get_ydata()) == part["value"].tolist()
        days = mdates.num2date(lines[name].get_xdata(orig=False), tz="UTC")
        assert [d.date().isoformat() for d in days] == DAYS
    assert [line.get_color() for line in lines.values()] == list(PALETTE[:3])
    assert ax.get_ylabel() == "pageviews" and ax.get_xlabel() == "date (UTC)"
    assert ax.get_title() == r"\$pageview"  # one event: its name is the title, "$" shown as written
    assert isinstance(ax.xaxis.get_major_formatter(), mdates.ConciseDateFormatter)
    legend = ax.get_legend()
    assert legend is not None and [t.get_text() for t in legend.get_texts()] == ["Chrome", "Safari", "Other"]


def test_one_line_has_no_legend_and_several_series_are_named_by_label() -> None:
    single = trends_frame({"timezone": "UTC", "results": [_trend("signup", [1, 2, 3, 4])]})
    ax = plot_trends(single)
    assert ax.get_legend() is None and ax.get_ylabel() == "value"
    both = trends_frame(
        {
            "timezone": "UTC",
            "results": [
                _trend("$pageview", [1, 2, 3, 4], "Chrome", order=0),
                _trend("$autocapture", [4, 3, 2, 1], "Chrome", order=1),
            ],
        }
    )
    ax = plot_trends(both)
    # Two "$" in one label would start mathtext; escaped, the label renders as written.
    assert list(_lines(ax)) == [r"\$pageview · Chrome", r"\$autocapture · Chrome"]
    assert ax.get_title() == "Trends"
    ax.figure.canvas.draw()  # would raise on a mathtext parse error
    assert ax.get_legend().get_texts()[0].get_text() == r"\$pageview · Chrome"


def test_lines_past_the_palette_differ_by_style() -> None:
    results = [_trend("$pageview", [1, 2, 3, 4], f"browser {i}") for i in range(10)]
    ax = plot_trends(trends_frame({"timezone": "UTC", "results": results}))
    styles = [line.get_linestyle() for line in ax.get_lines()]
    assert styles == ["-"] * 8 + ["-."] * 2
    colours = [line.get_color() for line in ax.get_lines()]
    assert len(set(colours[:8])) == 8 and colours[8] == colours[0]


@pytest.mark.parametrize("tz", ["America/Los_Angeles", "Asia/Tokyo"])
def test_tz_aware_dates_land_on_their_own_days(tz: str) -> None:
    # West of UTC a local midnight is the same UTC day at 07:00; east of UTC it is the previous UTC day.
    days = [f"2025-06-{d:02d}" for d in range(1, 11)]
    df = trends_frame({"timezone": tz, "results": [_trend("signup", list(range(10)), days=days)]})
    assert str(df["date"].dt.tz) == tz
    ax = plot_trends(df)
    (line,) = ax.get_lines()
    x = line.get_xdata(orig=False)
    local = mdates.num2date(x, tz=tz)
    assert [(d.date().isoformat(), d.hour) for d in local] == [(day, 0) for day in days]
    formatter = ax.xaxis.get_major_formatter()
    assert isinstance(formatter, mdates.ConciseDateFormatter)
    assert formatter.format_ticks(list(x[:4])) == ["Jun", "02", "03", "04"]
    ax.figure.canvas.draw()
    ticks = ax.xaxis.get_major_locator()()
    assert len(ticks) >= 3 and all(mdates.num2date(t, tz=tz).hour == 0 for t in ticks)  # at local midnights
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[:2] == ["Jun", "03"] or labels[:2] == ["Jun", "02"], labels
    assert ax.get_xlabel() == f"date ({tz})"


def test_compare_draws_the_previous_period_dashed_over_the_current_dates() -> None:
    previous_days = ["2025-05-28", "2025-05-29", "2025-05-30", "2025-05-31"]
    df = trends_frame(
        {
            "timezone": "UTC",
            "results": [
                _trend("signup", [5, 6, 7, 8], compare_label="current"),
                _trend("signup", [1, 2, 3, 4], compare_label="previous", days=previous_days),
            ],
        }
    )
    ax = plot_trends(df)
    lines = _lines(ax)
    current, previous = lines["signup"], lines["signup (previous)"]
    assert current.get_linestyle() == "-" and previous.get_linestyle() == "--"
    assert list(previous.get_ydata()) == [1.0, 2.0, 3.0, 4.0]
    assert list(previous.get_xdata(orig=False)) == list(current.get_xdata(orig=False))
    assert previous.get_color() == current.get_color()
    assert ax.get_legend() is not None and "previous period" in ax.get_title()


def test_total_value_frames_are_horizontal_bars_largest_first() -> None:
    df = trends_frame(
        {
            "results": [
                {
                    "label": "$pageview",
                    "data": [],
                    "aggregated_value": v,
                    "breakdown_value": [b],
                    "action": {"order": 0},
                }
                for b, v in [("Safari", 800), ("Chrome", 1200), ("Firefox", 300)]
            ]
        }
    )
    assert "date" not in df
    ax = plot_trends(df, ylabel="pageviews")
    (bars,) = ax.containers
    assert [p.get_width() for p in bars] == [1200.0, 800.0, 300.0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["Chrome", "Safari", "Firefox"]
    assert ax.yaxis_inverted() and ax.get_xlabel() == "pageviews"
    assert [t.get_text() for t in ax.texts] == ["1,200", "800", "300"]
    assert ax.get_legend() is None


def test_a_broken_down_line_is_named_by_its_value_once() -> None:
    # PostHog labels a broken-down line with its value, or "<series> - <value>" with several series.
    one = trends_frame({"timezone": "UTC", "results": [_trend("Chrome", [3, 5, 4, 6], "Chrome"),
                                                       _trend("Safari", [1, 0, 2, 2], "Safari")]})  # fmt: skip
    assert list(_lines(plot_trends(one))) == ["Chrome", "Safari"]
    two = trends_frame({"timezone": "UTC", "results": [
        _trend("$pageview - Chrome", [3, 5, 4, 6], "Chrome"),
        _trend("signup - Chrome", [1, 0, 2, 2], "Chrome", order=1),
    ]})  # fmt: skip
    assert list(_lines(plot_trends(two))) == [r"\$pageview · Chrome", "signup · Chrome"]


def _weekly(last_refresh: str, date_from: str, *, explicit: bool) -> pd.DataFrame:
    weeks = ["2025-05-26", "2025-06-02", "2025-06-09"]
    return trends_frame({
        "timezone": "UTC", "last_refresh": last_refresh,
        "resolved_date_range": {"date_from": date_from, "date_to": "2025-06-15T23:59:59.999999+00:00"},
        "results": [_trend("$pageview", [3100, 3050, 2480], days=weeks,
                           filter={"interval": "week", "explicit_date": explicit})],
    })  # fmt: skip


def test_partial_periods_are_marked() -> None:
    # Computed on Wednesday 11 June: the week of 9 June has 2½ of its 7 days, so its 2,480 is no drop.
    df = _weekly("2025-06-11T12:00:00Z", "2025-05-28T00:00:00+00:00", explicit=False)
    ax = plot_trends(df)
    [span] = [p for p in ax.patches if p.get_gid() == "partial period"]
    x0, x1 = span.get_x(), span.get_x() + span.get_width()
    assert (mdates.num2date(x0).date().isoformat(), mdates.num2date(x1).date().isoformat()) == (
        "2025-06-09", "2025-06-16")  # fmt: skip
    [solid] = [line for line in ax.get_lines() if line.get_label() == "\\$pageview"]
    assert solid.get_ydata().tolist() == [3100, 3050]  # the whole weeks; the partial one apart, dotted and hollow
    partial = [line for line in ax.get_lines() if line.get_gid() == "partial"]
    assert {line.get_linestyle() for line in partial} == {":", "None"} and "partial period" in ax.get_xlabel()
    assert partial[-1].get_markerfacecolor() == "white" and partial[-1].get_ydata().tolist() == [2480]
    # A relative range counts its first week whole (from 26 May): only an explicit range makes it partial.
    explicit = plot_trends(_weekly("2025-06-20T00:00:00Z", "2025-05-28T00:00:00+00:00", explicit=True))
    [first] = [p for p in explicit.patches if p.get_gid() == "partial period"]
    assert mdates.num2date(first.get_x()).date().isoformat() == "2025-05-26"
    whole = plot_trends(_weekly("2025-06-20T00:00:00Z", "2025-05-26T00:00:00+00:00", explicit=True))
    assert not [p for p in whole.patches if p.get_gid() == "partial period"] and "partial" not in whole.get_xlabel()


def test_trend_lines_by_variant_take_the_variants_colours() -> None:
    df = trends_frame({"timezone": "UTC", "results": [_trend("purchase", [3, 5, 4, 6], "control"),
                                                      _trend("purchase", [4, 6, 5, 7], "test")]})  # fmt: skip
    lines = _lines(plot_trends(df))
    assert (lines["control"].get_color(), lines["test"].get_color()) == (CONTROL_COLOUR, PALETTE[0])


def test_trends_draw_into_the_given_axes() -> None:
    fig, (left, right) = plt.subplots(1, 2)
    df = trends_frame({"timezone": "UTC", "results": [_trend("signup", [1, 2, 3, 4])]})
    assert plot_trends(df, ax=right, title="Signups") is right
    assert len(right.get_lines()) == 1 and not left.get_lines() and right.get_title() == "Signups"
    assert len(fig.axes) == 2 and plt.get_fignums() == [fig.number]
    with pytest.raises(TypeError, match="Axes"):
        plot_trends(df, ax=fig)  # type: ignore[arg-type]


def test_naive_dates_and_plain_frames_work() -> None:
    df = pd.DataFrame({"date": pd.to_datetime(DAYS), "value": [1.0, 2.0, 3.0, 4.0]})
    ax = plot_trends(df)
    assert ax.get_xlabel() == "date" and list(ax.get_lines()[0].get_ydata()) == [1.0, 2.0, 3.0, 4.0]


def test_bad_trend_frames_raise_naming_the_problem() -> None:
    with pytest.raises(ValueError, match=r"missing column\(s\) \['value'\]"):
        plot_trends(pd.DataFrame({"date": pd.to_datetime(DAYS), "count": [1, 2, 3, 4]}))
    with pytest.raises(ValueError, match="empty"):
        plot_trends(trends_frame({"results": []}))
    with pytest.raises(TypeError, match="DataFrame"):
        plot_trends([1, 2, 3])  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------------- funnels


def _steps(counts: list[int], breakdown: str | None = None) -> list[dict[str, Any]]:
    names = ["$pageview", "signup", "purchase", "repeat"]
    steps: list[dict[str, Any]] = [{"order": i, "name": names[i], "count": c} for i, c in enumerate(counts)]
    if breakdown is not None:
        for step in steps:
            step["breakdown_value"] = [breakdown]
    return steps


def test_funnel_bars_are_counts_with_drop_offs_stacked_above() -> None:
    df = funnel_frame({"results": _steps([1000, 400, 100])})
    ax = plot_funnel(df)
    converted, dropped = ax.containers
    assert [p.get_height() for p in converted] == df["count"].astype(float).tolist()
    assert [p.get_height() for p in dropped] == df["drop_off"].astype(float).tolist()
    assert [p.get_y() for p in dropped] == df["count"].astype(float).tolist()  # stacked on the converted bar
    assert all(p.get_hatch() == "///" for p in dropped) and dropped[1].get_alpha() < 1
    expected = [f"{r:.1%}" if r < 1 else "100%" for r in df["conversion_rate"]]
    assert [t.get_text() for t in ax.texts] == expected == ["100%", "40.0%", "10.0%"]
    assert [t.get_text() for t in ax.get_xticklabels()] == [r"1. \$pageview", "2. signup", "3. purchase"]
    assert ax.get_ylabel() == "count" and ax.get_title() == "Funnel"
    assert ax.get_ylim()[1] > 1000  # room above the first bar's label
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["converted", "dropped off"]


def test_funnel_step_rates_and_no_labels() -> None:
    df = funnel_frame({"results": _steps([1000, 400, 100])})
    ax = plot_funnel(df, rate="step")
    expected = ["100%", *(f"{r:.1%}" for r in df["step_conversion_rate"].iloc[1:])]
    assert [t.get_text() for t in ax.texts] == expected == ["100%", "40.0%", "25.0%"]
    assert len(plot_funnel(df, rate=None).texts) == 0
    with pytest.raises(ValueError, match="rate must be"):
        plot_funnel(df, rate="total")  # type: ignore[arg-type]


def test_funnel_breakdowns_are_grouped_bars() -> None:
    df = funnel_frame({"results": [_steps([1000, 400, 100], "free"), _steps([200, 150, 90], "pro")]})
    ax = plot_funnel(df)
    free, _, pro, pro_dropped = ax.containers
    assert [p.get_height() for p in free] == [1000.0, 400.0, 100.0]
    assert [p.get_height() for p in pro] == [200.0, 150.0, 90.0]
    assert [p.get_height() for p in pro_dropped] == [0.0, 50.0, 60.0]
    # Side by side around each step's tick, one colour per breakdown value.
    centres = [p.get_x() + p.get_width() / 2 for p in free] + [p.get_x() + p.get_width() / 2 for p in pro]
    assert np.allclose(centres, [-0.2, 0.8, 1.8, 0.2, 1.2, 2.2])
    assert free[0].get_facecolor()[:3] != pro[0].get_facecolor()[:3]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["free", "pro", "dropped off"]
    assert [t.get_text() for t in ax.texts] == ["100%", "40.0%", "10.0%", "100%", "75.0%", "45.0%"]
    assert ax.get_title() == "Funnel by breakdown"


def test_normalized_funnel_has_a_percent_axis() -> None:
    df = funnel_frame({"results": [_steps([1000, 400], "free"), _steps([200, 150], "pro")]})
    ax = plot_funnel(df, normalize=True)
    assert [p.get_height() for p in ax.containers[2]] == [1.0, 0.75]
    assert isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)
    assert ax.get_ylabel() == "share of the first step"


def test_funnel_by_variant_takes_the_variants_colours_and_keeps_the_legend_off_the_bars() -> None:
    df = funnel_frame({"results": [_steps([1000, 300], "control"), _steps([1000, 350], "test")]})
    ax = plot_funnel(df)
    ax.figure.draw_without_rendering()
    colours = {str(p.get_gid()): to_hex(p.get_facecolor()) for p in ax.patches if str(p.get_gid()).startswith("conv")}
    assert colours == {"converted:control": CONTROL_COLOUR.lower(), "converted:test": PALETTE[0].lower()}
    legend = ax.get_legend().get_window_extent()
    assert legend.x0 >= ax.get_window_extent().x1  # beside the axes, over no bar


def test_funnel_draws_into_the_given_axes() -> None:
    _, (left, right) = plt.subplots(1, 2)
    assert plot_funnel(funnel_frame({"results": _steps([10, 4])}), ax=left) is left
    assert len(left.containers) == 2 and not right.containers


def test_bad_funnel_frames_raise_naming_the_problem() -> None:
    histogram = funnel_frame({"results": {"bins": [[60, 3], [120, 5]], "average_conversion_time": 90}})
    with pytest.raises(ValueError, match="time-to-convert histogram"):
        plot_funnel(histogram)
    with pytest.raises(ValueError, match="plot_trends"):
        plot_funnel(pd.DataFrame({"date": pd.to_datetime(DAYS), "value": [1, 2, 3, 4]}))
    with pytest.raises(ValueError, match=r"missing column\(s\) \['count'\]"):
        plot_funnel(pd.DataFrame({"step": [1, 2], "name": ["a", "b"]}))
    with pytest.raises(ValueError, match="empty"):
        plot_funnel(funnel_frame({"results": []}))
    doubled = pd.DataFrame({"step": [1, 1], "count": [5, 4]})
    with pytest.raises(ValueError, match="step twice"):
        plot_funnel(doubled)


def test_funnel_image_matches_the_baseline(tmp_path: Path) -> None:
    # A smoke test of the whole rendering, text removed (fonts differ between machines; the artists' text is
    # checked above). Regenerate the baseline with HOGLAB_UPDATE_BASELINES=1 after an intended change.
    df = funnel_frame({"results": [_steps([1000, 400, 100], "free"), _steps([200, 150, 90], "pro")]})
    fig, ax = plt.subplots(figsize=(6, 3.5), dpi=60)
    plot_funnel(df, ax=ax)
    for text in [*ax.texts, ax.title, ax.xaxis.label, ax.yaxis.label]:
        text.set_visible(False)
    ax.set_xticklabels([])
    ax.set_yticklabels([])
    ax.get_legend().remove()
    baseline = Path(__file__).parent / "baseline" / "funnel_breakdown.png"
    actual = tmp_path / "funnel_breakdown.png"
    fig.savefig(actual)
    if os.environ.get("HOGLAB_UPDATE_BASELINES") == "1":
        baseline.parent.mkdir(exist_ok=True)
        fig.savefig(baseline)
    assert baseline.exists(), f"no baseline image {baseline}; write it with HOGLAB_UPDATE_BASELINES=1"
    assert compare_images(str(baseline), str(actual), tol=2) is None


# ---------------------------------------------------------------------------------------------- the package


def test_palette_keeps_the_control_neutral() -> None:
    from hoglab.notebook.plots.common import variant_colours

    colours = variant_colours(["control", "a", "b"], "control")
    assert colours == {"control": CONTROL_COLOUR, "a": PALETTE[0], "b": PALETTE[1]}


def test_plots_are_exported_from_hoglab() -> None:
    import hoglab.notebook

    for name in ("plot_trends", "plot_funnel", "plot_experiment", "plot_cumulative_effect", "plot_srm"):
        assert name in hoglab.__all__ and getattr(hoglab, name) is getattr(hoglab.notebook, name)
    with pytest.raises(AttributeError, match="no_such_plot"):
        hoglab.notebook.no_such_plot  # noqa: B018


def test_notebook_imports_neither_the_server_nor_matplotlib_until_a_plot_is_used() -> None:
    code = (
        "import sys, hoglab, hoglab.stats, hoglab.frames\n"
        "hoglab.Client; hoglab.trends\n"
        "assert 'matplotlib' not in sys.modules, 'hoglab without plots imported matplotlib'\n"
        "import hoglab.notebook\n"
        "assert 'matplotlib' not in sys.modules, 'hoglab.notebook imports matplotlib eagerly'\n"
        "hoglab.plot_trends\n"
        "assert 'matplotlib' in sys.modules\n"
        "assert not [m for m in sys.modules if m.startswith('hoglab.server')], 'plots imported the server'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
