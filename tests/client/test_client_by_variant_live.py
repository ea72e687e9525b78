"""``hoglab.by_variant`` against a real hoglab service: retention, trends and a funnel split by the variant each
person was exposed to, equal to a pandas restatement of the generated events; and the warning on the breakdown
that misleads (an event property the returning events lack).

Each person views a page before the experiment reaches them (no flag property), is exposed, then comes back on
later days; 30% of the later pageviews come from a client that does not send ``$feature/<flag>`` (as events
before an exposure never do). A tenth of the persons are never exposed.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest
from clienttesting import loaded_project

import hoglab
from hoglab.client import Client

pytestmark = pytest.mark.xdist_group("client_live")

START = datetime(2025, 6, 2, tzinfo=UTC)
FLAG = "variant-split"
DAYS = 14  # cohorts: the first 14 days


@pytest.fixture(scope="module")
def setup(hoglab_service: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    rng = np.random.default_rng(2026)
    lines, rows = [], []
    for k in range(400):
        did, variant = f"p{k}", ("control", "test")[int(rng.integers(2))]
        exposed = k % 10 != 0
        first = START + timedelta(days=int(rng.integers(0, DAYS)), hours=int(rng.integers(0, 20)))
        views = [(first, False)]
        back = 0.35 if variant == "control" else 0.5
        for day in range(1, 10):
            if rng.random() < back:
                at = first.replace(hour=0) + timedelta(days=day, hours=int(rng.integers(0, 23)))
                views.append((at, rng.random() < 0.7))
        if exposed:
            lines.append({"event": "$feature_flag_called", "distinct_id": did,
                          "timestamp": (first + timedelta(minutes=5)).isoformat(),
                          "properties": {"$feature_flag": FLAG, "$feature_flag_response": variant}})  # fmt: skip
        for at, flagged in views:
            props = {f"$feature/{FLAG}": variant} if flagged and exposed else {}
            lines.append({"event": "$pageview", "distinct_id": did, "timestamp": at.isoformat(), "properties": props})
            rows.append({"person": did, "variant": variant if exposed else None, "timestamp": at})
        if exposed and len(views) > 2:
            lines.append({"event": "purchase", "distinct_id": did,
                          "timestamp": (views[2][0] + timedelta(minutes=1)).isoformat(), "properties": {}})  # fmt: skip
    project, key = loaded_project(hoglab_service, "by variant", lines, tmp_path_factory.mktemp("by-variant"))
    client = Client(hoglab_service.url, key, project, progress=False)
    made = client.experiments.create("split", FLAG, start=START, end=START + timedelta(days=40))
    yield {"client": client, "id": made.id, "views": pd.DataFrame(rows), "lines": lines}
    client.close()


def _restated_retention(views: pd.DataFrame, last_day: pd.Timestamp) -> dict[tuple[str, Any, int], int]:
    """First-time daily retention by the person's variant: cohort = day of the first pageview (in range), value
    k = people with a pageview k days later (no later than the last day of the range)."""
    v = views.dropna(subset=["variant"]).assign(day=lambda d: pd.to_datetime(d["timestamp"], utc=True).dt.floor("D"))
    out: dict[tuple[str, Any, int], int] = {}
    for (variant, _person), g in v.groupby(["variant", "person"]):
        cohort = g["day"].min()
        if not (pd.Timestamp(START) <= cohort <= last_day):
            continue
        offsets = {0} | {int((d - cohort).days) for d in g["day"] if 0 < (d - cohort).days < 7 and d <= last_day}
        for k in offsets:
            key = (str(variant), cohort.date(), k)
            out[key] = out.get(key, 0) + 1
    return out


def test_retention_by_variant_equals_the_pandas_restatement(setup):
    client = setup["client"]
    last = START + timedelta(days=DAYS - 1)
    query = hoglab.retention("$pageview", period="day", intervals=7, date_from=START.date(), date_to=last.date())
    df = client.query(hoglab.by_variant(query, setup["id"], client=client))
    assert set(df["breakdown_value"]) == {"control", "test"}
    got = {(str(r.breakdown_value), pd.Timestamp(r.cohort_date).date(), int(r.period)): int(r.count)
           for r in df.itertuples() if pd.notna(r.count) and r.count > 0}  # fmt: skip
    assert got == _restated_retention(setup["views"], pd.Timestamp(last))
    assert not df.attrs.get("warnings")


def test_the_flag_property_breakdown_is_warned_and_undercounts(setup):
    client = setup["client"]
    last = START + timedelta(days=DAYS - 1)
    query = hoglab.retention("$pageview", period="day", intervals=7, date_from=START.date(), date_to=last.date(),
                             breakdown=f"$feature/{FLAG}")  # fmt: skip
    with pytest.warns(UserWarning, match="different values of the event property"):
        wrong = client.query(query)
    assert "hoglab.by_variant" in wrong.attrs["warnings"][0]
    right = client.query(hoglab.by_variant(query.model_copy(update={"breakdownFilter": None}), setup["id"],
                                           client=client))  # fmt: skip

    def day1(df: pd.DataFrame, value: str) -> float:
        rows = df[df["breakdown_value"] == value]
        return float(rows[rows["period"] == 1]["count"].sum() / rows[rows["period"] == 0]["count"].sum())

    # The event breakdown puts each person's unflagged pageviews in a bucket of their own ('') and loses the
    # returns on them: the test arm's day-1 retention reads lower than it is.
    assert "" in set(wrong["breakdown_value"]) and day1(wrong, "test") < day1(right, "test") - 0.05
    import matplotlib.pyplot as plt

    from hoglab.notebook.plots.retention import plot_retention_curve

    ax = plot_retention_curve(wrong)
    assert any("hoglab.by_variant" in t.get_text() for t in ax.texts)
    assert not any("⚠" in t.get_text() for t in plot_retention_curve(right).texts)
    plt.close("all")


def test_trends_and_funnels_by_variant_count_each_person_s_events_under_their_variant(setup):
    client, views = setup["client"], setup["views"]
    end = START + timedelta(days=30)
    trend = client.query(hoglab.by_variant(hoglab.trends("$pageview", interval="month", date_from=START.date(),
                                                         date_to=end.date()), setup["id"], client=client))  # fmt: skip
    totals = trend.groupby("breakdown_value")["value"].sum().to_dict()
    expected = views.dropna(subset=["variant"]).groupby("variant").size().to_dict()
    assert {str(k): int(v) for k, v in totals.items()} == expected
    steps = client.query(hoglab.by_variant(hoglab.funnel(["$pageview", "purchase"], date_from=START.date(),
                                                         date_to=end.date()), setup["id"], client=client))  # fmt: skip
    buyers = {line["distinct_id"] for line in setup["lines"] if line["event"] == "purchase"}
    people = views.dropna(subset=["variant"]).drop_duplicates("person")
    for variant, g in people.groupby("variant"):
        rows = steps[steps["breakdown_value"] == variant].sort_values("step")
        assert rows["count"].tolist() == [len(g), int(g["person"].isin(buyers).sum())]


def test_a_funnel_by_the_flag_property_with_all_events_attribution_is_warned(setup):
    client = setup["client"]
    end = START + timedelta(days=30)
    query = hoglab.funnel(["$pageview", "purchase"], date_from=START.date(), date_to=end.date(),
                          breakdown=f"$feature/{FLAG}", breakdown_attribution="all_events")  # fmt: skip
    with pytest.warns(UserWarning, match="later steps without it are not counted"):
        steps = client.query(query)
    import matplotlib.pyplot as plt

    from hoglab.notebook.plots.funnels import plot_funnel

    assert any("hoglab.by_variant" in t.get_text() for t in plot_funnel(steps).texts)
    # First-touch attribution gives each person one value: no warning.
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        first = client.query(query.model_copy(update={"funnelsFilter": None}))
    assert not first.attrs.get("warnings")
    plt.close("all")


def test_by_variant_refuses_a_query_with_its_own_breakdown(setup):
    with pytest.raises(hoglab.InvalidArgument, match="already has a breakdown"):
        hoglab.by_variant(hoglab.trends("$pageview", breakdown="$browser"), setup["id"], client=setup["client"])


def test_an_experiment_exposed_by_an_action_splits_by_its_exposed_people(setup):
    """An experiment whose exposure is an action: the toolkit writes the exposures' HogQL itself, so it must read the
    project's actions (without them nobody would be exposed and every split would be empty)."""
    client, lines = setup["client"], setup["lines"]
    viewed = client.actions.create("Viewed flagged page", event="$pageview")
    # The module's experiment with its exposure by the action (as it would be stored; by_variant takes the JSON).
    experiment = {**client.experiments._json(setup["id"]),
                  "exposure_criteria": {"exposure_config": {"kind": "ActionsNode", "id": viewed.id}}}  # fmt: skip
    end = START + timedelta(days=30)
    trend = client.query(hoglab.by_variant(hoglab.trends("$pageview", math="dau", interval="month",
                                                         date_from=START.date(), date_to=end.date()),
                                           experiment, client=client))  # fmt: skip
    # Restated: a person is exposed by their pageviews that carry the flag's variant, with that variant.
    exposed = {line["distinct_id"]: line["properties"][f"$feature/{FLAG}"] for line in lines
               if line["event"] == "$pageview" and f"$feature/{FLAG}" in line["properties"]}  # fmt: skip
    per_variant = pd.Series(exposed).value_counts().to_dict()
    got = trend.groupby("breakdown_value")["value"].sum().to_dict()
    assert per_variant and {str(k): int(v) for k, v in got.items()} == per_variant


def test_an_experiment_by_company_splits_each_event_by_its_company_s_variant(hoglab_service):
    """An experiment randomised by company: an event takes its company's variant (PostHog's entity key), and a
    funnel counts companies, as the experiment does."""
    from clienttesting import batch_client

    rng = np.random.default_rng(25)
    companies = [f"co-{i}" for i in range(24)]
    variant_of = {c: ("control", "test")[i % 2] for i, c in enumerate(companies)}
    unexposed = set(companies[:4])  # their people never see the flag
    batch, rows = [], []
    for k in range(96):
        company, did = companies[k % len(companies)], f"worker-{k}"
        seen = START + timedelta(days=int(rng.integers(0, 10)), hours=int(rng.integers(0, 20)))
        groups = {"$groups": {"company": company}}
        if company not in unexposed:
            batch.append({"event": "$feature_flag_called", "distinct_id": did, "timestamp": seen.isoformat(),
                          "properties": {"$feature_flag": "by-company", "$feature_flag_response": variant_of[company],
                                         **groups}})  # fmt: skip
        for j in range(int(rng.integers(1, 4))):
            batch.append({"event": "$pageview", "distinct_id": did, "properties": groups,
                          "timestamp": (seen + timedelta(hours=j + 1)).isoformat()})  # fmt: skip
            rows.append({"company": company, "person": did})
        if rng.random() < 0.4:
            batch.append({"event": "purchase", "distinct_id": did, "properties": groups,
                          "timestamp": (seen + timedelta(hours=5)).isoformat()})  # fmt: skip
    with batch_client(hoglab_service, "by company", batch, scopes=("*",)) as client:
        made = client.experiments.create("company split", "by-company", start=START, end=START + timedelta(days=20),
                                         parameters={"aggregation_group_type_index": 0})  # fmt: skip
        end = START + timedelta(days=20)
        trend = client.query(hoglab.by_variant(hoglab.trends("$pageview", interval="month", date_from=START.date(),
                                                             date_to=end.date()), made.id, client=client))  # fmt: skip
        views = pd.DataFrame(rows)
        views = views[~views["company"].isin(unexposed)].assign(variant=lambda d: d["company"].map(variant_of))
        got = {str(k): int(v) for k, v in trend.groupby("breakdown_value")["value"].sum().items()}
        assert got == views.groupby("variant").size().to_dict()
        funnel = client.query(hoglab.by_variant(hoglab.funnel(["$pageview", "purchase"], date_from=START.date(),
                                                              date_to=end.date()), made.id, client=client))  # fmt: skip
        buyers = {line["properties"]["$groups"]["company"] for line in batch if line["event"] == "purchase"}
        for variant in ("control", "test"):
            mine = [c for c in companies if variant_of[c] == variant and c not in unexposed]
            rows_ = funnel[funnel["breakdown_value"] == variant].sort_values("step")
            assert rows_["count"].tolist() == [len(mine), len(set(mine) & buyers)]  # companies, not people
        with pytest.raises(hoglab.InvalidArgument, match="groups of type 0"):
            hoglab.by_variant(hoglab.funnel(["$pageview", "purchase"], aggregate_by=1), made.id, client=client)
