"""Helpers for PostHog's query-runner cases: events as PostHog's tests write them, one project per case.

``run(results_project, rows, metric, stats_config)`` loads the rows (each distinct id its own person, as PostHog's
``_create_person`` makes them) into a fresh project, creates an experiment on ``FLAG`` over ``START``-``END`` (the
window PostHog's helper gives) and posts the ``ExperimentQuery``; it returns the answer.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pandas as pd

FLAG = "case-flag"
START, END = "2020-01-10T00:00:00Z", "2020-01-15T00:00:00Z"


def at(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def exposure(user: str, variant: str, ts: str, **properties: Any) -> dict[str, Any]:
    properties = {f"$feature/{FLAG}": variant, "$feature_flag_response": variant, "$feature_flag": FLAG,
                  **properties}  # fmt: skip
    return {"event": "$feature_flag_called", "distinct_id": user, "timestamp": at(ts), "properties": properties}


def event(name: str, user: str, ts: str, **properties: Any) -> dict[str, Any]:
    return {"event": name, "distinct_id": user, "timestamp": at(ts),
            "properties": {f"$feature/{FLAG}": "ignored", **properties}}  # fmt: skip


def run(results_project: Any, rows: list[dict[str, Any]], metric: dict[str, Any], stats_config: dict[str, Any],
        *, start: str = START, end: str = END, status: int = 200) -> dict[str, Any]:  # fmt: skip
    frame = pd.DataFrame(rows).assign(person=lambda f: f["distinct_id"])
    project = results_project(frame.sort_values("timestamp", kind="stable").reset_index(drop=True))
    experiment = project.create(name="posthog case", feature_flag_key=FLAG, start_date=start, end_date=end,
                                stats_config=stats_config)  # fmt: skip
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
    response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert response.status_code == status, response.text
    return dict(response.json())


def arms(answer: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The baseline and the first other variant."""
    return answer["baseline"], answer["variant_results"][0]


def purchase(user: str, ts: str, amount: float) -> dict[str, Any]:
    return event("purchase", user, ts, amount=amount)


def correlated(samples: int = 60, *, pre_events: bool = True) -> list[dict[str, Any]]:
    """PostHog's ``_create_correlated_data``: pre amount i + 1, post amount the same plus the treatment's 1."""
    rows = []
    for variant, effect in (("control", 0), ("test", 1)):
        for i in range(samples):
            user = f"{FLAG}_{variant}_{i}"
            if pre_events:
                rows.append(purchase(user, "2020-01-09T12:00:00Z", i + 1))
            rows += [exposure(user, variant, "2020-01-10T12:00:00Z"),
                     purchase(user, "2020-01-10T13:00:00Z", i + 1 + effect)]
    return rows
