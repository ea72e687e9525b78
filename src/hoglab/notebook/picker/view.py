"""What the experiment picker (and the experiment report) shows, as HTML: an experiment's summary, and the
verdict, SRM check and side-by-side table of an :class:`~hoglab.notebook.analysis.Analysis`. The answer's
own verdict is shown as PostHog (or the hoglab service) stated it.
"""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...client._metric_queries import is_metric_experiment
from ...client._results import ExperimentResult
from ...schema import Experiment
from ...stats import PostHogTrendVerdict, SRMResult
from ..analysis import Analysis, variant_rollout, verdict_words
from .metric_view import metrics_line

__all__ = ["message_html", "results_html", "summary_html"]

_STATUS_COLOURS = {"draft": "#6e7781", "running": "#0969da", "complete": "#1a7f37"}
_CELL = "padding:2px 8px;text-align:right"


def message_html(text: str, *, tone: str = "note") -> str:
    """A message in place of the results: ``tone`` is ``"note"`` (grey) or ``"error"`` (vermillion)."""
    colour = "#cf222e" if tone == "error" else "#57606a"
    return f'<p style="color:{colour};margin:4px 0">{html.escape(text)}</p>'


def _date(value: Any) -> str:
    return pd.Timestamp(value).strftime("%Y-%m-%d %H:%M %Z").strip() if value is not None else "–"


def _metric(filters: Mapping[str, Any] | None) -> str:
    if not filters:
        return "no target metric"
    insight = str(filters.get("insight") or "trends").lower().rstrip("s")
    names = [str(e.get("name") or e.get("id")) for e in filters.get("events") or [] if isinstance(e, Mapping)]
    names += [f"action {a.get('id')}" for a in filters.get("actions") or [] if isinstance(a, Mapping)]
    return f"{insight}: {(' → ' if insight == 'funnel' else ', ').join(names) or '(no events)'}"


def _metric_row(experiment: Experiment) -> tuple[str, str]:
    body = experiment.model_dump(mode="json", by_alias=True)
    if is_metric_experiment(body):
        return "metrics", html.escape(metrics_line(body))
    return "metric", html.escape(_metric(experiment.filters))


def summary_html(experiment: Experiment) -> str:
    """Name, status, flag, variants with their rollout, dates and metric of an experiment."""
    esc = html.escape
    status = experiment.status
    badge = (
        f'<span style="background:{_STATUS_COLOURS[status]};color:white;padding:1px 6px;border-radius:8px">'
        f"{status}</span>" + (" <span style='color:#6e7781'>archived</span>" if experiment.archived else "")
    )
    flag = experiment.feature_flag
    active = "" if flag is None else (" (active)" if flag.active else " (inactive)")
    rollout = variant_rollout(experiment)
    variants = " · ".join(f"{esc(k)} {share:.0%}" for k, share in rollout.items()) or "–"
    end = _date(experiment.end_date) if experiment.end_date else ("not started" if status == "draft" else "running")
    rows = [
        ("feature flag", f"<code>{esc(experiment.feature_flag_key)}</code>{active}"),
        ("variants", variants),
        ("dates", f"{_date(experiment.start_date)} → {esc(end)}"),
        _metric_row(experiment),
    ]
    if experiment.description:
        rows.append(("description", esc(experiment.description)))
    body = "".join(f'<tr><th style="text-align:left;padding-right:12px">{k}</th><td>{v}</td></tr>' for k, v in rows)
    title = f"<h4 style='margin:6px 0'>{esc(experiment.name)} <small>#{experiment.id}</small> {badge}</h4>"
    return f"{title}<table>{body}</table>"


def _fmt(value: float, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _verdict_html(result: ExperimentResult, analysis: Analysis) -> str:
    ours = analysis.verdict.significance_code.value
    stated = result.significance_code
    code = str(stated) if stated is not None else ours
    named, reason = verdict_words(code)
    extra = []
    if isinstance(analysis.verdict, PostHogTrendVerdict):
        p_value = result.p_value if result.p_value is not None else analysis.verdict.p_value
        extra.append(f"p-value {_fmt(p_value, '.3g')}")
    else:
        loss = result.expected_loss if result.expected_loss is not None else analysis.verdict.expected_loss
        extra.append(f"expected loss {_fmt(loss, '.3g')}")
    colour = "#1a7f37" if code == "significant" else "#9a6700"
    lines = [
        f'<p style="margin:4px 0"><b>PostHog verdict:</b> <span style="color:{colour};font-weight:bold">'
        f"{html.escape(named)}</span>{': ' + html.escape(reason) if reason else ''} ({html.escape(', '.join(extra))})"
        "</p>"
    ]
    if stated is not None and str(stated) != ours:
        lines.append(
            message_html(
                f"hoglab.stats evaluates PostHog's rules as {ours!r} on these counts: PostHog estimates from "
                "random draws, so near a threshold the two can differ."
            )
        )
    return "".join(lines)


def _srm_html(srm: SRMResult | None) -> str:
    if srm is None:
        return ""
    return message_html(srm.summary(), tone="error" if srm.mismatch else "note")


def results_html(result: ExperimentResult, analysis: Analysis) -> str:
    """The verdict with its reason, the SRM check and the side-by-side table."""
    table = analysis.table
    counted = "conversions" if "conversions" in table else "count"
    level = f"{1 - analysis.frequentist.alpha:.0%}"
    head = (
        "<tr><th></th><th></th><th></th><th></th><th></th>"
        f'<th colspan="2" style="text-align:center">frequentist ({level})</th>'
        f'<th colspan="2" style="text-align:center">Bayesian ({level})</th><th>PostHog</th></tr>'
        f"<tr><th>variant</th><th>units</th><th>{counted}</th><th>rate</th><th>lift</th>"
        "<th>interval</th><th>p-value</th><th>interval</th><th>chance to win</th><th>P(best)</th></tr>"
    )
    body = []
    for r in table.to_dict("records"):
        confidence = f"[{_fmt(r['confidence_low'], '+.1%')}, {_fmt(r['confidence_high'], '+.1%')}]"
        credible = f"[{_fmt(r['credible_low'], '+.1%')}, {_fmt(r['credible_high'], '+.1%')}]"
        cells = [
            html.escape(str(r["variant"])),
            _fmt(r["units"], ",.0f"),
            _fmt(r[counted], ",.4g"),
            _fmt(r["rate"], ".4g"),
            _fmt(r["lift"], "+.2%"),
            confidence if not math.isnan(r["lift"]) else "–",
            _fmt(r["p_value"], ".3g"),
            credible if not math.isnan(r["lift"]) else "–",
            _fmt(r["chance_to_win"], ".1%"),
            _fmt(r["chance_to_be_best"], ".1%"),
        ]
        body.append("<tr>" + "".join(f'<td style="{_CELL}">{c}</td>' for c in cells) + "</tr>")
    refreshed = ""
    if result.last_refresh:
        refreshed = message_html(f"Computed {_date(result.last_refresh)}" + (" (cached)." if result.is_cached else "."))
    table_html = f"<table>{head}{''.join(body)}</table>"
    return _verdict_html(result, analysis) + _srm_html(analysis.srm) + table_html + refreshed
