"""The distribution of true effects as a prior: a normal distribution of the relative lift, and its update.

A history's random-effects fit says a new experiment's true lift is drawn from N(μ, τ²); with μ estimated, the
predictive distribution is N(μ̂, τ̂² + SE(μ̂)²) (Higgins, Thompson & Spiegelhalter 2009, "A re-evaluation of
random-effects meta-analysis", *JRSS-A* 172:137, §3). As a prior for an experiment whose lift reads y with
standard error s, the posterior is normal with precision 1/σ₀² + 1/s² and mean (μ₀/σ₀² + y/s²)/precision
(the conjugate update; Gelman et al., *Bayesian Data Analysis*, 3rd ed., §2.5): the lift shrunk toward the
history's mean by the share σ₀²/(σ₀² + s²) it keeps.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass

from .._distributions import norm_sf, z_quantile
from .._errors import StatsInputError
from .._options import check_alpha

__all__ = ["EffectPosterior", "EffectPrior"]


def _level(level: float) -> float:
    check_alpha(1.0 - level)
    return z_quantile(1.0 - level)


@dataclass(frozen=True)
class EffectPosterior:
    """A new experiment's lift after the history's prior: N(``mean``, ``sd``²), from its ``estimate`` and
    ``standard_error``; ``shrinkage`` is the share of the distance to the prior's mean taken away."""

    mean: float
    sd: float
    estimate: float
    standard_error: float
    shrinkage: float

    @property
    def chance_to_win(self) -> float:
        """P(true lift > 0 | data)."""
        return norm_sf(-self.mean / self.sd)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """The central credible interval at ``level``."""
        z = _level(level)
        return self.mean - z * self.sd, self.mean + z * self.sd

    def summary(self) -> str:
        low, high = self.interval()
        return (f"Lift {self.estimate:+.2%} ± {self.standard_error:.2%} read, {self.mean:+.2%} after the history's "
                f"prior (95% credible interval [{low:+.2%}, {high:+.2%}]; chance to win {self.chance_to_win:.1%}; "
                f"{self.shrinkage:.0%} of the reading shrunk away).")  # fmt: skip

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.summary())}</p>"


@dataclass(frozen=True)
class EffectPrior:
    """A normal prior N(``mean``, ``sd``²) on a new experiment's relative lift, from a history of ``experiments``.

    ``sd``² = τ̂² + SE(μ̂)²: the spread of true effects plus the uncertainty in their mean. For PostHog's
    Bayesian engine: ``hoglab.stats.posthog.GaussianPrior(mean=p.mean, variance=p.variance, proper=True)``.
    """

    mean: float
    sd: float
    experiments: int
    method: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.mean) and math.isfinite(self.sd) and self.sd > 0):
            raise StatsInputError(f"a prior needs a finite mean and a positive sd, got {self.mean!r}, {self.sd!r}")

    @property
    def variance(self) -> float:
        return self.sd * self.sd

    @property
    def chance_positive(self) -> float:
        """P(a new experiment's true lift > 0)."""
        return norm_sf(-self.mean / self.sd)

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        """Where a new experiment's true lift falls with probability ``level``."""
        z = _level(level)
        return self.mean - z * self.sd, self.mean + z * self.sd

    def update(self, estimate: float, standard_error: float) -> EffectPosterior:
        """The posterior of an experiment whose lift reads ``estimate`` ± ``standard_error``.

        >>> p = EffectPrior(0.01, 0.02, 40, "reml").update(0.05, 0.02)
        >>> round(p.mean, 4), round(p.sd, 5), p.shrinkage
        (0.03, 0.01414, 0.5)
        """
        if not (math.isfinite(estimate) and math.isfinite(standard_error) and standard_error > 0):
            raise StatsInputError("update needs a finite estimate and a positive, finite standard error")
        data_variance = standard_error * standard_error
        shrinkage = data_variance / (data_variance + self.variance)
        mean = shrinkage * self.mean + (1.0 - shrinkage) * estimate
        return EffectPosterior(mean, math.sqrt((1.0 - shrinkage) * data_variance), estimate, standard_error,
                               shrinkage)  # fmt: skip

    def summary(self) -> str:
        low, high = self.interval()
        return (f"Prior for a new experiment's lift from {self.experiments} experiments ({self.method.upper()}): "
                f"N({self.mean:+.2%}, {self.sd:.2%}²); 95% of true lifts in [{low:+.2%}, {high:+.2%}], "
                f"{self.chance_positive:.0%} of them positive.")  # fmt: skip

    def __str__(self) -> str:
        return self.summary()

    def _repr_html_(self) -> str:
        return f"<p>{html.escape(self.summary())}</p>"
