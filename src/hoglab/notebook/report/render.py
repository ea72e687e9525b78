"""The experiment report as terminal text, as HTML, and as files on disk."""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..analysis import Analysis, verdict_words
from ..picker.legacy_view import results_html
from ..picker.view import message_html, summary_html

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .report import ExperimentReport, MetricOutcome, Planning

__all__ = ["report_html", "summary_text", "write_report"]

FIGURE_TITLES = {
    "metric_effects": "Each metric's effect against the baseline, with its interval",
    "exposures": "Exposures over time",
    "effect": "Effect against control",
    "over_time": "Effect over time, with always-valid bounds",
    "metric": "The metric by variant",
    "posteriors": "Posterior of each variant",
    "srm": "Traffic split",
    "novelty": "The effect by days since first exposure, with its fitted trend",
}


def _pct(value: Any, spec: str = "+.1%") -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


def _date(value: Any) -> str:
    return value.strftime("%Y-%m-%d") if value is not None else "–"


# ------------------------------------------------------------------------------------------------------ text


def _table_lines(analysis: Analysis) -> list[str]:
    table = analysis.table
    counted = "conversions" if "conversions" in table else "count"
    level = f"{1 - analysis.frequentist.alpha:.0%}"
    head = f"  {'variant':<12} {'units':>9} {counted:>11} {'rate':>9}   {'lift [' + level + ' CI]':<26} "
    lines = [head + f"{'p-value':>8} {'P(best)':>8}"]
    for r in table.to_dict("records"):
        lift = "" if math.isnan(r["lift"]) else (
            f"{_pct(r['lift'])} [{_pct(r['confidence_low'])}, {_pct(r['confidence_high'])}]"
        )
        rate = _pct(r["rate"], ".2%") if counted == "conversions" else f"{r['rate']:.4g}"
        p_value = "" if math.isnan(r["p_value"]) else f"{r['p_value']:.3g}"
        lines.append(
            f"  {str(r['variant'])[:12]:<12} {r['units']:>9,.0f} {r[counted]:>11,.0f} {rate:>9}   {lift:<26} "
            f"{p_value:>8} {_pct(r['chance_to_be_best'], '.1%'):>8}"
        )
    return lines


def _verdict_line(outcome: MetricOutcome) -> str:
    result = outcome.result
    code = str(result.significance_code) if result is not None and result.significance_code else None
    if code is None:
        return "Verdict: none in this answer."
    detail = []
    if result is not None and result.p_value is not None:
        detail.append(f"p-value {float(result.p_value):.3g}")
    if result is not None and result.expected_loss is not None:
        detail.append(f"expected loss {float(result.expected_loss):.3g}")
    named, reason = verdict_words(code)  # "Significant: ...", never "SIGNIFICANT. Significant:"
    said = f"{named}: {reason}" if reason else named
    return f"Verdict: {said}" + (f" ({', '.join(detail)})" if detail else "") + "."


# Why the same counts can give two p-values: a conversion rate counts persons (each converts or not), a count
# metric counts events (a person may do it several times), so each has its own test: (test, what it counts).
TESTS = {
    "funnel": ("pooled two-proportion z-test", "persons who converted, of those exposed"),
    "trend": ("exact Poisson rate test", "events per exposed person (one person may do it several times)"),
}


def metric_test(outcome: MetricOutcome) -> tuple[str, str] | None:
    """(the test its p-value comes from, what the metric counts), by the result's kind; ``None`` if unknown."""
    return TESTS.get(outcome.result.kind) if outcome.result is not None else None


def _planning_text(plan: Planning) -> str:
    enough = plan.smallest_variant >= plan.needed_per_variant
    what = "conversion rate" if plan.metric == "conversions" else "rate per unit"
    text = (
        f"Power: to detect a {plan.mde:.0%} change of the control's {what} ({plan.baseline:.4g}) with 80% power "
        f"takes {plan.needed_per_variant:,} units per variant; the smallest variant has {plan.smallest_variant:,.0f} "
        f"(power {plan.power:.0%}; detectable now: {_pct(plan.detectable_now, '.1%')})."
    )
    if not enough and plan.days_needed is not None:
        text += f" At the rate so far that is {plan.days_needed} days in all ({plan.days_running:.0f} so far)."
    return text


def summary_text(report: ExperimentReport) -> str:
    """Name, dates, the variants table, the verdict, SRM, power, the effect over time and secondary metrics."""
    e = report.experiment
    since = f"since {_date(e.start_date)}" if e.start_date else "not launched"
    until = f" until {_date(e.end_date)}" if e.end_date else ""
    lines = [f"{e.name} (#{e.id}) · flag {e.feature_flag_key} · {e.status} {since}{until}"]
    if report.metrics is not None:
        from .metric import metric_summary_lines

        return "\n".join(lines + metric_summary_lines(report) + _recommendation_lines(report) + _novelty_text(report))
    primary = report.primary
    if primary.analysis is None:
        lines.append(primary.error or "No results.")
        return "\n".join(lines)
    lines += _table_lines(primary.analysis)
    lines.append(_verdict_line(primary))
    srm = primary.analysis.srm
    if srm is not None:
        lines.append(srm.summary("line"))
    if report.health is not None:
        lines.append(report.health.summary())
    if report.planning is not None:
        lines.append(_planning_text(report.planning))
    lines += _recommendation_lines(report)
    if report.over_time_note:
        lines.append(report.over_time_note)
    lines += _novelty_text(report)
    for outcome in report.secondary:
        lines.append(f"Secondary: {outcome.name}: {_secondary_text(outcome)}")
        mine, theirs = metric_test(outcome), metric_test(primary)
        if mine and theirs and mine != theirs:
            lines.append(f"  Another test than the primary's, so another p-value on the same counts: {outcome.name} "
                         f"counts {mine[1]}, the primary {theirs[1]} ({theirs[0]}).")  # fmt: skip
    return "\n".join(lines)


def _novelty_text(report: ExperimentReport) -> list[str]:
    from .novelty import novelty_lines

    if report.novelty is not None:
        return novelty_lines(report.novelty)
    return [report.novelty_note] if report.novelty_note else []


def _recommendation_lines(report: ExperimentReport) -> list[str]:
    return [f"Recommendation: {report.recommendation.summary()}"] if report.recommendation is not None else []


def _secondary_text(outcome: MetricOutcome) -> str:
    if outcome.analysis is None:
        return outcome.error or "no results"
    rows = [r for r in outcome.analysis.table.to_dict("records") if not math.isnan(r["lift"])]
    test = metric_test(outcome)
    named = f", {test[0]}" if test else ""
    parts = [f"{r['variant']} {_pct(r['lift'])} (p = {r['p_value']:.3g}{named})" for r in rows]
    code = outcome.result.significance_code if outcome.result is not None else None
    return ", ".join(parts) + (f"; {code}" if code else "")


# ------------------------------------------------------------------------------------------------------ HTML

_STYLE = (
    "body{font-family:system-ui,-apple-system,Segoe UI,sans-serif;max-width:1000px;margin:24px auto;"
    "padding:0 16px;color:#1f2328}table{border-collapse:collapse;margin:6px 0}td,th{padding:2px 8px}"
    "h2{margin-top:28px;border-bottom:1px solid #d0d7de}img{max-width:100%}"
)


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png")
    return buffer.getvalue()


def _figure_html(name: str, png: bytes) -> str:
    data = base64.b64encode(png).decode("ascii")
    title = html.escape(FIGURE_TITLES.get(name, name))
    return f'<figure><img alt="{title}" src="data:image/png;base64,{data}"><figcaption>{title}</figcaption></figure>'


def _outcome_html(outcome: MetricOutcome) -> str:
    if outcome.result is None or outcome.analysis is None:
        return message_html(outcome.error or "No results.", tone="note")
    return results_html(outcome.result, outcome.analysis)


def report_html(report: ExperimentReport, *, page: bool = True, pngs: Mapping[str, bytes] | None = None) -> str:
    """The report as HTML: a whole page (``page=True``) or a fragment for a notebook cell.

    ``pngs``: the figures already rendered, by name (rendering is most of the cost).
    """
    pngs = pngs if pngs is not None else {name: _png(figure) for name, figure in report.figures.items()}
    parts = [summary_html(report.experiment), "<h2>Primary metric</h2>", _outcome_html(report.primary)]
    if test := metric_test(report.primary):
        parts.append(message_html(f"The primary metric counts {test[1]}; its p-value is a {test[0]}."))
    if report.metrics is not None:
        from ..picker.metric_view import metric_results_html

        parts[1:] = ["<h2>Metrics</h2>", metric_results_html(report.metrics, report.exposure_srm)]
    if report.planning is not None:
        parts.append(f"<p>{html.escape(_planning_text(report.planning))}</p>")
    if report.recommendation is not None:
        parts.append(report.recommendation._repr_html_())
    if report.health is not None:
        parts.append(report.health._repr_html_())
    if report.over_time_note:
        parts.append(message_html(report.over_time_note))
    parts += [_figure_html(name, png) for name, png in pngs.items() if name != "novelty"]
    if report.novelty is not None or report.novelty_note:
        from .novelty import SECTION_TITLE

        parts.append(f"<h2>{html.escape(SECTION_TITLE)}</h2>")
        parts += [f"<p>{html.escape(line)}</p>" for line in _novelty_text(report)]
        if "novelty" in pngs:
            parts.append(_figure_html("novelty", pngs["novelty"]))
    for outcome in report.secondary:
        parts += [f"<h2>Secondary: {html.escape(outcome.name)}</h2>", _outcome_html(outcome)]
        if test := metric_test(outcome):
            parts.append(message_html(f"{outcome.name} counts {test[1]}; its p-value is a {test[0]}."))
    stamp = f"Report made {report.created_at:%Y-%m-%d %H:%M} UTC with hoglab."
    parts.append(message_html(stamp))
    body = "\n".join(parts)
    if not page:
        return f"<div>{body}</div>"
    title = html.escape(f"{report.experiment.name}: experiment report")
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{title}</title>'
        f"<style>{_STYLE}</style></head>\n<body>\n{body}\n</body></html>\n"
    )


# ----------------------------------------------------------------------------------------------------- files


def write_report(report: ExperimentReport, directory: str | Path) -> Path:
    """``report.html``, ``figures/<name>.png``, ``variants.csv``, ``results.json`` (and ``over_time.csv``,
    ``novelty.csv`` when the report has them) under ``directory``."""
    out = Path(directory)
    (out / "figures").mkdir(parents=True, exist_ok=True)
    pngs = {name: _png(figure) for name, figure in report.figures.items()}
    for name, png in pngs.items():
        (out / "figures" / f"{name}.png").write_bytes(png)
    primary = report.primary
    if report.metrics is not None:
        report.metrics.to_frame().to_csv(out / "variants.csv", index=False)
        report.metrics.exposures_frame().to_csv(out / "exposures.csv", index=False)
    if primary.analysis is not None:
        primary.analysis.table.to_csv(out / "variants.csv", index=False)
    if report.over_time is not None:
        report.over_time.to_csv(out / "over_time.csv", index=False)
    if report.novelty is not None:
        report.novelty.to_frame().to_csv(out / "novelty.csv", index=False)
    if report.metrics is not None:
        answers = report.metrics.raw
    else:
        answers = {"primary": primary.result.raw if primary.result is not None else None}
        answers |= {o.name: o.result.raw if o.result is not None else None for o in report.secondary}
    (out / "results.json").write_text(json.dumps(answers, indent=2, default=str) + "\n", encoding="utf-8")
    path = out / "report.html"
    path.write_text(report_html(report, pngs=pngs), encoding="utf-8")
    return path
