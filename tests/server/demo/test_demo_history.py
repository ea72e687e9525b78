"""The demo's history of 40 past experiments: deterministic, planted as documented, concluded as a team would (the
conclusions restated with statsmodels' two-proportion z-test), and through a real service the history the client
reads back has the planted units, the decisions and the shipped flags."""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import orjson
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportions_ztest

from hoglab.client import Client
from hoglab.server.demo import HISTORY_PROJECT, PAST_EXPERIMENTS
from hoglab.server.demo.history import DAYS_RUNNING, HISTORY_METRIC, history_events, history_experiments

END = datetime(2026, 6, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def events() -> pd.DataFrame:
    frame = history_events(end=END).to_pandas()
    props = [orjson.loads(p) for p in frame["properties"]]
    frame["flag"] = [p.get("$feature_flag") for p in props]
    frame["arm"] = [p.get("$feature_flag_response") for p in props]
    return frame


def test_the_history_is_the_same_for_the_same_seed_and_moves_with_the_end() -> None:
    first, again = history_events(end=END), history_events(end=END)
    assert first.equals(again)
    later = history_events(end=END + timedelta(days=3))
    shift = later["timestamp"].to_pandas() - first["timestamp"].to_pandas()
    assert (shift == pd.Timedelta(days=3)).all()  # dates follow the demo's end, nothing else does


def test_the_planted_design(events: pd.DataFrame) -> None:
    assert len(PAST_EXPERIMENTS) == 40 and len({p.flag for p in PAST_EXPERIMENTS}) == 40
    exposures = events[events["event"] == "$feature_flag_called"]
    for past in PAST_EXPERIMENTS:
        mine = exposures[exposures["flag"] == past.flag]
        assert mine.groupby("arm").size().to_dict() == dict.fromkeys(past.arms, past.units)
        assert mine["distinct_id"].is_unique  # one exposure per person and experiment
        start = pd.Timestamp(past.start(END))
        assert mine["timestamp"].min() >= start and mine["timestamp"].max() < start + pd.Timedelta(days=10)
    # Experiments that overlap in time never share a person (a purchase belongs to one experiment).
    for a, b in itertools.pairwise(PAST_EXPERIMENTS):
        assert b.start(END) < a.finish(END)
        people_a = set(exposures.loc[exposures["flag"] == a.flag, "distinct_id"])
        assert not people_a & set(exposures.loc[exposures["flag"] == b.flag, "distinct_id"])
    lifts = np.array([lift for p in PAST_EXPERIMENTS for lift in p.true_lifts[1:]])
    assert abs(lifts.mean() - 0.01) < 3 * 0.04 / np.sqrt(lifts.size)  # drawn from N(+1%, 4%²)


def _counts(events: pd.DataFrame, flag: str, finish: pd.Timestamp) -> pd.DataFrame:
    """Exposed and converted per arm: a purchase after the person's exposure, before the experiment ended."""
    exposed = events[(events["event"] == "$feature_flag_called") & (events["flag"] == flag)]
    purchases = events.loc[events["event"] == "purchase", ["distinct_id", "timestamp"]]
    joined = exposed.merge(purchases, on="distinct_id", how="left", suffixes=("", "_bought"))
    joined["bought"] = (joined["timestamp_bought"] > joined["timestamp"]) & (joined["timestamp_bought"] <= finish)
    per_person = joined.groupby(["arm", "distinct_id"])["bought"].any()
    return per_person.groupby("arm").agg(["size", "sum"])


def test_each_experiment_is_concluded_by_its_own_z_test(events: pd.DataFrame) -> None:
    bodies = {b["feature_flag_key"]: b for b in history_experiments(end=END)}
    for past in PAST_EXPERIMENTS:
        counts = _counts(events, past.flag, pd.Timestamp(past.finish(END))).loc[list(past.arms)]
        best, best_z = None, 0.0
        for arm in past.arms[1:]:
            z, _ = proportions_ztest(counts.loc[[arm, "control"], "sum"], counts.loc[[arm, "control"], "size"])
            if abs(z) > abs(best_z):
                best, best_z = arm, z
        want = "won" if best_z > 1.959964 else "lost" if best_z < -1.959964 else "inconclusive"
        body = bodies[past.flag]
        assert body["conclusion"] == want, past.name
        assert body["ship"] == (best if want == "won" else None)
        assert body["end_date"] == (past.start(END) + timedelta(days=DAYS_RUNNING)).isoformat()
    assert Counter(b["conclusion"] for b in bodies.values()) == {"inconclusive": 33, "lost": 4, "won": 3}


def test_the_history_through_a_real_service(hoglab_service: Any) -> None:
    from hoglab.server.demo import seed_history

    state = hoglab_service.state
    project = seed_history(state, end=END)
    assert seed_history(state, end=END) == project  # made once: a second start adds nothing
    assert state.store.projects.get(project).name == HISTORY_PROJECT
    _, key = state.store.keys.create(state.store.users.default().id, ["*"], [project], label="history test")
    with Client(hoglab_service.url, key, project, progress=False) as client:
        history = client.experiments.history()
    assert history["experiment_id"].nunique() == 40 and history["error"].isna().all()
    assert set(history["metric"]) == {HISTORY_METRIC} and set(history["status"]) == {"complete"}
    by_arm = history.set_index(["experiment", "variant"])
    for past in PAST_EXPERIMENTS:
        for arm in past.arms:
            assert by_arm.loc[(past.name, arm), "units"] == past.units
    bodies = {b["name"]: b for b in history_experiments(end=END)}
    decided = history.drop_duplicates("experiment").set_index("experiment")["decision"].to_dict()
    assert decided == {name: body["conclusion"] for name, body in bodies.items()}
    shipped = history.loc[history["shipped"].fillna(False), ["experiment", "variant"]].values.tolist()
    assert sorted(shipped) == sorted([name, body["ship"]] for name, body in bodies.items() if body["ship"])
