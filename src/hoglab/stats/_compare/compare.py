"""``compare`` and ``compare_many``: every variant against the control, tidy and typed."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._errors import StatsInputError
from .._frequentist.corrections import adjust_pvalues
from .._frequentist.sequential import DEFAULT_TUNING
from .._options import METHODS, Correction, Method, MetricKind, check_alpha
from .._srm import SRM_THRESHOLD, SRMResult, srm
from .._statistics import Count
from .._warnings import StatsWarning, WarningKind
from .analysis import analyse_metric
from .inputs import Statistic, metric_groups
from .results import ArmSummary, Comparison, VariantComparison, Verdict

__all__ = ["compare", "compare_many"]

MIN_UNITS = 100  # PostHog's FF_DISTRIBUTION_THRESHOLD: fewer units per arm get a warning


def compare(
    data: Any,
    *,
    control: str = "control",
    metric: MetricKind | None = None,
    method: Method = "frequentist",
    alpha: float = 0.05,
    correction: Correction | None = None,
    expected_split: Mapping[str, float] | Sequence[float] | None = None,
    relative: bool = True,
    name: str | None = None,
    cuped: bool | None = None,
    tuning: float = DEFAULT_TUNING,
    chance_threshold: float = 0.95,
    check_srm: bool = True,
    srm_threshold: float = SRM_THRESHOLD,
    min_units: float = MIN_UNITS,
) -> Comparison:
    """Compare every variant with ``control``.

    Parameters
    ----------
    data
        ``{variant: statistic}`` with :class:`Proportion`, :class:`Count`,
        :class:`SampleMean` or :class:`Ratio` values; or plain tuples ((n, successes) for a
        conversion, (count, exposure) with ``metric="count"``, (n, sum, sum_squares) for a
        mean); or dicts of columns; or a DataFrame with one row per variant (a ``variant``
        column or the index) and columns such as ``n, successes`` / ``count, exposure`` /
        ``n, sum, sum_squares`` (plus ``pre_sum, pre_sum_squares, sum_of_products`` for
        CUPED) / ``n, sum, sum_squares, denominator_sum, denominator_sum_squares,
        sum_of_products`` for a ratio. A long DataFrame with a ``metric`` column compares
        every metric at once (see :func:`compare_many`).
    metric
        ``"conversion"``, ``"count"``, ``"mean"`` or ``"ratio"``; inferred when None.
    method
        ``"frequentist"`` (z-test / exact Poisson / Welch), ``"bayesian"`` (Beta, Gamma or
        Normal posteriors, computed by quadrature) or ``"sequential"`` (always-valid).
    correction
        ``"holm"``, ``"bh"`` or ``"bonferroni"`` across all variants × metrics.
    expected_split
        Planned traffic shares for the sample-ratio-mismatch check (equal if None).
    relative
        Report the lift (True) or the difference (False) as the headline; sequential
        p-values are computed on this scale.
    cuped
        Use the pre-period covariate of mean metrics; None uses it when every arm has one.
    tuning
        N* of the sequential method: the total units at which the sequence is tightest.
    chance_threshold
        Bayesian verdict: higher when P(win) ≥ threshold, lower when ≤ 1 − threshold.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"variant": ["control", "test"], "n": [1000, 1000], "successes": [100, 130]})
    >>> result = df.pipe(compare, method="bayesian")
    >>> round(result.row("test").chance_to_win, 4)
    0.9822
    """
    groups = metric_groups(data, kind=metric, name=name)
    return _run(
        groups,
        control=control,
        method=method,
        alpha=alpha,
        correction=correction,
        expected_split=expected_split,
        relative=relative,
        cuped=cuped,
        tuning=tuning,
        chance_threshold=chance_threshold,
        check_srm=check_srm,
        srm_threshold=srm_threshold,
        min_units=min_units,
    )


def compare_many(
    metrics: Mapping[str, Any],
    *,
    kinds: Mapping[str, MetricKind] | None = None,
    control: str = "control",
    method: Method = "frequentist",
    alpha: float = 0.05,
    correction: Correction | None = None,
    expected_split: Mapping[str, float] | Sequence[float] | None = None,
    relative: bool = True,
    cuped: bool | None = None,
    tuning: float = DEFAULT_TUNING,
    chance_threshold: float = 0.95,
    check_srm: bool = True,
    srm_threshold: float = SRM_THRESHOLD,
    min_units: float = MIN_UNITS,
) -> Comparison:
    """Compare several metrics at once; ``correction`` then spans variants × metrics.

    ``metrics`` maps a metric name to anything :func:`compare` accepts for one metric;
    ``kinds`` gives the kind where it cannot be inferred (e.g. count tuples).

    Examples
    --------
    >>> from hoglab.stats import Count, Proportion
    >>> c = compare_many(
    ...     {"signup": {"control": Proportion(5000, 500), "test": Proportion(5000, 560)},
    ...      "pageviews": {"control": Count(21000, 5000), "test": Count(21500, 5000)}},
    ...     correction="holm")
    >>> c.to_frame()[["metric", "p_value", "adjusted_p_value"]].round(4)
          metric  p_value  adjusted_p_value
    0     signup   0.0513            0.0513
    1  pageviews   0.0155            0.0310
    """
    groups = []
    for metric_name, data in metrics.items():
        kind = (kinds or {}).get(metric_name)
        for _, found_kind, arms in metric_groups(data, kind=kind, name=str(metric_name)):
            groups.append((str(metric_name), found_kind, arms))
    return _run(
        groups,
        control=control,
        method=method,
        alpha=alpha,
        correction=correction,
        expected_split=expected_split,
        relative=relative,
        cuped=cuped,
        tuning=tuning,
        chance_threshold=chance_threshold,
        check_srm=check_srm,
        srm_threshold=srm_threshold,
        min_units=min_units,
    )


def _run(
    groups: list[tuple[str, MetricKind, dict[str, Statistic]]],
    *,
    control: str,
    method: Method,
    alpha: float,
    correction: Correction | None,
    expected_split: Mapping[str, float] | Sequence[float] | None,
    relative: bool,
    cuped: bool | None,
    tuning: float,
    chance_threshold: float,
    check_srm: bool,
    srm_threshold: float,
    min_units: float,
) -> Comparison:
    check_alpha(alpha)
    if method not in METHODS:
        raise StatsInputError(f"method must be one of {METHODS}, got {method!r}")
    if correction not in (None, "holm", "bh", "bonferroni"):
        raise StatsInputError(f"correction must be None, 'holm', 'bh' or 'bonferroni', got {correction!r}")
    if correction is not None and method == "bayesian":
        raise StatsInputError("corrections adjust p-values; the Bayesian method has none")
    if not 0.5 < chance_threshold < 1.0:
        raise StatsInputError("chance_threshold must lie between 0.5 and 1")
    names = [g[0] for g in groups]
    if len(set(names)) != len(names):
        raise StatsInputError(f"metric names must be unique, got {names}")

    rows: list[VariantComparison] = []
    arms_out: list[ArmSummary] = []
    srm_results: dict[str, SRMResult] = {}
    for metric_name, kind, arms in groups:
        arm_results, pairs = analyse_metric(
            metric_name,
            kind,
            arms,
            control=control,
            method=method,
            alpha=alpha,
            relative=relative,
            cuped=cuped,
            tuning=tuning,
            min_units=min_units,
        )
        srm_warning: list[StatsWarning] = []
        split = _srm(arms, expected_split, srm_threshold) if check_srm else None
        if split is not None:
            srm_results[metric_name] = split
        control_arm = arm_results[0]
        arms_out.extend(arm_results)
        by_key = {a.variant: a for a in arm_results}
        for pair in pairs:
            if split is not None and split.mismatch:
                srm_warning = [
                    StatsWarning(
                        WarningKind.SRM,
                        split.summary("title"),
                        variant=pair.variant,
                        metric=metric_name,
                    )
                ]
            arm = by_key[pair.variant]
            rows.append(
                VariantComparison(
                    metric=metric_name,
                    kind=kind,
                    method=method,
                    variant=pair.variant,
                    control=control,
                    units=arm.units,
                    control_units=control_arm.units,
                    estimate=arm.estimate,
                    control_estimate=control_arm.estimate,
                    difference=pair.effect.difference,
                    difference_ci=pair.difference_ci,
                    lift=pair.effect.lift,
                    lift_ci=pair.lift_ci if not math.isnan(pair.effect.lift) else (math.nan, math.nan),
                    p_value=pair.p_value,
                    chance_to_win=pair.chance_to_win,
                    chance_to_be_best=pair.chance_to_be_best,
                    expected_loss=pair.expected_loss,
                    warnings=(*srm_warning, *pair.warnings),
                )
            )

    adjusted = adjust_pvalues([r.p_value for r in rows], correction) if correction else None
    final = []
    for i, r in enumerate(rows):
        p_adj = float(adjusted[i]) if adjusted is not None else r.p_value
        final.append(_with_verdict(r, p_adj, alpha, chance_threshold))
    return Comparison(
        rows=tuple(final),
        arms=tuple(arms_out),
        method=method,
        alpha=alpha,
        control=control,
        correction=correction,
        relative=relative,
        srm=srm_results,
    )


def _with_verdict(row: VariantComparison, p_adj: float, alpha: float, threshold: float) -> VariantComparison:
    from dataclasses import replace

    verdict = Verdict.INCONCLUSIVE
    if row.method == "bayesian":
        if row.chance_to_win >= threshold:
            verdict = Verdict.HIGHER
        elif row.chance_to_win <= 1.0 - threshold:
            verdict = Verdict.LOWER
    elif p_adj < alpha:
        verdict = Verdict.HIGHER if row.difference > 0 else Verdict.LOWER if row.difference < 0 else verdict
    return replace(row, adjusted_p_value=p_adj, verdict=verdict)


def _srm(
    arms: Mapping[str, Statistic], expected: Mapping[str, float] | Sequence[float] | None, threshold: float
) -> SRMResult | None:
    units = {}
    for key, s in arms.items():
        if isinstance(s, Count):
            # Exposure may be a duration or a sum rather than a head count; only test head counts.
            if not float(s.exposure).is_integer():
                return None
            units[key] = float(s.exposure)
        else:
            units[key] = float(s.n)
    if isinstance(expected, Mapping):
        missing = set(units) - {str(k) for k in expected}
        if missing:
            raise StatsInputError(f"expected_split has no share for {sorted(missing)}")
        expected = {k: float(expected[k]) for k in units}
    elif expected is not None and len(list(expected)) != len(units):
        raise StatsInputError("expected_split must give one share per variant")
    if np.sum(list(units.values())) == 0:
        return None
    return srm(units, expected, threshold=threshold)
