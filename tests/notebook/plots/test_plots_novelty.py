"""``plot_novelty``: each day's effect and interval, and the fitted trend, exactly as ``hoglab.stats.novelty`` has
them (the numbers themselves are checked against pandas and statsmodels in tests/stats/units/test_novelty.py)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import hoglab
import hoglab.stats as hs
from hoglab.errors import InvalidArgumentType


def _days(seed: int = 3) -> pd.DataFrame:
    """Per-day conversion statistics whose effect fades: +10 points on day 0, a point less each day; day 9 small."""
    rng = np.random.default_rng(seed)
    rows = []
    for day in range(10):
        n = 40 if day == 9 else 2_000
        for variant, rate in (("control", 0.3), ("test", 0.3 + max(0.10 - 0.01 * day, 0))):
            rows.append({"day": day, "variant": variant, "n": n, "successes": int(rng.binomial(n, rate))})
    return pd.DataFrame(rows)


def test_the_points_bars_and_trend_are_the_results() -> None:
    result = hs.novelty(_days(), "bought", scale="difference")
    ax = hoglab.plot_novelty(result, percent=True)
    days = result.to_frame()
    filled, hollow, trend = ax.get_lines()[:3]
    tested = days["in_trend"].to_numpy()
    assert filled.get_xdata().tolist() == days.loc[tested, "day"].astype(float).tolist()
    np.testing.assert_allclose(filled.get_ydata(), days.loc[tested, "difference"])
    assert hollow.get_xdata().tolist() == [9.0] and hollow.get_markerfacecolor() == "none"
    np.testing.assert_allclose(trend.get_ydata(), days.loc[tested, "fitted"])
    [bars] = ax.collections
    segments = bars.get_segments()
    np.testing.assert_allclose([s[0][1] for s in segments], days["difference_ci_low"])
    np.testing.assert_allclose([s[1][1] for s in segments], days["difference_ci_high"])
    [row] = result.trends.to_dict("records")
    assert row["verdict"] == "decaying"
    said = f"the effect fades (novelty), p = {row['p_value']:.2g}"
    assert ax.get_title() == f"Bought by days since first exposure: {said}"
    assert ax.get_ylabel() == "difference against control (pp)"


def test_a_lift_is_on_a_percent_axis_and_a_non_result_is_refused() -> None:
    ax = hoglab.plot_novelty(hs.novelty(_days(), "bought"), title="mine")
    assert ax.get_title() == "mine" and ax.get_ylabel() == "lift against control"
    assert ax.yaxis.get_major_formatter().format_data(0.1).endswith("%")
    with pytest.raises(InvalidArgumentType, match=r"hoglab\.stats\.Novelty"):
        hoglab.plot_novelty(_days())
