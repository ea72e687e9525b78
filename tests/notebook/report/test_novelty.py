"""The report's novelty section from per-day sufficient statistics (``report/novelty.py``), without a service: a count
metric's days (persons, events and the sum of squared events per person) against pandas and statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from hoglab.notebook.report.novelty import MIN_UNITS, daily_novelty, novelty_lines


def _persons(seed: int = 5, n: int = 6_000) -> pd.DataFrame:
    """Persons first exposed over 20 days (tz-aware, across a DST change), purchases per person, a fading effect."""
    rng = np.random.default_rng(seed)
    start = pd.Timestamp("2026-03-20", tz="Europe/Berlin")
    date = start + pd.to_timedelta(rng.integers(0, 20, n), unit="D")
    variant = rng.choice(["control", "test"], n)
    day = (date.max() - date).days.to_numpy()
    rate = 1.0 + np.where(variant == "test", 0.05 + 0.3 * np.exp(-day / 4), 0.0)
    return pd.DataFrame({"date": date.normalize(), "variant": variant, "purchases": rng.poisson(rate)})


def test_a_count_metric_from_events_and_their_squares() -> None:
    persons = _persons()
    daily = persons.assign(squares=persons["purchases"] ** 2).groupby(["date", "variant"], as_index=False).agg(
        n=("purchases", "size"), count=("purchases", "sum"), count_squares=("squares", "sum")
    )
    result, note = daily_novelty(daily, "events per person", "control")
    assert result is not None and note is None and result.scale == "difference"
    persons["day"] = ((persons["date"].max() - persons["date"]) / pd.Timedelta(days=1)).round().astype(int)
    cells = persons.groupby(["day", "variant"])["purchases"].agg(["count", "mean", "var"]).unstack("variant")
    difference = cells[("mean", "test")] - cells[("mean", "control")]
    var_t, var_c = (cells[("var", v)] / cells[("count", v)] for v in ("test", "control"))
    se = np.sqrt(var_t + var_c)
    days = result.to_frame()
    assert days["day"].tolist() == list(range(20))  # 23- and 25-hour days still one day each
    np.testing.assert_allclose(days["difference"], difference, rtol=1e-9)
    np.testing.assert_allclose(days["difference_se"], se, rtol=1e-9)
    assert days["in_trend"].all() and cells[("count", "control")].min() >= MIN_UNITS
    fit = sm.WLS(difference.to_numpy(), sm.add_constant(cells.index.to_numpy(dtype=float)),
                 weights=1 / se.to_numpy() ** 2).fit()  # fmt: skip
    [trend] = result.trends.to_dict("records")
    assert trend["slope"] == pytest.approx(fit.params[1], rel=1e-9)
    assert trend["p_value"] == pytest.approx(fit.pvalues[1], rel=1e-9)
    assert trend["verdict"] == "decaying"  # the planted novelty: the newest cohorts gain most
    [line] = novelty_lines(result)
    assert line.startswith("Novelty (events per person): test's effect by days since first exposure fades with time")
    assert f"p = {fit.pvalues[1]:.2g}" in line and " pp" not in line  # a count is not a rate: no percentage points


def test_too_few_or_no_days() -> None:
    empty = pd.DataFrame(columns=["date", "variant", "n", "successes"])
    assert daily_novelty(empty, "conversion rate", "control") == (None, None)
    one = pd.DataFrame({"date": pd.to_datetime(["2026-05-01"] * 2, utc=True), "variant": ["control", "test"],
                        "n": [10, 10], "successes": [3, 4]})  # fmt: skip
    result, _ = daily_novelty(one, "conversion rate", "control")
    assert result is not None
    assert novelty_lines(result) == [
        f"Novelty (conversion rate): test's effect by days since first exposure: no trend test (0 days with "
        f"{MIN_UNITS}+ units per arm; it needs 3)."
    ]
    only_control = one[one["variant"] == "control"]
    result, note = daily_novelty(only_control, "conversion rate", "control")
    assert result is None and note is not None and note.startswith("Novelty: not tested (")
