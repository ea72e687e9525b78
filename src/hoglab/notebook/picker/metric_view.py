"""What the picker and the report show of a metric experiment's results, as HTML.

The statistics settings (method, sequential testing, CUPED), each metric with its settings and verdict, the
traffic split (SRM) of the exposures, the per-variant table (raw and CUPED-adjusted estimates; the interval
without CUPED beside the adjusted one) and, for a metric with a breakdown, the same per breakdown value; with a
holdout, each metric against it too (hoglab's ``compare_to_holdout``: a ``vs holdout`` verdict and the tables with
the holdout as baseline). A legacy experiment's are ``legacy_view.py``.

>>> metric_settings({"metric_type": "mean", "conversion_window": 7, "conversion_window_unit": "day",
...                  "upper_bound_percentile": 0.99, "ignore_zeros": True, "goal": "increase"})
'window 7 days · outliers capped at the 99th percentile (zeros left out) · goal: increase'
>>> metric_settings({"metric_type": "funnel", "funnel_order_type": "strict"})
'window: the whole experiment · steps in strict order · goal: increase'
>>> metric_settings({"metric_type": "retention", "retention_window_start": 1, "retention_window_end": 7,
...                  "retention_window_unit": "day", "start_handling": "first_seen",
...                  "breakdownFilter": {"breakdowns": [{"property": "$browser"}], "breakdown_limit": 5}})
'retained on days 1-7 after the first start · window: the whole experiment · by $browser (top 5) · goal: increase'
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...client._metric_results import MetricAnswer, MetricExperimentResult, metric_frame
from ...schema import HOLDOUT_VARIANT_PREFIX
from ...stats import SRMResult, StatsError, planned_shares, srm

__all__ = ["exposure_srm", "metric_results_html", "metric_settings", "metric_summary", "metrics_line"]

_CELL = "padding:2px 8px;text-align:right;white-space:nowrap"  # a p-value (2.3e-07) stays in one piece
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
    """A metric's settings in words: retention window, conversion window, outlier handling (mean metrics), funnel
    order, breakdowns, goal."""
    parts = []
    if metric.get("metric_type") == "retention":
        low, high = metric.get("retention_window_start"), metric.get("retention_window_end")
        unit = str(metric.get("retention_window_unit") or "day")
        start = metric.get("start_event") or {}
        which = "the exposure" if isinstance(start, Mapping) and start.get("kind") == "ExperimentExposureNode" else (
            "the last start" if metric.get("start_handling") == "last_seen" else "the first start")  # fmt: skip
        span = f"{unit}s {low}-{high}" if low != high else f"{unit} {low}"
        parts.append(f"retained on {span} after {which}")
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
    found = metric.get("breakdownFilter")
    breakdown: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    names = [str(b.get("property")) for b in breakdown.get("breakdowns") or [] if isinstance(b, Mapping)]
    if names:
        limit = breakdown.get("breakdown_limit")
        parts.append("by " + " × ".join(names) + (f" (top {limit})" if limit else ""))
    parts.append(f"goal: {metric.get('goal') or 'increase'}")
    return " · ".join(parts)


def metric_summary(result: MetricExperimentResult) -> pd.DataFrame:
    """One row per metric: its name, role, type, method, settings, samples per variant and verdict in words.

    With a holdout, the verdict against it is in ``vs holdout``.
    """
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
    >>> metrics_line({"metrics": [{"name": "revenue"}], "stats_config": {"method": "frequentist",
    ...               "frequentist": {"sequential_testing_enabled": True}, "cuped": {"enabled": True}}})
    'revenue (frequentist, sequential, CUPED)'
    """
    from ...client._metric_queries import experiment_metrics
    from ...client._metric_results import metric_label

    found = experiment_metrics(experiment)
    primary = ", ".join(metric_label(m) for m, role in found if role == "primary") or "none"
    secondary = ", ".join(metric_label(m) for m, role in found if role == "secondary")
    from ...stats.posthog import resolve_cuped, resolve_stats_settings

    config = experiment.get("stats_config") or {}
    settings = resolve_stats_settings(config)  # the experiment's own settings (the project's defaults aside)
    parts = [settings.method] + (["sequential"] if settings.sequential else [])
    parts += ["CUPED"] if resolve_cuped(config).enabled else []
    return primary + (f"; secondary: {secondary}" if secondary else "") + f" ({', '.join(parts)})"


def exposure_srm(result: MetricExperimentResult, rollout: Mapping[str, float] | None) -> SRMResult | None:
    """The SRM check of the exposures of every arm, the holdout's included, against the planned split; ``None``
    under two exposed arms.

    The flag's split is equal shares when the flag names other variants; a holdout of share h takes h of all
    exposed units and leaves the variants (1 − h) of theirs (a holdout whose share is not known, one restricted by
    properties, stays out). Persons seen with several variants (PostHog's ``$multiple`` series) belong to no arm
    and stay out of the check.
    """
    from ...client._health import holdout_share

    key, share = result.holdout_key, holdout_share(result.holdout)
    holdout = (key, share) if key is not None and share is not None and share > 0 else None
    totals = {k: n for k, n in result.total_exposures.items() if k != "$multiple"
              and (not k.startswith(HOLDOUT_VARIANT_PREFIX) or (holdout is not None and k == holdout[0]))}  # fmt: skip
    variants = {k: n for k, n in totals.items() if holdout is None or k != holdout[0]}
    if len(totals) < 2 or sum(totals.values()) <= 0:
        return None
    planned = dict(rollout) if rollout and set(rollout) == set(variants) and sum(rollout.values()) > 0 else \
        dict.fromkeys(variants, 1.0)  # fmt: skip
    if holdout is not None:
        totals.setdefault(holdout[0], 0.0)
    try:
        return srm(totals, planned_shares(planned, holdout))
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


def _interval(low: Any, high: Any) -> str:
    return f"[{_fmt(low, '+.1%')}, {_fmt(high, '+.1%')}]"


def _table(result: MetricExperimentResult, rows: pd.DataFrame, *, breakdown: bool) -> str:
    """One table of a metric's rows: the breakdown value first when asked, CUPED's columns when it applied."""
    esc = html.escape
    frequentist = result.method == "frequentist"
    interval = ("confidence sequence" if result.sequential else "confidence interval") if frequentist \
        else "credible interval"  # fmt: skip
    decided = ("always-valid p-value" if result.sequential else "p-value") if frequentist else "chance to win"
    cuped = bool(rows["cuped"].fillna(False).any())
    differs = cuped and bool(((rows["posthog_interval_low"] - rows["interval_low"]).abs() > 0).any())
    names = (["value"] if breakdown else []) + ["variant", "samples", "sum", "mean", "lift", interval, decided,
                                                 "significant"]  # fmt: skip
    if cuped:
        names += ["CUPED lift", "interval without CUPED", "θ", "variance cut"]
    if differs:
        names += ["PostHog's formula"]
    head = "<tr>" + "".join(f"<th>{esc(n)}</th>" for n in names) + "</tr>"
    body = []
    for r in rows.to_dict("records"):
        baseline = pd.isna(r["method"])
        decided_value = r["p_value"] if frequentist else r["chance_to_win"]
        cells = ([esc(str(r["breakdown"]))] if breakdown else []) + [
            esc(str(r["variant"])), _fmt(r["number_of_samples"], ","), _fmt(r["sum"], ",.6g"), _fmt(r["mean"], ".4g"),
            _fmt(r["lift"], "+.2%"), "–" if baseline else _interval(r["interval_low"], r["interval_high"]),
            _fmt(decided_value, ".3g" if frequentist else ".1%"),
            "–" if pd.isna(r["significant"]) else ("yes" if r["significant"] else "no"),
        ]  # fmt: skip
        if cuped:
            cells += [_fmt(r["lift_cuped"], "+.2%"),
                      "–" if baseline else _interval(r["raw_interval_low"], r["raw_interval_high"]),
                      _fmt(r["theta"], ".3g"), _fmt(r["variance_reduction"], ".0%")]  # fmt: skip
        if differs:
            theirs = r["posthog_p_value"] if frequentist else r["posthog_chance_to_win"]
            cells.append("–" if baseline else f"{_interval(r['posthog_interval_low'], r['posthog_interval_high'])} "
                         f"{_fmt(theirs, '.3g' if frequentist else '.1%')}")  # fmt: skip
        body.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
    return f"<table>{head}{''.join(body)}</table>" if body else ""


def _metric_html(result: MetricExperimentResult, answer: MetricAnswer) -> list[str]:
    esc = html.escape
    rows = metric_frame((answer,))  # this metric's rows alone, even when another metric shares its name
    overall, parts = rows[rows["breakdown"].isna()], rows[rows["breakdown"].notna()]
    colour = "#1a7f37" if bool(overall["significant"].fillna(False).any()) else "#57606a"
    title = f"{esc(answer.label)} <small>({answer.role}, {esc(answer.metric_type)})</small>"
    lines = [f"<h5 style='margin:8px 0 2px'>{title}</h5>",
             f'<p style="margin:0;color:#57606a">{esc(metric_settings(answer.metric))}</p>',
             f'<p style="margin:2px 0;color:{colour}">{esc(result.metric_verdict(answer))}</p>',
             _table(result, overall, breakdown=False)]  # fmt: skip
    if len(parts):
        by = " × ".join(answer.breakdowns) or "breakdown"
        lines.append(f'<p style="margin:6px 0 2px"><b>By {esc(by)}</b> (each value its own test; values from '
                     "each unit's first exposure)</p>")  # fmt: skip
        lines.append(_table(result, parts, breakdown=True))
    return lines


def metric_results_html(result: MetricExperimentResult, check: SRMResult | None) -> str:
    """The statistics settings, the SRM check of the exposures, then each metric: settings, verdict, its table
    and its breakdown table."""
    esc = html.escape
    lines = [f'<p style="margin:4px 0"><b>Method:</b> {esc(result.settings_line)} (PostHog\'s current engine; '
             "hoglab's verdict: the delta-method variance under CUPED)</p>",
             *([] if check is not None else [_srm_html(check, result.exposures_error)]),  # else a health check
             result.health._repr_html_()]  # fmt: skip
    for answer in result.metrics:
        lines += _metric_html(result, answer)
    if result.holdout_metrics:
        title = f"Against the holdout {result.holdout_key} (hoglab's compare_to_holdout: lift over the holdout arm)"
        lines.append(f"<h4 style='margin:12px 0 2px'>{esc(title)}</h4>")
        for answer in result.holdout_metrics:
            lines += _metric_html(result, answer)
    return "".join(lines)

