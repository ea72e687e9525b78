"""README.md's pandas pipeline runs as written against a service holding the demo data, and its weekly numbers
are the demo generator's own purchases (pandas over ``generate_events``, not read back through the service)."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pandas as pd
import pytest

from hoglab.server.demo import default_end, generate_events, seed

README = Path(__file__).parents[1] / "README.md"
USERS = 600
ENV = ("HOGLAB_HOST", "HOGLAB_API_KEY", "HOGLAB_PROJECT_ID", "POSTHOG_HOST", "POSTHOG_PERSONAL_API_KEY",
       "POSTHOG_PROJECT_ID")  # fmt: skip


def _pipeline() -> str:
    section = README.read_text().split("## A pandas pipeline", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "README.md has no python block under 'A pandas pipeline'"
    return match.group(1)


def _expected_weekly(end) -> pd.DataFrame:
    events = generate_events(end=end, users=USERS).to_pandas()
    props = events["properties"].map(orjson.loads)
    identifies = events[events.event == "$identify"]
    plan_of = {row.distinct_id: props[i]["$set"]["plan"] for i, row in identifies.iterrows()}
    buys = events[events.event == "purchase"].assign(
        plan=lambda d: d.distinct_id.map(plan_of), price=props[events.event == "purchase"].map(lambda p: p["price"])
    )
    week = buys.timestamp.dt.tz_convert("UTC").dt.normalize()
    buys = buys.assign(week=week - pd.to_timedelta(week.dt.day_of_week, unit="D"))
    return buys.groupby(["week", "plan"]).agg(buyers=("distinct_id", "nunique"), revenue=("price", "sum"))


def test_the_readme_pipeline_runs_as_written(make_project, monkeypatch, capsys) -> None:
    project = make_project()
    end = default_end()
    seed(project.service.state, project.record, users=USERS, end=end)
    for name in ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOGLAB_HOST", project.service.url)
    monkeypatch.setenv("HOGLAB_API_KEY", project.key)  # reaches this project only: no project id needed

    namespace: dict[str, object] = {}
    try:
        exec(compile(_pipeline(), str(README), "exec"), namespace)
    finally:
        if "client" in namespace:
            namespace["client"].close()  # type: ignore[attr-defined]

    weekly = namespace["weekly"]
    assert isinstance(weekly, pd.DataFrame)
    expected = _expected_weekly(end)
    assert len(expected) >= 5
    got = weekly.reset_index()
    got["timestamp"] = got["timestamp"].dt.tz_convert("UTC")
    got = got.set_index(["timestamp", "plan"]).rename_axis(["week", "plan"])
    assert got["buyers"].astype(int).to_dict() == expected["buyers"].to_dict()
    assert got["revenue"].to_numpy() == pytest.approx(expected["revenue"].to_numpy())

    steps = namespace["steps"]
    assert isinstance(steps, pd.DataFrame)
    plans = set(steps["breakdown_value"])
    assert {"free", "pro", "enterprise"} <= plans
    first = steps[steps["name"] == "$pageview"]
    assert (first["conversion_rate"] == 1).all()
    printed = capsys.readouterr().out
    assert "buyers" in printed and "enterprise" in printed
