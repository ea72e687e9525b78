"""The novelty section's independent restatement: per-day differences and their errors in pandas, the trend by
statsmodels' WLS, asserted against the report's :class:`~hoglab.stats.Novelty` to 1e-9."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

__all__ = ["assert_novelty_restated"]


def assert_novelty_restated(novelty: Any, cells: pd.DataFrame, min_units: int) -> tuple[Any, dict[str, Any]]:
    """Assert ``novelty`` equals the restatement from ``cells`` (count/mean/var by day × variant); (WLS fit, trend)."""
    n_t, n_c = cells[("count", "test")], cells[("count", "control")]
    difference = cells[("mean", "test")] - cells[("mean", "control")]
    se = np.sqrt(cells[("var", "test")] / n_t + cells[("var", "control")] / n_c)
    days = novelty.to_frame()
    assert days["day"].tolist() == cells.index.tolist()
    np.testing.assert_allclose(days["difference"], difference, rtol=1e-9)
    np.testing.assert_allclose(days["difference_se"], se, rtol=1e-9)
    used = ((n_t >= min_units) & (n_c >= min_units)).to_numpy()
    assert days["in_trend"].tolist() == used.tolist() and used.sum() >= 3
    x = cells.index.to_numpy(dtype=float)[used]
    fit = sm.WLS(difference.to_numpy()[used], sm.add_constant(x), weights=1 / se.to_numpy()[used] ** 2).fit()
    [trend] = novelty.trends.to_dict("records")
    assert trend["slope"] == pytest.approx(fit.params[1], rel=1e-9)
    assert trend["slope_se"] == pytest.approx(fit.bse[1], rel=1e-9)
    assert trend["p_value"] == pytest.approx(fit.pvalues[1], rel=1e-9)
    return fit, trend
