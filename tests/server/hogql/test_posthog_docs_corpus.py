"""Queries in the style of PostHog's docs and tutorials (SQL insights, sessions, persons, web analytics), run
through the real Query endpoint on generated data, each checked against pandas where that is cheap and at least
for its shape otherwise."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pytest

from hoglab.local import LocalService

from .service import ServiceProject, new_service_project

pytestmark = pytest.mark.xdist_group("hogql_service")

START = datetime(2025, 6, 2, 8, tzinfo=UTC)
PAGES = ("/", "/pricing", "/docs", "/blog/post", "/signup")
SOURCES = ({"utm_source": "google", "utm_medium": "cpc"}, {"$referring_domain": "www.google.com"},
           {"$referring_domain": "$direct"}, {"utm_source": "newsletter", "utm_medium": "email"})  # fmt: skip


def _events() -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    t = START
    for user in range(12):
        for session in range(1 + user % 3):
            sid = f"s{user}-{session}"
            t += timedelta(hours=5, minutes=user)
            kinds = ["$pageview"] * (1 + (user + session) % 3) + (["signup"] if user % 4 == 0 and session == 0 else [])
            kinds += ["purchase"] if user % 3 == 1 else []
            kinds += ["$autocapture"] if user % 5 == 2 else []
            for i, kind in enumerate(kinds):
                page = PAGES[(user + session + i) % len(PAGES)]
                props: dict[str, Any] = {
                    "$session_id": sid,
                    "$current_url": f"https://hog.example{page}?ref={i}",
                    "$pathname": page,
                    "$browser": ("Chrome", "Safari", "Firefox")[user % 3],
                    "$os": ("Mac OS X", "Windows")[user % 2],
                    "$screen_width": (1280, 1920, 390)[user % 3],
                    "$screen_height": (800, 1080, 844)[user % 3],
                }
                if user % 4 != 3:
                    props["plan"] = ("free", "pro", "team")[user % 3]
                if kind == "purchase":
                    props["price"] = 10 + user * 2.5
                if i == 0:
                    props.update(SOURCES[(user + session) % len(SOURCES)])
                if i == 0 and session == 0 and user % 2 == 0:
                    props["$set"] = {"email": f"user{user}@example.com", "company": ("acme", "hooli")[user % 4 // 2]}
                events.append({"event": kind, "distinct_id": f"u{user}", "properties": props,
                               "timestamp": (t + timedelta(seconds=7 * i)).isoformat()})  # fmt: skip
    return events


EVENTS = _events()


@pytest.fixture(scope="module")
def project(hoglab_service: LocalService) -> Iterator[ServiceProject]:
    made = new_service_project(hoglab_service, "docs corpus")
    made.capture(EVENTS)
    yield made
    made.http.close()


def _frame() -> pd.DataFrame:
    emails = {e["distinct_id"]: e["properties"]["$set"]["email"] for e in EVENTS if "$set" in e["properties"]}
    rows = []
    for e in EVENTS:
        p = e["properties"]
        rows.append({
            "event": e["event"], "distinct_id": e["distinct_id"], "ts": pd.Timestamp(e["timestamp"]),
            "session": p["$session_id"], "url": p["$current_url"], "path": urlparse(p["$current_url"]).path,
            "browser": p["$browser"], "os": p["$os"], "plan": p.get("plan"), "price": p.get("price"),
            "w": p["$screen_width"], "h": p["$screen_height"], "email": emails.get(e["distinct_id"]),
        })  # fmt: skip
    return pd.DataFrame(rows)


F = _frame()


def _counts(series: pd.Series) -> list[list[Any]]:
    return [[k, int(v)] for k, v in series.value_counts().sort_index().items()]


def _sessions() -> pd.DataFrame:
    g = F.sort_values("ts").groupby("session")
    out = pd.DataFrame({
        "duration": (g["ts"].max().dt.floor("s") - g["ts"].min().dt.floor("s")).dt.total_seconds().astype(int),
        "pageviews": g["event"].apply(lambda s: int((s == "$pageview").sum())),
        "autocaptures": g["event"].apply(lambda s: int((s == "$autocapture").sum())),
        "entry_path": g["path"].first(),
    })  # fmt: skip
    out["bounce"] = ~((out["pageviews"] > 1) | (out["autocaptures"] > 0) | (out["duration"] >= 10))
    return out


S = _sessions()
Check = Callable[[list[list[Any]]], bool]


def equals(expected: Any) -> Check:
    return lambda rows: rows == expected


def approx(expected: float) -> Check:
    return lambda rows: len(rows) == 1 and rows[0][0] == pytest.approx(expected)


def n_rows(n: int) -> Check:
    return lambda rows: len(rows) == n


CORPUS: list[tuple[str, Check]] = [
    ("select event, count() from events group by event order by event", equals(_counts(F["event"]))),
    ("select count() from events where event = '$pageview'", equals([[int((F["event"] == "$pageview").sum())]])),
    ("select properties.$browser as browser, count() from events group by browser order by browser",
     equals(_counts(F["browser"]))),
    ("select properties.$pathname, count() as views from events where event = '$pageview' "
     "group by properties.$pathname order by properties.$pathname",
     equals(_counts(F.loc[F["event"] == "$pageview", "path"]))),
    ("select toStartOfDay(timestamp) as day, count() from events group by day order by day",
     n_rows(F["ts"].dt.floor("D").nunique())),
    ("select count(distinct person_id) from events", equals([[F["distinct_id"].nunique()]])),
    ("select uniq(distinct_id) from events where event = 'purchase'",
     equals([[F.loc[F["event"] == "purchase", "distinct_id"].nunique()]])),
    ("select distinct person.properties.email from events where person.properties.email is not null "
     "order by person.properties.email", equals([[e] for e in sorted(F["email"].dropna().unique())])),
    ("select count() from events where person.properties.company = 'acme'",
     equals([[int(F["distinct_id"].map({f"u{u}": ("acme", "hooli")[u % 4 // 2] for u in range(0, 12, 2)})
             .eq("acme").sum())]])),
    ("select sum(properties.price) from events where event = 'purchase'", approx(F["price"].sum())),
    ("select avg(properties.price) from events where event = 'purchase'", approx(F["price"].dropna().mean())),
    ("select round(avg(properties.$screen_width * properties.$screen_height)) from events",
     approx(round((F["w"] * F["h"]).mean()))),
    ("select countIf(event = 'signup') / countIf(event = '$pageview') from events",
     approx((F["event"] == "signup").sum() / (F["event"] == "$pageview").sum())),
    ("select uniqIf(person_id, event = 'purchase') / uniq(person_id) as conversion from events",
     approx(F.loc[F["event"] == "purchase", "distinct_id"].nunique() / F["distinct_id"].nunique())),
    ("select concat(properties.$browser, ' on ', properties.$os) as client, count() from events "
     "group by client order by client", equals(_counts(F["browser"] + " on " + F["os"]))),
    ("select properties.plan ?? 'none' as plan, count() from events group by plan order by plan",
     equals(_counts(F["plan"].fillna("none")))),
    ("select count() from events where properties.plan != 'free'", equals([[int((F["plan"] != "free").sum())]])),
    ("select count() from events where properties.plan = null", equals([[int(F["plan"].isna().sum())]])),
    ("select count() from events where properties.plan not in ('pro', 'team')",
     equals([[int((~F["plan"].isin(["pro", "team"])).sum())]])),
    ("select count() from events where properties.$current_url not like '%/docs%'",
     equals([[int((~F["url"].str.contains("/docs")).sum())]])),
    ("select distinct_id, count() as c from events group by distinct_id order by c desc, distinct_id limit 3",
     equals([[d, int(c)] for d, c in F.groupby("distinct_id").size().sort_index().sort_values(
         ascending=False, kind="stable").head(3).items()])),
    ("select distinct_id, argMax(properties.$pathname, timestamp) as last_page from events "
     "group by distinct_id order by distinct_id",
     equals([[d, g.sort_values("ts")["path"].iloc[-1]] for d, g in F.groupby("distinct_id")])),
    ("select replaceRegexpAll(properties.$current_url, '\\\\?.*', '') as url, count() from events "
     "group by url order by url", equals(_counts("https://hog.example" + F["path"]))),
    ("select extract(properties.$current_url, 'ref=([0-9]+)') as ref, count() from events group by ref order by ref",
     equals(_counts(F["url"].str.extract(r"ref=([0-9]+)")[0]))),
    ("with first_seen as (select person_id, min(timestamp) as first from events group by person_id) "
     "select count() from first_seen", equals([[F["distinct_id"].nunique()]])),
    ("select arrayJoin(JSONExtractKeys(properties)) as key, count() from events where key = 'price' group by key",
     equals([["price", int(F["price"].notna().sum())]])),
    ("select person_id, windowFunnel(86400)(toDateTime(timestamp), event = '$pageview', event = 'signup') as step "
     "from events group by person_id having step = 2",
     n_rows(F.loc[F["event"] == "signup", "distinct_id"].nunique())),
    ("select event, timestamp from events order by timestamp desc limit 5",
     lambda rows: [r[0] for r in rows] == list(F.sort_values("ts", ascending=False)["event"].head(5))),
    ("select * from events where properties.$browser = 'Chrome' limit 10",
     n_rows(min(10, (F["browser"] == "Chrome").sum()))),
    ("select id, properties.email from persons where properties.email ilike '%@example.com' order by 2",
     lambda rows: [r[1] for r in rows] == sorted(F["email"].dropna().unique())),
    ("select count() from persons", equals([[F["distinct_id"].nunique()]])),
    ("select person_display_name.1 as who, count() from events group by who order by who",
     lambda rows: sum(r[1] for r in rows) == len(F) and len(rows) == F["distinct_id"].nunique()),
    # sessions, as PostHog's web analytics tutorials write them
    ("select count() from sessions", equals([[len(S)]])),
    ("select avg($session_duration) from sessions", approx(S["duration"].mean())),
    ("select countIf($is_bounce) / count() as bounce_rate from sessions", approx(S["bounce"].mean())),
    ("select $entry_pathname, count() from sessions group by 1 order by 1", equals(_counts(S["entry_path"]))),
    ("select $channel_type, count() from sessions group by 1 order by 1",
     lambda rows: sum(r[1] for r in rows) == len(S) and {r[0] for r in rows} <= {
         "Paid Search", "Organic Search", "Direct", "Email"}),
    ("select session.$channel_type as channel, uniq($session_id) from events group by channel order by channel",
     lambda rows: sum(r[1] for r in rows) == len(S)),
    ("select avg(session.$session_duration) from events where event = '$pageview'",
     approx(F.loc[F["event"] == "$pageview", "session"].map(S["duration"]).mean())),
    ("select quantile(0.5)(session.$pageview_count) from events", lambda rows: len(rows) == 1),
    ("select $session_id, dateDiff('second', min(timestamp), max(timestamp)) as d from events "
     "group by $session_id order by $session_id",
     equals([[s, int(S.loc[s, "duration"])] for s in sorted(S.index)])),
    ("select query, status from query_log where query like 'select count() from sessions%' limit 1",
     lambda rows: rows in ([], [["select count() from sessions", "QueryFinish"]])),
]  # fmt: skip


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 40


@pytest.mark.parametrize(("hogql", "check"), CORPUS, ids=[f"doc{i:02d}" for i in range(len(CORPUS))])
def test_docs_query(project: ServiceProject, hogql: str, check: Check) -> None:
    rows = project.rows(hogql)
    assert check(rows), rows
