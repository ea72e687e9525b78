"""The client against a REAL hoglab service (no mocks): the session service and ``live_client`` of
tests/conftest.py."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

import hoglab
from hoglab.client import Client


def _key() -> str:
    return f"flag-{uuid.uuid4().hex[:10]}"


def test_experiment_lifecycle(live_client: Client) -> None:
    exps = live_client.experiments
    created = exps.create("Checkout test", _key(), description="live", variants=["control", "test"])
    assert created.status == "draft" and created.feature_flag is not None
    assert exps.get(created.id).name == "Checkout test"

    listed = exps.list()
    row = listed.set_index("id").loc[created.id]
    assert row["status"] == "draft" and list(row["variants"]) == ["control", "test"]
    assert str(listed["created_at"].dtype) == "datetime64[us, UTC]"

    assert exps.update(created.id, name="Checkout v2").name == "Checkout v2"
    assert exps.launch(created.id).status == "running"
    assert exps.stop(created.id).status == "complete"

    exps.archive(created.id)
    assert created.id not in exps.list()["id"].tolist()
    assert created.id in exps.list(archived=True)["id"].tolist()

    exps.delete(created.id)
    with pytest.raises(hoglab.NotFound):
        exps.get(created.id)


def test_list_pages_through_everything(live_client: Client) -> None:
    ids = {live_client.experiments.create(f"e{i}", _key()).id for i in range(3)}
    assert ids <= set(live_client.experiments.list()["id"].tolist())


def test_duplicate_flag_key_is_a_validation_error(live_client: Client) -> None:
    key = _key()
    live_client.experiments.create("first", key)
    with pytest.raises(hoglab.ValidationError) as info:
        live_client.experiments.create("second", key)
    assert info.value.status == 400 and info.value.detail


def test_unknown_experiment_is_not_found(live_client: Client) -> None:
    with pytest.raises(hoglab.NotFound):
        live_client.experiments.get(987_654_321)


def test_wrong_key_is_an_authentication_error(live_project: Any) -> None:
    base = str(live_project.http.base_url).rstrip("/")
    c = Client(base, "phx_" + "0" * 40, live_project.id, progress=False)
    with c, pytest.raises(hoglab.AuthenticationError) as info:
        c.experiments.list()
    assert "phx_000" not in str(info.value)


def test_project_is_resolved_from_the_key(live_project: Any) -> None:
    base = str(live_project.http.base_url).rstrip("/")
    with Client(base, live_project.key, progress=False) as c:  # make_project's key reaches its project only
        assert c.project_id == live_project.id


def test_hogql_against_the_service(live_client: Client) -> None:
    df = live_client.hogql("select 1 as one, 'a' as letter")
    assert df["one"].tolist() == [1] and str(df["one"].dtype) == "Int64"
    assert df["letter"].tolist() == ["a"]


def test_exposure_cohort_and_flag_implementation_check(live_client: Client) -> None:
    exps = live_client.experiments
    created = exps.create("Cohort test", _key(), start=True)
    cohort = exps.create_exposure_cohort(created.id)
    assert cohort is not None and "Cohort test" in cohort.name
    assert exps.get(created.id).exposure_cohort == cohort.id
    assert exps.requires_flag_implementation({"events": [{"id": "signup"}]}) in (True, False)


def test_results_of_an_experiment_without_data_are_refused(live_client: Client) -> None:
    created = live_client.experiments.create("No data", _key(), start=True)
    with pytest.raises(hoglab.ValidationError) as info:
        live_client.experiments.results(created.id)
    assert info.value.status == 400 and info.value.detail


def test_results_and_their_frame_match_the_service(live_client: Client, live_project: Any) -> None:
    from datetime import UTC, datetime, timedelta

    from hoglab.server.ingest import Ingestor

    key, start = _key(), datetime.now(UTC) - timedelta(days=3)
    funnel = {"insight": "FUNNELS", "events": [{"id": "view", "order": 0}, {"id": "buy", "order": 1}]}
    purchases = {"insight": "TRENDS", "events": [{"id": "buy"}]}
    created = live_client.experiments.create(
        "Results", key, start=start, filters=funnel, secondary_metrics=[{"name": "buys", "filters": purchases}]
    )
    events = []
    for variant, persons, buyers in (("control", 120, 30), ("test", 110, 50)):
        for i in range(persons):
            did, at = f"{variant}-{i}", start + timedelta(hours=1, minutes=i)
            flagged = {f"$feature/{key}": variant}
            events.append({"event": "$feature_flag_called", "distinct_id": did, "timestamp": at.isoformat(),
                           "properties": {"$feature_flag": key, "$feature_flag_response": variant}})  # fmt: skip
            events.append({"event": "view", "distinct_id": did, "timestamp": at.isoformat(), "properties": flagged})
            if i < buyers:
                bought = (at + timedelta(minutes=5)).isoformat()
                events.append({"event": "buy", "distinct_id": did, "timestamp": bought, "properties": flagged})
    Ingestor.for_engine(live_project.service.state.engine).capture_batch(live_project.id, events)

    result = live_client.experiments.results(created.id)
    raw = result.raw["result"]
    assert result.kind == "funnel" and result.is_cached is False and result.last_refresh
    frame = result.to_frame().set_index("key")
    assert frame.loc["control", "success_count"] == 30 and frame.loc["test", "failure_count"] == 60
    for variant in raw["variants"]:
        row = frame.loc[variant["key"]]
        assert (row["success_count"], row["failure_count"]) == (variant["success_count"], variant["failure_count"])
        assert row["probability"] == raw["probability"][variant["key"]]
        interval = [row["credible_interval_low"], row["credible_interval_high"]]
        assert interval == raw["credible_intervals"][variant["key"]]
    assert result.significance_code == raw["significance_code"] and result.expected_loss == raw["expected_loss"]
    assert live_client.experiments.results(created.id).is_cached is True
    assert live_client.experiments.results(created.id, refresh=True).is_cached is False

    secondary = live_client.experiments.secondary_results(created.id, 0)
    frame = secondary.to_frame().set_index("key")
    assert secondary.kind == "trend" and frame["value"].to_dict() == {"control": 30.0, "test": 50.0}
    assert frame["absolute_exposure"].to_dict() == {"control": 120, "test": 110}
    assert frame["rate"].to_dict() == {"control": 30 / 120, "test": 50 / 110}
    assert frame.loc["test", "exposure"] == secondary.raw["result"]["variants"][1]["exposure"] == 110 / 120
