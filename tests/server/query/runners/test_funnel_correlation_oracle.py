"""``FunnelCorrelationQuery`` against a pandas restatement of PostHog's semantics, on generated journeys.

2,000 persons sign up (in the range, a few before it), some check out and purchase (a few after the 14-day window,
so they fail at step 2), and do other events before, during and after their time in the funnel; some of the other
events go with converting, some with dropping off, one is rare (left out as insignificant). The restatement reads
the journeys as the module docstring of ``runners/funnel_correlation.py`` says, with pandas only, and every row of
the answer (names, counts, odds ratios, order, ``skewed``) must be it, for the three correlation types. PostHog's
own basic test (odds ratios 11 and 1/11) is kept as a fact.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

START = datetime(2025, 3, 1, tzinfo=UTC)
RANGE = {"date_from": "2025-03-01", "date_to": "2025-04-30"}
WINDOW = timedelta(days=14)
STEPS = ["signup", "checkout", "purchase"]
# name -> (chance for a person who will convert, chance for one who will not)
OTHERS = {f"good_{k}": (0.5 - 0.03 * k, 0.1) for k in range(12)} | {
    f"bad_{k}": (0.1, 0.45 - 0.03 * k) for k in range(12)} | {"neutral": (0.3, 0.3), "rare": (0.004, 0.004)}
PLANS = {"free": 0.3, "pro": 0.6, "team": 0.45}


def _journeys() -> tuple[list[dict[str, Any]], pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(2037)
    events: list[dict[str, Any]] = []
    people = []
    for k in range(2000):
        person = f"p{k}"
        plan = list(PLANS)[k % 3]
        country = ("", "FR", "DE", "US")[int(rng.integers(4))]
        entry = START + timedelta(days=float(rng.uniform(-3, 45)), seconds=int(rng.integers(86400)))
        converts = bool(rng.random() < PLANS[plan])
        late = converts and rng.random() < 0.1  # purchases after the window: a failure at step 2
        checkout = entry + timedelta(hours=float(rng.uniform(1, 48)))
        purchase = checkout + (timedelta(days=15) if late else timedelta(hours=float(rng.uniform(1, 72))))
        props = {"$set": {"plan": plan, **({"country": country} if country else {})}}
        events.append({"event": "signup", "distinct_id": person, "timestamp": entry, "properties": props})
        reached = 0
        if converts or rng.random() < 0.5:
            events.append({"event": "checkout", "distinct_id": person, "timestamp": checkout, "properties": {}})
            reached = 1
        if converts:
            events.append({"event": "purchase", "distinct_id": person, "timestamp": purchase, "properties": {}})
            reached = 2
        for name, (p_yes, p_no) in OTHERS.items():
            if rng.random() < (p_yes if converts and not late else p_no):
                # before entering, inside the funnel, or after it (after the purchase or the window)
                where = rng.choice(["before", "inside", "inside", "after"])
                if where == "before":
                    at = entry - timedelta(hours=float(rng.uniform(1, 100)))
                elif where == "inside":
                    end = purchase if converts and not late else entry + WINDOW
                    at = entry + (end - entry) * float(rng.uniform(0.01, 0.99))
                else:
                    at = (purchase if converts and not late else entry + WINDOW) + timedelta(hours=float(
                        rng.uniform(1, 100)))  # fmt: skip
                tier = ("gold", "silver")[int(rng.integers(2)) if not converts else 0]
                events.append({"event": name, "distinct_id": person, "timestamp": at,
                               "properties": {"tier": tier, "source": "ad" if k % 2 else "seo"}})  # fmt: skip
        people.append({"person": person, "plan": plan, "country": country, "reached": reached})
    frame = pd.DataFrame([{**e, "tier": e["properties"].get("tier"), "source": e["properties"].get("source")}
                          for e in events])  # fmt: skip
    return events, frame, pd.DataFrame(people)


@pytest.fixture(scope="module")
def journeys(make_world: Any) -> dict[str, Any]:
    events, frame, people = _journeys()
    return {"world": make_world(events, now=datetime(2025, 6, 1, tzinfo=UTC)), "events": frame, "people": people}


def _actors(events: pd.DataFrame) -> pd.DataFrame:
    """The funnel's actors restated: entered in range, converted within 14 days of the entry, in step order."""
    low, high = pd.Timestamp("2025-03-01", tz="UTC"), pd.Timestamp("2025-04-30 23:59:59.999999", tz="UTC")
    inside = events[(events["timestamp"] >= low) & (events["timestamp"] <= high)]
    first = inside[inside["event"] == "signup"].groupby("distinct_id")["timestamp"].min().rename("first")
    steps = inside[inside["event"].isin(STEPS[1:])].pivot_table(index="distinct_id", columns="event",
                                                                values="timestamp", aggfunc="min")  # fmt: skip
    actors = pd.DataFrame(first).join(steps)
    done = (actors["purchase"] > actors["checkout"]) & (actors["purchase"] - actors["first"] <= WINDOW)
    actors["success"] = done.fillna(False).astype(bool)
    actors["final"] = actors["purchase"].where(actors["success"])
    actors["until"] = actors["final"].fillna(actors["first"] + WINDOW).clip(upper=high + pd.Timedelta("1us"))
    return actors


def _expected(counts: pd.DataFrame, success_total: int, failure_total: int, min_more_than: int = 0) -> list[Any]:
    total = success_total + failure_total
    counts = counts[(counts["s"] + counts["f"]) >= min(25, 0.02 * total)]
    counts = counts[(counts["s"] + counts["f"]) > min_more_than]
    s, f = counts["s"], counts["f"]
    odds = ((s + 1) * (failure_total - f + 1)) / ((success_total - s + 1) * (f + 1))
    table = counts.assign(odds=odds).reset_index(names="name")
    up = table[table["odds"] > 1].sort_values(["odds", "name"], ascending=[False, True]).head(10)
    down = table[table["odds"] <= 1].sort_values(["odds", "name"]).head(10)
    return [(r.name, int(r.s), int(r.f), pytest.approx(r.odds, rel=1e-12), "success" if r.odds > 1 else "failure")
            for r in pd.concat([up, down]).itertuples()]  # fmt: skip


def _got(answer: dict[str, Any]) -> list[Any]:
    return [(e["event"]["event"], e["success_count"], e["failure_count"], e["odds_ratio"], e["correlation_type"])
            for e in answer["results"]["events"]]  # fmt: skip


def _query(kind: str, **names: Any) -> dict[str, Any]:
    return {"kind": "FunnelCorrelationQuery", "funnelCorrelationType": kind, **names,
            "source": {"kind": "FunnelsActorsQuery", "source": {"kind": "FunnelsQuery", "dateRange": RANGE,
                       "series": [{"kind": "EventsNode", "event": s} for s in STEPS]}}}  # fmt: skip


def _in_funnel(events: pd.DataFrame, actors: pd.DataFrame) -> pd.DataFrame:
    joined = events.join(actors, on="distinct_id", how="inner")
    low = pd.Timestamp("2025-03-01", tz="UTC")
    keep = (joined["timestamp"] > joined["first"]) & (joined["timestamp"] < joined["until"])
    return joined[keep & (joined["timestamp"] >= low) & ~joined["event"].isin(STEPS)]


def test_event_correlations_are_the_pandas_restatement(journeys: dict[str, Any]) -> None:
    actors = _actors(journeys["events"])
    seen = _in_funnel(journeys["events"], actors)
    counts = seen.drop_duplicates(["distinct_id", "event"]).groupby("event")["success"].agg(
        s="sum", f=lambda x: int((~x).sum()))  # fmt: skip
    s_total, f_total = int(actors["success"].sum()), int((~actors["success"]).sum())
    answer = journeys["world"].run(_query("events"))
    expected = _expected(counts, s_total, f_total)
    assert _got(answer) == expected
    assert len(expected) == 20 and "rare" not in {e[0] for e in expected}  # the top-10 cut and the filter bite
    assert answer["results"]["skewed"] is False
    # Excluded names take no part.
    without = journeys["world"].run(_query("events", funnelCorrelationExcludeEventNames=["good_0", "bad_0"]))
    assert _got(without) == _expected(counts.drop(index=["good_0", "bad_0"]), s_total, f_total)


def test_event_property_correlations_are_the_pandas_restatement(journeys: dict[str, Any]) -> None:
    actors = _actors(journeys["events"])
    seen = _in_funnel(journeys["events"], actors)
    seen = seen[seen["event"].isin(["good_1", "bad_1"])]
    long = pd.concat([seen.assign(name=seen["event"] + "::tier::" + seen["tier"]),
                      seen.assign(name=seen["event"] + "::source::" + seen["source"])])  # fmt: skip
    counts = long.drop_duplicates(["distinct_id", "name"]).groupby("name")["success"].agg(
        s="sum", f=lambda x: int((~x).sum()))  # fmt: skip
    s_total, f_total = int(actors["success"].sum()), int((~actors["success"]).sum())
    answer = journeys["world"].run(_query("event_with_properties", funnelCorrelationEventNames=["good_1", "bad_1"]))
    assert _got(answer) == _expected(counts, s_total, f_total, min_more_than=2)
    skipped = journeys["world"].run(_query("event_with_properties", funnelCorrelationEventNames=["good_1", "bad_1"],
                                           funnelCorrelationEventExcludePropertyNames=["source"]))  # fmt: skip
    assert _got(skipped) == _expected(counts[counts.index.str.contains("::tier::")], s_total, f_total, 2)


def test_person_property_correlations_are_the_pandas_restatement(journeys: dict[str, Any]) -> None:
    actors = _actors(journeys["events"]).join(journeys["people"].set_index("person"))
    s_total, f_total = int(actors["success"].sum()), int((~actors["success"]).sum())

    def counts(names: list[str]) -> pd.DataFrame:
        long = pd.concat([actors.assign(name=f"{n}::" + actors[n].astype(str)) for n in names])
        return long.groupby("name")["success"].agg(s="sum", f=lambda x: int((~x).sum()))

    answer = journeys["world"].run(_query("properties", funnelCorrelationNames=["plan", "country"]))
    assert _got(answer) == _expected(counts(["plan", "country"]), s_total, f_total)
    assert any(e[0] == "country::" for e in _got(answer))  # a missing property reads ""
    every = journeys["world"].run(_query("properties", funnelCorrelationNames=["$all"],
                                         funnelCorrelationExcludeNames=["country"]))  # fmt: skip
    assert _got(every) == _expected(counts(["plan"]), s_total, f_total)


def test_posthog_basic_case_odds_of_eleven(make_world: Any) -> None:
    # PostHog's test_basic_funnel_correlation_with_events: 10 convert (half did positively_related), 10 do not
    # (half did negatively_related): odds ratios 11 and 1/11.
    events = []
    for i in range(20):
        person = f"user_{i}"
        events.append({"event": "user signed up", "distinct_id": person, "timestamp": "2020-01-02T14:00:00Z"})
        if i % 2 == 0:
            name = "positively_related" if i < 10 else "negatively_related"
            events.append({"event": name, "distinct_id": person, "timestamp": "2020-01-03T14:00:00Z"})
        if i < 10:
            events.append({"event": "paid", "distinct_id": person, "timestamp": "2020-01-04T14:00:00Z"})
    world = make_world(events, now=datetime(2020, 2, 1, tzinfo=UTC))
    query = {"kind": "FunnelCorrelationQuery", "funnelCorrelationType": "events", "source": {
        "kind": "FunnelsActorsQuery", "source": {"kind": "FunnelsQuery", "series": [
            {"kind": "EventsNode", "event": "user signed up"}, {"kind": "EventsNode", "event": "paid"}],
            "dateRange": {"date_from": "2020-01-01", "date_to": "2020-01-14"}}}}  # fmt: skip
    got = _got(world.run(query))
    assert got == [("positively_related", 5, 0, pytest.approx(11), "success"),
                   ("negatively_related", 0, 5, pytest.approx(1 / 11), "failure")]  # fmt: skip
    one_sided = world.run({**query, "source": {**query["source"], "funnelStep": 2}})  # only converters: no failures
    assert one_sided["results"] == {"events": [], "skewed": True}
