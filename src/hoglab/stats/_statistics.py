"""Sufficient-statistic inputs: what a SQL ``GROUP BY variant`` returns.

Every statistic is a frozen dataclass, validated on construction and summable with ``+``
(strata, days or shards of the same arm add up to the arm). Formulas for the moments follow
the usual unbiased estimators; sources are cited in ``docs/statistics.md``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from numbers import Real

import numpy as np

from ._errors import StatsInputError

__all__ = ["Count", "Proportion", "Ratio", "SampleMean"]

# Relative slack for the consistency checks below: sums of squares come out of databases in
# floating point, so sum**2 may exceed n*sum_squares by a few ulps for a constant column.
_SLACK = 1e-9


def _number(owner: str, name: str, value: object, *, minimum: float | None = 0.0) -> float:
    if isinstance(value, bool) or not isinstance(value, Real | np.number):
        raise StatsInputError(f"{owner}.{name} must be a real number, got {value!r}")
    number = float(value)
    if not math.isfinite(number):
        raise StatsInputError(f"{owner}.{name} must be finite, got {number!r}")
    if minimum is not None and number < minimum:
        raise StatsInputError(f"{owner}.{name} must be >= {minimum:g}, got {number!r}")
    return number


@dataclass(frozen=True)
class Proportion:
    """Units exposed (``n``) and how many of them converted (``successes``).

    Examples
    --------
    >>> p = Proportion(1000, 120) + Proportion(500, 40)
    >>> p, round(p.rate, 4)
    (Proportion(n=1500, successes=160), 0.1067)
    """

    n: float
    successes: float

    def __post_init__(self) -> None:
        n = _number("Proportion", "n", self.n)
        s = _number("Proportion", "successes", self.successes)
        if s > n:
            raise StatsInputError(f"Proportion.successes ({s:g}) cannot exceed n ({n:g})")

    def __add__(self, other: Proportion) -> Proportion:
        if not isinstance(other, Proportion):
            return NotImplemented
        return Proportion(self.n + other.n, self.successes + other.successes)

    @property
    def failures(self) -> float:
        return self.n - self.successes

    @property
    def rate(self) -> float:
        """Conversion rate ``successes / n`` (NaN when ``n == 0``)."""
        return self.successes / self.n if self.n > 0 else math.nan

    @property
    def variance(self) -> float:
        """Per-unit Bernoulli variance p(1-p) (the MLE, as in the z-test)."""
        p = self.rate
        return p * (1.0 - p)


@dataclass(frozen=True)
class Count:
    """Events (``count``) observed over an ``exposure`` such as users or user-days.

    The rate is ``count / exposure``; the Poisson model treats ``count`` as Poisson with mean
    ``rate * exposure``.

    Examples
    --------
    >>> Count(120, 1000).rate
    0.12
    """

    count: float
    exposure: float

    def __post_init__(self) -> None:
        _number("Count", "count", self.count)
        _number("Count", "exposure", self.exposure)

    def __add__(self, other: Count) -> Count:
        if not isinstance(other, Count):
            return NotImplemented
        return Count(self.count + other.count, self.exposure + other.exposure)

    @property
    def rate(self) -> float:
        return self.count / self.exposure if self.exposure > 0 else math.nan


@dataclass(frozen=True)
class SampleMean:
    """``n`` units with ``sum`` and ``sum_squares`` of a per-unit value.

    For CUPED, ``pre`` holds the same unit's pre-period covariate and ``sum_of_products`` is
    Σ value·pre over the units (both or neither must be given).

    Examples
    --------
    >>> m = SampleMean.from_values([1.0, 2.0, 4.0])
    >>> m.mean, m.variance
    (2.3333333333333335, 2.333333333333334)
    >>> SampleMean.from_values([3.0, 5.0], pre=[1.0, 2.0]).covariance
    1.0
    """

    n: float
    sum: float
    sum_squares: float
    pre: SampleMean | None = None
    sum_of_products: float | None = None

    def __post_init__(self) -> None:
        n = _number("SampleMean", "n", self.n)
        s = _number("SampleMean", "sum", self.sum, minimum=None)
        ss = _number("SampleMean", "sum_squares", self.sum_squares)
        # Cauchy-Schwarz: sum^2 <= n * sum_squares for any real data.
        if s * s > n * ss * (1.0 + _SLACK) + _SLACK:
            raise StatsInputError(
                f"SampleMean is inconsistent: sum**2 ({s * s:g}) exceeds n*sum_squares ({n * ss:g})"
            )
        if (self.pre is None) != (self.sum_of_products is None):
            raise StatsInputError("SampleMean.pre and SampleMean.sum_of_products go together")
        if self.pre is not None:
            if not isinstance(self.pre, SampleMean) or self.pre.pre is not None:
                raise StatsInputError("SampleMean.pre must be a plain SampleMean")
            if self.pre.n != n:
                raise StatsInputError(f"SampleMean.pre.n ({self.pre.n:g}) must equal n ({n:g})")
            _number("SampleMean", "sum_of_products", self.sum_of_products, minimum=None)

    @classmethod
    def from_values(cls, values: Iterable[float], pre: Iterable[float] | None = None) -> SampleMean:
        """Sufficient statistics of raw per-unit values (and optional pre-period values)."""
        x = np.asarray(list(values) if not isinstance(values, np.ndarray) else values, dtype=float)
        if pre is None:
            return cls(x.size, float(x.sum()), float((x * x).sum()))
        z = np.asarray(list(pre) if not isinstance(pre, np.ndarray) else pre, dtype=float)
        if z.shape != x.shape:
            raise StatsInputError("values and pre must have the same length")
        return cls(
            x.size,
            float(x.sum()),
            float((x * x).sum()),
            pre=cls(z.size, float(z.sum()), float((z * z).sum())),
            sum_of_products=float((x * z).sum()),
        )

    def __add__(self, other: SampleMean) -> SampleMean:
        if not isinstance(other, SampleMean):
            return NotImplemented
        if (self.pre is None) != (other.pre is None):
            raise StatsInputError("cannot add a SampleMean with a pre-period covariate to one without")
        if self.pre is None or other.pre is None:
            return SampleMean(self.n + other.n, self.sum + other.sum, self.sum_squares + other.sum_squares)
        assert self.sum_of_products is not None and other.sum_of_products is not None
        return SampleMean(
            self.n + other.n,
            self.sum + other.sum,
            self.sum_squares + other.sum_squares,
            pre=self.pre + other.pre,
            sum_of_products=self.sum_of_products + other.sum_of_products,
        )

    @property
    def mean(self) -> float:
        return self.sum / self.n if self.n > 0 else math.nan

    @property
    def variance(self) -> float:
        """Unbiased sample variance (ddof=1); NaN for fewer than two units."""
        if self.n < 2:
            return math.nan
        # Rounding can push a zero variance slightly negative; it is a variance, clip it.
        return max(0.0, (self.sum_squares - self.sum * self.sum / self.n) / (self.n - 1))

    @property
    def covariance(self) -> float:
        """Unbiased covariance between the value and its pre-period covariate."""
        if self.pre is None or self.sum_of_products is None:
            raise StatsInputError("this SampleMean has no pre-period covariate")
        if self.n < 2:
            return math.nan
        return (self.sum_of_products - self.sum * self.pre.sum / self.n) / (self.n - 1)


@dataclass(frozen=True)
class Ratio:
    """A ratio metric Σnumerator / Σdenominator over ``n`` units (e.g. revenue per session).

    ``sum_of_products`` is Σ numerator·denominator over the units; it carries the covariance
    the delta method needs.

    Examples
    --------
    >>> r = Ratio.from_values([2.0, 0.0, 3.0], [2.0, 1.0, 2.0])
    >>> r.value
    1.0
    """

    numerator: SampleMean
    denominator: SampleMean
    sum_of_products: float

    def __post_init__(self) -> None:
        if not isinstance(self.numerator, SampleMean) or not isinstance(self.denominator, SampleMean):
            raise StatsInputError("Ratio.numerator and Ratio.denominator must be SampleMean")
        if self.numerator.n != self.denominator.n:
            raise StatsInputError("Ratio numerator and denominator must cover the same units (same n)")
        _number("Ratio", "sum_of_products", self.sum_of_products, minimum=None)

    @classmethod
    def from_values(cls, numerator: Iterable[float], denominator: Iterable[float]) -> Ratio:
        m = np.asarray(list(numerator), dtype=float)
        d = np.asarray(list(denominator), dtype=float)
        if m.shape != d.shape:
            raise StatsInputError("numerator and denominator must have the same length")
        return cls(SampleMean.from_values(m), SampleMean.from_values(d), float((m * d).sum()))

    def __add__(self, other: Ratio) -> Ratio:
        if not isinstance(other, Ratio):
            return NotImplemented
        return Ratio(
            self.numerator + other.numerator,
            self.denominator + other.denominator,
            self.sum_of_products + other.sum_of_products,
        )

    @property
    def n(self) -> float:
        return self.numerator.n

    @property
    def value(self) -> float:
        d = self.denominator.sum
        return self.numerator.sum / d if d != 0 else math.nan

    @property
    def covariance(self) -> float:
        """Unbiased covariance between per-unit numerator and denominator."""
        n = self.n
        if n < 2:
            return math.nan
        return (self.sum_of_products - self.numerator.sum * self.denominator.sum / n) / (n - 1)

    @property
    def variance(self) -> float:
        """Per-unit variance of the ratio by the delta method (divide by ``n`` for the SE²).

        Var(m/d) ≈ σ²_m/μ_d² + σ²_d·μ_m²/μ_d⁴ − 2·σ_md·μ_m/μ_d³ (first-order Taylor expansion;
        Deng, Knoblich & Lu 2018, "Applying the Delta Method in Metric Analytics", eq. 3).
        """
        mm, md = self.numerator.mean, self.denominator.mean
        if not md:
            return math.nan
        vm, vd, c = self.numerator.variance, self.denominator.variance, self.covariance
        return max(0.0, vm / md**2 + vd * mm**2 / md**4 - 2.0 * c * mm / md**3)
