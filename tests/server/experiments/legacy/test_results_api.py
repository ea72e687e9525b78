"""The results endpoints' behaviour: the one-hour cache and what invalidates it, ``?refresh``, the no-data
400s, drafts and running experiments, scopes, and a 400 naming the field for every filter hoglab can't run."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.server.ingest import Ingestor

pytestmark = pytest.mark.xdist_group("experiment_results")

START = datetime(2025, 5, 1, tzinfo=UTC)
END = START + timedelta(days=7)
PURCHASES = {"insight": "TRENDS", "events": [{"id": "purchase"}]}
FUNNEL = {"insight": "FUNNELS", "events": [{"id": "view", "order": 0}, {"id": "purchase", "order": 1}]}


def _events(flag: str, per_variant: dict[str, int], *, start: datetime = START, flag_info: bool = True) -> pd.DataFrame:
    """``n`` exposed persons per variant, each with a view and (every other one) a purchase, an hour apart."""
    rows: list[dict[str, Any]] = []
    for variant, n in per_variant.items():
        for i in range(n):
            did, at = f"{variant}-{i}", start + timedelta(minutes=10 * i + 1)
            marked = {f"$feature/{flag}": variant} if flag_info else {}
            rows.append({"event": "$feature_flag_called", "distinct_id": did, "timestamp": at,
                         "properties": {"$feature_flag": flag, "$feature_flag_response": variant}})  # fmt: skip
            rows.append({"event": "view", "distinct_id": did, "timestamp": at, "properties": marked})
            if i % 2 == 0:
                rows.append({"event": "purchase", "distinct_id": did, "timestamp": at + timedelta(hours=1),
                             "properties": marked})  # fmt: skip
    return pd.DataFrame(rows, columns=["event", "distinct_id", "timestamp", "properties"])


def _experiment(project, flag: str, **body: Any) -> int:
    defaults = {"name": flag, "feature_flag_key": flag, "start_date": START.isoformat(), "end_date": END.isoformat(),
                "filters": PURCHASES}  # fmt: skip
    return int(project.create(**{**defaults, **body})["id"])


def _error(response) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    body = response.json()
    assert body["type"] == "validation_error"
    return dict(body)


def _flags(body: dict[str, Any]) -> dict[str, bool]:
    detail = json.loads(body["detail"])  # PostHog's detail is a JSON string of the four flags
    assert list(detail) == ["no-events", "no-flag-info", "no-control-variant", "no-test-variant"]
    return dict(detail)


def test_cache_refresh_and_invalidation(results_project) -> None:
    project = results_project(_events("cache", {"control": 4, "test": 6}))
    experiment = _experiment(project, "cache", secondary_metrics=[{"name": "funnel", "filters": FUNNEL}])
    first = project.results(experiment).json()
    second = project.results(experiment).json()
    assert (first["is_cached"], second["is_cached"]) == (False, True)
    assert second["last_refresh"] == first["last_refresh"] and second["result"] == first["result"]
    assert datetime.fromisoformat(first["last_refresh"]) > datetime.now(UTC) - timedelta(minutes=1)
    refreshed = project.results(experiment, refresh="1").json()
    assert refreshed["is_cached"] is False and refreshed["last_refresh"] > first["last_refresh"]
    assert refreshed["result"] == first["result"]
    assert project.results(experiment, refresh="").json()["is_cached"] is True  # an empty value is no refresh
    counts = {v["key"]: v["count"] for v in first["result"]["variants"]}
    assert counts == {"control": 2, "test": 3}

    # New events (captured as an SDK sends them) are seen at once, cache or not.
    event = {"event": "purchase", "distinct_id": "control-1", "timestamp": (START + timedelta(days=1)).isoformat(),
             "properties": {"$feature/cache": "control"}}  # fmt: skip
    Ingestor.for_engine(project.service.state.engine).capture_batch(project.id, [event])
    after = project.results(experiment).json()
    assert after["is_cached"] is False
    assert {v["key"]: v["count"] for v in after["result"]["variants"]} == {"control": 3, "test": 3}

    # An edited experiment (another metric) is another answer; each metric is cached on its own.
    secondary = project.results(experiment, secondary=0).json()
    assert secondary["is_cached"] is False and secondary["result"]["result"] == {"control": 0.75, "test": 0.5}
    assert project.results(experiment, secondary=0).json()["is_cached"] is True
    project.http.patch(f"{project.base}{experiment}/", json={"filters": FUNNEL}).raise_for_status()
    edited = project.results(experiment).json()
    assert edited["is_cached"] is False and "expected_loss" in edited["result"]
    project.http.patch(f"{project.base}{experiment}/", json={"end_date": (END - timedelta(days=6)).isoformat()})
    assert project.results(experiment).json()["is_cached"] is False


def test_the_insight_runs_behind_results_are_in_the_projects_query_log(results_project) -> None:
    project = results_project(_events("logged", {"control": 4, "test": 6}))
    experiment = _experiment(project, "logged", secondary_metrics=[{"name": "funnel", "filters": FUNNEL}])
    project.results(experiment).raise_for_status()
    project.results(experiment).raise_for_status()  # answered from the cache: not a run
    project.results(experiment, secondary=0).raise_for_status()
    sql = "select kind, status, query, result_bytes from query_log order by query_start_time"
    body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": "force_blocking"}
    rows = project.http.post(f"/api/projects/{project.id}/query/", json=body).json()["results"]
    # the metric's count and its exposures (two trends), then the secondary metric's funnel
    assert [(kind, status) for kind, status, _, _ in rows] == [
        ("TrendsQuery", "QueryFinish"), ("TrendsQuery", "QueryFinish"), ("FunnelsQuery", "QueryFinish")]  # fmt: skip
    (_, _, count, _), (_, _, exposure, _), (_, _, funnel, _) = rows
    assert '"event":"purchase"' in count and '"event":"$feature_flag_called"' in exposure
    assert '"event":"view"' in funnel and '"event":"purchase"' in funnel
    assert all(size > 0 for *_, size in rows)


def test_no_data_answers_posthogs_flags(results_project) -> None:
    project = results_project(_events("only-control", {"control": 3}))
    nothing = _experiment(project, "nothing")
    body = _error(project.results(nothing))
    assert body["code"] == "no-results" and all(_flags(body).values())

    one_sided = _experiment(project, "only-control")
    body = _error(project.results(one_sided))
    assert body["code"] == "invalid_input"
    assert _flags(body) == {"no-events": False, "no-flag-info": False, "no-control-variant": False,
                            "no-test-variant": True}  # fmt: skip

    test_only = results_project(_events("only-test", {"test": 3}))
    body = _error(test_only.results(_experiment(test_only, "only-test", filters=FUNNEL)))
    assert _flags(body)["no-control-variant"] is True and _flags(body)["no-test-variant"] is False

    # Metric events without $feature/<flag>: a funnel finds persons but no variant, a trend finds no rows.
    unflagged = results_project(_events("unflagged", {"control": 3, "test": 3}, flag_info=False))
    body = _error(unflagged.results(_experiment(unflagged, "unflagged", filters=FUNNEL)))
    assert body["code"] == "invalid_input"
    assert _flags(body) == {"no-events": False, "no-flag-info": True, "no-control-variant": True,
                            "no-test-variant": True}  # fmt: skip
    assert _error(unflagged.results(_experiment(unflagged, "unflagged-trend")))["code"] == "no-results"


def test_secondary_results_answer_what_they_have(results_project) -> None:
    project = results_project(_events("partial", {"control": 4}))
    experiment = _experiment(project, "partial", secondary_metrics=[{"name": "p", "filters": PURCHASES}])
    assert _error(project.results(experiment))["code"] == "invalid_input"
    answer = project.results(experiment, secondary=0)
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    # PostHog's secondary results never fail for want of data: values, no verdict.
    assert result["result"] == {"control": 2.0} and "probability" not in result and "insight" in result


def test_drafts_and_future_starts_have_no_results_yet(results_project) -> None:
    project = results_project(_events("later", {"control": 3, "test": 3}))
    draft = project.create(name="draft", feature_flag_key="draft", filters=PURCHASES)
    body = _error(project.results(draft["id"]))
    assert body["code"] == "no-results" and all(_flags(body).values())
    future = _experiment(project, "later", start_date=(datetime.now(UTC) + timedelta(days=1)).isoformat(),
                         end_date=None)  # fmt: skip
    assert _error(project.results(future))["code"] == "no-results"


def test_a_running_experiment_counts_up_to_now(results_project) -> None:
    now = datetime.now(UTC)
    data = _events("running", {"control": 3, "test": 3}, start=now - timedelta(days=1))
    late = data.assign(timestamp=data["timestamp"] + timedelta(days=2))  # the same events, after now
    project = results_project(pd.concat([data, late[late["event"] == "purchase"]]))
    experiment = _experiment(project, "running", start_date=(now - timedelta(days=2)).isoformat(),
                             end_date=(now + timedelta(days=5)).isoformat())  # fmt: skip
    result = project.results(experiment).json()["result"]
    assert {v["key"]: v["count"] for v in result["variants"]} == {"control": 2, "test": 2}
    assert result["filters"]["date_to"] is None  # up to now, as PostHog reports a running experiment


def test_scopes_and_projects(results_project) -> None:
    project = results_project(_events("scoped", {"control": 2, "test": 2}))
    experiment = _experiment(project, "scoped")
    store = project.service.state.store
    _, query_only = store.keys.create(store.users.default().id, ["query:read"], [project.id], label="t")
    headers = {"Authorization": f"Bearer {query_only}"}
    denied = project.http.get(f"{project.base}{experiment}/results/", headers=headers)
    assert denied.status_code == 403 and "experiment:read" in denied.json()["detail"]
    stranger = results_project()
    assert stranger.http.get(f"{project.base}{experiment}/results/").status_code == 403
    assert stranger.results(experiment).status_code == 404  # another project's experiment is not found


BAD_FILTERS = [
    ({"insight": "RETENTION", "events": [{"id": "a"}]}, "filters__insight"),
    ({"insight": "TRENDS", "actions": [{"id": 3}]}, "filters__actions"),
    ({"insight": "TRENDS", "events": [{"id": "a"}, {"id": "b"}]}, "filters__events"),
    ({"insight": "TRENDS", "events": "purchase"}, "filters__events"),
    ({"insight": "TRENDS", "events": [{"id": "a", "math": "unique_group"}]}, "filters__events__0"),
    ({"insight": "TRENDS", "events": [{"id": "a", "math": "sum"}]}, "filters__events__0"),
    ({"insight": "TRENDS", "events": [{"id": "a", "math_group_type_index": 7}]},
     "filters__events__0__math_group_type_index"),
    ({"insight": "TRENDS", "events": [{"id": 7}]}, "filters__events__0__id"),
    ({"insight": "TRENDS", "events": [{"id": "a", "type": "data_warehouse"}]}, "filters__events__0__type"),
    ({"insight": "TRENDS", "events": [{"id": "a", "properties": [{"key": "k", "value": 1, "operator": "near"}]}]},
     "filters__events__0__properties__0__operator"),
    ({"insight": "TRENDS", "events": [{"id": "a", "properties": "k=1"}]}, "filters__events__0__properties"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "interval": "minute"}, "filters__interval"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "smoothing_intervals": 0}, "filters__smoothing_intervals"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "smoothing_intervals": 366}, "filters__smoothing_intervals"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "smoothing_intervals": "7"}, "filters__smoothing_intervals"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "formula": "A*2"}, "filters__formula"),
    ({"insight": "TRENDS", "events": [{"id": "a"}], "compare": True}, "filters__compare"),
    ({"insight": "TRENDS", "events": [{"id": "a", "order": "first"}]}, "filters__events__0__order"),
    ({"insight": "FUNNELS", "events": [{"id": "a"}]}, "filters__events"),
    ({**FUNNEL, "funnel_viz_type": "trends"}, "filters__funnel_viz_type"),
    ({**FUNNEL, "funnel_window_interval_unit": "fortnight"}, "filters__funnel_window_interval_unit"),
    ({**FUNNEL, "funnel_order_type": "sideways"}, "filters__funnel_order_type"),
    ({**FUNNEL, "exclusions": [{"id": "x", "funnel_from_step": 0, "funnel_to_step": 2}]},
     "filters__exclusions__0__funnel_to_step"),
    ({**FUNNEL, "aggregation_group_type_index": 9}, "filters__aggregation_group_type_index"),
    ({**FUNNEL, "aggregation_group_type_index": True}, "filters__aggregation_group_type_index"),
    ({"insight": "TRENDS", "events": [{"id": "a", "properties": [{"type": "hogql", "key": "nope("}]}]},
     "filters__events__0__properties__0__key"),
    ({"insight": "TRENDS", "events": [{"id": "a", "math": "hogql", "math_hogql": "sum(("}]},
     "filters__events__0__math_hogql"),
    ({**FUNNEL, "events": [{"id": "a", "order": 1}, {"id": "b", "order": 0, "properties": [
        {"type": "hogql", "key": "1) OR (1"}]}]}, "filters__events__1__properties__0__key"),
    ({**FUNNEL, "funnel_aggregate_by_hogql": "x(("}, "filters__funnel_aggregate_by_hogql"),
]  # fmt: skip


@pytest.mark.parametrize(("filters", "attr"), BAD_FILTERS, ids=[a for _, a in BAD_FILTERS])
def test_filters_hoglab_cannot_run_are_a_400_naming_the_field(results_project, filters, attr) -> None:
    project = results_project()  # the filters are refused before any event is read
    if "hogql" in json.dumps(filters):  # HogQL text is compiled with the queries: refused when results are asked
        experiment = _experiment(project, "shape", filters=filters,
                                 secondary_metrics=[{"name": "same", "filters": filters}])  # fmt: skip
        body = _error(project.results(experiment))
    else:  # the primary metric's shape is refused when written (create and PATCH)
        new = {"name": "s", "feature_flag_key": "shape", "filters": filters}
        body = _error(project.http.post(project.base, json=new))
        experiment = _experiment(project, "shape", secondary_metrics=[{"name": "same", "filters": filters}])
        assert _error(project.http.patch(f"{project.base}{experiment}/", json={"filters": filters}))["attr"] == attr
    assert body["attr"] == attr and body["code"] == "invalid_input" and body["detail"]
    secondary = _error(project.results(experiment, secondary=0))
    assert secondary["attr"] == attr.replace("filters", "secondary_metrics__0__filters", 1)


@pytest.mark.parametrize(("custom", "attr"), [
    ({"events": [{"id": "view"}, {"id": "other"}]}, "parameters__custom_exposure_filter__events"),
    ({"events": [{"id": "view"}], "filter_test_accounts": "true"},
     "parameters__custom_exposure_filter__filter_test_accounts"),  # as for the metric: not silently false
    ({"events": [{"id": "view"}], "formula": "A"}, "parameters__custom_exposure_filter__formula"),
])  # fmt: skip
def test_a_bad_custom_exposure_filter_is_a_400(results_project, custom, attr) -> None:
    project = results_project(_events("custom", {"control": 2, "test": 2}))
    experiment = _experiment(project, "custom", parameters={"custom_exposure_filter": custom})
    assert _error(project.results(experiment))["attr"] == attr


def test_secondary_metric_without_filters(results_project) -> None:
    project = results_project()
    experiment = _experiment(project, "empty", secondary_metrics=[{"name": "nothing", "filters": {}}])
    assert _error(project.results(experiment, secondary=0))["attr"] == "secondary_metrics__0__filters"
