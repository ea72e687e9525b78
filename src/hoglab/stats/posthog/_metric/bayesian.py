"""PostHog's Bayesian test of an effect (``products/experiments/stats/bayesian/``): a Gaussian posterior.

The effect Δ (absolute or relative, :func:`~.statistics.effect_between`) is taken as N(Δ, V). With
PostHog's default, improper flat prior the posterior is that likelihood; a proper Gaussian prior N(μ₀, σ₀²)
updates by precisions: τ = 1/σ₀² + 1/V, posterior mean (μ₀/σ₀² + Δ/V)/τ, variance 1/τ. Then

* ``chance_to_win`` = P(effect > 0) (P(effect < 0) for a metric whose goal is to decrease);
* ``credible_interval``: the central ``ci_level`` normal interval;
* risks (GrowthBook's and PostHog's ``calculate_risk``): choosing the control loses E[max(0, effect)] =
  μΦ(μ/σ) + σφ(μ/σ); choosing the treatment loses E[max(0, −effect)] = −μΦ(−μ/σ) + σφ(μ/σ) (the closed form of
  PostHog's truncated-normal mean times its probability);
* ``is_decisive`` (what PostHog reports as ``significant``): chance to win > ``ci_level`` or < 1 − ``ci_level``.

A proportion (a funnel metric without CUPED) also needs ≥ 5 successes and ≥ 5 failures in both arms (PostHog's
normal-approximation check); a relative effect needs a positive baseline mean.

>>> from .statistics import SampleMeanStatistic, effect_between
>>> e = effect_between(SampleMeanStatistic(2461, 1922.7, 94698.29), SampleMeanStatistic(2507, 1196.87, 37377.9767))
>>> r = bayesian_test(e)
>>> round(r.chance_to_win, 4), [round(x, 4) for x in r.credible_interval]
(0.9576, [-0.0873, 1.3603])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special

from ..._errors import StatsInputError
from .statistics import EffectEstimate

__all__ = ["BayesianResult", "GaussianPrior", "bayesian_test", "gaussian_risk"]


@dataclass(frozen=True)
class GaussianPrior:
    """A Gaussian prior on the effect; ``proper=False`` (PostHog's default) is the flat prior."""

    mean: float = 0.0
    variance: float = 1.0
    proper: bool = False

    def __post_init__(self) -> None:
        if not self.variance > 0:
            raise StatsInputError("the prior's variance must be positive")

    def __str__(self) -> str:
        return f"N(μ={self.mean:.3f}, σ²={self.variance:.3f})" if self.proper else "Non-informative prior"


@dataclass(frozen=True)
class BayesianResult:
    """PostHog's ``BayesianResult`` fields: posterior effect, interval, chance to win, risks and the decision."""

    effect_size: float
    credible_interval: tuple[float, float]
    chance_to_win: float
    risk_control: float
    risk_treatment: float
    posterior_variance: float
    ci_level: float
    inverse: bool
    prior: GaussianPrior

    @property
    def is_decisive(self) -> bool:
        return self.chance_to_win > self.ci_level or self.chance_to_win < 1.0 - self.ci_level

    @property
    def preferred_variation(self) -> str:
        return "treatment" if self.chance_to_win > 0.5 else "control"

    @property
    def confidence_in_decision(self) -> float:
        return max(self.chance_to_win, 1.0 - self.chance_to_win)


def gaussian_risk(mean: float, sd: float) -> tuple[float, float]:
    """(E[max(0, X)], E[max(0, −X)]) for X ~ N(mean, sd²): the risks of choosing the control, the treatment.

    >>> [round(x, 6) for x in gaussian_risk(0.05, 0.02)]
    [0.05004, 4e-05]
    """
    if not sd > 0:
        raise StatsInputError("Posterior standard deviation must be positive")
    z = mean / sd
    density = math.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
    return mean * float(special.ndtr(z)) + sd * density, -mean * float(special.ndtr(-z)) + sd * density


def bayesian_test(effect: EffectEstimate, *, ci_level: float = 0.95, inverse: bool = False,
                  prior: GaussianPrior | None = None) -> BayesianResult:  # fmt: skip
    """The Gaussian Bayesian test of ``effect``, as PostHog's ``BayesianMethod.run_test``."""
    if not 0.0 < ci_level < 1.0:
        raise StatsInputError("ci_level must be between 0 and 1")
    prior = prior or GaussianPrior()
    if not effect.variance > 0:
        raise StatsInputError("EffectEstimate variance must be positive")
    data_precision = 1.0 / effect.variance
    if prior.proper:
        precision = 1.0 / prior.variance + data_precision
        mean = (prior.mean / prior.variance + data_precision * effect.estimate) / precision
        variance = 1.0 / precision
    else:
        mean, variance = effect.estimate, effect.variance
    sd = math.sqrt(variance)
    win = float(special.ndtr(-mean / sd) if inverse else special.ndtr(mean / sd))
    z = float(special.ndtri(1.0 - (1.0 - ci_level) / 2.0))
    risk_control, risk_treatment = gaussian_risk(mean, sd)
    return BayesianResult(mean, (mean - z * sd, mean + z * sd), win, risk_control, risk_treatment, variance,
                          ci_level, inverse, prior)  # fmt: skip
