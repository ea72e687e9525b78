"""Sufficient-statistic inputs: validation, summation and moments against numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hoglab.stats import Count, Proportion, Ratio, SampleMean, StatsInputError


@pytest.mark.parametrize(
    "build",
    [
        lambda: Proportion(-1, 0),
        lambda: Proportion(10, 11),
        lambda: Proportion(10, math.nan),
        lambda: Proportion(10, True),
        lambda: Proportion("10", 1),
        lambda: Count(-1, 10),
        lambda: Count(1, math.inf),
        lambda: SampleMean(3, 10.0, 1.0),  # sum² > n·sum_squares is impossible
        lambda: SampleMean(3, 1.0, -1.0),
        lambda: SampleMean(3, 1.0, 1.0, pre=SampleMean(2, 1.0, 1.0), sum_of_products=1.0),
        lambda: SampleMean(3, 1.0, 1.0, pre=SampleMean(3, 1.0, 1.0)),
        lambda: Ratio(SampleMean(3, 1.0, 1.0), SampleMean(4, 1.0, 1.0), 1.0),
    ],
)
def test_invalid_statistics_raise_a_typed_value_error(build: object) -> None:
    with pytest.raises(StatsInputError) as info:
        build()  # type: ignore[operator]
    assert isinstance(info.value, ValueError)


def test_statistics_are_frozen_and_summable() -> None:
    p = Proportion(100, 10) + Proportion(50, 5)
    assert p == Proportion(150, 15)
    with pytest.raises(AttributeError):
        p.n = 3  # type: ignore[misc]
    assert Count(3, 10) + Count(4, 5) == Count(7, 15)
    rng = np.random.default_rng(0)
    x, z = rng.normal(size=30), rng.normal(size=30)
    halves = SampleMean.from_values(x[:10], pre=z[:10]) + SampleMean.from_values(x[10:], pre=z[10:])
    whole = SampleMean.from_values(x, pre=z)
    assert halves.n == whole.n
    assert halves.mean == pytest.approx(whole.mean, rel=1e-12)
    assert halves.covariance == pytest.approx(whole.covariance, rel=1e-12)
    with pytest.raises(StatsInputError):
        SampleMean.from_values(x) + whole


def test_moments_match_numpy() -> None:
    rng = np.random.default_rng(1)
    x = rng.gamma(2.0, 3.0, size=500)
    z = x * 0.5 + rng.normal(size=500)
    m = SampleMean.from_values(x, pre=z)
    assert m.mean == pytest.approx(x.mean(), rel=1e-12)
    assert m.variance == pytest.approx(x.var(ddof=1), rel=1e-10)
    assert m.covariance == pytest.approx(np.cov(x, z)[0, 1], rel=1e-10)
    assert Proportion(200, 50).variance == pytest.approx(0.25 * 0.75)


def test_ratio_delta_variance_matches_a_numerical_delta_method() -> None:
    from statsmodels.stats._delta_method import NonlinearDeltaCov

    rng = np.random.default_rng(2)
    d = rng.poisson(3.0, size=2000) + 1.0
    m = d * rng.gamma(2.0, 0.5, size=2000)
    r = Ratio.from_values(m, d)
    assert r.value == pytest.approx(m.sum() / d.sum(), rel=1e-12)
    cov = np.cov(np.vstack([m, d])) / len(m)
    delta = NonlinearDeltaCov(lambda p: np.array([p[0] / p[1]]), np.array([m.mean(), d.mean()]), cov)
    assert r.variance / r.n == pytest.approx(float(delta.cov()[0, 0]), rel=1e-6)


def test_degenerate_moments_are_nan_not_errors() -> None:
    assert math.isnan(Proportion(0, 0).rate)
    assert math.isnan(SampleMean(1, 2.0, 4.0).variance)
    assert SampleMean(5, 10.0, 20.0).variance == 0.0  # constant column; rounding clipped at 0
