"""``client.experiments.history()`` against a real hoglab service, and against a PostHog-shaped REMOTE mock.

A project holds four experiments over generated events: two concluded (one shipped), one running, one draft, and a
legacy (filters) funnel experiment. Every lift and standard error of the history is checked against a numpy
restatement from the generated units (relative lift, delta method); then the same experiments, as the service
answered them, are served by a mock of PostHog (the remote: its listing paged two at a time with PostHog's extra
members) and the history read there is the same frame.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from clienttesting import HOST, KEY, Remote, loaded_project

import hoglab
from hoglab.client import HISTORY_COLUMNS, Client

START = datetime(2025, 4, 7, 9, tzinfo=UTC)
# (flag, name, {variant: conversion rate}, mean amount, units per variant, days after START it starts)
PLANS = [
    ("hist-button", "Checkout button", {"control": 0.30, "test": 0.36}, 40.0, 260, 0),
    ("hist-copy", "Pricing copy", {"control": 0.25, "a": 0.22, "b": 0.27}, 50.0, 200, 10),
    ("hist-onboarding", "Onboarding", {"control": 0.20, "test": 0.21}, 30.0, 220, 20),
]
LEGACY_FLAG = "hist-legacy"


def _events() -> tuple[list[dict[str, Any]], pd.DataFrame]:
    rng = np.random.default_rng(37)
    lines: list[dict[str, Any]] = []
    units: list[dict[str, Any]] = []
    for flag, _, rates, amount, n, offset in [*PLANS, (LEGACY_FLAG, "", {"control": 0.3, "test": 0.4}, 1.0, 150, 30)]:
        for variant, rate in rates.items():
            for k in range(n):
                person = f"{flag}-{variant}-{k}"
                seen = START + timedelta(days=offset, hours=int(rng.integers(1, 100)))
                lines.append({"event": "$feature_flag_called", "distinct_id": person, "timestamp": seen.isoformat(),
                              "properties": {"$feature_flag": flag, "$feature_flag_response": variant}})  # fmt: skip
                if flag == LEGACY_FLAG:
                    lines.append({"event": "$pageview", "distinct_id": person, "timestamp": seen.isoformat(),
                                  "properties": {f"$feature/{flag}": variant}})  # fmt: skip
                bought = bool(rng.random() < rate)
                value = round(float(rng.gamma(2.0, amount / 2)), 2) if bought else 0.0
                if bought:
                    at = (seen + timedelta(hours=2)).isoformat()
                    lines.append({"event": "purchase", "distinct_id": person, "timestamp": at,
                                  "properties": {"amount": value, f"$feature/{flag}": variant}})  # fmt: skip
                units.append({"flag": flag, "variant": variant, "converted": float(bought), "amount": value})
    return lines, pd.DataFrame(units)


class Recorder(httpx.BaseTransport):
    """Passes every request to the real service and keeps each answer (to serve the same ones from the mock)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.answers: list[tuple[httpx.Request, Any]] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        response.read()
        self.answers.append((request, json.loads(response.content) if response.content else None))
        return response

    def close(self) -> None:
        self.inner.close()


@pytest.fixture(scope="module")
def history(hoglab_service: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    lines, units = _events()
    project, key = loaded_project(hoglab_service, "experiment history", lines, tmp_path_factory.mktemp("history"))
    with Client(hoglab_service.url, key, project, progress=False) as client:
        ids = {}
        for flag, name, rates, _, _, offset in PLANS:
            made = client.experiments.create(
                name, flag, variants=list(rates), start=START + timedelta(days=offset),
                metrics=[hoglab.funnel_metric(["purchase"], name="Conversion")],
                metrics_secondary=[hoglab.mean_metric("purchase", math="sum", math_property="amount", name="Revenue")],
                stats_config="frequentist" if flag == "hist-copy" else None,
            )  # fmt: skip
            ids[flag] = made.id
        client.experiments.create("Never launched", "hist-draft", metrics=[hoglab.funnel_metric(["purchase"])])
        legacy = client.experiments.create(
            "Legacy checkout", LEGACY_FLAG, start=START + timedelta(days=30),
            filters={"insight": "FUNNELS", "events": [{"id": "$pageview", "order": 0}, {"id": "purchase", "order": 1}]},
        )  # fmt: skip
        ids[LEGACY_FLAG] = legacy.id
        client.experiments.update(ids["hist-button"], end_date=START + timedelta(days=8))
        shipped = client.experiments.ship_variant(ids["hist-button"], "test", conclusion="won")
        assert shipped.feature_flag is not None and shipped.end_date == START + timedelta(days=8)
        client.experiments.update(ids["hist-copy"], end_date=START + timedelta(days=18), conclusion="lost")
    recorder = Recorder()
    with Client(hoglab_service.url, key, project, transport=recorder, progress=False) as client:
        frame = client.experiments.history()
    return {"frame": frame, "units": units, "ids": ids, "recorder": recorder, "project": project}


def _expected_lift(t: pd.Series, c: pd.Series, proportion: bool) -> tuple[float, float]:
    """The relative lift and its delta-method SE, restated with numpy (proportions: variance p(1 − p))."""
    ddof = 0 if proportion else 1
    mt, mc = t.mean(), c.mean()
    vt, vc = t.var(ddof=ddof), c.var(ddof=ddof)
    variance = vt / (len(t) * mc**2) + mt**2 * vc / (len(c) * mc**4)
    return mt / mc - 1, math.sqrt(variance)


def test_history_is_one_row_per_experiment_metric_and_arm_with_real_dtypes(history: dict[str, Any]) -> None:
    df = history["frame"]
    assert list(df.columns) == HISTORY_COLUMNS
    assert str(df["start_date"].dtype) == "datetime64[us, UTC]" and str(df["units"].dtype) == "Int64"
    assert str(df["shipped"].dtype) == "boolean" and str(df["experiment"].dtype) == "string"
    assert "Never launched" not in set(df["experiment"])  # drafts have no results
    # Oldest first; each metric's baseline first.
    order = df.drop_duplicates("experiment_id")["experiment"].tolist()
    assert order == ["Checkout button", "Pricing copy", "Onboarding", "Legacy checkout"]
    copy = df[(df["experiment"] == "Pricing copy") & (df["metric"] == "Conversion")]
    assert copy["variant"].tolist() == ["control", "a", "b"]
    assert copy["estimate"].isna().tolist() == [True, False, False]
    status = df.drop_duplicates("experiment_id").set_index("experiment")["status"].to_dict()
    assert status == {"Checkout button": "complete", "Pricing copy": "complete", "Onboarding": "running",
                      "Legacy checkout": "running"}  # fmt: skip
    assert df["error"].isna().all(), df.loc[df["error"].notna(), "error"].unique()


def test_history_reads_the_decision_and_what_shipped(history: dict[str, Any]) -> None:
    df = history["frame"].drop_duplicates(["experiment", "variant"]).set_index(["experiment", "variant"])
    assert df.loc[("Checkout button", "test"), "shipped"] and not df.loc[("Checkout button", "control"), "shipped"]
    assert df.loc[("Checkout button", "test"), "decision"] == "won"
    assert df.loc[("Pricing copy", "a"), "decision"] == "lost" and not df.loc[("Pricing copy", "a"), "shipped"]
    assert pd.isna(df.loc[("Onboarding", "test"), "decision"])
    assert df.loc[("Checkout button", "test"), "end_date"] == pd.Timestamp(START + timedelta(days=8))


def test_every_lift_and_standard_error_is_the_numpy_restatement(history: dict[str, Any]) -> None:
    df, units = history["frame"], history["units"]
    for flag, name, rates, _, _, _ in PLANS:
        mine = units[units["flag"] == flag]
        control = mine[mine["variant"] == "control"]
        for metric, column, proportion in (("Conversion", "converted", True), ("Revenue", "amount", False)):
            rows = df[(df["experiment"] == name) & (df["metric"] == metric)].set_index("variant")
            assert list(rows.index) == list(rates)
            for variant in rates:
                arm = mine[mine["variant"] == variant]
                assert rows.loc[variant, "units"] == len(arm) and rows.loc[variant, "control_units"] == len(control)
                assert rows.loc[variant, "value"] == pytest.approx(arm[column].mean(), rel=1e-9)
                if variant == "control":
                    continue
                lift, se = _expected_lift(arm[column], control[column], proportion)
                assert rows.loc[variant, "estimate"] == pytest.approx(lift, rel=1e-9)
                assert rows.loc[variant, "standard_error"] == pytest.approx(se, rel=1e-9)
    legacy = df[df["experiment"] == "Legacy checkout"].set_index("variant")
    assert legacy["kind"].unique().tolist() == ["legacy"] and legacy.loc["test", "metric"] == "$pageview → purchase"
    mine = units[units["flag"] == LEGACY_FLAG]
    lift, se = _expected_lift(mine.loc[mine["variant"] == "test", "converted"],
                              mine.loc[mine["variant"] == "control", "converted"], True)  # fmt: skip
    assert legacy.loc["test", "estimate"] == pytest.approx(lift, rel=1e-9)
    assert legacy.loc["test", "standard_error"] == pytest.approx(se, rel=1e-9)


def test_the_history_feeds_the_meta_analysis(history: dict[str, Any]) -> None:
    fit = hoglab.stats.meta_analysis(history["frame"], metric="Conversion")
    assert fit.experiments == 4 and fit.left_out == 3  # three control rows without a lift
    assert fit.winners_curse is not None and fit.winners_curse.shipped == 1


def _posthog_mock(recorded: list[tuple[httpx.Request, Any]], project: int) -> Remote:
    """PostHog (the remote) answering what the service answered: the listing re-paged two at a time with
    PostHog's ``next`` and extra members, each ``ExperimentQuery`` and legacy result as recorded."""
    local = f"/api/projects/{project}/"
    items: list[dict[str, Any]] = []
    queries: dict[tuple[Any, Any], Any] = {}
    results: dict[str, Any] = {}
    for request, body in recorded:
        path = request.url.path.replace(local, "/api/projects/2/")
        if request.method == "GET" and path == "/api/projects/2/experiments/":
            items += [item for item in body["results"] if item["id"] not in {i["id"] for i in items}]
        elif request.method == "POST" and path == "/api/projects/2/query/":
            query = json.loads(request.content)["query"]
            queries[(query["experiment_id"], query["metric"]["uuid"])] = body
        elif request.method == "GET" and path.endswith("/results/"):
            results[path] = body
    items = [{**item, "status": "running", "user_access_level": "editor", "_create_in_folder": None}
             for item in items]  # fmt: skip

    def listing(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("archived") == "true":
            return httpx.Response(200, json={"count": 0, "next": None, "previous": None, "results": []})
        offset, limit = int(request.url.params.get("offset", 0)), 2
        page = items[offset : offset + limit]
        after = offset + limit
        following = f"{HOST}/api/projects/2/experiments/?limit={limit}&offset={after}" if after < len(items) else None
        return httpx.Response(200, json={"count": len(items), "next": following, "previous": None, "results": page})

    def query(request: httpx.Request) -> httpx.Response:
        body = json.loads(request.content)["query"]
        return httpx.Response(200, json=queries[(body["experiment_id"], body["metric"]["uuid"])])

    def result(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=results[request.url.path])

    remote = Remote()
    remote.add("GET", "/api/projects/2/experiments/", listing)
    remote.add("POST", "/api/projects/2/query/", query)
    for path in results:
        remote.add("GET", path, result)
    return remote


def test_the_same_experiments_from_posthog_give_the_same_frame(history: dict[str, Any]) -> None:
    remote = _posthog_mock(history["recorder"].answers, history["project"])
    with Client(HOST, KEY, 2, transport=httpx.MockTransport(remote.handler), progress=False) as client:
        frame = client.experiments.history()
    pd.testing.assert_frame_equal(frame, history["frame"])
    pages = [r.url.params.get("offset", "0") for r in remote.requests if r.url.path.endswith("/experiments/")
             and r.url.params.get("archived") is None]  # fmt: skip
    assert pages == ["0", "2", "4"]  # five experiments, two a page (the draft is listed, then left out)


def test_choices_are_checked_and_narrow_the_history(history: dict[str, Any]) -> None:
    remote = _posthog_mock(history["recorder"].answers, history["project"])
    with Client(HOST, KEY, 2, transport=httpx.MockTransport(remote.handler), progress=False) as client:
        running = client.experiments.history(status="running", roles="primary")
        with pytest.raises(hoglab.InvalidArgument, match="status"):
            client.experiments.history(status="drafts")
    assert set(running["experiment"]) == {"Onboarding", "Legacy checkout"}
    assert set(running["role"]) == {"primary"}
