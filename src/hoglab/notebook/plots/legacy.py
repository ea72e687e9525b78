"""Plots of a legacy experiment's result, or of any :class:`hoglab.stats.Comparison`: effects and posteriors.

:func:`plot_experiment` draws each variant's effect against the control (a forest plot) or each arm's posterior
density; :func:`experiment_result_of` reads a legacy ``/results`` answer (``srm.py`` reads it too). A metric
experiment's plots are ``metric.py``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.lines import Line2D
from matplotlib.ticker import FuncFormatter
from scipy import stats as sps

from ...client._legacy_results import ExperimentResult
from ...stats import (
    ArmSummary,
    BetaPosterior,
    Comparison,
    GammaPosterior,
    NormalPosterior,
    VariantComparison,
    Verdict,
    WarningKind,
    compare,
)
from ..analysis import variant_statistics
from .common import (
    CONTROL_COLOUR,
    HIGHER_COLOUR,
    INCONCLUSIVE_COLOUR,
    LOWER_COLOUR,
    level_text,
    new_axes,
    percent_axis,
    plain,
    variant_colours,
)

__all__ = ["arm_posterior", "comparison_of", "experiment_result_of", "plot_experiment"]

Method = Literal["frequentist", "bayesian", "sequential"]
MetricKind = Literal["conversion", "count", "mean", "ratio"]

_VERDICT_COLOURS = {Verdict.HIGHER: HIGHER_COLOUR, Verdict.LOWER: LOWER_COLOUR}
_INTERVALS = {
    "frequentist": "confidence intervals",
    "bayesian": "credible intervals",
    "sequential": "always-valid intervals",
}


def plot_experiment(
    result: Any,
    *,
    ax: Axes | None = None,
    kind: Literal["intervals", "posteriors"] = "intervals",
    relative: bool | None = None,
    metric: str | None = None,
    method: Method | None = None,
    alpha: float | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot an experiment's result: effects against the control (``kind="intervals"``) or posteriors.

    ``result`` is one of

    - a :class:`hoglab.stats.Comparison` (from ``hoglab.stats.compare``), drawn as computed;
    - a client :class:`hoglab.ExperimentResult` (``client.experiments.results(id)``) or its raw JSON answer:
      the variant counts it carries (``success_count``/``failure_count`` for funnels, ``count`` over
      ``absolute_exposure`` for trends) go through ``hoglab.stats.compare`` with ``method="bayesian"`` by
      default, PostHog's own framing (the answer's per-variant credible intervals say nothing about the
      *difference* from the control);
    - anything ``hoglab.stats.compare`` accepts (a mapping of variant to statistic, a DataFrame with one row
      per variant), compared with ``method="frequentist"`` unless ``method`` says otherwise.

    ``kind="intervals"`` is a forest plot: one row per (metric, variant) with its effect against the control
    and the interval at level 1 − α, the lift (a percent axis) or, with ``relative=False``, the difference (by
    default the headline the Comparison was computed for: ``compare(..., relative=...)``), a line at
    zero (the control), significant rows in colour (blue higher, vermillion lower: a direction, not a verdict
    on "better") with filled markers, inconclusive ones grey and hollow; the estimate, interval and p-value
    (or chance to win) are written to the right of the plot. ``kind="posteriors"`` draws each arm's posterior
    density of the metric (Beta for conversions, Gamma for counts, Normal for means and ratios, as
    ``hoglab.stats`` uses them), the control grey, with the chance to be best in the legend; it needs a single
    metric (``metric=`` picks one).

    >>> from hoglab.stats import compare
    >>> c = compare({"control": (1000, 100), "test": (1000, 130)})
    >>> ax = plot_experiment(c)
    >>> interval, estimate = ax.get_lines()[:2]  # per row: the interval, then the point estimate
    >>> interval.get_xdata().tolist() == list(c.row("test").lift_ci)
    True
    >>> estimate.get_xdata().tolist() == [c.row("test").lift]
    True
    >>> [round(x, 4) for x in c.row("test").lift_ci]
    [0.017, 0.6618]
    """
    if kind not in ("intervals", "posteriors"):
        raise ValueError(f"kind must be 'intervals' or 'posteriors', got {kind!r}")
    comparison, source = comparison_of(result, method=method, alpha=alpha)
    ax = new_axes(ax, figsize)
    if kind == "intervals":
        headline = comparison.relative if relative is None else relative
        _forest(ax, comparison, source, relative=headline, metric=metric, title=title)
    else:
        _posteriors(ax, comparison, source, metric=metric, title=title)
    return ax


def comparison_of(
    data: Any, *, method: Method | None = None, alpha: float | None = None
) -> tuple[Comparison, ExperimentResult | None]:
    """The :class:`Comparison` behind ``data`` and, for a client result, that result (see :func:`plot_experiment`)."""
    if isinstance(data, Comparison):
        if method is not None or alpha is not None:
            raise ValueError(
                "method and alpha apply when the plot computes the comparison; this Comparison was computed "
                f"with method={data.method!r}, alpha={data.alpha!r}: call hoglab.stats.compare again to change them"
            )
        return data, None
    found = experiment_result_of(data)
    level = 0.05 if alpha is None else alpha
    if found is not None:
        statistics, metric_kind = variant_statistics(found)
        comparison = compare(
            statistics,
            metric=metric_kind,
            method=method or "bayesian",
            alpha=level,
            name=found.metric,
        )
        return comparison, found
    if isinstance(data, pd.DataFrame | Mapping):
        return compare(data, method=method or "frequentist", alpha=level), None
    raise TypeError(
        "plot_experiment takes a hoglab.stats.Comparison, an ExperimentResult (or its JSON answer), or per-variant "
        f"statistics as hoglab.stats.compare accepts them; got {type(data).__name__}"
    )


def experiment_result_of(data: Any) -> ExperimentResult | None:
    """``data`` as a client result: an :class:`ExperimentResult`, or a raw ``/results`` JSON answer (a dict)."""
    if isinstance(data, ExperimentResult):
        return data
    if isinstance(data, Mapping):
        inner = data.get("result", data)
        if isinstance(inner, Mapping) and isinstance(inner.get("variants"), list):
            return ExperimentResult(int(data.get("id", 0) or 0), data)
    return None


# ----------------------------------------------------------------------------------------------- forest plot


def _forest(
    ax: Axes,
    comparison: Comparison,
    source: ExperimentResult | None,
    *,
    relative: bool,
    metric: str | None,
    title: str | None,
) -> None:
    rows = _rows(comparison, metric)
    several = len({r.metric for r in rows}) > 1
    conversions = all(r.kind == "conversion" for r in rows)
    limits = [0.0]
    labels = []
    for y, r in enumerate(rows):
        estimate, (low, high) = (r.lift, r.lift_ci) if relative else (r.difference, r.difference_ci)
        colour = _VERDICT_COLOURS.get(r.verdict, INCONCLUSIVE_COLOUR)
        if all(math.isfinite(v) for v in (estimate, low, high)):
            ax.plot(
                [low, high],
                [y, y],
                color=colour,
                linewidth=2.4 if r.significant else 1.6,
                marker="|",
                markersize=9,
                gid=f"interval:{r.metric}:{r.variant}",
            )
            ax.plot(
                [estimate],
                [y],
                linestyle="none",
                marker="o",
                markersize=7,
                color=colour,
                markerfacecolor=colour if r.significant else "white",
                markeredgewidth=1.6,
                gid=f"estimate:{r.metric}:{r.variant}",
            )
            limits += [low, high]
        ax.text(
            1.02,
            y,
            _annotation(r, comparison, relative=relative),
            transform=ax.get_yaxis_transform(),
            va="center",
            ha="left",
            fontsize="small",
            color=colour if r.significant else "#444444",
            fontweight="bold" if r.significant else "normal",
        )
        label = f"{r.metric}: {r.variant}" if several else r.variant
        labels.append(label + (" [SRM]" if r.has_warning(WarningKind.SRM) else ""))
    ax.axvline(0.0, color=CONTROL_COLOUR, linewidth=1, zorder=0, gid="zero")
    low_x, high_x = min(limits), max(limits)
    pad = 0.08 * (high_x - low_x or 1.0)
    ax.set_xlim(low_x - pad, high_x + pad)
    ax.set_yticks(range(len(rows)), [plain(label) for label in labels])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first row on top
    control = plain(comparison.control)
    if relative:
        percent_axis(ax, axis="x")
        ax.set_xlabel(f"lift against {control} (variant / {control} − 1)")
    elif conversions:
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{100 * v:+g} pp" if v else "0"))
        ax.set_xlabel(f"difference from {control} (conversion rate, percentage points)")
    else:
        ax.set_xlabel(f"difference from {control} (variant − {control}, metric units)")
    ax.grid(True, axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    what = f"{'lift against' if relative else 'difference from'} {control}, {level_text(comparison.alpha)} "
    what += _INTERVALS.get(comparison.method, "intervals")
    if comparison.correction:
        what += f" ({comparison.correction}-adjusted p)"
    ax.set_title(_headline(source, what) if title is None else title)
    verdicts = list(dict.fromkeys(r.verdict for r in rows))
    if len(verdicts) > 1:  # one colour needs no key; the annotations say it
        handles = [
            Line2D(
                [],
                [],
                color=_VERDICT_COLOURS.get(v, INCONCLUSIVE_COLOUR),
                marker="o",
                label=v.value,
                markerfacecolor=_VERDICT_COLOURS.get(v, "white"),
            )
            for v in verdicts
        ]
        ax.legend(handles=handles, fontsize="small", loc="best")


def _rows(comparison: Comparison, metric: str | None) -> list[VariantComparison]:
    rows = [r for r in comparison.rows if metric is None or r.metric == metric]
    if not rows:
        raise ValueError(f"no metric {metric!r} in this comparison; it has {list(comparison.metrics)}")
    return rows


def _annotation(r: VariantComparison, comparison: Comparison, *, relative: bool) -> str:
    estimate, (low, high) = (r.lift, r.lift_ci) if relative else (r.difference, r.difference_ci)
    if not math.isfinite(estimate):
        return f"lift undefined ({plain(r.control)} is 0)" if relative else "undefined"
    if relative:
        text = f"{estimate:+.1%} [{low:+.1%}, {high:+.1%}]"
    elif r.kind == "conversion":
        text = f"{100 * estimate:+.2f} pp [{100 * low:+.2f}, {100 * high:+.2f}]"
    else:
        text = f"{estimate:+.4g} [{low:+.4g}, {high:+.4g}]"
    if comparison.method == "bayesian":
        return f"{text}  P(win) {r.chance_to_win:.1%}"
    p = r.adjusted_p_value if comparison.correction else r.p_value
    return f"{text}  p{'_adj' if comparison.correction else ''} = {p:.2g}"


def _headline(source: ExperimentResult | None, what: str) -> str:
    if source is None:
        return what[:1].upper() + what[1:]
    name = f"Experiment {source.experiment_id}" if source.experiment_id else "Experiment"
    if source.metric != "primary":
        name += f", {plain(source.metric)}"
    code = source.significance_code
    return f"{name}: {code}\n{what}" if code else f"{name}\n{what}"


# ------------------------------------------------------------------------------------------------ posteriors


def _posteriors(
    ax: Axes, comparison: Comparison, source: ExperimentResult | None, *, metric: str | None, title: str | None
) -> None:
    names = comparison.metrics
    if metric is None and len(names) > 1:
        raise ValueError(f"posteriors show one metric at a time; pass metric= one of {list(names)}")
    chosen = metric or names[0]
    arms = [a for a in comparison.arms if a.metric == chosen]
    if not arms:
        raise ValueError(f"no metric {metric!r} in this comparison; it has {list(names)}")
    kind = arms[0].kind
    posterior = arm_posterior(arms, method=comparison.method, alpha=comparison.alpha)
    tail = np.array([[1e-5]])
    low, high = float(np.min(posterior.ppf(tail))), float(np.max(posterior.isf(tail)))
    if not high > low:  # a zero-variance arm: widen so the spike is visible
        low, high = low - 0.5 * (abs(low) or 1.0), high + 0.5 * (abs(high) or 1.0)
    x = np.linspace(low, high, 600)
    density = posterior.pdf(x[None, :])
    colours = variant_colours([a.variant for a in arms], comparison.control)
    best = dict(source.probability) if source is not None else {a.variant: a.chance_to_be_best for a in arms}
    for i, a in enumerate(arms):
        p_best = best.get(a.variant)
        label = a.variant
        if p_best is not None and math.isfinite(float(p_best)):
            label += f" (P(best) {float(p_best):.1%})"
        ax.plot(x, density[i], color=colours[a.variant], linewidth=2, label=plain(label), gid=f"posterior:{a.variant}")
        ax.fill_between(x, density[i], color=colours[a.variant], alpha=0.15, linewidth=0)
    what = {
        "conversion": "conversion rate",
        "count": "events per exposed unit",
        "mean": f"mean of {plain(chosen)}",
        "ratio": plain(chosen),
    }[kind]
    if kind == "conversion":
        percent_axis(ax, axis="x")
    ax.set_xlabel(what)
    ax.set_ylabel("probability density")
    ax.set_ylim(bottom=0)
    ax.grid(True, axis="x", alpha=0.3)
    headline = f"posterior {what} of each variant"
    ax.set_title(_headline(source, headline) if title is None else title)
    ax.legend(fontsize="small", loc="best")


def arm_posterior(
    arms: Sequence[ArmSummary], *, method: str, alpha: float
) -> BetaPosterior | GammaPosterior | NormalPosterior:
    """The posterior ``hoglab.stats`` gives each arm, rebuilt from the arm summaries of a :class:`Comparison`.

    Conversions: Beta(1 + successes, 1 + failures) with successes = rate·units; counts: Gamma(count + 1,
    exposure) with count = rate·exposure (both exact up to rounding). Means and ratios: Normal(estimate, SE)
    with the SE read back from the arm's interval (z quantile for the Bayesian method's credible interval,
    Student t with n − 1 dof for the frequentist and sequential ones).
    """
    kind = arms[0].kind
    units = np.array([a.units for a in arms], dtype=float)
    estimates = np.array([a.estimate for a in arms], dtype=float)
    if kind == "conversion":
        successes = _snap(estimates * units)
        return BetaPosterior.from_counts(successes, np.maximum(units - successes, 0.0))
    if kind == "count":
        return GammaPosterior(_snap(estimates * units) + 1.0, units)
    half = np.array([(a.ci[1] - a.ci[0]) / 2.0 for a in arms], dtype=float)
    if method == "bayesian":
        quantile = np.full(len(arms), sps.norm.isf(alpha / 2.0))
    else:
        quantile = sps.t.isf(alpha / 2.0, np.maximum(units - 1.0, 1.0))
    scale = half / quantile
    if not np.all(np.isfinite(scale)):
        raise ValueError("an arm's interval is undefined, so its posterior cannot be drawn")
    return NormalPosterior(estimates, scale)


def _snap(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    # rate·units gives back the integer count up to a rounding error (0.17·500 = 85.00000000000001).
    rounded = np.round(values)
    return np.where(np.abs(values - rounded) < 1e-6 * np.maximum(1.0, rounded), rounded, values)
