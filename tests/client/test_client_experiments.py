"""client.experiments against a scripted REMOTE PostHog: PostHog-only behaviours (next URLs on another host,
the 405 on DELETE of newer builds, the legacy results shapes). The same resource runs against a real hoglab
service in test_client_experiments_live.py.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from clienttesting import Remote

import hoglab
from hoglab.client import Client, ExperimentResult
from hoglab.stats import Proportion, recommend

BASE = "/api/projects/2/experiments/"


def _experiment(i: int, **extra: Any) -> dict[str, Any]:
    return {
        "id": i,
        "name": f"exp {i}",
        "feature_flag_key": f"flag-{i}",
        "feature_flag": {
            "id": 100 + i,
            "team_id": 2,
            "name": "f",
            "key": f"flag-{i}",
            "active": True,
            "filters": {"multivariate": {"variants": [{"key": "control"}, {"key": "test"}]}},
        },
        "start_date": "2025-06-01T00:00:00Z",
        "end_date": None,
        "archived": False,
        "created_by": {
            "id": 1,
            "uuid": "0190a8c0-0000-7000-8000-000000000001",
            "distinct_id": "d1",
            "email": "a@example.com",
        },
        "created_at": "2025-05-30T10:00:00Z",
        "updated_at": "2025-05-30T10:00:00Z",
        **extra,
    }


def test_list_follows_next_pages_on_our_own_host(client: Client, remote: Remote) -> None:
    first = {
        "count": 3,
        "next": "http://internal:8000/api/projects/2/experiments/?limit=2&offset=2",
        "results": [_experiment(3), _experiment(2)],
    }
    second = {"count": 3, "next": None, "results": [_experiment(1, start_date=None)]}
    remote.add("GET", BASE, httpx.Response(200, json=first), httpx.Response(200, json=second))
    df = client.experiments.list()
    assert df["id"].tolist() == [3, 2, 1]
    assert df["status"].tolist() == ["running", "running", "draft"]
    assert df["variants"].iloc[0] == ["control", "test"] and df["flag_id"].iloc[0] == 103
    assert str(df["start_date"].dtype) == "datetime64[us, UTC]" and df["start_date"].isna().iloc[2]
    assert str(remote.requests[1].url) == "https://eu.posthog.example/api/projects/2/experiments/?limit=2&offset=2"


def test_list_archived_asks_for_them_and_filters_old_servers(client: Client, remote: Remote) -> None:
    page = {"count": 2, "next": None, "results": [_experiment(1), _experiment(2, archived=True)]}
    remote.add("GET", BASE, httpx.Response(200, json=page))
    df = client.experiments.list(archived=True)
    assert df["id"].tolist() == [2]
    assert remote.requests[0].url.params["archived"] == "true"


def test_create_sends_a_validated_body(client: Client, remote: Remote) -> None:
    remote.add("POST", BASE, httpx.Response(201, json=_experiment(7)))
    exp = client.experiments.create("Checkout", "new-checkout", variants=["control", "a", "b"], start=True)
    body = remote.json_bodies("POST")[0]
    assert exp.id == 7
    assert body["parameters"]["feature_flag_variants"] == [
        {"key": "control", "rollout_percentage": 34},
        {"key": "a", "rollout_percentage": 33},
        {"key": "b", "rollout_percentage": 33},
    ]
    assert body["start_date"].endswith("Z") or body["start_date"].endswith("+00:00")


@pytest.mark.parametrize(
    ("kwargs", "argument"),
    [
        ({"feature_flag_key": "has spaces"}, "feature_flag_key"),
        ({"variants": ["a", "b"]}, "parameters"),
        ({"variants": 3}, "variants"),
        ({"start": "yesterday"}, "start"),
    ],
)
def test_create_refuses_bad_arguments_before_any_request(
    client: Client, remote: Remote, kwargs: dict[str, Any], argument: str
) -> None:
    args = {"name": "x", "feature_flag_key": "ok", **kwargs}
    with pytest.raises(hoglab.InvalidArgument) as info:
        client.experiments.create(**args)
    assert info.value.argument == argument
    assert remote.requests == []


def test_update_refuses_unknown_fields(client: Client, remote: Remote) -> None:
    with pytest.raises(hoglab.InvalidArgument, match="colour"):
        client.experiments.update(1, colour="red")
    assert remote.requests == []


def test_launch_stop_archive_patch_the_right_field(client: Client, remote: Remote) -> None:
    remote.add("PATCH", f"{BASE}1/", httpx.Response(200, json=_experiment(1)))
    client.experiments.launch(1)
    client.experiments.stop(1)
    client.experiments.archive(1)
    bodies = remote.json_bodies("PATCH")
    assert [sorted(b) for b in bodies] == [["start_date"], ["end_date"], ["archived"]]


def test_delete_falls_back_to_soft_delete_on_405(client: Client, remote: Remote) -> None:
    remote.add(
        "DELETE",
        f"{BASE}1/",
        httpx.Response(405, json={"type": "invalid_request", "code": "method_not_allowed", "detail": "no"}),
    )
    remote.add("PATCH", f"{BASE}1/", httpx.Response(200, json=_experiment(1)))
    client.experiments.delete(1)
    assert remote.json_bodies("PATCH") == [{"deleted": True}]


FUNNEL_RESULT = {
    "result": {
        "probability": {"control": 0.03, "test": 0.97},
        "significant": True,
        "significance_code": "significant",
        "expected_loss": 0.0021,
        "variants": [
            {"key": "test", "success_count": 85, "failure_count": 415},
            {"key": "control", "success_count": 60, "failure_count": 440},
        ],
        "credible_intervals": {"control": [0.094, 0.151], "test": [0.139, 0.204]},
        "insight": [[{"count": 500}]],
    },
    "last_refresh": "2025-06-01T12:00:00Z",
    "is_cached": False,
}


def test_results_object(client: Client, remote: Remote) -> None:
    remote.add("GET", f"{BASE}4/", httpx.Response(200, json=_experiment(4, filters={"insight": "FUNNELS"})))
    remote.add("GET", f"{BASE}4/results/", httpx.Response(200, json=FUNNEL_RESULT))
    result = client.experiments.results(4, refresh=True)
    assert [r.url.path for r in remote.requests] == [f"{BASE}4/", f"{BASE}4/results/"]  # legacy: no /query
    assert remote.requests[1].url.params["refresh"] == "true"
    assert isinstance(result, ExperimentResult) and result.kind == "funnel" and result.significant
    df = result.to_frame()
    assert df["key"].tolist() == ["control", "test"]
    assert df["conversion_rate"].tolist() == [0.12, 0.17]
    assert df["exposure"].tolist() == [500, 500] and str(df["exposure"].dtype) == "Int64"
    assert df["credible_interval_low"].tolist() == [0.094, 0.139]
    html = result._repr_html_()
    assert "Significant" in html and "expected loss 0.0021" in html and "<table" in html
    assert result.raw == FUNNEL_RESULT  # kept whole, for hoglab.stats to build on


def test_results_carry_the_experiment_and_one_reconciled_recommendation(client: Client, remote: Remote) -> None:
    body = _experiment(4, filters={"insight": "FUNNELS"}, end_date="2025-06-15T00:00:00Z",
                       parameters={"minimum_detectable_effect": 20})  # fmt: skip
    remote.add("GET", f"{BASE}4/", httpx.Response(200, json=body))
    remote.add("GET", f"{BASE}4/results/", httpx.Response(200, json=FUNNEL_RESULT))
    result = client.experiments.results(4)
    assert isinstance(result, ExperimentResult) and result.experiment is not None
    # The counts, the experiment's MDE (20%) and its 14 days, through hoglab.stats directly.
    direct = recommend({"control": Proportion(500, 60), "test": Proportion(500, 85)}, mde=0.20, days_running=14,
                       name="primary")
    recommendation = result.recommendation
    assert recommendation == direct
    assert recommendation.recommendation == "keep_running" and recommendation.days_running == 14
    assert result.summary().splitlines() == [f"Verdict: {result.verdict}", f"Recommendation: {direct.summary()}"]
    assert direct.headline in result._repr_html_()


def test_secondary_results_pass_the_index(client: Client, remote: Remote) -> None:
    payload = {"result": {"result": {"control": 0.12, "test": 0.2}, "significance_code": "not_enough_exposure"}}
    remote.add("GET", f"{BASE}4/secondary_results/", httpx.Response(200, json=payload))
    result = client.experiments.secondary_results(4, 1)
    assert remote.requests[0].url.params["id"] == "1"
    assert result.to_frame()[["key", "value"]].values.tolist() == [["control", 0.12], ["test", 0.2]]
    assert result.verdict.startswith("Not significant. Not enough exposure")
    with pytest.raises(hoglab.InvalidArgument):
        client.experiments.secondary_results(4, -1)


def test_exposure_cohort_and_flag_implementation(client: Client, remote: Remote) -> None:
    remote.add(
        "POST",
        f"{BASE}4/create_exposure_cohort_for_experiment/",
        httpx.Response(201, json={"cohort": {"id": 9, "name": "Users exposed"}}),
    )
    remote.add("GET", f"{BASE}requires_flag_implementation/", httpx.Response(200, json={"result": True}))
    assert client.experiments.create_exposure_cohort(4).id == 9  # type: ignore[union-attr]
    assert client.experiments.requires_flag_implementation({"events": [{"id": "signup"}]}) is True
    assert remote.requests[-1].url.params["events"] == '[{"id": "signup"}]'


def test_listing_ends_when_a_server_ignores_offset(client: Client, remote: Remote) -> None:
    stuck = {
        "count": 9,
        "next": "https://eu.posthog.example/api/projects/2/experiments/?limit=1&offset=1",
        "results": [_experiment(1)],
    }
    remote.add("GET", BASE, httpx.Response(200, json=stuck))
    assert client.paginate(BASE) == [_experiment(1), _experiment(1)]
    assert len(remote.requests) == 2


def test_unpaginated_listing_is_taken_whole(client: Client, remote: Remote) -> None:
    remote.add("GET", "/api/projects/", httpx.Response(200, json=[{"id": 5, "name": "only"}]))
    assert [p.id for p in client.projects()] == [5]
