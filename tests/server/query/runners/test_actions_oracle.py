"""Actions in every insight against an independent pandas restatement of what each action selects.

Seeded events get page URLs (some differing only in case, some with ``_``/``%``, some without a URL) and some
become ``$autocapture`` clicks with an ``elements_chain``. Each action's definition is restated here in pandas,
from PostHog's documented semantics (not from hoglab's SQL): steps OR-ed, conditions AND-ed, URL ``contains`` a
case-sensitive LIKE whose ``%``/``_`` stay wildcards, ``exact`` equality, ``regex`` a search; element fields only
for ``$autocapture``. The same events must come out of HogQL ``matchesAction``, ``EventsQuery.actionId``, trends,
funnels, retention, lifecycle and stickiness, and missing actions behave per kind as PostHog's.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.schema import parse_query
from hoglab.server.query.runners import RawAnswer, load_runners
from posthog_openapi import assert_valid

from .insight_oracle import interval_key, lifecycle, retention, stickiness
from .oracle import day_keys, funnel_person, generate

pytestmark = pytest.mark.xdist_group("insights")

NOW = datetime(2025, 6, 16, 9, tzinfo=UTC)
RANGE = {"date_from": "2025-06-01", "date_to": "2025-06-15"}
URLS = [
    "https://shop.example/pricing", "https://shop.example/Pricing", "https://shop.example/pricing?plan=pro",
    "https://shop.example/cart", "https://shop.example/checkout/pay", "https://shop.example/signup/done",
    "https://shop.example/signup/done?x=1", "https://shop.example/a_b%c", "https://shop.example/axbyyc", None,
]  # fmt: skip
CHAINS = [
    'a.btn.primary:attr__class="btn primary"attr__href="/signup?ref=nav"href="/signup?ref=nav"nth-child="1"'
    'nth-of-type="1"text="Sign up";nav.top:attr__class="top"nth-child="1"nth-of-type="1"',
    'button.buy:attr__class="buy"nth-child="2"nth-of-type="1"text="Buy now";div:nth-child="1"nth-of-type="1"',
    'a:attr__href="/pricing"href="/pricing"nth-child="3"nth-of-type="2"text="Sign up free";div.main:nth-child="1"',
    'span:nth-child="1"nth-of-type="1"text="Sign up";a.link:attr__href="/signup"href="/signup"nth-child="1"',
    'abbr:nth-child="1"nth-of-type="1"text="SIGN UP"',
]
ACTIONS: dict[str, list[dict[str, Any]]] = {
    "Pricing": [{"event": "$pageview", "url": "/pricing", "url_matching": "contains"}],
    "Checkout": [
        {"event": "purchase", "properties": [{"key": "plan", "value": "pro", "operator": "exact", "type": "event"}]},
        {"event": "$pageview", "url": r"^https://shop\.example/(cart|checkout)", "url_matching": "regex"},
    ],
    "Signed up": [{"url": "https://shop.example/signup/done", "url_matching": "exact"}],
    "Wildcards": [{"event": "$pageview", "url": "a_b%c"}],
    "Clicked sign up": [
        {"event": "$autocapture", "tag_name": "a", "text": "Sign up", "href": "/signup", "href_matching": "contains"},
        {"event": "$autocapture", "text": "^Buy", "text_matching": "regex", "selector": None},
    ],
    "Elements ignored": [{"event": "signup", "tag_name": "button", "text": "nothing like it"}],
    "Everything": [],
}


# ---- the restatement: PostHog's action semantics in pandas ---------------------------------------------------


def _like(pattern: str, text: str) -> bool:
    regex = "".join(".*" if c == "%" else "." if c == "_" else re.escape(c) for c in f"%{pattern}%")
    return re.fullmatch(regex, text, flags=re.S) is not None


def _url_ok(step: dict[str, Any], url: Any) -> bool:
    if not step.get("url"):
        return True
    if url is None:
        return False
    matching = step.get("url_matching", "contains")
    if matching == "exact":
        return bool(url == step["url"])
    if matching == "regex":
        return re.search(step["url"], url) is not None
    return _like(step["url"], url)


def _text_ok(matching: Any, wanted: str, value: str) -> bool:
    if matching == "regex":
        return re.search(wanted, value) is not None
    if matching == "contains":
        return _like(wanted.lower(), value.lower())
    return value == wanted


def _elements_ok(step: dict[str, Any], chain: str) -> bool:
    if step.get("tag_name") is not None and not re.search(rf"(^|;){re.escape(step['tag_name'])}(\.|$|;|:)", chain):
        return False
    if step.get("href") is not None:
        hrefs = re.findall(r'(?::|")href="(.*?)"', chain)
        if not _text_ok(step.get("href_matching"), step["href"], hrefs[0] if hrefs else ""):
            return False
    if step.get("text") is not None:
        texts = re.findall(r'(?::|")text="(.*?)"', chain)
        if not any(_text_ok(step.get("text_matching"), step["text"], t) for t in texts):
            return False
    return True


def _props_ok(step: dict[str, Any], props: dict[str, Any]) -> bool:
    for flt in step.get("properties") or []:
        assert flt["operator"] == "exact" and flt["type"] == "event"  # the only kind this test restates
        if str(props.get(flt["key"])) != flt["value"] or flt["key"] not in props:
            return False
    return True


def matches(steps: list[dict[str, Any]], row: Any) -> bool:
    if not steps:
        return True
    for step in steps:
        ok = (not step.get("event") or row.event == step["event"]) and _url_ok(step, row.properties.get("$current_url"))
        ok = ok and _props_ok(step, row.properties)
        if ok and step.get("event") == "$autocapture":
            ok = _elements_ok(step, row.elements_chain)
        if ok:
            return True
    return False


# ---- the data -----------------------------------------------------------------------------------------------


def _events() -> pd.DataFrame:
    df = generate(seed=2501, persons=50, days=15, events_per_person=30)
    rng = np.random.default_rng(2501)
    events, props, chains = [], [], []
    for i, row in enumerate(df.itertuples()):
        p = {**row.properties, "i": i}
        event, chain = row.event, ""
        if event != "$identify":
            url = URLS[int(rng.integers(len(URLS)))]
            if url is not None:
                p["$current_url"] = url
            if event == "logout" or rng.random() < 0.08:
                event, chain = "$autocapture", CHAINS[int(rng.integers(len(CHAINS)))]
        events.append(event)
        props.append(p)
        chains.append(chain)
    return df.assign(event=events, properties=props, elements_chain=chains, i=range(len(df)))


@pytest.fixture(scope="module")
def world(make_world):
    df = _events()
    w = make_world(
        [{"event": r.event, "distinct_id": r.distinct_id, "timestamp": r.timestamp, "properties": r.properties,
          "elements_chain": r.elements_chain} for r in df.itertuples()],
        now=NOW,
    )  # fmt: skip
    assert w.store is not None
    ids = {name: w.store.actions.create(w.project.id, {"name": name, "steps": steps}).id
           for name, steps in ACTIONS.items()}  # fmt: skip
    selected = {name: df[[matches(steps, r) for r in df.itertuples()]] for name, steps in ACTIONS.items()}
    return w, df[df["event"] != "$identify"], ids, selected


def _table(w, query: dict[str, Any]) -> list[list[Any]]:
    # HogQL and events answers come as the engine's JSON rows (RawAnswer), spliced into the answer unparsed.
    model = parse_query(query)
    answer = load_runners()[model.kind](model, w.context())
    return json.loads(answer.results) if isinstance(answer, RawAnswer) else answer["results"]


def _hogql(w, sql: str) -> list[list[Any]]:
    return _table(w, {"kind": "HogQLQuery", "query": sql})


# ---- which events -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(ACTIONS))
def test_matches_action_selects_the_restated_events_by_id_and_by_name(world, name):
    w, _, ids, selected = world
    want = sorted(int(i) for i in selected[name]["i"])
    assert want, f"the data must exercise {name}"
    by_id = _hogql(w, f"select toInt(properties.i) as i from events where matchesAction({ids[name]}) order by i "
                      "limit 10000")  # fmt: skip
    by_name = _hogql(w, "select toInt(properties.i) as i from events as e where matchesAction({name}) order by i "
                        "limit 10000".replace("{name}", repr(name)))  # fmt: skip
    assert [r[0] for r in by_id] == want == [r[0] for r in by_name]


def test_the_data_tells_the_url_modes_apart(world):
    # Case, wildcards and missing URLs must each change an answer, or the restatement proves little.
    _, df, _, selected = world
    urls = df["properties"].map(lambda p: p.get("$current_url"))
    pricing = selected["Pricing"]
    assert (urls == "https://shop.example/Pricing").any() and not pricing["properties"].map(
        lambda p: p.get("$current_url") == "https://shop.example/Pricing").any()  # fmt: skip
    wild = set(selected["Wildcards"]["properties"].map(lambda p: p["$current_url"]))
    assert wild == {"https://shop.example/a_b%c", "https://shop.example/axbyyc"}
    assert set(selected["Signed up"]["properties"].map(lambda p: p["$current_url"])) == {
        "https://shop.example/signup/done"}  # fmt: skip
    clicks = selected["Clicked sign up"]
    # Not "Sign up free" (its href is /pricing), not <abbr>; "Buy now" by the second step's regex.
    assert set(clicks["elements_chain"]) == {CHAINS[0], CHAINS[1], CHAINS[3]}
    assert len(selected["Elements ignored"]) == (df["event"] == "signup").sum()


def test_events_query_action_id_keeps_the_actions_events(world):
    w, _, ids, selected = world
    rows = _table(w, {"kind": "EventsQuery", "select": ["toInt(properties.i)"], "actionId": ids["Checkout"],
                      "after": "all", "orderBy": ["toInt(properties.i)"], "limit": 10000})  # fmt: skip
    assert [r[0] for r in rows] == sorted(int(i) for i in selected["Checkout"]["i"])


# ---- insights -------------------------------------------------------------------------------------------------


def test_trends_count_and_dau_per_day_with_the_actions_name(world):
    w, _, ids, selected = world
    answer = w.run({"kind": "TrendsQuery", "dateRange": RANGE, "series": [
        {"kind": "ActionsNode", "id": ids["Pricing"]},
        {"kind": "ActionsNode", "id": ids["Checkout"], "math": "dau"},
        {"kind": "EventsNode", "event": "signup"},
    ]})  # fmt: skip
    keys = day_keys(RANGE["date_from"], RANGE["date_to"])
    for item, name, math in zip(answer["results"], ["Pricing", "Checkout"], ["total", "dau"], strict=False):
        chosen = selected[name].assign(day=selected[name]["timestamp"].dt.strftime("%Y-%m-%d"))
        per_day = chosen.groupby("day").size() if math == "total" else chosen.groupby("day")["person"].nunique()
        assert item["data"] == [float(per_day.get(k, 0)) for k in keys]
        assert item["label"] == name and item["action"]["name"] == name
    assert answer["results"][2]["label"] == "signup"
    assert [r["action"]["order"] for r in answer["results"]] == [0, 1, 2]
    assert_valid(answer, "TrendsQueryResponse")


def test_trends_drop_a_series_whose_action_the_project_lacks(world, make_world):
    w, _, ids, _ = world
    other = make_world([], now=NOW)
    foreign = other.store.actions.create(other.project.id, {"name": "Theirs", "steps": [{"event": "$pageview"}]})
    answer = w.run({"kind": "TrendsQuery", "dateRange": RANGE, "series": [
        {"kind": "ActionsNode", "id": foreign.id}, {"kind": "ActionsNode", "id": ids["Pricing"]}]})  # fmt: skip
    assert [r["label"] for r in answer["results"]] == ["Pricing"] and answer["results"][0]["action"]["order"] == 1
    sticky = w.run({"kind": "StickinessQuery", "dateRange": RANGE, "series": [
        {"kind": "ActionsNode", "id": foreign.id}, {"kind": "EventsNode", "event": "signup"}]})  # fmt: skip
    assert [r["label"] for r in sticky["results"]] == ["signup"]


def test_a_funnel_of_two_actions_matches_the_restated_replay(world):
    w, df, ids, selected = world
    answer = w.run({"kind": "FunnelsQuery", "dateRange": RANGE, "funnelsFilter": {"funnelWindowInterval": 3},
                    "series": [{"kind": "ActionsNode", "id": ids["Pricing"]},
                               {"kind": "ActionsNode", "id": ids["Checkout"]}]})  # fmt: skip
    start, end = pd.Timestamp("2025-06-01", tz="UTC"), pd.Timestamp("2025-06-15 23:59:59.999999", tz="UTC")
    step_of = {int(i): 0 for i in selected["Pricing"]["i"]}
    in_b = {int(i) for i in selected["Checkout"]["i"]}
    reached = [0, 0]
    for _, events in df[(df["timestamp"] >= start) & (df["timestamp"] <= end)].groupby("person"):
        seq = []
        for r in events.sort_values("timestamp").itertuples():
            t = r.timestamp.timestamp()
            if int(r.i) in step_of:
                seq.append((t, 0))
            if int(r.i) in in_b:
                seq.append((t, 1))
        best, _ = funnel_person(sorted(seq, key=lambda e: (e[0], e[1])), 2, 3 * 86400, "ordered")
        for k in range(best):
            reached[k] += 1
    assert [s["count"] for s in answer["results"]] == reached and reached[1] > 0
    assert [(s["name"], s["type"], s["action_id"]) for s in answer["results"]] == [
        ("Pricing", "actions", ids["Pricing"]), ("Checkout", "actions", ids["Checkout"])]  # fmt: skip
    assert_valid(answer, "FunnelsQueryResponse")


def test_missing_actions_are_400s_where_posthog_refuses_them(world):
    from hoglab.server.errors import ValidationFailed
    from hoglab.translate.errors import TranslationFailed

    w, _, _, _ = world
    missing = {"kind": "ActionsNode", "id": 987654321}
    cases = [
        ({"kind": "FunnelsQuery", "series": [missing, {"kind": "EventsNode", "event": "signup"}]}, "series.0.id"),
        ({"kind": "FunnelsQuery", "series": [{"event": "a"}, {"event": "b"}], "funnelsFilter": {"exclusions": [
            {**missing, "funnelFromStep": 0, "funnelToStep": 1}]}}, "funnelsFilter.exclusions.0.id"),
        ({"kind": "LifecycleQuery", "series": [missing]}, "series.0.id"),
        ({"kind": "RetentionQuery", "retentionFilter": {"targetEntity": {"id": 987654321, "type": "actions"}}},
         "retentionFilter.targetEntity.id"),
        ({"kind": "EventsQuery", "select": ["event"], "actionId": 987654321}, "actionId"),
    ]  # fmt: skip
    for query, attr in cases:
        with pytest.raises((ValidationFailed, TranslationFailed)) as refused:  # each a 400 naming the field
            w.run(query)
        assert refused.value.attr == attr and "987654321" in str(refused.value.detail)


def test_retention_from_one_action_back_to_another(world):
    w, df, ids, selected = world
    answer = w.run({"kind": "RetentionQuery", "dateRange": RANGE, "retentionFilter": {
        "period": "Day", "totalIntervals": 6, "targetEntity": {"id": ids["Pricing"], "type": "actions"},
        "returningEntity": {"id": ids["Checkout"], "type": "actions", "kind": "ActionsNode"}}})  # fmt: skip
    keys = [r["date"][:10] for r in answer["results"]]
    tagged = df.assign(event=np.where(df["i"].isin(selected["Pricing"]["i"]), "A",
                                      np.where(df["i"].isin(selected["Checkout"]["i"]), "B", df["event"])))
    # An event in both actions is a target and a return: give the restatement both rows.
    both = df[df["i"].isin(selected["Pricing"]["i"]) & df["i"].isin(selected["Checkout"]["i"])].assign(event="B")
    expected = retention(pd.concat([tagged, both]), tz="UTC", interval="day", keys=keys, lookahead=6, target="A",
                         returning="B", first_time=False)  # fmt: skip
    for c, cohort in enumerate(answer["results"]):
        assert [v["count"] for v in cohort["values"]] == [len(expected.get(("", c, k), ())) for k in
                                                          range(len(cohort["values"]))]  # fmt: skip
    assert any(v["count"] for cohort in answer["results"] for v in cohort["values"][1:])
    assert_valid(answer, "RetentionQueryResponse")


def test_lifecycle_of_an_action_labelled_with_its_name(world):
    w, df, ids, selected = world
    answer = w.run({"kind": "LifecycleQuery", "dateRange": {"date_from": "2025-06-03", "date_to": "2025-06-14"},
                    "series": [{"kind": "ActionsNode", "id": ids["Pricing"]}]})  # fmt: skip
    keys = day_keys("2025-06-03", "2025-06-14")
    first = df.sort_values("timestamp").groupby("person")["timestamp"].first()
    created = dict(zip(first.index.astype(int), interval_key(first, "UTC", "day"), strict=True))
    tagged = df.assign(event=np.where(df["i"].isin(selected["Pricing"]["i"]), "A", df["event"]))
    expected = lifecycle(tagged, tz="UTC", interval="day", keys=keys, before="2025-06-02", event="A", created=created)
    for item in answer["results"]:
        sign = -1 if item["status"] == "dormant" else 1
        assert item["data"] == [float(sign * len(expected.get((k, item["status"]), ()))) for k in keys]
        assert item["label"] == f"Pricing - {item['status']}"
        assert item["action"]["type"] == "actions" and item["action"]["id"] == str(ids["Pricing"])
    assert_valid(answer, "LifecycleQueryResponse")


def test_stickiness_of_an_action(world):
    w, df, ids, selected = world
    answer = w.run({"kind": "StickinessQuery", "dateRange": RANGE,
                    "series": [{"kind": "ActionsNode", "id": ids["Checkout"]}]})  # fmt: skip
    keys = day_keys(RANGE["date_from"], RANGE["date_to"])
    tagged = df.assign(event=np.where(df["i"].isin(selected["Checkout"]["i"]), "A", df["event"]))
    expected = stickiness(tagged, tz="UTC", interval="day", keys=keys, event="A")
    item = answer["results"][0]
    assert item["data"] == [len(expected.get(n, ())) for n in range(1, len(keys) + 1)]
    assert item["label"] == "Checkout" and item["action"]["name"] == "Checkout"
    assert_valid(answer, "StickinessQueryResponse")


def test_a_deleted_action_still_answers_by_id(world):
    w, _, ids, selected = world
    w.store.actions.update(w.project.id, ids["Wildcards"], {"deleted": True})
    try:
        rows = _hogql(w, f"select count() from events where matchesAction({ids['Wildcards']})")
        assert rows == [[len(selected["Wildcards"])]]
    finally:
        w.store.actions.update(w.project.id, ids["Wildcards"], {"deleted": False})
