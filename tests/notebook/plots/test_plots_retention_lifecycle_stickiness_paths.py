"""Retention, lifecycle, stickiness and paths plots: rendered to PNG off-screen, checked on the drawn artists
against numbers restated from the frames."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from matplotlib.patches import PathPatch, Rectangle
from matplotlib.ticker import PercentFormatter

import hoglab
from hoglab.errors import InvalidArgument
from hoglab.frames import lifecycle_frame, paths_frame, retention_frame, stickiness_frame
from hoglab.notebook import plot_lifecycle, plot_paths, plot_retention, plot_retention_curve, plot_stickiness
from hoglab.notebook.plots.lifecycle import LIFECYCLE_COLOURS

COHORTS = [[10, 6, 3, 2], [8, 4, 1], [5, 2], [4]]  # a triangle, as the newest cohorts have not come back yet


def _retention(counts: list[list[int]] = COHORTS, breakdown: Any = None) -> dict[str, Any]:
    dates = pd.date_range("2025-06-02", periods=len(counts), freq="7D", tz="UTC")
    return {"results": [
        {"date": d.isoformat(), "label": f"Week {i}", "values": [{"count": c} for c in row],
         **({"breakdown_value": breakdown} if breakdown is not None else {})}
        for i, (d, row) in enumerate(zip(dates, counts, strict=True))
    ]}  # fmt: skip


def _render(ax: plt.Axes, tmp_path: Path) -> None:
    target = tmp_path / "plot.png"
    ax.figure.savefig(target)
    assert target.stat().st_size > 5_000  # a real picture, not an empty canvas


def test_retention_triangle_colours_and_labels_each_reached_cell(tmp_path: Path) -> None:
    ax = plot_retention(retention_frame(_retention()))
    _render(ax, tmp_path)
    image = ax.images[0].get_array()
    expected = [[c / row[0] for c in row] + [np.nan] * (4 - len(row)) for row in COHORTS]
    assert np.allclose(image.filled(np.nan), expected, equal_nan=True)
    assert image.mask.sum() == 6  # the blank corner of the triangle
    assert sorted(t.get_text() for t in ax.texts) == sorted(f"{c / row[0]:.0%}" for row in COHORTS for c in row)
    assert ax.get_yticklabels()[0].get_text() == "02 Jun  (n=10)"
    assert ax.get_xlabel() == "weeks after the cohort"


def test_retention_triangle_adds_breakdowns_up_or_shows_one() -> None:
    a, b = _retention([[4, 2], [2]], "Chrome"), _retention([[6, 1], [3]], "Safari")
    df = retention_frame({"results": a["results"] + b["results"]})
    summed = plot_retention(df).images[0].get_array()
    assert summed[0, 1] == pytest.approx(3 / 10)
    one = plot_retention(df, breakdown="Safari", annotate=False)
    assert one.images[0].get_array()[0, 1] == pytest.approx(1 / 6) and not one.texts
    assert one.get_title() == "Retention: Safari"
    with pytest.raises(InvalidArgument, match="Firefox"):
        plot_retention(df, breakdown="Firefox")


def test_retention_curve_is_the_size_weighted_share_of_cohorts_that_reached_the_period(tmp_path: Path) -> None:
    df = retention_frame(_retention())
    ax = plot_retention_curve(df, cohorts=True)
    _render(ax, tmp_path)
    pooled, *each = ax.get_lines()
    # Restated: for each period, people back over the people of the cohorts that have reached it.
    expected = [sum(r[p] for r in COHORTS if len(r) > p) / sum(r[0] for r in COHORTS if len(r) > p) for p in range(4)]
    assert np.allclose(pooled.get_ydata(), expected)
    assert len(each) == len(COHORTS) and isinstance(ax.yaxis.get_major_formatter(), PercentFormatter)


def test_retention_relative_to_the_previous_period_and_the_simple_mean() -> None:
    df = retention_frame(_retention())
    previous = plot_retention(df, reference="previous").images[0].get_array()
    expected = [
        [1.0] + [row[p] / row[p - 1] for p in range(1, len(row))] + [np.nan] * (4 - len(row)) for row in COHORTS
    ]
    assert np.allclose(previous.filled(np.nan), expected, equal_nan=True)
    simple = plot_retention_curve(df, mean="simple").get_lines()[0].get_ydata()
    rates = [[c / row[0] for c in row] for row in COHORTS]
    assert np.allclose(simple, [np.mean([r[p] for r in rates if len(r) > p]) for p in range(4)])
    with pytest.raises(InvalidArgument, match="reference"):
        plot_retention(df, reference="first")
    with pytest.raises(InvalidArgument, match="mean"):
        plot_retention_curve(df, mean="median")


def test_retention_curve_draws_a_line_per_breakdown_value() -> None:
    a, b = _retention([[4, 2], [2]], "Chrome"), _retention([[6, 1], [3]], "Safari")
    ax = plot_retention_curve(retention_frame({"results": a["results"] + b["results"]}))
    lines = {line.get_label(): line.get_ydata() for line in ax.get_lines()}
    assert set(lines) == {"Chrome", "Safari"} and np.allclose(lines["Safari"], [1.0, 1 / 6])
    assert ax.get_legend() is not None


def test_retention_curve_names_the_people_without_the_value_and_keeps_the_others_colours() -> None:
    none, a = _retention([[8, 4], [4]], ""), _retention([[4, 2], [2]], "control")
    plain = plot_retention_curve(retention_frame(a))
    ax = plot_retention_curve(retention_frame({"results": none["results"] + a["results"]}))
    assert [line.get_label() for line in ax.get_lines()] == ["control", "(none)"]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["control", "(none)"]
    assert ax.get_lines()[0].get_color() == plain.get_lines()[0].get_color()
    assert all(float(tick).is_integer() for tick in ax.get_xticks())  # periods are whole


def test_a_warning_under_one_panel_is_wrapped_to_that_panel() -> None:
    df = retention_frame(_retention())
    df.attrs["warnings"] = ["returning events lack the breakdown's property " * 6]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4), layout="constrained")
    plot_retention_curve(df, ax=left)
    plot_retention_curve(retention_frame(_retention()), ax=right)
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    note, left_box, right_box = (part.get_window_extent(renderer) for part in (left.texts[-1], left, right))
    assert note.x1 <= left_box.x1 + 20  # the note stays under its own panel,
    assert right_box.x0 - left_box.x1 < 120  # so the layout leaves no gap for it between the panels


def test_lifecycle_stacks_active_statuses_and_hangs_dormant_below_zero(tmp_path: Path) -> None:
    days = [str(d.date()) for d in pd.date_range("2025-06-01", periods=5)]
    data = {"new": [3, 1, 0, 2, 1], "returning": [0, 2, 2, 1, 0], "resurrecting": [0, 0, 1, 0, 2],
            "dormant": [0, -1, -1, -2, -1]}  # fmt: skip
    answer = {"results": [{"status": s, "data": [float(v) for v in vals], "days": days} for s, vals in data.items()]}
    ax = plot_lifecycle(lifecycle_frame(answer))
    _render(ax, tmp_path)
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == 20
    by_colour: dict[str, list[Rectangle]] = {}
    for bar in bars:
        by_colour.setdefault(plt.matplotlib.colors.to_hex(bar.get_facecolor()), []).append(bar)
    resurrecting = by_colour[LIFECYCLE_COLOURS["resurrecting"].lower()]
    tops = np.array(data["new"]) + np.array(data["returning"])
    assert [b.get_y() for b in resurrecting] == pytest.approx(tops)  # stacked on new + returning
    dormant = by_colour[LIFECYCLE_COLOURS["dormant"].lower()]
    assert [b.get_height() for b in dormant] == pytest.approx(data["dormant"]) and all(b.get_y() == 0 for b in dormant)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == list(data)


def test_stickiness_bars_per_series_and_previous_period(tmp_path: Path) -> None:
    answer = {"results": [
        {"label": "$pageview", "data": [5, 3, 1], "days": [1, 2, 3], "labels": ["1 week", "2 weeks", "3 weeks"],
         "action": {"order": 0}, "compare": True, "compare_label": "current"},
        {"label": "$pageview", "data": [4, 4, 0], "days": [1, 2, 3], "labels": ["1 week", "2 weeks", "3 weeks"],
         "action": {"order": 0}, "compare": True, "compare_label": "previous"},
    ]}  # fmt: skip
    ax = plot_stickiness(stickiness_frame(answer))
    _render(ax, tmp_path)
    heights = [p.get_height() for p in ax.patches]
    assert heights == [5, 3, 1, 4, 4, 0] and ax.get_xlabel() == "weeks active"
    assert [p.get_hatch() for p in ax.patches][3:] == ["//"] * 3
    shares = plot_stickiness(stickiness_frame(answer), normalize=True)
    assert sum(p.get_height() for p in shares.patches[:3]) == pytest.approx(1.0)


def test_paths_sankey_draws_a_ribbon_per_edge_and_a_block_per_item(tmp_path: Path) -> None:
    edges = [("1_/home", "2_/pricing", 40), ("1_/home", "2_/blog", 25), ("1_/blog", "2_/home", 10),
             ("2_/pricing", "3_/signup", 22), ("2_/blog", "3_/pricing", 12), ("3_/signup", "4_/app", 18)]  # fmt: skip
    answer = {"results": [{"source": s, "target": t, "value": v, "average_conversion_time": 1.0} for s, t, v in edges]}
    df = paths_frame(answer)
    ax = plot_paths(df)
    _render(ax, tmp_path)
    ribbons = [p for p in ax.patches if isinstance(p, PathPatch)]
    blocks = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(ribbons) == 6 and len(blocks) == 8
    # A block is as tall as the larger of the people in and out of it.
    flow = pd.concat([df.groupby(["step_from", "source"])["value"].sum(),
                      df.groupby(["step_to", "target"])["value"].sum()]).groupby(level=[0, 1]).max()  # fmt: skip
    assert sorted(b.get_height() for b in blocks) == sorted(flow.astype(float))
    assert "/pricing  40" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["step 1", "step 2", "step 3", "step 4"]
    assert ax.get_xlabel() == ""  # every edge drawn: nothing to say
    heaviest = plot_paths(df, max_edges=2)
    assert sum(isinstance(p, PathPatch) for p in heaviest.patches) == 2
    # The trimmed edges are said in the figure: how many, and the people they carried (pandas' count).
    left_out = df.sort_values("value", ascending=False).iloc[2:]
    assert heaviest.get_xlabel() == (
        f"the 2 heaviest of 6 edges; {len(left_out)} lighter edges ({left_out['value'].sum():,.0f} people) not drawn "
        "(max_edges=None draws all)"
    )


def test_big_counts_have_thousands_separators(tmp_path: Path) -> None:
    days = [str(d.date()) for d in pd.date_range("2025-06-01", periods=3)]
    answer = {"results": [{"status": "new", "data": [12000.0, 15500.0, 9000.0], "days": days},
                          {"status": "dormant", "data": [0.0, -4000.0, -11000.0], "days": days}]}  # fmt: skip
    ax = plot_lifecycle(lifecycle_frame(answer))
    _render(ax, tmp_path)
    ticks = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert "10,000" in ticks and any(t.startswith(("-10,000", "−10,000")) for t in ticks), ticks
    sticky = {"results": [{"label": "$pageview", "data": [25000, 3000, 100], "days": [1, 2, 3],
                           "labels": ["1 day", "2 days", "3 days"], "action": {"order": 0}}]}  # fmt: skip
    bars = plot_stickiness(stickiness_frame(sticky))
    _render(bars, tmp_path)
    assert "20,000" in [t.get_text() for t in bars.get_yticklabels()]


@pytest.mark.parametrize(
    ("plot", "frame", "message"),
    [
        (plot_retention, pd.DataFrame({"x": [1]}), "missing column"),
        (plot_retention_curve, retention_frame({"results": []}), "empty"),
        (plot_lifecycle, pd.DataFrame({"date": [], "status": [], "count": []}), "empty"),
        (plot_stickiness, pd.DataFrame({"intervals": [1]}), "persons"),
        (plot_paths, paths_frame({"results": []}), "empty"),
    ],
)
def test_bad_frames_raise_naming_the_problem(plot: Any, frame: pd.DataFrame, message: str) -> None:
    with pytest.raises(InvalidArgument, match=message):
        plot(frame)


def test_plots_are_exported_from_hoglab_and_the_notebook_package() -> None:
    for name in ("plot_retention", "plot_retention_curve", "plot_lifecycle", "plot_stickiness", "plot_paths"):
        assert getattr(hoglab, name) is getattr(hoglab.notebook, name)
        assert name in hoglab.__all__
