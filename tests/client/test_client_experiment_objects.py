"""``client.experiments.holdouts`` and ``client.experiments.saved_metrics`` against the real service: frames with
real dtypes, models back, arguments checked before any request, and experiments created with both."""

from __future__ import annotations

import pandas as pd
import pytest

import hoglab
from hoglab.client import Client
from hoglab.errors import APIError, InvalidArgument, InvalidArgumentType
from hoglab.schema import ExperimentHoldout, ExperimentSavedMetric


def test_holdouts_round_trip(live_client: Client) -> None:
    holdouts = live_client.experiments.holdouts
    made = holdouts.create("Q3", exclusion_percentage=15, description="kept out")
    assert isinstance(made, ExperimentHoldout)
    assert (made.exclusion_percentage, made.variant_key) == (15.0, f"holdout-{made.id}")
    second = holdouts.create("Q4", filters=[{"properties": [], "rollout_percentage": 5}])
    df = holdouts.list()
    assert df["id"].tolist() == [second.id, made.id]  # newest first
    assert df.dtypes["id"] == "Int64" and df.dtypes["exclusion_percentage"] == "float64"
    assert str(df.dtypes["name"]) == "string" and str(df.dtypes["created_at"]) == "datetime64[us, UTC]"
    assert df.set_index("id").loc[made.id, "variant_key"] == f"holdout-{made.id}"
    changed = holdouts.update(made.id, exclusion_percentage=30, name="Q3 wide")
    assert (changed.name, changed.exclusion_percentage) == ("Q3 wide", 30.0)
    assert holdouts.get(made.id) == changed
    holdouts.delete(second.id)
    with pytest.raises(APIError) as gone:
        holdouts.get(second.id)
    assert gone.value.status == 404


def test_holdout_arguments_are_checked_before_any_request(live_client: Client) -> None:
    holdouts = live_client.experiments.holdouts
    with pytest.raises(InvalidArgument):
        holdouts.create("neither")
    with pytest.raises(InvalidArgument):
        holdouts.create("both", 10, filters=[{"rollout_percentage": 10}])
    with pytest.raises(InvalidArgument):
        holdouts.update(1)
    with pytest.raises(APIError) as refused:  # the server's rule: PostHog's message
        holdouts.create("too many", exclusion_percentage=120)
    assert refused.value.detail == "Rollout percentage must be between 0 and 100."
    assert holdouts.list().empty


def test_saved_metrics_round_trip(live_client: Client) -> None:
    saved = live_client.experiments.saved_metrics
    revenue = saved.create("Revenue", hoglab.mean_metric("purchase", math="sum", math_property="price"), tags=["$"])
    assert isinstance(revenue, ExperimentSavedMetric) and revenue.query["uuid"]
    funnel = saved.create("Checkout", {"kind": "ExperimentMetric", "metric_type": "funnel",
                                       "series": [{"kind": "EventsNode", "event": "checkout"}]})  # fmt: skip
    df = saved.list()
    assert df["name"].tolist() == ["Checkout", "Revenue"]
    assert df.set_index("name").loc["Revenue", "metric"] == "sum(price) of purchase"
    assert df.set_index("name").loc["Revenue", "uuid"] == revenue.query["uuid"]
    assert str(df.dtypes["metric_type"]) == "string" and df.dtypes["id"] == "Int64"
    updated = saved.update(revenue.id, metric=hoglab.mean_metric("purchase", math="avg", math_property="price"))
    assert updated.query["source"]["math"] == "avg" and updated.query["uuid"] == revenue.query["uuid"]
    with pytest.raises(APIError) as clash:
        saved.create("revenue", hoglab.mean_metric("x"))
    assert clash.value.detail == "A shared metric with this name already exists."
    with pytest.raises(InvalidArgumentType):
        saved.create("bad", 42)
    saved.delete(funnel.id)
    assert saved.list()["name"].tolist() == ["Revenue"]


def test_an_experiment_with_both(live_client: Client) -> None:
    holdout = live_client.experiments.holdouts.create("H", exclusion_percentage=10)
    primary = live_client.experiments.saved_metrics.create("views", hoglab.mean_metric("$pageview"))
    secondary = live_client.experiments.saved_metrics.create("buys", hoglab.mean_metric("purchase"))
    experiment = live_client.experiments.create("Both", "both", holdout=holdout,
                                                saved_metrics=[primary, (secondary.id, "secondary")])  # fmt: skip
    assert experiment.holdout is not None and experiment.holdout.id == holdout.id
    assert experiment.holdout_id == holdout.id
    links = {link.saved_metric: link.role for link in experiment.saved_metrics or []}
    assert links == {primary.id: "primary", secondary.id: "secondary"}
    assert experiment.feature_flag is not None
    assert experiment.feature_flag.filters["holdout"] == {"id": holdout.id, "exclusion_percentage": 10}
    moved = live_client.experiments.update(experiment.id, holdout_id=None, saved_metrics_ids=[{"id": secondary.id}])
    assert moved.holdout is None and [link.saved_metric for link in moved.saved_metrics or []] == [secondary.id]
    with pytest.raises(InvalidArgumentType):
        live_client.experiments.create("Bad", "bad", saved_metrics=["views"])
    frame = live_client.experiments.list()
    assert isinstance(frame, pd.DataFrame) and frame["id"].tolist() == [experiment.id]
