"""Group analytics fed by the official ``posthog`` SDK, every number checked against pandas.

The SDK sends companies (``group_identify``) and events tagged with them (``capture(..., groups=...)``) to the
live service; trends, funnels, retention and lifecycle by company are then compared with a pandas restatement
of the events the test generated (not read back). A flag rolled out by company is asked of the service
(``feature_enabled(..., groups=..., group_properties=...)``) and evaluated by the SDK itself from
``/flags/definitions`` (local evaluation), both against an independent restatement of PostHog's hashing on the
company key. Finally a company-randomised experiment: the SDK's exposures and purchases, read back as raw rows,
are aggregated per company in pandas and compared with ``ExperimentQuery``'s sufficient statistics.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta

import numpy as np
import pandas as pd
import posthog
import pytest

from hoglab.server.hogql import compile_hogql
from posthog_openapi import assert_valid

pytestmark = [pytest.mark.xdist_group("flags_service"), pytest.mark.filterwarnings("ignore::DeprecationWarning")]

DAY0 = (datetime.now(UTC) - timedelta(days=20)).replace(hour=0, minute=0, second=0, microsecond=0)
COMPANIES = [f"co-{i}" for i in range(24)]
PLANS = {c: ("pro" if i % 3 == 0 else "free") for i, c in enumerate(COMPANIES)}
USERS = [f"user-{i}" for i in range(96)]


def _company(user: str) -> str:
    return COMPANIES[int(user.split("-")[1]) % len(COMPANIES)]


def _events() -> pd.DataFrame:
    """The events the SDK sends: deterministic, spread over 14 days, some without a company."""
    rng = np.random.default_rng(25)
    rows = []
    for user in USERS:
        company = _company(user)
        active = sorted(rng.choice(14, size=int(rng.integers(1, 8)), replace=False))
        for day in active:
            moment = DAY0 + timedelta(days=int(day), hours=int(rng.integers(0, 20)), minutes=int(rng.integers(0, 60)))
            rows.append({"event": "$pageview", "distinct_id": user, "timestamp": moment, "company": company})
        if rng.random() < 0.5:
            signup = DAY0 + timedelta(days=int(rng.integers(0, 10)), hours=int(rng.integers(0, 20)))
            rows.append({"event": "signup", "distinct_id": user, "timestamp": signup, "company": company})
            if rng.random() < 0.5:
                # At most 10 days later: still in the past (a time in the future would be stored as "now").
                later = signup + timedelta(days=int(rng.integers(0, 11)), minutes=5)
                rows.append({"event": "purchase", "distinct_id": user, "timestamp": later, "company": company})
        # An event without a company: counts for persons, never for companies.
        rows.append({"event": "$pageview", "distinct_id": user, "timestamp": DAY0 + timedelta(days=3), "company": None})
    return pd.DataFrame(rows).sort_values("timestamp").reset_index(drop=True)


EVENTS = _events()


@pytest.fixture(scope="module")
def project(hoglab_service):
    store = hoglab_service.state.store
    record = store.projects.create("groups end to end")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="groups")
    import httpx

    http = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    sdk = posthog.Posthog(record.api_token, host=hoglab_service.url, capture_mode="v0", max_retries=0,
                          feature_flags_request_max_retries=0)  # fmt: skip
    for company in COMPANIES:
        sdk.group_identify("company", company, {"name": company.upper(), "plan": PLANS[company]},
                           distinct_id="admin")  # fmt: skip
    for row in EVENTS.itertuples():
        groups = {"company": row.company} if isinstance(row.company, str) else None
        sdk.capture(row.event, distinct_id=row.distinct_id, timestamp=row.timestamp, groups=groups)
    sdk.flush()
    sdk.shutdown()
    yield record, key, http
    http.close()


def _query(http, project_id: int, query: dict) -> dict:
    answer = http.post(f"/api/projects/{project_id}/query/", json={"query": query})
    assert answer.status_code == 200, answer.text
    return answer.json()


def _range(days: int = 14) -> dict:
    return {"date_from": DAY0.date().isoformat(), "date_to": (DAY0 + timedelta(days=days - 1)).date().isoformat()}


def test_group_types_and_groups_as_the_sdk_sent_them(project) -> None:
    record, _, http = project
    types = http.get(f"/api/projects/{record.id}/groups_types/").json()
    assert [(t["group_type"], t["group_type_index"]) for t in types] == [("company", 0)]
    for item in types:
        assert_valid(item, "GroupType")
    page = http.get(f"/api/projects/{record.id}/groups/", params={"group_type_index": 0}).json()
    assert_valid(page, "PaginatedGroupList")
    assert {g["group_key"]: g["group_properties"]["plan"] for g in page["results"]} == PLANS


def test_trends_by_company_equal_pandas(project) -> None:
    record, _, http = project
    query = {"kind": "TrendsQuery", "series": [{"kind": "EventsNode", "event": "$pageview", "math": "unique_group",
             "math_group_type_index": 0}], "dateRange": _range(), "interval": "day"}  # fmt: skip
    answer = _query(http, record.id, query)
    assert_valid(answer, "TrendsQueryResponse")
    views = EVENTS[(EVENTS.event == "$pageview") & EVENTS.company.notna()]
    expected = views.groupby(views.timestamp.dt.date).company.nunique()
    days = [(DAY0 + timedelta(days=i)).date() for i in range(14)]
    assert answer["results"][0]["data"] == [float(expected.get(day, 0)) for day in days]
    # Broken down by the company's plan (a group property), persons still counted per company.
    query["breakdownFilter"] = {"breakdown": "plan", "breakdown_type": "group", "breakdown_group_type_index": 0}
    query["trendsFilter"] = {"display": "ActionsTable"}
    answer = _query(http, record.id, query)
    by_plan = views.assign(plan=views.company.map(PLANS)).groupby("plan").company.nunique()
    assert {r["breakdown_value"]: r["aggregated_value"] for r in answer["results"]} == by_plan.astype(float).to_dict()


def test_funnel_by_company_equals_pandas(project) -> None:
    record, _, http = project
    query = {"kind": "FunnelsQuery", "series": [{"kind": "EventsNode", "event": "signup"},
             {"kind": "EventsNode", "event": "purchase"}], "aggregation_group_type_index": 0,
             "dateRange": _range(20), "funnelsFilter": {"funnelWindowInterval": 7}}  # fmt: skip
    answer = _query(http, record.id, query)
    assert_valid(answer, "FunnelsQueryResponse")
    signups = EVENTS[EVENTS.event == "signup"].groupby("company").timestamp.apply(list)
    purchases = EVENTS[EVENTS.event == "purchase"].groupby("company").timestamp.apply(list)
    window = timedelta(days=7)
    converted = sum(
        any(s <= p <= s + window for s in starts for p in purchases.get(company, []))
        for company, starts in signups.items()
    )
    assert [step["count"] for step in answer["results"]] == [len(signups), converted]
    # The persons' funnel differs: the companies' is not a relabelled persons' one.
    persons = _query(http, record.id, {**query, "aggregation_group_type_index": None})
    assert persons["results"][0]["count"] == EVENTS[EVENTS.event == "signup"].distinct_id.nunique()


def test_retention_by_company_equals_pandas(project) -> None:
    record, _, http = project
    query = {"kind": "RetentionQuery", "aggregation_group_type_index": 0, "dateRange": _range(),
             "retentionFilter": {"period": "Day", "totalIntervals": 5, "retentionType": "retention_first_time",
                                 "targetEntity": {"id": "signup", "type": "events"},
                                 "returningEntity": {"id": "$pageview", "type": "events"}}}  # fmt: skip
    answer = _query(http, record.id, query)
    assert_valid(answer, "RetentionQueryResponse")
    grouped = EVENTS[EVENTS.company.notna()].assign(day=lambda d: (d.timestamp - DAY0).dt.days)
    first = grouped[grouped.event == "signup"].groupby("company").day.min()
    views = grouped[grouped.event == "$pageview"].groupby("company").day.apply(set)
    for cohort in answer["results"]:
        start = (datetime.fromisoformat(cohort["date"]) - DAY0).days
        members = first[first == start].index
        expected = [len(members)] + [
            sum(1 for c in members if start + k in views.get(c, set())) if start + k < 14 else 0 for k in range(1, 5)
        ]
        assert [v["count"] for v in cohort["values"]] == expected, cohort["date"]


def test_lifecycle_and_stickiness_by_company_equal_pandas(project) -> None:
    record, _, http = project
    answer = _query(http, record.id, {"kind": "StickinessQuery", "dateRange": _range(), "series": [
        {"kind": "EventsNode", "event": "$pageview", "math": "unique_group", "math_group_type_index": 0}]})
    grouped = EVENTS[(EVENTS.event == "$pageview") & EVENTS.company.notna()]
    active = grouped.groupby("company").timestamp.apply(lambda t: t.dt.date.nunique())
    assert answer["results"][0]["data"] == [int((active == n).sum()) for n in range(1, 15)]
    # Lifecycle: a company is new in the day of its first $groupidentify (all of them today, after the range).
    lifecycle = _query(http, record.id, {"kind": "LifecycleQuery", "aggregation_group_type_index": 0,
                                         "dateRange": _range(), "series": [{"kind": "EventsNode", "event": "$pageview"}]})  # noqa: E501
    counts = {r["status"]: r["data"] for r in lifecycle["results"]}
    days = grouped.assign(day=(grouped.timestamp - DAY0).dt.days).groupby("company").day.apply(set)
    for i in range(1, 14):
        returning = sum(1 for d in days if i in d and i - 1 in d)
        resurrecting = sum(1 for d in days if i in d and i - 1 not in d)
        dormant = sum(1 for d in days if i - 1 in d and i not in d)
        assert (counts["new"][i], counts["returning"][i], counts["resurrecting"][i], counts["dormant"][i]) == (
            0, returning, resurrecting, -dormant)  # fmt: skip


def _bucket(key: str, value: str, salt: str = "") -> float:
    # PostHog's hash, restated: the first 15 hex digits of sha1("<flag>.<id><salt>") over 0xFFFFFFFFFFFFFFF.
    return int(hashlib.sha1(f"{key}.{value}{salt}".encode()).hexdigest()[:15], 16) / 0xFFFFFFFFFFFFFFF


def _variant(key: str, company: str) -> str:
    return "control" if _bucket(key, company, "variant") < 0.5 else "test"


@pytest.fixture(scope="module")
def experiment(project, hoglab_service):
    record, _key, http = project
    body = {"name": "Company pricing", "feature_flag_key": "company-pricing",
            "start_date": (datetime.now(UTC) - timedelta(hours=1)).isoformat(),
            "parameters": {"aggregation_group_type_index": 0}}  # fmt: skip
    created = http.post(f"/api/projects/{record.id}/experiments/", json=body)
    assert created.status_code == 201, created.text
    # A second flag: companies on the pro plan, half of them by PostHog's hashing of the company key.
    hoglab_service.state.store.flags.create(record.id, "pro-beta", filters={
        "aggregation_group_type_index": 0,
        "groups": [{"properties": [{"key": "plan", "type": "group", "group_type_index": 0, "value": ["pro"],
                                    "operator": "exact"}], "rollout_percentage": 50}]})  # fmt: skip
    return created.json()


def test_flags_by_company_remote_and_local(project, experiment, hoglab_service) -> None:
    record, key, _ = project
    remote = posthog.Posthog(record.api_token, host=hoglab_service.url, max_retries=0,
                             feature_flags_request_max_retries=0, feature_flags_request_timeout_seconds=30)
    local = posthog.Posthog(record.api_token, host=hoglab_service.url, personal_api_key=key, max_retries=0)
    quiet = {"send_feature_flag_events": False}  # these reads are not exposures of the experiment below
    definitions = project[2].get("/flags/definitions", params={"token": record.api_token}).json()
    assert definitions["group_type_mapping"] == {"0": "company"}  # the index as text, as PostHog's
    try:
        local.load_feature_flags()
        for company in COMPANIES:
            expected = PLANS[company] == "pro" and _bucket("pro-beta", company) <= 0.5
            groups, props = {"company": company}, {"company": {"plan": PLANS[company]}}
            assert remote.feature_enabled("pro-beta", "someone", groups=groups, group_properties=props,
                                          **quiet) == expected  # fmt: skip
            assert local.feature_enabled("pro-beta", "someone", groups=groups, group_properties=props,
                                         only_evaluate_locally=True, **quiet) == expected  # fmt: skip
            # Without the request's properties the service reads the stored company (plan set by group_identify).
            assert remote.feature_enabled("pro-beta", "someone", groups=groups, **quiet) == expected
            assert remote.get_feature_flag("company-pricing", f"x-{company}", groups=groups, **quiet) == _variant(
                "company-pricing", company)
        # Without the company in the request the flag is off, remotely and locally.
        assert remote.feature_enabled("pro-beta", "someone", **quiet) is False
        assert local.feature_enabled("pro-beta", "someone", only_evaluate_locally=True, **quiet) is False
    finally:
        remote.shutdown()
        local.shutdown()


def test_a_company_randomised_experiment_equals_pandas(project, experiment, hoglab_service) -> None:
    record, _, http = project
    sdk = posthog.Posthog(record.api_token, host=hoglab_service.url, capture_mode="v0", max_retries=0,
                          feature_flags_request_max_retries=0)  # fmt: skip
    try:
        # Two users of each of 16 companies see the flag (the SDK captures $feature_flag_called with the company).
        exposed = COMPANIES[:16]
        for company in exposed:
            for user in (f"{company}-a", f"{company}-b"):
                assert sdk.get_feature_flag("company-pricing", user, groups={"company": company}) == _variant(
                    "company-pricing", company)
        sdk.flush()
        # Then purchases: by exposed users, by a user of an unexposed company, and one without the company.
        for i, company in enumerate(exposed):
            for _ in range(i % 4):
                sdk.capture("purchase", distinct_id=f"{company}-a", groups={"company": company},
                            properties={"amount": 10 * (i % 3)})  # fmt: skip
        sdk.capture("purchase", distinct_id="outsider", groups={"company": COMPANIES[20]}, properties={"amount": 5})
        sdk.capture("purchase", distinct_id=f"{exposed[1]}-a", properties={"amount": 7})
        sdk.flush()
    finally:
        sdk.shutdown()
    start = datetime.fromisoformat(experiment["start_date"].replace("Z", "+00:00"))
    compiled = compile_hogql(
        "SELECT event, timestamp, $group_0 AS company, properties.$feature_flag_response AS variant, "
        "toFloat(properties.amount) AS amount FROM events WHERE event IN ('$feature_flag_called', 'purchase') "
        "AND timestamp >= {start}",
        team_id=record.id,
        values={"start": start},
        default_limit=None,
    )
    rows = pd.DataFrame(hoglab_service.state.engine.execute(compiled.sql, settings=compiled.settings).to_pylist())
    exposures = rows[(rows.event == "$feature_flag_called") & (rows.company != "")]
    first = exposures.groupby("company").agg(first=("timestamp", "min"), variant=("variant", "first"))
    buys = rows[(rows.event == "purchase") & (rows.company != "")].merge(first, left_on="company", right_index=True)
    buys = buys[buys.timestamp >= buys["first"]]
    assert len(first) == len(exposed) and set(first.variant) == {"control", "test"}  # both arms, every company
    assert len(buys) == sum(i % 4 for i in range(len(exposed)))  # the outsider and the company-less buy not among them
    for math, column in (("total", None), ("sum", "amount")):
        metric = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode",
                  "event": "purchase", "math": math, **({"math_property": column} if column else {})}}  # fmt: skip
        answer = _query(http, record.id, {"kind": "ExperimentQuery", "experiment_id": experiment["id"],
                                          "metric": metric})  # fmt: skip
        per_company = (buys.groupby("company")[column].sum() if column else buys.groupby("company").size())
        values = first.assign(value=per_company.reindex(first.index).fillna(0.0))
        stats = {v["key"]: v for v in [answer["baseline"], *answer["variant_results"]]}
        for variant, group in values.groupby("variant"):
            assert stats[variant]["number_of_samples"] == len(group)
            assert stats[variant]["sum"] == pytest.approx(float(group.value.sum()))
            assert stats[variant]["sum_squares"] == pytest.approx(float((group.value ** 2).sum()))
    exposure = _query(http, record.id, {"kind": "ExperimentExposureQuery", "experiment_id": experiment["id"]})
    assert exposure["total_exposures"] == first.groupby("variant").size().to_dict()
