"""What the picker and the report show for a metric experiment: each metric with its settings and verdict, the
traffic split (SRM) of the exposures, and the per-variant table; with a holdout, each metric against it too
(hoglab's ``compare_to_holdout``: a ``vs holdout`` verdict and the tables with the holdout as baseline).

>>> metric_settings({"metric_type": "mean", "conversion_window": 7, "conversion_window_unit": "day",
...                  "upper_bound_percentile": 0.99, "ignore_zeros": True, "goal": "increase"})
'window 7 days · outliers capped at the 99th percentile (zeros left out) · goal: increase'
>>> metric_settings({"metric_type": "funnel", "funnel_order_type": "strict"})
'window: the whole experiment · steps in strict order · goal: increase'
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...client._metric_results import MetricAnswer, MetricExperimentResult, metric_frame
from ...schema import HOLDOUT_VARIANT_PREFIX
from ...stats import SRMResult, StatsError, srm

__all__ = ["exposure_srm", "metric_results_html", "metric_settings", "metric_summary", "metrics_line"]

_CELL = "padding:2px 8px;text-align:right"
_ORDERS = {"ordered": "steps in order", "strict": "steps in strict order", "unordered": "steps in any order"}


def _percentile(value: float) -> str:
    number = round(value * 100, 2)
    text = f"{number:g}"
    suffix = (
        "th"
        if 10 <= number % 100 <= 20 or not text.isdigit()
        else {1: "st", 2: "nd", 3: "rd"}.get(int(number) % 10, "th")
    )
    return f"{text}{suffix}"


def metric_settings(metric: Mapping[str, Any]) -> str:
    """A metric's settings in words: conversion window, outlier handling (mean metrics), funnel order, goal."""
    parts = []
    size, unit = metric.get("conversion_window"), metric.get("conversion_window_unit") or "day"
    parts.append(f"window {size} {unit}{'s' if size != 1 else ''}" if size else "window: the whole experiment")
    if metric.get("metric_type") == "mean":
        low, high = metric.get("lower_bound_percentile"), metric.get("upper_bound_percentile")
        zeros = " (zeros left out)" if metric.get("ignore_zeros") else ""
        if low and high and high < 1:
            parts.append(f"outliers capped at the {_percentile(low)} and {_percentile(high)} percentiles{zeros}")
        elif high is not None and high < 1:
            parts.append(f"outliers capped at the {_percentile(high)} percentile{zeros}")
        elif low:
            parts.append(f"outliers capped below the {_percentile(low)} percentile{zeros}")
        else:
            parts.append("no outlier capping")
    if metric.get("metric_type") == "funnel":
        order = metric.get("funnel_order_type") or "ordered"
        parts.append(_ORDERS.get(str(order), f"steps {order}"))
    parts.append(f"goal: {metric.get('goal') or 'increase'}")
    return " · ".join(parts)


def metric_summary(result: MetricExperimentResult) -> pd.DataFrame:
    """One row per metric: its name, role, type, method, settings, samples per variant and verdict in words (and,
    with a holdout, the verdict against it in ``vs holdout``)."""
    rows = []
    against = dict(zip((a.uuid for a in result.holdout_metrics), result.holdout_metrics, strict=True))
    for answer in result.metrics:
        # Each answer's own rows: two metrics may share a name (and so a label) and must not share samples.
        variants = answer.rows()
        samples = " · ".join(f"{r['variant']} {int(r['number_of_samples']):,}" for r in variants
                             if not pd.isna(r["number_of_samples"]))  # fmt: skip
        significant = any(not pd.isna(r["significant"]) and bool(r["significant"]) for r in variants)
        rows.append({
            "metric": answer.label, "role": answer.role, "metric_type": answer.metric_type, "method": result.method,
            "settings": metric_settings(answer.metric), "samples": samples or "–",
            "significant": significant, "verdict": result.metric_verdict(answer),
        })  # fmt: skip
        if against:
            held = against.get(answer.uuid)
            rows[-1]["vs holdout"] = f"{result.holdout_key}: {result.metric_verdict(held)}" if held else "–"
    columns = ["metric", "role", "metric_type", "method", "settings", "samples", "significant", "verdict"]
    columns += ["vs holdout"] if against else []
    return pd.DataFrame(rows, columns=columns).astype({c: "string" for c in columns if c != "significant"})


def metrics_line(experiment: Mapping[str, Any]) -> str:
    """The experiment's metrics for its summary: names by role, and the method.

    >>> metrics_line({"metrics": [{"name": "revenue"}], "metrics_secondary": [{"name": "views"}],
    ...               "stats_config": {"method": "frequentist"}})
    'revenue; secondary: views (frequentist)'
    """
    from ...client._metric_queries import experiment_metrics
    from ...client._metric_results import metric_label

    found = experiment_metrics(experiment)
    primary = ", ".join(metric_label(m) for m, role in found if role == "primary") or "none"
    secondary = ", ".join(metric_label(m) for m, role in found if role == "secondary")
    config = experiment.get("stats_config") or {}
    method = "frequentist" if isinstance(config, Mapping) and config.get("method") == "frequentist" else "bayesian"
    return primary + (f"; secondary: {secondary}" if secondary else "") + f" ({method})"


def exposure_srm(result: MetricExperimentResult, rollout: Mapping[str, float] | None) -> SRMResult | None:
    """The SRM check of the exposures against the flag's planned split (equal shares when it names other
    variants); ``None`` without at least two exposed variants. Persons seen with several variants (PostHog's
    ``$multiple`` series) belong to no variant and stay out of the check."""
    # A holdout's row (holdout-<id>) is no variant of the flag's split either.
    totals = {key: n for key, n in result.total_exposures.items()
              if key != "$multiple" and not key.startswith(HOLDOUT_VARIANT_PREFIX)}  # fmt: skip
    if len(totals) < 2 or sum(totals.values()) <= 0:
        return None
    planned = dict(rollout) if rollout and set(rollout) == set(totals) and sum(rollout.values()) > 0 else None
    try:
        return srm(totals, planned)
    except StatsError:
        return None


def _fmt(value: Any, spec: str) -> str:
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return format(value, spec)


def _srm_html(check: SRMResult | None, error: str | None) -> str:
    if check is None:
        why = f" ({error})" if error else ""
        text = f"No exposures to check the traffic split against{why}."
        return f'<p style="color:#57606a;margin:4px 0">{html.escape(text)}</p>'
    colour = "#cf222e" if check.mismatch else "#57606a"
    return f'<p style="color:{colour};margin:4px 0">{html.escape(check.summary(counted="Exposures"))}</p>'


def metric_results_html(result: MetricExperimentResult, check: SRMResult | None) -> str:
    """The metrics (settings and verdict), the SRM check of the exposures and the per-variant table."""
    esc = html.escape
    interval = "confidence interval" if result.method == "frequentist" else "credible interval"
    decided = "p-value" if result.method == "frequentist" else "chance to win"
    lines = [f'<p style="margin:4px 0"><b>Method:</b> {esc(result.method)} (PostHog\'s current engine)</p>',
             _srm_html(check, result.exposures_error)]  # fmt: skip
    head = (f"<tr><th>variant</th><th>samples</th><th>sum</th><th>mean</th><th>lift</th><th>{interval}</th>"
            f"<th>{decided}</th><th>significant</th></tr>")  # fmt: skip
    for answer in result.metrics:
        lines += _metric_block(result, answer, head)
    if result.holdout_metrics:
        title = f"Against the holdout {result.holdout_key} (hoglab's compare_to_holdout: lift over the holdout arm)"
        lines.append(f"<h4 style='margin:12px 0 2px'>{esc(title)}</h4>")
        for answer in result.holdout_metrics:
            lines += _metric_block(result, answer, head)
    return "".join(lines)


def _metric_block(result: MetricExperimentResult, answer: MetricAnswer, head: str) -> list[str]:
    """One metric's title, settings, verdict and per-variant table."""
    esc = html.escape
    lines = []
    colour = "#57606a"
    rows = metric_frame((answer,))  # this metric's rows alone, even when another metric shares its name
    if bool(rows["significant"].fillna(False).any()):
        colour = "#1a7f37"
    title = f"{esc(answer.label)} <small>({answer.role}, {esc(answer.metric_type)})</small>"
    lines.append(f"<h5 style='margin:8px 0 2px'>{title}</h5>")
    lines.append(f'<p style="margin:0;color:#57606a">{esc(metric_settings(answer.metric))}</p>')
    lines.append(f'<p style="margin:2px 0;color:{colour}">{esc(result.metric_verdict(answer))}</p>')
    body = []
    for r in rows.to_dict("records"):
        low_high = f"[{_fmt(r['interval_low'], '+.1%')}, {_fmt(r['interval_high'], '+.1%')}]"
        decided_value = r["p_value"] if result.method == "frequentist" else r["chance_to_win"]
        baseline = pd.isna(r["method"])
        cells = [esc(str(r["variant"])), _fmt(r["number_of_samples"], ","), _fmt(r["sum"], ",.6g"),
                 _fmt(r["mean"], ".4g"), _fmt(r["lift"], "+.2%"), "–" if baseline else low_high,
                 _fmt(decided_value, ".3g" if result.method == "frequentist" else ".1%"),
                 "–" if pd.isna(r["significant"]) else ("yes" if r["significant"] else "no")]  # fmt: skip
        body.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
    if body:
        lines.append(f"<table>{head}{''.join(body)}</table>")
    return lines
