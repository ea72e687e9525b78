"""Breakdowns of metric results (``breakdownFilter``): PostHog's ``BreakdownInjector`` rules, checked against a
pandas restatement of seeded events.

Each unit's breakdown value comes from its *first exposure event* (a unit exposed on Chrome, then Safari, counts
under Chrome only; no property: ``$$_posthog_breakdown_null_$$``); person properties are the person's. Every
breakdown value gets the same statistics as the whole (``hoglab.stats.posthog.experiment_results`` on the restated
sums of that value), the top level is all values together, ``breakdown_limit`` keeps the values with the most units
and sums the rest into ``$$_posthog_breakdown_other_$$``, and outlier percentiles and CUPED apply per value.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import CACHE_FIELDS, assert_valid

from .metric_cases import END, START, at, event

pytestmark = pytest.mark.xdist_group("metric-experiments")

NULL, OTHER = "$$_posthog_breakdown_null_$$", "$$_posthog_breakdown_other_$$"
BROWSERS = ("Chrome", "Safari", "Firefox", "Edge", None)
PLANS = ("free", "pro")
BY_BROWSER = {"breakdowns": [{"property": "$browser", "type": "event"}]}
FLAGS = {"plain": "bd-plain", "cuped": "bd-cuped"}
SUM = {"kind": "ExperimentMetric", "metric_type": "mean",
       "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"}}  # fmt: skip


def _events(seed: int = 24, persons: int = 420) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    t0 = at(START) + timedelta(hours=2)
    for k in range(persons):
        user = f"p{k}"
        variant = ("control", "test")[int(rng.integers(2))]
        browser = BROWSERS[int(rng.choice(5, p=[0.4, 0.25, 0.15, 0.12, 0.08]))]
        seen = t0 + timedelta(minutes=int(rng.integers(0, 3 * 24 * 60)))
        props: dict[str, Any] = {"$set": {"plan": PLANS[int(rng.integers(2))]}}
        if browser is not None:
            props["$browser"] = browser
        later = rng.random() < 0.3  # a later exposure from another browser: the first one decides
        for flag in FLAGS.values():  # each experiment has its own flag; the same persons see both
            called = {"$feature_flag": flag, "$feature_flag_response": variant}
            rows.append({"event": "$feature_flag_called", "distinct_id": user, "timestamp": seen,
                         "properties": {**called, **props}})  # fmt: skip
            if later:
                rows.append({"event": "$feature_flag_called", "distinct_id": user,
                             "timestamp": seen + timedelta(hours=3), "properties": {**called, "$browser": "Opera"}})
        before = rng.poisson(1.5)
        for _ in range(before):  # pre-exposure purchases, which predict the post ones (CUPED)
            rows.append(event("purchase", user, (seen - timedelta(days=float(rng.uniform(0.1, 10)))).isoformat(),
                              amount=10.0))  # fmt: skip
        for _ in range(rng.poisson(0.5 + before * (0.9 if variant == "control" else 1.1))):
            amount = round(float(rng.gamma(2, 12)), 2)
            rows.append(event("purchase", user, (seen + timedelta(hours=float(rng.uniform(0.1, 40)))).isoformat(),
                              amount=amount))  # fmt: skip
    frame = pd.DataFrame(rows).assign(person=lambda f: f["distinct_id"])
    return frame.sort_values("timestamp", kind="stable").reset_index(drop=True)


@pytest.fixture(scope="module")
def setup(results_project) -> dict[str, Any]:
    events = _events()
    project = results_project(events)
    ids = {}
    for name, stats in (("plain", {"method": "frequentist"}),
                        ("cuped", {"method": "frequentist", "cuped": {"enabled": True, "lookback_days": 14}})):
        ids[name] = project.create(name=name, feature_flag_key=FLAGS[name], start_date=START, end_date=END,
                                   stats_config=stats)["id"]  # fmt: skip
    return {"project": project, "events": events, "ids": ids}


def _query(setup: dict[str, Any], metric: dict[str, Any], which: str = "plain") -> dict[str, Any]:
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": setup["ids"][which], "metric": metric}}
    response = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _persons(events: pd.DataFrame, lookback_days: int | None = None) -> pd.DataFrame:
    """Per exposed person: variant, browser and plan of the first exposure, post value, pre-window covariate."""
    props = events["properties"]
    calls = events[(events["event"] == "$feature_flag_called")
                   & (props.map(lambda p: p.get("$feature_flag")) == FLAGS["plain"])].assign(
        variant=props.map(lambda p: p.get("$feature_flag_response")), browser=props.map(lambda p: p.get("$browser")))
    # The first exposure row as it is (groupby().first() would skip a missing browser for a later one's).
    first = calls.sort_values("timestamp", kind="stable").drop_duplicates("person").set_index("person")
    plan = events.assign(plan=props.map(lambda p: (p.get("$set") or {}).get("plan"))).dropna(subset=["plan"])
    out = pd.DataFrame({"variant": first["variant"], "exposed": first["timestamp"],
                        "browser": first["browser"].fillna(NULL),
                        "plan": plan.groupby("person")["plan"].last().reindex(first.index)})  # fmt: skip
    buys = events[events["event"] == "purchase"].assign(amount=props.map(lambda p: p.get("amount")))
    buys = buys.join(out["exposed"], on="person")
    after = buys[(buys["timestamp"] >= buys["exposed"]) & (buys["timestamp"] < at(END))]
    out["value"] = after.groupby("person")["amount"].sum().reindex(out.index, fill_value=0.0)
    if lookback_days:
        pre = buys[(buys["timestamp"] >= buys["exposed"] - timedelta(days=lookback_days))
                   & (buys["timestamp"] < buys["exposed"])]  # fmt: skip
        out["covariate"] = pre.groupby("person")["amount"].sum().reindex(out.index, fill_value=0.0)
    return out


def _stats(group: pd.DataFrame, key: str) -> ExperimentStats:
    x = group["value"].astype(float)
    extra = {}
    if "covariate" in group:
        c = group["covariate"].astype(float)
        extra = {"covariate_sum": float(c.sum()), "covariate_sum_squares": float((c * c).sum()),
                 "covariate_sum_product": float((x * c).sum())}  # fmt: skip
    return ExperimentStats(key, len(group), float(x.sum()), float((x * x).sum()), **extra)


def _check(arms: list[dict[str, Any]], persons: pd.DataFrame, *, cuped: bool = False) -> None:
    """Each arm's sums equal the restated ones, and its test is PostHog's on those sums."""
    by_variant = {key: _stats(persons[persons["variant"] == key], key) for key in ("control", "test")}
    for arm in arms:
        mine = by_variant[arm["key"]]
        assert arm["number_of_samples"] == mine.number_of_samples
        assert arm["sum"] == pytest.approx(mine.sum, rel=1e-9)
        assert arm["sum_squares"] == pytest.approx(mine.sum_squares, rel=1e-9)
        if cuped:
            assert arm["covariate_sum"] == pytest.approx(mine.covariate_sum, rel=1e-9)
            assert arm["covariate_sum_product"] == pytest.approx(mine.covariate_sum_product, rel=1e-9)
    _, [expected] = experiment_results("mean", by_variant["control"], [by_variant["test"]],
                                       stats_config={"method": "frequentist"}, cuped=cuped)  # fmt: skip
    served = arms[1]
    if expected.p_value is None:
        assert served.get("p_value") is None
    else:
        assert served["p_value"] == pytest.approx(expected.p_value, rel=1e-9)
        assert served["confidence_interval"] == pytest.approx(list(expected.confidence_interval), rel=1e-9)


def test_results_by_browser_equal_the_restatement(setup):
    answer = _query(setup, {**SUM, "breakdownFilter": BY_BROWSER})
    persons = _persons(setup["events"])
    assert_valid({k: v for k, v in answer.items() if k not in ("metric", "breakdown_results")},
                 "ExperimentQueryResponse", drop=(*CACHE_FIELDS, "query_status", "timings"))  # fmt: skip
    _check([answer["baseline"], *answer["variant_results"]], persons)  # the top level: every value together
    values = [r["breakdown_value"] for r in answer["breakdown_results"]]
    assert values == sorted([[v] for v in persons["browser"].unique()])
    assert "Opera" not in {v[0] for v in values}  # a later exposure's browser never decides
    for result in answer["breakdown_results"]:
        (value,) = result["breakdown_value"]
        _check([result["baseline"], *result["variants"]], persons[persons["browser"] == value])


def test_two_properties_and_a_person_property(setup):
    metric = {**SUM, "breakdownFilter": {"breakdowns": [{"property": "$browser"},
                                                        {"property": "plan", "type": "person"}]}}  # fmt: skip
    answer = _query(setup, metric)
    persons = _persons(setup["events"])
    got = {tuple(r["breakdown_value"]): r for r in answer["breakdown_results"]}
    assert set(got) == set(persons.groupby(["browser", "plan"]).groups)
    for (browser, plan), result in got.items():
        chosen = persons[(persons["browser"] == browser) & (persons["plan"] == plan)]
        _check([result["baseline"], *result["variants"]], chosen)


def test_breakdown_limit_sums_the_rest_into_other(setup):
    answer = _query(setup, {**SUM, "breakdownFilter": {**BY_BROWSER, "breakdown_limit": 2}})
    persons = _persons(setup["events"])
    top = persons["browser"].value_counts()
    kept = sorted(top.index[:2])
    assert top.iloc[1] > top.iloc[2]  # the data rank them without ties
    assert [r["breakdown_value"] for r in answer["breakdown_results"]] == [[v] for v in kept] + [[OTHER]]
    rest = answer["breakdown_results"][-1]
    _check([rest["baseline"], *rest["variants"]], persons[~persons["browser"].isin(kept)])
    samples = sum(r["baseline"]["number_of_samples"] for r in answer["breakdown_results"])
    assert samples == answer["baseline"]["number_of_samples"]


def test_cuped_runs_per_breakdown_value(setup):
    answer = _query(setup, {**SUM, "breakdownFilter": BY_BROWSER}, "cuped")
    persons = _persons(setup["events"], lookback_days=14)
    _check([answer["baseline"], *answer["variant_results"]], persons, cuped=True)
    for result in answer["breakdown_results"]:
        (value,) = result["breakdown_value"]
        _check([result["baseline"], *result["variants"]], persons[persons["browser"] == value], cuped=True)


def test_outliers_are_capped_per_breakdown_value(setup):
    metric = {**SUM, "upper_bound_percentile": 0.9, "breakdownFilter": BY_BROWSER}
    answer = _query(setup, metric)
    persons = _persons(setup["events"])
    for result in answer["breakdown_results"]:
        (value,) = result["breakdown_value"]
        chosen = persons[persons["browser"] == value].copy()
        chosen["value"] = chosen["value"].clip(upper=np.quantile(chosen["value"], 0.9))
        _check([result["baseline"], *result["variants"]], chosen)


def test_a_funnel_breaks_down_by_the_exposure_too(setup):
    metric = {"kind": "ExperimentMetric", "metric_type": "funnel",
              "series": [{"kind": "EventsNode", "event": "purchase"}], "breakdownFilter": BY_BROWSER}  # fmt: skip
    answer = _query(setup, metric)
    persons = _persons(setup["events"])
    for result in answer["breakdown_results"]:
        (value,) = result["breakdown_value"]
        chosen = persons[persons["browser"] == value]
        for arm in (result["baseline"], *result["variants"]):
            rows = chosen[chosen["variant"] == arm["key"]]
            assert (arm["number_of_samples"], arm["sum"]) == (len(rows), int((rows["value"] > 0).sum()))
