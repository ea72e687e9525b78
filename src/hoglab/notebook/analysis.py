"""An experiment result recomputed from its variant counts with :mod:`hoglab.stats`.

:func:`analyse` gives the frequentist and Bayesian numbers and PostHog's verdict side by side, agreeing with
``hoglab.stats`` to the last digit; the experiment picker and the experiment report both show it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import pandas as pd

from ..client._legacy_results import SIGNIFICANCE_EXPLAINED, ExperimentResult
from ..client._verdict import planned_split, variant_statistics as client_variant_statistics
from ..schema import Experiment
from ..stats import (
    Comparison,
    Count,
    PostHogFunnelVerdict,
    PostHogTrendVerdict,
    Proportion,
    SRMResult,
    compare,
    funnel_verdict,
    trend_verdict,
)

__all__ = ["Analysis", "analyse", "variant_rollout", "variant_statistics", "verdict_words"]

MetricKind = Literal["conversion", "count"]


@dataclass(frozen=True)
class Analysis:
    """An experiment result recomputed from its counts.

    ``comparison`` is Bayesian (PostHog's framing, what :func:`~hoglab.plot_experiment` draws), ``frequentist``
    the same data through the z-test / exact Poisson test, ``verdict`` PostHog's rules evaluated by
    :mod:`hoglab.stats`, ``srm`` the split against the flag's rollout, and ``table`` one row per variant.
    """

    comparison: Comparison
    frequentist: Comparison
    verdict: PostHogFunnelVerdict | PostHogTrendVerdict
    srm: SRMResult | None
    table: pd.DataFrame


def verdict_words(code: str) -> tuple[str, str]:
    """PostHog's significance ``code`` in words: (the headline, the reason).

    The headline names the code when it says something else. The one wording the picker and the report share: the
    code is never said twice.

    >>> verdict_words("significant")
    ('Significant', 'a variant is very likely better than the others, and choosing it risks little')
    >>> verdict_words("high_p_value")[0]
    'Could be chance (high_p_value)'
    """
    headline, _, reason = SIGNIFICANCE_EXPLAINED.get(code, "").partition(": ")
    if not reason:
        return f"significance code {code!r}", ""
    named = headline if headline.lower() == code.replace("_", " ") else f"{headline} ({code})"
    return named, reason.rstrip(".")


def variant_rollout(experiment: Experiment) -> dict[str, float]:
    """Planned share of each variant (0–1), from the flag's variants, else the experiment's parameters."""
    return planned_split(experiment.model_dump(mode="json", by_alias=True))


def analyse(result: ExperimentResult, rollout: Mapping[str, float] | None = None) -> Analysis:
    """Recompute ``result`` from its variant counts (``ValueError``/``StatsError`` when it has none to use).

    ``rollout`` gives the planned shares for the SRM check; equal shares when it does not name exactly the
    variants of the result.

    >>> r = ExperimentResult(1, {"result": {"variants": [
    ...     {"key": "control", "success_count": 60, "failure_count": 440},
    ...     {"key": "test", "success_count": 85, "failure_count": 415}]}})
    >>> a = analyse(r)
    >>> a.table.set_index("variant").loc["test", ["units", "conversions", "rate"]].tolist()
    [500.0, 85.0, 0.17]
    >>> a.table[["units", "conversions"]].dtypes.astype(str).tolist()  # counts are integers
    ['Int64', 'Int64']
    >>> a.verdict.significance_code.value, round(float(a.table["p_value"].iloc[1]), 4)
    ('significant', 0.0247)
    """
    statistics, kind = variant_statistics(result)
    planned = dict(rollout) if rollout and set(rollout) == set(statistics) and sum(rollout.values()) > 0 else None
    options: dict[str, Any] = {"metric": kind, "name": result.metric, "expected_split": planned}
    bayesian = compare(statistics, method="bayesian", **options)
    frequentist = compare(statistics, method="frequentist", **options)
    verdict: PostHogFunnelVerdict | PostHogTrendVerdict
    if kind == "conversion":
        verdict = funnel_verdict({k: (s.successes, s.n - s.successes) for k, s in statistics.items()})  # type: ignore[union-attr]
    else:
        verdict = trend_verdict({k: (s.count, s.exposure) for k, s in statistics.items()})  # type: ignore[union-attr]
    srm = next(iter(bayesian.srm.values()), None)
    return Analysis(bayesian, frequentist, verdict, srm, _table(statistics, bayesian, frequentist, verdict))


def _table(
    statistics: Mapping[str, Any],
    bayesian: Comparison,
    frequentist: Comparison,
    verdict: PostHogFunnelVerdict | PostHogTrendVerdict,
) -> pd.DataFrame:
    rows = []
    for key, stat in statistics.items():
        is_funnel = isinstance(stat, Proportion)
        units = float(stat.n if is_funnel else stat.exposure)
        events = float(stat.successes if is_funnel else stat.count)
        row: dict[str, Any] = {"variant": key, "units": units, "conversions" if is_funnel else "count": events}
        row["rate"] = events / units if units else math.nan
        if key != bayesian.control:
            f, b = frequentist.row(key), bayesian.row(key)
            row |= {
                "lift": f.lift,
                "confidence_low": f.lift_ci[0],
                "confidence_high": f.lift_ci[1],
                "p_value": f.p_value,
                "credible_low": b.lift_ci[0],
                "credible_high": b.lift_ci[1],
                "chance_to_win": b.chance_to_win,
            }
        row["chance_to_be_best"] = verdict.probability.get(key, math.nan)
        rows.append(row)
    columns = ["variant", "units", "conversions" if "conversions" in rows[0] else "count", "rate", "lift"]
    columns += ["confidence_low", "confidence_high", "p_value", "credible_low", "credible_high"]
    columns += ["chance_to_win", "chance_to_be_best"]
    table = pd.DataFrame(rows, columns=columns)
    table[columns[1:]] = table[columns[1:]].astype("float64")
    for name in columns[1:3]:  # units and conversions (or a count): integers when they are whole numbers
        if bool((table[name] == table[name].round()).all()):
            table[name] = table[name].astype("Int64")
    return table


def variant_statistics(result: ExperimentResult) -> tuple[dict[str, Proportion | Count], MetricKind]:
    """Per-variant sufficient statistics of a client result, and the metric kind for ``compare``.

    Funnels: ``Proportion(success + failure, success)`` (PostHog's Beta(1 + s, 1 + f) posterior is what
    ``compare(method="bayesian")`` uses); trends: ``Count(count, absolute_exposure)`` (PostHog's per-unit
    credible intervals come from the same Gamma(count + 1, absolute_exposure)).
    """
    statistics, kind = client_variant_statistics(result)
    return statistics, "conversion" if kind == "conversion" else "count"
