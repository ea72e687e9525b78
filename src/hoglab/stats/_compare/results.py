"""Result dataclasses of :func:`hoglab.stats.compare`: tidy frames and HTML for notebooks."""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field
from enum import StrEnum

import pandas as pd

from .._distributions import Interval
from .._errors import StatsInputError
from .._options import Correction, Method, MetricKind
from .._srm import SRMResult
from .._warnings import StatsWarning, WarningKind

__all__ = ["ArmSummary", "Comparison", "VariantComparison", "Verdict"]


class Verdict(StrEnum):
    """Direction of a conclusive difference, or ``inconclusive``. Says nothing about "better":
    for metrics where lower is better (latency, churn) ``lower`` is the good news."""

    HIGHER = "higher"
    LOWER = "lower"
    INCONCLUSIVE = "inconclusive"


@dataclass(frozen=True)
class ArmSummary:
    """One arm of one metric: units, point estimate and its interval (confidence or credible)."""

    metric: str
    kind: MetricKind
    variant: str
    units: float
    estimate: float
    ci: Interval
    chance_to_be_best: float = math.nan


@dataclass(frozen=True)
class VariantComparison:
    """One variant against the control on one metric.

    ``difference`` is variant − control in the metric's units, ``lift`` is variant/control − 1;
    each has an interval at level 1 − α (confidence, credible, or always-valid sequence,
    depending on ``method``). Fields a method does not produce are NaN: p-values for the
    Bayesian method, chances and loss for the frequentist and sequential ones.
    """

    metric: str
    kind: MetricKind
    method: Method
    variant: str
    control: str
    units: float
    control_units: float
    estimate: float
    control_estimate: float
    difference: float
    difference_ci: Interval
    lift: float
    lift_ci: Interval
    p_value: float = math.nan
    adjusted_p_value: float = math.nan
    chance_to_win: float = math.nan
    chance_to_be_best: float = math.nan
    expected_loss: float = math.nan
    verdict: Verdict = Verdict.INCONCLUSIVE
    warnings: tuple[StatsWarning, ...] = ()

    @property
    def significant(self) -> bool:
        return self.verdict is not Verdict.INCONCLUSIVE

    def has_warning(self, kind: WarningKind) -> bool:
        return any(w.kind is kind for w in self.warnings)


_COLUMNS = [
    "metric",
    "kind",
    "variant",
    "control",
    "units",
    "control_units",
    "estimate",
    "control_estimate",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "lift",
    "lift_ci_low",
    "lift_ci_high",
    "p_value",
    "adjusted_p_value",
    "chance_to_win",
    "chance_to_be_best",
    "expected_loss",
    "verdict",
    "warnings",
]


@dataclass(frozen=True)
class Comparison:
    """Every variant against the control, for one or several metrics.

    Examples
    --------
    >>> from hoglab.stats import compare
    >>> c = compare({"control": (1000, 100), "test": (1000, 130)})
    >>> c.to_frame()[["variant", "lift", "p_value", "verdict"]].round(4)
      variant  lift  p_value verdict
    0    test   0.3   0.0355  higher
    """

    rows: tuple[VariantComparison, ...]
    arms: tuple[ArmSummary, ...]
    method: Method
    alpha: float
    control: str
    correction: Correction | None = None
    relative: bool = True
    srm: dict[str, SRMResult] = field(default_factory=dict)

    @property
    def metrics(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(r.metric for r in self.rows))

    @property
    def warnings(self) -> tuple[StatsWarning, ...]:
        """Every distinct warning of every row."""
        return tuple(dict.fromkeys(w for r in self.rows for w in r.warnings))

    def row(self, variant: str, metric: str | None = None) -> VariantComparison:
        """The comparison of ``variant`` (on ``metric`` when there are several)."""
        matches = [r for r in self.rows if r.variant == variant and (metric is None or r.metric == metric)]
        if len(matches) != 1:
            raise StatsInputError(
                f"no single row for variant={variant!r}, metric={metric!r}; metrics: {list(self.metrics)}"
            )
        return matches[0]

    def to_frame(self) -> pd.DataFrame:
        """One tidy row per (metric, variant) against the control.

        ``warnings`` holds a tuple of :class:`WarningKind` per row (empty when clean).
        """
        records = [
            {
                "metric": r.metric,
                "kind": r.kind,
                "variant": r.variant,
                "control": r.control,
                "units": r.units,
                "control_units": r.control_units,
                "estimate": r.estimate,
                "control_estimate": r.control_estimate,
                "difference": r.difference,
                "difference_ci_low": r.difference_ci[0],
                "difference_ci_high": r.difference_ci[1],
                "lift": r.lift,
                "lift_ci_low": r.lift_ci[0],
                "lift_ci_high": r.lift_ci[1],
                "p_value": r.p_value,
                "adjusted_p_value": r.adjusted_p_value,
                "chance_to_win": r.chance_to_win,
                "chance_to_be_best": r.chance_to_be_best,
                "expected_loss": r.expected_loss,
                "verdict": r.verdict.value,
                "warnings": tuple(dict.fromkeys(w.kind for w in r.warnings)),
            }
            for r in self.rows
        ]
        return pd.DataFrame.from_records(records, columns=_COLUMNS)

    def arms_frame(self) -> pd.DataFrame:
        """One row per (metric, arm), control included: units, estimate and its interval."""
        return pd.DataFrame.from_records(
            [
                {
                    "metric": a.metric,
                    "kind": a.kind,
                    "variant": a.variant,
                    "units": a.units,
                    "estimate": a.estimate,
                    "ci_low": a.ci[0],
                    "ci_high": a.ci[1],
                    "chance_to_be_best": a.chance_to_be_best,
                }
                for a in self.arms
            ],
            columns=[
                "metric",
                "kind",
                "variant",
                "units",
                "estimate",
                "ci_low",
                "ci_high",
                "chance_to_be_best",
            ],
        )

    # ------------------------------------------------------------------------------- display

    def _describe(self) -> str:
        level = f"{1 - self.alpha:.0%}"
        if self.method == "bayesian":
            what = f"Bayesian, {level} credible intervals"
        elif self.method == "sequential":
            what = f"sequential, {level} always-valid intervals"
        else:
            what = f"frequentist, {level} confidence intervals"
        if self.correction:
            what += f", {self.correction} correction"
        return what

    def _repr_html_(self) -> str:
        esc = html.escape
        head = (
            "<tr><th>metric</th><th>variant</th><th>control</th><th>variant value</th>"
            f"<th>{'lift' if self.relative else 'difference'} [interval]</th>"
            f"<th>{'chance to win' if self.method == 'bayesian' else 'p-value'}</th>"
            "<th>verdict</th><th>warnings</th></tr>"
        )
        body = []
        for r in self.rows:
            if self.relative and not math.isnan(r.lift):
                effect = f"{r.lift:+.2%} [{r.lift_ci[0]:+.2%}, {r.lift_ci[1]:+.2%}]"
            else:
                effect = f"{r.difference:+.4g} [{r.difference_ci[0]:+.4g}, {r.difference_ci[1]:+.4g}]"
            if self.method == "bayesian":
                evidence = f"{r.chance_to_win:.1%}"
            else:
                p = r.adjusted_p_value if self.correction else r.p_value
                evidence = f"{p:.3g}" + (" (adj.)" if self.correction else "")
            colour = {"higher": "#1a7f37", "lower": "#cf222e"}.get(r.verdict.value, "#57606a")
            badges = " ".join(
                f'<span title="{esc(w.message)}" style="background:#fff8c5;padding:0 4px;border-radius:3px">'
                f"{esc(w.kind.value)}</span>"
                for w in dict.fromkeys(r.warnings)
            )
            body.append(
                f"<tr><td>{esc(r.metric)}</td><td>{esc(r.variant)}</td><td>{r.control_estimate:.4g}</td>"
                f"<td>{r.estimate:.4g}</td><td>{effect}</td><td>{evidence}</td>"
                f'<td style="color:{colour};font-weight:bold">{esc(r.verdict.value)}</td>'
                f"<td>{badges}</td></tr>"
            )
        srm = "".join(
            f"<p style='color:#cf222e'><b>{esc(m)}</b>: {esc(check.summary())}</p>"
            for m, check in self.srm.items()
            if check.mismatch
        )
        return (
            f"<div><p><b>{esc(self.control)}</b> vs variants — {esc(self._describe())}</p>{srm}"
            f"<table>{head}{''.join(body)}</table></div>"
        )

    def __str__(self) -> str:
        lines = [f"Comparison against {self.control!r} ({self._describe()})"]
        for r in self.rows:
            p = r.adjusted_p_value if self.correction else r.p_value
            stat = f"P(win)={r.chance_to_win:.3f}" if self.method == "bayesian" else f"p={p:.3g}"
            flags = f" [{', '.join(dict.fromkeys(w.kind.value for w in r.warnings))}]" if r.warnings else ""
            lines.append(
                f"  {r.metric}: {r.variant} lift {r.lift:+.2%} diff {r.difference:+.4g} {stat}"
                f" → {r.verdict.value}{flags}"
            )
        return "\n".join(lines)
