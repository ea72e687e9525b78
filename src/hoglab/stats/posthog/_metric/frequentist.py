"""PostHog's frequentist tests of an effect (``products/experiments/stats/frequentist/``), fixed-horizon or sequential.

* **Two-sided Welch t-test** (``TwoSidedTTest``): t = Δ/√V on the Welch–Satterthwaite ν of the raw variances;
  p = 2·T̄_ν(|t|); interval Δ ± t_{ν, 1−α/2}·√V; significant when p < α. p comes from the t survival function,
  where PostHog's ``2·(1 − cdf)`` rounds p below ~1e-16 to 0 (a deliberate, invisible-at-4-decimals difference).
* **Sequential** (``SequentialTwoSidedTTest``, PostHog PR #60879, opt in with
  ``stats_config.frequentist.sequential_testing_enabled``): the always-valid p-value and confidence sequence of
  Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas, "Time-uniform central limit theory and asymptotic confidence
  sequences" (Annals of Statistics 2024, arXiv:2103.06476), eq. 9 (half-width) and eq. 155 (e-value), with
  n = n_T + n_C and per-unit variance V·n, mixing ρ² = (−2 ln α + ln(−2 ln α + 1))/N* (eq. 161; N* the tuning
  parameter, default 5000). hoglab's :mod:`hoglab.stats._frequentist.sequential` has had exactly these formulas;
  they are reused.
  No t distribution is involved: the answer's degrees of freedom and t statistic are NaN.

Both refuse arms with fewer than 5 units, a non-positive variance, and (fixed horizon) fewer than 2 units for ν.

>>> from .statistics import SampleMeanStatistic, effect_between
>>> e = effect_between(SampleMeanStatistic(2461, 1922.7, 94698.29), SampleMeanStatistic(2507, 1196.87, 37377.9767))
>>> r = frequentist_test(e, n_treatment=2461, n_control=2507)
>>> round(r.p_value, 4), [round(x, 4) for x in r.confidence_interval]
(0.0849, [-0.0875, 1.3605])
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import special

from ..._errors import StatsInputError
from ..._frequentist.sequential import confidence_sequence, sequential_p_value, sequential_rho_squared as _rho_squared
from .statistics import EffectEstimate

__all__ = ["FrequentistResult", "frequentist_test"]

MIN_SAMPLE_SIZE = 5


@dataclass(frozen=True)
class FrequentistResult:
    """PostHog's ``TestResult``: the effect, its interval, p-value, statistic, ν, decision and test type."""

    point_estimate: float
    confidence_interval: tuple[float, float]
    p_value: float
    test_statistic: float
    degrees_of_freedom: float
    is_significant: bool
    test_type: str
    alpha: float


def frequentist_test(effect: EffectEstimate, *, n_treatment: int, n_control: int, alpha: float = 0.05,
                     sequential: bool = False, tuning: float = 5000.0) -> FrequentistResult:  # fmt: skip
    """The two-sided test of ``effect`` (sequential when asked), as PostHog's ``FrequentistMethod.run_test``."""
    if not 0.0 < alpha < 1.0:
        raise StatsInputError("Alpha must be between 0 and 1")
    for name, n in (("Treatment", n_treatment), ("Control", n_control)):
        if n < MIN_SAMPLE_SIZE:
            raise StatsInputError(f"{name} sample size ({n}) below minimum ({MIN_SAMPLE_SIZE})")
    if not effect.variance > 0:
        raise StatsInputError("Pooled variance must be positive")
    estimate, se = effect.estimate, effect.standard_error
    if sequential:
        if not tuning > 0:
            raise StatsInputError("Sequential tuning parameter must be positive")
        _rho_squared(alpha, tuning)  # refuses what PostHog's sequential_rho refuses
        p_value = sequential_p_value(estimate, se, effect.n, alpha=alpha, tuning=tuning)
        interval = confidence_sequence(estimate, se, effect.n, alpha=alpha, tuning=tuning)
        return FrequentistResult(estimate, interval, p_value, math.nan, math.nan, p_value < alpha,
                                 "sequential_two_sided", alpha)  # fmt: skip
    df = effect.degrees_of_freedom
    if not df > 0:
        raise StatsInputError("Welch-Satterthwaite requires n ≥ 2 per group.")
    t = estimate / se
    p_value = float(2.0 * special.stdtr(df, -abs(t)))
    margin = float(special.stdtrit(df, 1.0 - alpha / 2.0)) * se
    return FrequentistResult(estimate, (estimate - margin, estimate + margin), p_value, t, df, p_value < alpha,
                             "two_sided", alpha)  # fmt: skip
