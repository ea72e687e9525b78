"""What the experiment picker (and the experiment report) shows of any experiment, as HTML: its summary, and a
message in place of results.

The results are ``legacy_view.py`` (a legacy experiment's) and ``metric_view.py`` (a metric experiment's).
"""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

import pandas as pd

from ...client._metric_queries import is_metric_experiment
from ...schema import Experiment
from ..analysis import variant_rollout
from .metric_view import metrics_line

__all__ = ["date_text", "message_html", "summary_html"]

_STATUS_COLOURS = {"draft": "#6e7781", "running": "#0969da", "complete": "#1a7f37"}


def message_html(text: str, *, tone: str = "note") -> str:
    """A message in place of the results: ``tone`` is ``"note"`` (grey) or ``"error"`` (vermillion)."""
    colour = "#cf222e" if tone == "error" else "#57606a"
    return f'<p style="color:{colour};margin:4px 0">{html.escape(text)}</p>'


def date_text(value: Any) -> str:
    """A moment as ``YYYY-MM-DD HH:MM`` and its zone; a dash for none."""
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
    not_ended = "not started" if status == "draft" else "running"
    end = date_text(experiment.end_date) if experiment.end_date else not_ended
    rows = [
        ("feature flag", f"<code>{esc(experiment.feature_flag_key)}</code>{active}"),
        ("variants", variants),
        ("dates", f"{date_text(experiment.start_date)} → {esc(end)}"),
        _metric_row(experiment),
    ]
    if experiment.description:
        rows.append(("description", esc(experiment.description)))
    body = "".join(f'<tr><th style="text-align:left;padding-right:12px">{k}</th><td>{v}</td></tr>' for k, v in rows)
    title = f"<h4 style='margin:6px 0'>{esc(experiment.name)} <small>#{experiment.id}</small> {badge}</h4>"
    return f"{title}<table>{body}</table>"
