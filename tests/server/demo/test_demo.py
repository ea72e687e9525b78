"""The demo dataset: deterministic, the promised shape, and an experiment whose effect is real and significant
(checked here with pandas and scipy, independently of the service)."""

from __future__ import annotations

import random
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import orjson
import pandas as pd
import pyarrow as pa
import pytest
from scipy import stats

from hoglab.schema import ExperimentCreate
from hoglab.server.demo import (
    DEMO_COMPANIES,
    DEMO_EXPERIMENT,
    DEMO_USERS,
    default_end,
    generate_events,
    seed_events,
)
from hoglab.server.engine.chdb import ChdbEngine
from hoglab.server.flags.hashing import variant_for

END = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def demo() -> pa.Table:
    return generate_events(end=END)


@pytest.fixture(scope="module")
def frame(demo: pa.Table) -> pd.DataFrame:
    df = demo.to_pandas()
    df["props"] = [orjson.loads(p) for p in df["properties"]]
    return df


def test_same_seed_same_events_other_seed_other_events() -> None:
    a = generate_events(seed=5, end=END, users=1500)
    assert a.equals(generate_events(seed=5, end=END, users=1500))
    assert not a.equals(generate_events(seed=6, end=END, users=1500))
    moved = generate_events(seed=5, end=date(2026, 6, 2), users=1500)
    shift = np.array(moved["timestamp"].cast(pa.int64())) - np.array(a["timestamp"].cast(pa.int64()))
    assert (shift == 86_400_000_000).all()  # a later end moves the same events


def test_shape(demo: pa.Table, frame: pd.DataFrame) -> None:
    assert demo.column_names == ["uuid", "event", "distinct_id", "timestamp", "properties", "elements_chain"]
    assert 100_000 < demo.num_rows < 500_000 and frame["uuid"].is_unique
    assert set(frame["event"]) == {"$pageview", "signup", "$identify", "$feature_flag_called", "purchase",
                                   "$groupidentify"}  # fmt: skip
    ts = frame["timestamp"]
    assert ts.is_monotonic_increasing and ts.min() >= END - timedelta(days=60) and ts.max() < END
    assert ts.max() > END - timedelta(days=1)  # data right up to the end, so "-1d" and "-30d" ranges have some
    persons = frame.loc[frame["event"] == "$identify", "distinct_id"].nunique()
    anonymous = frame.loc[frame["distinct_id"].str.startswith("anon-"), "distinct_id"].nunique()
    assert anonymous == DEMO_USERS and 0.4 * DEMO_USERS < persons < 0.5 * DEMO_USERS
    purchases = frame[frame["event"] == "purchase"]
    assert purchases["props"].map(lambda p: 0 < p["price"] < 1000).all()
    first_views = frame[frame["props"].map(lambda p: "$set_once" in p)]
    assert {"$initial_country", "$initial_browser"} <= set(first_views["props"].iloc[0]["$set_once"])


def test_companies(frame: pd.DataFrame) -> None:
    """300 companies with a plan each; a signed-up user's events after their ``$identify`` carry their company,
    whose plan is the user's; each company is identified before its first event."""
    identify = frame[frame["event"] == "$groupidentify"]
    companies = pd.DataFrame([{"key": p["$group_key"], **p["$group_set"]} for p in identify["props"]])
    assert len(companies) == DEMO_COMPANIES and companies["key"].is_unique and companies["name"].is_unique
    assert (identify["props"].map(lambda p: p["$group_type"]) == "company").all()
    assert set(companies["plan"]) == {"free", "pro", "enterprise"} and set(companies["industry"]) <= {
        "Software", "Finance", "Retail", "Healthcare", "Education", "Media"}  # fmt: skip
    assert (companies["employees"] >= 2).all()
    grouped = frame[frame["props"].map(lambda p: "$groups" in p)]
    key = grouped["props"].map(lambda p: p["$groups"]["company"])
    assert (key == grouped["props"].map(lambda p: p["$group_0"])).all() and set(key) == set(companies["key"])
    # Only identified users' events, never the $identify itself, and all of them after it.
    identified = frame[frame["event"] == "$identify"].groupby("distinct_id")["timestamp"].min()
    assert grouped["distinct_id"].isin(identified.index).all() and "$identify" not in set(grouped["event"])
    assert (grouped["timestamp"].to_numpy() > identified.loc[grouped["distinct_id"]].to_numpy()).all()
    ungrouped = frame[(frame["distinct_id"].isin(identified.index)) & ~frame.index.isin(grouped.index)]
    assert set(ungrouped["event"]) <= {"$identify", "$groupidentify", "$pageview"}
    # A member's plan ($set at $identify) is their company's; each company exists before its first event.
    plan = frame[frame["event"] == "$identify"].groupby("distinct_id")["props"].first().map(lambda p: p["$set"]["plan"])
    members = pd.DataFrame({"user": grouped["distinct_id"], "key": key}).drop_duplicates()
    assert members["user"].is_unique
    assert (members["user"].map(plan) == members["key"].map(companies.set_index("key")["plan"])).all()
    created = identify.set_index(identify["props"].map(lambda p: p["$group_key"]))["timestamp"]
    assert (grouped.groupby(key)["timestamp"].min() > created.loc[sorted(set(key))].sort_index()).all()


def test_devices_are_consistent(frame: pd.DataFrame) -> None:
    """The browser follows the OS (no Safari on Windows, Android or Linux), every event has the device type
    PostHog's SDKs send (tablets only on iOS and Android), and a user keeps one device on every event."""
    device = pd.DataFrame({
        "browser": frame["props"].map(lambda p: p["$browser"]), "os": frame["props"].map(lambda p: p["$os"]),
        "type": frame["props"].map(lambda p: p["$device_type"]), "user": frame["distinct_id"],
    })  # fmt: skip
    pairs = set(zip(device["os"], device["browser"], strict=True))
    assert {("Mac OS X", "Safari"), ("iOS", "Safari"), ("Windows", "Edge"), ("Linux", "Firefox")} <= pairs
    assert not {(os_, "Safari") for os_ in ("Windows", "Android", "Linux")} & pairs
    assert not {(os_, "Edge") for os_ in ("iOS", "Linux")} & pairs
    kinds = device.groupby("os")["type"].agg(set).to_dict()
    assert kinds == {"Windows": {"Desktop"}, "Mac OS X": {"Desktop"}, "Linux": {"Desktop"},
                     "iOS": {"Mobile", "Tablet"}, "Android": {"Mobile", "Tablet"}}  # fmt: skip
    per_user = device[device["user"].str.startswith("anon-")].groupby("user")[["browser", "os", "type"]].nunique()
    assert (per_user == 1).all().all()
    users = device.drop_duplicates("user")
    assert 0.12 < (users["type"] == "Tablet").mean() / users["os"].isin(["iOS", "Android"]).mean() < 0.19
    assert 0.15 < (users["browser"] == "Safari").mean() < 0.35
    set_props = frame["props"].map(lambda p: p.get("$set", {}))
    first_views = set_props[set_props.map(lambda p: "$os" in p)]
    assert first_views.map(lambda p: p["$device_type"] in {"Desktop", "Mobile", "Tablet"}).all()


def test_experiment_assignment_follows_posthog_hashing(frame: pd.DataFrame) -> None:
    start = DEMO_EXPERIMENT.start_for(END)
    variants = list(DEMO_EXPERIMENT.variants)
    exposures = frame[frame["event"] == "$feature_flag_called"]
    assert exposures["timestamp"].min() >= start and exposures["distinct_id"].is_unique
    for distinct_id, props in zip(exposures["distinct_id"], exposures["props"], strict=True):
        assert props["$feature_flag"] == "new-checkout"
        assert props["$feature_flag_response"] == variant_for("new-checkout", distinct_id, variants)
    flagged = frame[frame["props"].map(lambda p: "$feature/new-checkout" in p)]
    exposed_at = exposures.set_index("distinct_id")["timestamp"]
    assert (flagged["timestamp"].to_numpy() >= exposed_at.loc[flagged["distinct_id"]].to_numpy()).all()
    assert (flagged["props"].map(lambda p: p["$feature/new-checkout"]).to_numpy()
            == exposures.set_index("distinct_id").loc[flagged["distinct_id"], "props"]
            .map(lambda p: p["$feature_flag_response"]).to_numpy()).all()  # fmt: skip


def test_the_new_checkout_helps_mobile_users_most_a_planted_segment_effect(frame: pd.DataFrame) -> None:
    import statsmodels.formula.api as smf

    exposures = frame[frame["event"] == "$feature_flag_called"].set_index("distinct_id")["props"]
    buyers = set(frame.loc[(frame["event"] == "purchase") & frame["props"].map(lambda p: "$feature/new-checkout" in p),
                           "distinct_id"])  # fmt: skip
    units = pd.DataFrame({
        "test": exposures.map(lambda p: p["$feature_flag_response"] == "test").astype(int),
        "mobile": exposures.map(lambda p: p["$device_type"] in ("Mobile", "Tablet")).astype(int),
        "bought": exposures.index.isin(buyers).astype(int),
    })  # fmt: skip
    rate = units.groupby(["mobile", "test"])["bought"].mean()
    assert rate[(1, 0)] == pytest.approx(0.30, abs=0.002) and rate[(1, 1)] == pytest.approx(0.435, abs=0.002)
    assert rate[(0, 0)] == pytest.approx(0.30, abs=0.002) and 0.28 < rate[(0, 1)] < 0.31
    # The interaction (the effect on mobile less the effect on desktop) is clear in a regression with robust errors.
    fit = smf.ols("bought ~ test * mobile", data=units).fit(cov_type="HC1")
    assert fit.params["test:mobile"] > 0.1 and fit.pvalues["test:mobile"] < 0.001


def test_the_test_variant_converts_better_and_significantly(frame: pd.DataFrame) -> None:
    exposures = frame[frame["event"] == "$feature_flag_called"]
    variant = exposures.set_index("distinct_id")["props"].map(lambda p: p["$feature_flag_response"])
    buyers = set(frame.loc[(frame["event"] == "purchase") & frame["props"].map(lambda p: "$feature/new-checkout" in p),
                           "distinct_id"])  # fmt: skip
    summary = pd.DataFrame({"variant": variant, "bought": variant.index.isin(buyers)}).groupby("variant")["bought"]
    n, k = summary.size(), summary.sum()
    rate = k / n
    assert n.min() > 1000 and abs(n["test"] / n["control"] - 1) < 0.1  # a 50/50 split
    assert rate["control"] == pytest.approx(0.30, abs=0.002) and rate["test"] == pytest.approx(0.345, abs=0.002)
    table = [[k["test"], n["test"] - k["test"]], [k["control"], n["control"] - k["control"]]]
    assert stats.chi2_contingency(table).pvalue < 0.05
    rng = np.random.default_rng(0)
    draws = {v: rng.beta(1 + k[v], 1 + n[v] - k[v], 100_000) for v in ("control", "test")}
    assert (draws["test"] > draws["control"]).mean() > 0.95  # PostHog's funnel criterion is 0.9


def test_experiment_metadata() -> None:
    body = DEMO_EXPERIMENT.create_body(END)
    created = ExperimentCreate.model_validate(body)
    assert created.feature_flag_key == "new-checkout" and created.start_date == END - timedelta(days=30)
    assert [v.key for v in created.parameters.feature_flag_variants or []] == ["control", "test"]
    assert body["filters"]["insight"] == "FUNNELS" and [e["id"] for e in body["filters"]["events"]] == [
        "$pageview", "purchase",
    ]  # fmt: skip
    assert DEMO_EXPERIMENT.start_date == default_end() - timedelta(days=30)
    assert default_end().time() == datetime.min.time() and default_end().date() == datetime.now(UTC).date()


def test_seeding_an_engine(engine: ChdbEngine, demo: pa.Table, tmp_path: Path) -> None:
    team = random.SystemRandom().randrange(10**9, 2**62)
    report = seed_events(engine, team, end=END)
    assert report.rows == demo.num_rows and report.persons_created == DEMO_USERS
    counts = engine.execute(f"""
        SELECT (SELECT count() FROM events WHERE team_id = {team}) AS events,
               (SELECT count() FROM (SELECT id FROM persons WHERE team_id = {team} GROUP BY id
                                     HAVING argMax(is_deleted, version) = 0)) AS persons,
               (SELECT count() FROM person_overrides WHERE team_id = {team}) AS overrides,
               (SELECT countIf(n > 1) FROM (SELECT person_id, count() AS n FROM person_distinct_ids
                                            WHERE team_id = {team} GROUP BY person_id)) AS multi""").to_pylist()[0]
    assert counts["events"] == demo.num_rows and counts["persons"] == DEMO_USERS
    assert counts["overrides"] > 0 and counts["multi"] > 0.4 * DEMO_USERS
    identified = engine.execute(f"""
        SELECT JSONExtractString(p, 'plan') AS plan, count() AS n FROM (
            SELECT argMax(properties, version) AS p FROM persons WHERE team_id = {team} GROUP BY id
            HAVING argMax(is_deleted, version) = 0 AND argMax(is_identified, version) = 1)
        GROUP BY plan ORDER BY plan""").to_pylist()
    assert [r["plan"] for r in identified] == ["enterprise", "free", "pro"]
    # The companies: one group type, index 0; a group per $groupidentify with its properties; events' $group_0.
    group_set = {orjson.loads(p)["$group_key"]: orjson.loads(p)["$group_set"]
                 for e, p in zip(demo["event"].to_pylist(), demo["properties"].to_pylist(), strict=True)
                 if e == "$groupidentify"}  # fmt: skip
    types = engine.execute(f"SELECT group_type, group_type_index FROM group_type_mapping WHERE team_id = {team}")
    assert types.to_pylist() == [{"group_type": "company", "group_type_index": 0}]
    groups = engine.execute(f"""
        SELECT group_key, argMax(group_properties, version) AS p FROM groups
        WHERE team_id = {team} AND group_type_index = 0 GROUP BY group_key""").to_pylist()
    assert {g["group_key"]: orjson.loads(g["p"]) for g in groups} == group_set
    keyed = engine.execute(f"""
        SELECT countIf(`$group_0` != '') AS n, uniqExactIf(`$group_0`, `$group_0` != '') AS k
        FROM events WHERE team_id = {team}""").to_pylist()[0]
    assert keyed == {"n": sum('"$groups"' in p for p in demo["properties"].to_pylist()), "k": len(group_set)}


def test_the_demo_experiment_through_results(make_project) -> None:
    """The demo's experiment, seeded into the running service (a third of the default size), is significant
    through ``/results``, with the counts pandas finds in the same generated events; the secondary metric too."""
    from hoglab.server.demo import seed

    users = 7000
    project = make_project()
    seed(project.service.state, project.record, users=users)
    frame = generate_events(users=users).to_pandas()
    frame["props"] = [orjson.loads(p) for p in frame["properties"]]
    exposures = frame[frame["event"] == "$feature_flag_called"]
    variant = exposures.set_index("distinct_id")["props"].map(lambda p: p["$feature_flag_response"])
    flagged = frame[frame["props"].map(lambda p: "$feature/new-checkout" in p)]
    purchases = flagged[flagged["event"] == "purchase"]
    exposed = variant.groupby(variant).size()
    converted = variant[variant.index.isin(set(purchases["distinct_id"]))].groupby(variant).size()

    [experiment] = project.http.get(f"/api/projects/{project.id}/experiments/").json()["results"]
    url = f"/api/projects/{project.id}/experiments/{experiment['id']}"
    answer = project.http.get(f"{url}/results/")
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert {v["key"]: (v["success_count"], v["failure_count"]) for v in result["variants"]} == {
        key: (converted[key], exposed[key] - converted[key]) for key in ("control", "test")
    }
    assert result["significant"] is True and result["significance_code"] == "significant"
    assert result["probability"]["test"] > 0.9 and result["expected_loss"] < 0.01

    secondary = project.http.get(f"{url}/secondary_results/", params={"id": 0}).json()["result"]
    bought = purchases.assign(variant=purchases["props"].map(lambda p: p["$feature/new-checkout"]))
    counts = bought.groupby("variant").size()
    assert secondary["result"] == {key: float(counts[key]) for key in ("control", "test")}
    assert {v["key"]: v["absolute_exposure"] for v in secondary["variants"]} == exposed.to_dict()
