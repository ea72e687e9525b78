"""Vectorised posterior families (one entry per arm) with the functions quadrature needs.

Densities are evaluated in log space so millions of exposures (Beta(5e6, 5e7)) neither
overflow nor underflow; tail areas use the complementary special functions directly
(``betaincc``, ``gammaincc``) rather than ``1 - cdf``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
import numpy.typing as npt
from scipy import special, stats

from .._errors import StatsInputError

if TYPE_CHECKING:
    from _typeshed import DataclassInstance

__all__ = ["BetaPosterior", "GammaPosterior", "NormalPosterior", "Posterior", "StudentTPosterior"]

FloatArray = npt.NDArray[np.float64]

# Tail mass left outside the integration range of every posterior. 1e-13 keeps truncation far
# below the 1e-9 accuracy we test for, while the quantile stays finite for every family.
TAIL = 1e-13


def _column(values: Any, name: str, *, positive: bool) -> FloatArray:
    array = np.atleast_1d(np.asarray(values, dtype=float))
    if array.ndim != 1 or array.size == 0:
        raise StatsInputError(f"{name} must be a non-empty 1-D array of numbers")
    if not np.all(np.isfinite(array)):
        raise StatsInputError(f"{name} must be finite")
    if positive and np.any(array <= 0.0):
        raise StatsInputError(f"{name} must be positive")
    return array


def _set_columns(posterior: object, **positive: bool) -> None:
    """Check the named fields of a frozen posterior (``name=True``: must be positive) and store them as 1-D float
    arrays of one length."""
    columns = {name: _column(getattr(posterior, name), name, positive=flag) for name, flag in positive.items()}
    if len({c.shape for c in columns.values()}) > 1:
        names = list(columns)
        raise StatsInputError(f"{', '.join(names[:-1])} and {names[-1]} must have the same length")
    for name, column in columns.items():
        object.__setattr__(posterior, name, column)


_P = TypeVar("_P", bound="DataclassInstance")


def _take(posterior: _P, index: Any) -> _P:
    """The arms at ``index``, every field (cached ones too) sliced alike: nothing is recomputed or re-checked."""
    out = object.__new__(type(posterior))
    for f in fields(posterior):
        object.__setattr__(out, f.name, np.atleast_1d(getattr(posterior, f.name)[index]))
    return out


class Posterior(Protocol):
    """A family of independent posteriors, one per arm, evaluated with broadcasting.

    Methods take ``x`` of shape ``(k, m)`` (or broadcastable to it) and return ``(k, m)``.
    """

    def __len__(self) -> int: ...
    @property
    def mean(self) -> FloatArray: ...
    @property
    def sd(self) -> FloatArray: ...
    def cdf(self, x: FloatArray) -> FloatArray: ...
    def sf(self, x: FloatArray) -> FloatArray: ...
    def pdf(self, x: FloatArray) -> FloatArray: ...
    def ppf(self, q: FloatArray) -> FloatArray: ...
    def isf(self, q: FloatArray) -> FloatArray: ...
    def upper_partial(self, x: FloatArray) -> FloatArray: ...
    def take(self, index: Any) -> Posterior: ...


def _col(a: FloatArray) -> FloatArray:
    return a[:, None]


def _f(values: Any) -> FloatArray:
    """scipy.special is untyped; give its results their array type."""
    return np.asarray(values, dtype=np.float64)


@dataclass(frozen=True, eq=False)
class BetaPosterior:
    """Beta(α, β) posteriors of conversion rates, e.g. α = 1 + successes, β = 1 + failures.

    Examples
    --------
    >>> post = BetaPosterior([61, 86], [441, 416])
    >>> post.mean.round(4)
    array([0.1215, 0.1713])
    """

    alpha: FloatArray
    beta: FloatArray
    _log_pdf_at_mean: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _set_columns(self, alpha=True, beta=True)
        a, b = self.alpha, self.beta
        # log B(α, β) from lgamma differences loses ~1e-8 at α ~ 1e6 by cancellation; scipy's
        # (Boost) density at one point is accurate, and the density elsewhere is taken relative
        # to it (see ``pdf``).
        object.__setattr__(self, "_log_pdf_at_mean", _f(np.log(stats.beta.pdf(self.mean, a, b))))

    @classmethod
    def from_counts(
        cls, successes: Any, failures: Any, prior: tuple[float, float] = (1.0, 1.0)
    ) -> BetaPosterior:
        """Posterior under a Beta(prior) prior: Beta(prior₀ + successes, prior₁ + failures)."""
        s = np.asarray(successes, dtype=float)
        f = np.asarray(failures, dtype=float)
        return cls(prior[0] + s, prior[1] + f)

    def __len__(self) -> int:
        return int(self.alpha.size)

    def take(self, index: Any) -> BetaPosterior:
        return _take(self, index)

    @property
    def mean(self) -> FloatArray:
        return self.alpha / (self.alpha + self.beta)

    @property
    def sd(self) -> FloatArray:
        a, b = self.alpha, self.beta
        total = a + b
        return np.sqrt(a * b / (total * total * (total + 1.0)))

    def cdf(self, x: FloatArray) -> FloatArray:
        return _f(special.betainc(_col(self.alpha), _col(self.beta), np.clip(x, 0.0, 1.0)))

    def sf(self, x: FloatArray) -> FloatArray:
        # S(x) = I_{1−x}(β, α). scipy's betaincc is 5-10x slower than betainc, and 1 − x is
        # exact for x ≥ 1/2 while for small x it perturbs S by at most hazard·1e-16, so the
        # symmetric form is both fast and accurate to ~1e-9 even for n = 1e7.
        return _f(special.betainc(_col(self.beta), _col(self.alpha), 1.0 - np.clip(x, 0.0, 1.0)))

    def pdf(self, x: FloatArray) -> FloatArray:
        """f(x) = f(m)·(x/m)^(α−1)·((1−x)/(1−m))^(β−1) with m the mean: every term is O(1) near
        the bulk, so there is no cancellation between numbers of size α·log x."""
        a, b, m = _col(self.alpha), _col(self.beta), _col(self.mean)
        inside = (x > 0.0) & (x < 1.0)
        xc = np.where(inside, x, m)
        log_pdf = (
            _col(self._log_pdf_at_mean)
            + special.xlogy(a - 1.0, xc / m)
            + special.xlog1py(b - 1.0, (m - xc) / (1.0 - m))
        )
        return _f(np.where(inside, np.exp(log_pdf), 0.0))

    def ppf(self, q: FloatArray) -> FloatArray:
        return _f(special.betaincinv(_col(self.alpha), _col(self.beta), q))

    def isf(self, q: FloatArray) -> FloatArray:
        return _f(special.betainccinv(_col(self.alpha), _col(self.beta), q))

    def upper_partial(self, x: FloatArray) -> FloatArray:
        """E[(X − x)⁺] = μ·S_{α+1,β}(x) − x·S_{α,β}(x), because x·Beta(x; α, β) = μ·Beta(x; α+1, β)."""
        a, b = _col(self.alpha), _col(self.beta)
        xc = np.clip(x, 0.0, 1.0)
        y = 1.0 - xc
        return _f(_col(self.mean) * special.betainc(b, a + 1.0, y) - x * special.betainc(b, a, y))


@dataclass(frozen=True, eq=False)
class GammaPosterior:
    """Gamma(shape, rate) posteriors of Poisson rates, e.g. shape = 1 + count, rate = exposure.

    Examples
    --------
    >>> GammaPosterior([121, 151], [1000, 1020]).mean.round(4)
    array([0.121, 0.148])
    """

    shape: FloatArray
    rate: FloatArray
    _log_pdf_at_mean: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _set_columns(self, shape=True, rate=True)
        object.__setattr__(self, "_log_pdf_at_mean", _gamma_log_pdf_at_mean(self.shape, self.rate))

    def __len__(self) -> int:
        return int(self.shape.size)

    def take(self, index: Any) -> GammaPosterior:
        return _take(self, index)

    @property
    def mean(self) -> FloatArray:
        return self.shape / self.rate

    @property
    def sd(self) -> FloatArray:
        return np.sqrt(self.shape) / self.rate

    def cdf(self, x: FloatArray) -> FloatArray:
        return _f(special.gammainc(_col(self.shape), _col(self.rate) * np.maximum(x, 0.0)))

    def sf(self, x: FloatArray) -> FloatArray:
        return _f(special.gammaincc(_col(self.shape), _col(self.rate) * np.maximum(x, 0.0)))

    def pdf(self, x: FloatArray) -> FloatArray:
        """f(x) = f(m)·(x/m)^(k−1)·exp(−r(x − m)), m the mean (no large cancelling terms)."""
        k, r, m = _col(self.shape), _col(self.rate), _col(self.mean)
        inside = x > 0.0
        xc = np.where(inside, x, m)
        log_pdf = _col(self._log_pdf_at_mean) + special.xlogy(k - 1.0, xc / m) - r * (xc - m)
        return _f(np.where(inside, np.exp(log_pdf), 0.0))

    def ppf(self, q: FloatArray) -> FloatArray:
        return _f(special.gammaincinv(_col(self.shape), q) / _col(self.rate))

    def isf(self, q: FloatArray) -> FloatArray:
        return _f(special.gammainccinv(_col(self.shape), q) / _col(self.rate))

    def upper_partial(self, x: FloatArray) -> FloatArray:
        """E[(X − x)⁺] = μ·S_{k+1}(x) − x·S_k(x), because x·Gamma(x; k, r) = μ·Gamma(x; k+1, r)."""
        k, r = _col(self.shape), _col(self.rate)
        rx = r * np.maximum(x, 0.0)
        return _f(_col(self.mean) * special.gammaincc(k + 1.0, rx) - x * special.gammaincc(k, rx))


@dataclass(frozen=True, eq=False)
class NormalPosterior:
    """Normal(mean, sd) posteriors, the large-sample (flat-prior) posterior of a mean.

    A zero ``sd`` is floored at a tiny positive value so the quadrature still sees a
    (very narrow) density; callers flag zero variance separately.
    """

    loc: FloatArray
    scale: FloatArray
    _floored: FloatArray = field(init=False, repr=False)

    def __post_init__(self) -> None:
        _set_columns(self, loc=False, scale=False)
        m, s = self.loc, self.scale
        if np.any(s < 0.0):
            raise StatsInputError("scale must be non-negative")
        floor = 1e-12 * np.maximum(np.abs(m), 1e-300)
        object.__setattr__(self, "_floored", np.maximum(s, floor))

    def __len__(self) -> int:
        return int(self.loc.size)

    def take(self, index: Any) -> NormalPosterior:
        return _take(self, index)

    @property
    def mean(self) -> FloatArray:
        return self.loc

    @property
    def sd(self) -> FloatArray:
        return self._floored

    def _z(self, x: FloatArray) -> FloatArray:
        return (x - _col(self.loc)) / _col(self._floored)

    def cdf(self, x: FloatArray) -> FloatArray:
        return _f(special.ndtr(self._z(x)))

    def sf(self, x: FloatArray) -> FloatArray:
        return _f(special.ndtr(-self._z(x)))

    def pdf(self, x: FloatArray) -> FloatArray:
        z = self._z(x)
        return _f(np.exp(-0.5 * z * z) / (math.sqrt(2.0 * math.pi) * _col(self._floored)))

    def ppf(self, q: FloatArray) -> FloatArray:
        return _f(_col(self.loc) + _col(self._floored) * special.ndtri(q))

    def isf(self, q: FloatArray) -> FloatArray:
        return _f(_col(self.loc) - _col(self._floored) * special.ndtri(q))

    def upper_partial(self, x: FloatArray) -> FloatArray:
        """E[(X − x)⁺] = (μ − x)·Φ(−z) + σ·φ(z), z = (x − μ)/σ."""
        z = self._z(x)
        s = _col(self._floored)
        density = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        return _f((_col(self.loc) - x) * special.ndtr(-z) + s * density)


@dataclass(frozen=True, eq=False)
class StudentTPosterior:
    """Location-scale Student-t posteriors, X = loc + scale·T(df): the marginal posterior of a mean under a
    Normal-Inverse-Gamma prior (PostHog's v2 continuous metrics use it on log values). ``df`` > 2.

    Examples
    --------
    >>> StudentTPosterior([0.0], [1.0], [30.0]).sd.round(4)
    array([1.0351])
    """

    loc: FloatArray
    scale: FloatArray
    df: FloatArray

    def __post_init__(self) -> None:
        _set_columns(self, loc=False, scale=True, df=True)
        if np.any(self.df <= 2.0):
            raise StatsInputError("df must be above 2 (the variance must exist)")

    def __len__(self) -> int:
        return int(self.loc.size)

    def take(self, index: Any) -> StudentTPosterior:
        return _take(self, index)

    @property
    def mean(self) -> FloatArray:
        return self.loc

    @property
    def sd(self) -> FloatArray:
        return _f(self.scale * np.sqrt(self.df / (self.df - 2.0)))

    def _z(self, x: FloatArray) -> FloatArray:
        return (x - _col(self.loc)) / _col(self.scale)

    def cdf(self, x: FloatArray) -> FloatArray:
        return _f(special.stdtr(_col(self.df), self._z(x)))

    def sf(self, x: FloatArray) -> FloatArray:
        return _f(special.stdtr(_col(self.df), -self._z(x)))

    def _standard_pdf(self, z: FloatArray) -> FloatArray:
        d = _col(self.df)
        log_c = special.gammaln((d + 1.0) / 2.0) - special.gammaln(d / 2.0) - 0.5 * np.log(d * math.pi)
        return _f(np.exp(log_c - (d + 1.0) / 2.0 * np.log1p(z * z / d)))

    def pdf(self, x: FloatArray) -> FloatArray:
        return _f(self._standard_pdf(self._z(x)) / _col(self.scale))

    def ppf(self, q: FloatArray) -> FloatArray:
        return _f(_col(self.loc) + _col(self.scale) * special.stdtrit(_col(self.df), q))

    def isf(self, q: FloatArray) -> FloatArray:
        return _f(_col(self.loc) - _col(self.scale) * special.stdtrit(_col(self.df), q))

    def upper_partial(self, x: FloatArray) -> FloatArray:
        """E[(X − x)⁺] = s·[(ν + z²)/(ν − 1)·f_ν(z) − z·S_ν(z)], z = (x − loc)/s."""
        z, d = self._z(x), _col(self.df)
        tail = special.stdtr(d, -z)
        return _f(_col(self.scale) * ((d + z * z) / (d - 1.0) * self._standard_pdf(z) - z * tail))


def _gamma_log_pdf_at_mean(k: FloatArray, r: FloatArray) -> FloatArray:
    """log f(k/r) = log r − ½·log(2πk) − δ(k), δ the Stirling remainder of log Γ(k).

    Substituting Stirling's formula cancels the k·log k terms exactly; what remains is
    small, so the density of Gamma(5e7, ·) keeps full precision (scipy's loses ~1e-8).
    """
    # δ(k) = log Γ(k) − (k − ½)·log k + k − ½·log 2π; series for large k (Abramowitz & Stegun 6.1.41).
    inv = 1.0 / k
    series = inv * (1.0 / 12.0 - inv**2 * (1.0 / 360.0 - inv**2 * (1.0 / 1260.0 - inv**2 / 1680.0)))
    direct = special.gammaln(k) - (k - 0.5) * np.log(k) + k - 0.5 * math.log(2.0 * math.pi)
    delta = np.where(k >= 30.0, series, direct)
    return _f(np.log(r) - 0.5 * np.log(2.0 * math.pi * k) - delta)


def bounds(posterior: Posterior) -> tuple[FloatArray, FloatArray]:
    """Quantiles TAIL and 1 − TAIL of each arm: outside them the mass is negligible."""
    q = np.array([[TAIL]])
    return posterior.ppf(q)[:, 0], posterior.isf(q)[:, 0]
