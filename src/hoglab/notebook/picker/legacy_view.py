"""What the experiment picker (and the experiment report) shows of a legacy experiment's results, as HTML.

The verdict, SRM check and side-by-side table of an :class:`~hoglab.notebook.analysis.Analysis`; the answer's own
verdict is shown as PostHog (or the hoglab service) stated it. A metric experiment's are ``metric_view.py``.
"""

from __future__ import annotations

import html
import math

from ...client._legacy_results import ExperimentResult
from ...stats import PostHogTrendVerdict, SRMResult
from ..analysis import Analysis, verdict_words
from .view import date_text, message_html

__all__ = ["results_html"]

_CELL = "padding:2px 8px;text-align:right;white-space:nowrap"  # a p-value (2.3e-07) stays in one piece


def _fmt(value: float, spec: str) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _count(value: float) -> str:
    """A count as an integer with thousands separators (1,672), a fractional one (a property sum) to 4 figures.

    >>> _count(1672.0), _count(12345), _count(2.5)
    ('1,672', '12,345', '2.5')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    number = float(value)
    return f"{number:,.0f}" if number.is_integer() else f"{number:,.4g}"


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
        '<th>interval</th><th style="white-space:nowrap">p-value</th><th>interval</th><th>chance to win</th>'
        "<th>P(best)</th></tr>"
    )
    body = []
    for r in table.to_dict("records"):
        confidence = f"[{_fmt(r['confidence_low'], '+.1%')}, {_fmt(r['confidence_high'], '+.1%')}]"
        credible = f"[{_fmt(r['credible_low'], '+.1%')}, {_fmt(r['credible_high'], '+.1%')}]"
        cells = [
            html.escape(str(r["variant"])),
            _count(r["units"]),
            _count(r[counted]),
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
        cached = " (cached)." if result.is_cached else "."
        refreshed = message_html(f"Computed {date_text(result.last_refresh)}{cached}")
    table_html = f"<table>{head}{''.join(body)}</table>"
    return _verdict_html(result, analysis) + _srm_html(analysis.srm) + table_html + refreshed
