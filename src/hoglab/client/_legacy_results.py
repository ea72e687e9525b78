"""A legacy experiment's results as an object: the raw answer kept whole, a per-variant frame, a verdict.

A legacy experiment holds its metric as an insight filter (``filters``) and is analysed by the ``results`` and
``secondary_results`` endpoints; :class:`ExperimentResult` reads one such answer, and :func:`explain_no_results`
says in words why there is none. A metric experiment's results are ``_metric_results.py``.
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from ..stats import Health, Recommendation

__all__ = ["SIGNIFICANCE_EXPLAINED", "ExperimentResult", "explain_no_results"]

SIGNIFICANCE_EXPLAINED: dict[str, str] = {
    "significant": "Significant: a variant is very likely better than the others, and choosing it risks little.",
    "not_enough_exposure": "Not enough exposure yet: every variant needs at least 100 exposed people.",
    "low_win_probability": "No clear winner: no variant, nor the test variants together, has a 90% chance to be best.",
    "high_loss": "Too risky: picking the apparent winner still risks an expected loss of 1% or more.",
    "high_p_value": "Could be chance: the difference from control has a p-value of 0.05 or more.",
}

# PostHog's no-data answer puts these flags, as a JSON string, in the 400's detail.
_MISSING = {
    "no-events": "no metric events in the experiment's window",
    "no-flag-info": "no events carry the flag's variant (exposures or $feature/<flag> properties)",
    "no-control-variant": "nothing from the control variant",
    "no-test-variant": "nothing from any test variant",
}


def explain_no_results(detail: str) -> str:
    """PostHog's no-data detail (``{"no-events": true, ...}`` as text) in words; other details unchanged.

    >>> explain_no_results('{"no-events": false, "no-flag-info": false, "no-control-variant": true, '
    ...                    '"no-test-variant": false}')
    'No results yet: nothing from the control variant.'
    """
    import json

    try:
        flags = json.loads(detail)
    except (TypeError, ValueError):
        return detail
    if not isinstance(flags, Mapping) or not set(flags) & set(_MISSING):
        return detail
    missing = [words for key, words in _MISSING.items() if flags.get(key)]
    return "No results yet: " + ("; ".join(missing) or "no data") + "."


@dataclass(frozen=True)
class ExperimentResult:
    """``GET /experiments/:id/results`` (or ``secondary_results``), with ``raw`` the answer exactly as sent.

    >>> r = ExperimentResult(7, {"result": {"significance_code": "high_p_value", "significant": False,
    ...     "probability": {"control": 0.4, "test": 0.6}, "p_value": 0.3,
    ...     "variants": [{"key": "control", "count": 10, "exposure": 1, "absolute_exposure": 100},
    ...                  {"key": "test", "count": 12, "exposure": 1, "absolute_exposure": 100}],
    ...     "credible_intervals": {"control": [0.05, 0.17], "test": [0.06, 0.2]}}})
    >>> r.kind, r.to_frame()[["key", "count", "rate", "probability"]].values.tolist()
    ('trend', [['control', 10, 0.1, 0.4], ['test', 12, 0.12, 0.6]])
    >>> r.verdict
    'Not significant. Could be chance: the difference from control has a p-value of 0.05 or more.'
    """

    experiment_id: int
    raw: Mapping[str, Any] = field(repr=False)
    metric: str = "primary"
    experiment: Mapping[str, Any] | None = field(default=None, repr=False, compare=False)
    """The experiment as JSON when known (``results()`` passes it): its plan feeds :attr:`recommendation`."""

    @property
    def result(self) -> Mapping[str, Any]:
        """The ``result`` object of the answer (the answer itself when it has none)."""
        inner = self.raw.get("result", self.raw)
        return inner if isinstance(inner, Mapping) else {}

    @property
    def kind(self) -> Literal["funnel", "trend", "values"]:
        """``funnel`` (success/failure counts), ``trend`` (counts over exposure) or ``values`` (a value per variant)."""
        variants = self.result.get("variants") or []
        if variants and "success_count" in variants[0]:
            return "funnel"
        return "trend" if variants else "values"

    significant = property(lambda self: bool(self.result.get("significant")), doc="Whether the result is significant.")
    significance_code = property(lambda self: self.result.get("significance_code"), doc="PostHog's verdict code.")
    p_value = property(lambda self: self.result.get("p_value"), doc="Trends: the Poisson p-value against control.")
    expected_loss = property(lambda self: self.result.get("expected_loss"), doc="Funnels: the expected loss.")
    probability = property(lambda self: dict(self.result.get("probability") or {}), doc="P(variant is best).")
    last_refresh = property(lambda self: self.raw.get("last_refresh"), doc="When the server computed this.")
    is_cached = property(lambda self: bool(self.raw.get("is_cached")), doc="Whether the server answered from cache.")

    @property
    def verdict(self) -> str:
        """The significance code in words."""
        code = self.significance_code
        if code is None:
            return "No verdict in this answer."
        explained = SIGNIFICANCE_EXPLAINED.get(str(code), f"Significance code {code!r}.")
        if code == "significant":
            return explained
        return f"Not significant. {explained}"

    @property
    def recommendation(self) -> Recommendation | None:
        """One reconciled verdict (:func:`hoglab.stats.recommend`): ship, keep running, stop or investigate.

        It comes with its reason, from these counts and the experiment's planned MDE and days running; None
        without counts.
        """
        from ._verdict import legacy_recommendation

        return legacy_recommendation(self)

    @property
    def health(self) -> Health:
        """The experiment's health checks: the flag's state, forced variants, exposures and (funnels) the split of
        the persons counted against the plan."""
        from ._health import legacy_health

        return legacy_health(self)

    def summary(self) -> str:
        """The answer's verdict and the reconciled recommendation, in words."""
        recommendation = self.recommendation
        advice = recommendation.summary() if recommendation is not None else "none (no counts per variant)."
        return f"Verdict: {self.verdict}\nRecommendation: {advice}"

    def _values(self) -> dict[str, Any]:
        # Secondary results put a value per variant in result.result (count, or a conversion rate).
        values = self.result.get("result")
        return dict(values) if isinstance(values, Mapping) else {}

    def to_frame(self) -> pd.DataFrame:
        """One row per variant (control first): counts, rate, probability of being best, 95% credible interval."""
        intervals = self.result.get("credible_intervals") or {}
        probability = self.probability
        values = self._values()
        variants = list(self.result.get("variants") or [])
        if not variants:
            variants = [{"key": key} for key in values]
        variants.sort(key=lambda v: v.get("key") != "control")
        rows: list[dict[str, Any]] = []
        for v in variants:
            key = str(v.get("key"))
            row: dict[str, Any] = {"key": key}
            if self.kind == "funnel":
                success, failure = int(v.get("success_count") or 0), int(v.get("failure_count") or 0)
                row |= {"success_count": success, "failure_count": failure, "exposure": success + failure}
                row["conversion_rate"] = success / (success + failure) if success + failure else np.nan
            elif self.kind == "trend":
                count, absolute = v.get("count") or 0, v.get("absolute_exposure") or v.get("exposure") or 0
                row |= {"count": count, "exposure": v.get("exposure"), "absolute_exposure": absolute}
                row["rate"] = count / absolute if absolute else np.nan
            if values:
                row["value"] = values.get(key)
            low_high = intervals.get(key) or [None, None]
            row |= {
                "probability": probability.get(key),
                "credible_interval_low": low_high[0],
                "credible_interval_high": low_high[1],
            }
            rows.append(row)
        df = pd.DataFrame(rows)
        # Counts are integers when they are whole (PostHog sends floats for some maths); a trend's exposure is
        # relative to control (1.0 for control), so it stays a float.
        for name in ("count", "success_count", "failure_count", "exposure", "absolute_exposure"):
            if name in df and not (name == "exposure" and self.kind == "trend"):
                whole = _all_ints(df[name])
                df[name] = pd.array(df[name].tolist(), dtype="Int64") if whole else df[name].astype("float64")
        for name in (
            "probability",
            "credible_interval_low",
            "credible_interval_high",
            "rate",
            "conversion_rate",
            "exposure",
        ):
            if name == "exposure" and self.kind != "trend":
                continue
            if name in df:
                df[name] = df[name].astype("float64")
        if "key" in df:
            df["key"] = df["key"].astype(pd.StringDtype())
        df.attrs = {k: v for k, v in self.result.items() if k not in ("insight", "variants", "filters")}
        return df

    def _repr_html_(self) -> str:
        title = f"Experiment {self.experiment_id}" + ("" if self.metric == "primary" else f", {self.metric}")
        colour = "#1a7f37" if self.significant else "#9a6700"
        extra = []
        if self.p_value is not None:
            extra.append(f"p-value {float(self.p_value):.4g}")
        if self.expected_loss is not None:
            extra.append(f"expected loss {float(self.expected_loss):.4g}")
        details = f" <small>({html.escape(', '.join(extra))})</small>" if extra else ""
        recommendation = self.recommendation
        advice = recommendation._repr_html_() if recommendation is not None else ""
        table = self.to_frame().to_html(index=False, float_format=lambda x: f"{x:.4g}", na_rep="–", border=0)
        return (
            f"<div><strong>{html.escape(title)}</strong>"
            f'<p style="color:{colour}">{html.escape(self.verdict)}{details}</p>{advice}{table}</div>'
        )


def _all_ints(col: pd.Series) -> bool:
    present = col.dropna()
    return bool(all(float(x).is_integer() for x in present))
