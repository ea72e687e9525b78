"""HogQL's ``sessions`` table against the same numbers computed in pandas from the events.

Sessions are captured in two batches that split sessions (the materialized view writes partial aggregates per
insert, the view merges them) and partly loaded from a file (the loader's path); a second project reuses the
session ids and never shows. Channel types are restated in Python from PostHog's rules, one session per rule.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pandas as pd
import pytest

from hoglab.local import LocalService
from hoglab.server.hogql.sessions import ORGANIC_MEDIUMS, PAID_MEDIUMS, SOURCE_CATEGORIES
from hoglab.server.ingest import load_file

from .service import ServiceProject, new_service_project

pytestmark = pytest.mark.xdist_group("hogql_service")

START = datetime(2025, 4, 1, 9, tzinfo=UTC)

# (expected channel, entry attribution of the session's first event)
CHANNELS: list[tuple[str, dict[str, str]]] = [
    ("Direct", {"$referring_domain": "$direct"}),
    ("Direct", {}),
    ("Organic Search", {"$referring_domain": "www.google.com"}),
    ("Organic Search", {"$referring_domain": "www.bing.com", "utm_source": "bing"}),
    ("Paid Search", {"utm_source": "google", "utm_medium": "cpc", "$referring_domain": "www.google.com"}),
    ("Paid Search", {"gclid": "Cj0KC", "$referring_domain": "www.google.co.uk"}),
    ("Paid Search", {"gad_source": "1", "$referring_domain": "$direct"}),
    ("Paid Social", {"utm_source": "facebook", "utm_medium": "paid_social"}),
    ("Paid Unknown", {"gclid": "x1", "$referring_domain": "$direct"}),
    ("Paid Shopping", {"utm_source": "adnet", "utm_medium": "cpc", "utm_campaign": "summer-shopping"}),
    ("Paid Video", {"utm_source": "youtube", "utm_medium": "cpv"}),
    ("Display", {"utm_source": "adnet", "utm_medium": "cpm"}),
    ("Cross Network", {"utm_campaign": "Cross-Network Q1", "utm_medium": "cpc", "utm_source": "google"}),
    ("Organic Social", {"$referring_domain": "t.co"}),
    ("Organic Social", {"$referring_domain": "l.facebook.com"}),
    ("Organic Social", {"utm_source": "newsletter-x", "fbclid": "IwAR"}),
    ("Organic Video", {"$referring_domain": "www.youtube.com"}),
    ("Organic Shopping", {"utm_source": "partner", "utm_campaign": "shop-now"}),
    ("Email", {"utm_source": "newsletter", "utm_medium": "email"}),
    ("Referral", {"$referring_domain": "news.ycombinator.com"}),
    ("Referral", {"utm_medium": "referral", "utm_source": "partner"}),
    ("Affiliate", {"utm_medium": "affiliate", "utm_source": "partner"}),
    ("Push", {"utm_medium": "web-push", "utm_source": "app"}),
    ("Organic Search", {"utm_medium": "organic", "utm_source": "partner"}),
    ("SMS", {"utm_medium": "sms"}),
]

# Event kinds per session, cycling: single pageview (a bounce), two pageviews, pageview + autocapture, a long
# single pageview (15 s with a later event), no pageview at all.
SHAPES = [["$pageview"], ["$pageview", "$pageview"], ["$pageview", "$autocapture"], ["$pageview", "ping"], ["ping"]]


def _session_events(n: int, attribution: dict[str, str], marker: str = "") -> list[dict[str, Any]]:
    shape = SHAPES[n % len(SHAPES)]
    start = START + timedelta(minutes=17 * n)
    events = []
    for i, event in enumerate(shape):
        props: dict[str, Any] = {"$session_id": f"s{n:03d}"}
        if i == 0:
            props.update(attribution)
        if event != "ping":
            props["$current_url"] = f"https://{marker}shop.example/{['home', 'pricing', 'docs'][(n + i) % 3]}?i={i}"
        gap = 15 if shape == ["$pageview", "ping"] else 3
        events.append(
            {
                "event": event,
                "distinct_id": f"{marker}u{n % 6}",
                "properties": props,
                "timestamp": (start + timedelta(seconds=gap * i, microseconds=250_000)).isoformat(),
            }
        )
    return events


def _all_events(marker: str = "") -> list[dict[str, Any]]:
    return [e for n, (_, attribution) in enumerate(CHANNELS) for e in _session_events(n, attribution, marker)]


EVENTS = _all_events()


@pytest.fixture(scope="module")
def project(hoglab_service: LocalService, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProject]:
    made = new_service_project(hoglab_service, "sessions")
    # batch 1: the first event of every session; batch 2: the rest (so most sessions span two inserts); the
    # sessions of the last five scenarios arrive through the file loader instead
    by_file = {f"s{n:03d}" for n in range(len(CHANNELS) - 5, len(CHANNELS))}
    captured = [e for e in EVENTS if e["properties"]["$session_id"] not in by_file]
    firsts = list({e["properties"]["$session_id"]: e for e in reversed(captured)}.values())
    made.capture(firsts)
    made.capture([e for e in captured if e not in firsts])
    path = Path(tmp_path_factory.mktemp("sessions")) / "events.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in EVENTS if e["properties"]["$session_id"] in by_file) + "\n")
    engine = hoglab_service.state.engine
    assert engine is not None
    load_file(engine, made.id, path)
    # a neighbour with the same session ids and distinct ids, marked
    neighbour = new_service_project(hoglab_service, "sessions neighbour")
    neighbour.capture(_all_events(marker="NEIGHBOUR"))
    neighbour.http.close()
    yield made
    made.http.close()


def _name(host: str) -> str:
    labels = host.split(".")
    if len(labels) == 1:
        return host
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in ("co", "com", "org", "net", "ac"):
        return labels[-3]
    return labels[-2]


def _category(value: str | None) -> str | None:
    if value is None:
        return None
    return next((kind for kind, names in SOURCE_CATEGORIES.items() if _name(value.lower()) in names), None)


def expected_channel(a: dict[str, str]) -> str:
    """PostHog's default channel rules, restated."""

    def clean(key: str) -> str | None:
        value = a.get(key) or None
        return None if value in (None, "null") else value.lower()

    source, medium, campaign = clean("utm_source"), clean("utm_medium"), clean("utm_campaign")
    referrer = a.get("$referring_domain") or "$direct"
    gclid, fbclid, gad = bool(a.get("gclid")), bool(a.get("fbclid")), a.get("gad_source") or None
    shop = re.compile(r"^(.*(([^a-df-z]|^)shop|shopping).*)$")
    if campaign and "cross-network" in campaign:
        return "Cross Network"
    if (medium in PAID_MEDIUMS or (medium or "").startswith("paid")) or gclid or gad is not None:
        kind = _category(source)
        if kind:
            return f"Paid {kind}"
        if campaign and shop.match(campaign):
            return "Paid Shopping"
        paid_medium = {"cpm": "Display", "display": "Display", "video": "Paid Video", "social": "Paid Social"}
        if medium in paid_medium:
            return paid_medium[medium]
        kind = _category(referrer) if referrer != "$direct" else None
        if kind:
            return f"Paid {kind}"
        if gad == "1":
            return "Paid Search"
        if campaign and "video" in campaign:
            return "Paid Video"
        return "Paid Social" if fbclid else "Paid Unknown"
    if referrer == "$direct" and medium is None and source in (None, "(direct)", "direct", "$direct") and not fbclid:
        return "Direct"
    kind = _category(source)
    if kind:
        return f"Organic {kind}"
    if campaign and shop.match(campaign):
        return "Organic Shopping"
    for label, mediums in ORGANIC_MEDIUMS.items():
        if medium in mediums:
            return label
    kind = _category(referrer) if referrer != "$direct" else None
    if kind:
        return f"Organic {kind}"
    if campaign and "video" in campaign:
        return "Organic Video"
    if (medium or "").endswith("push"):
        return "Push"
    if fbclid:
        return "Organic Social"
    return "Direct" if referrer == "$direct" else "Referral"


def test_the_restated_rules_agree_with_the_table_of_cases() -> None:
    assert [expected_channel(a) for _, a in CHANNELS] == [channel for channel, _ in CHANNELS]


@pytest.fixture(scope="module")
def expected() -> pd.DataFrame:
    rows = []
    for e in EVENTS:
        p = e["properties"]
        rows.append({"session_id": p["$session_id"], "event": e["event"], "distinct_id": e["distinct_id"],
                     "ts": pd.Timestamp(e["timestamp"]), "url": p.get("$current_url")})  # fmt: skip
    events = pd.DataFrame(rows).sort_values("ts")
    out = []
    for session_id, g in events.groupby("session_id"):
        urls = g.dropna(subset=["url"])
        start, end = g["ts"].min(), g["ts"].max()
        duration = int((end.floor("s") - start.floor("s")).total_seconds())
        pageviews, autocaptures = int((g["event"] == "$pageview").sum()), int((g["event"] == "$autocapture").sum())
        bounce = None if pageviews + autocaptures == 0 else not (pageviews > 1 or autocaptures > 0 or duration >= 10)
        entry_url = urls["url"].iloc[0] if len(urls) else ""
        exit_url = urls["url"].iloc[-1] if len(urls) else ""
        n = int(str(session_id)[1:])
        out.append({
            "session_id": session_id, "distinct_id": g["distinct_id"].iloc[0], "duration": duration,
            "pageviews": pageviews, "autocaptures": autocaptures, "events": len(g), "bounce": bounce,
            "entry_url": entry_url, "exit_url": exit_url, "entry_path": urlparse(entry_url).path,
            "exit_path": urlparse(exit_url).path, "channel": CHANNELS[n][0],
            "utm_source": CHANNELS[n][1].get("utm_source", ""), "start": start.floor("s"), "end": end.floor("s"),
        })  # fmt: skip
    return pd.DataFrame(out).set_index("session_id")


def test_sessions_match_pandas(project: ServiceProject, expected: pd.DataFrame) -> None:
    rows = project.rows(
        "select session_id, distinct_id, $session_duration, $pageview_count, $autocapture_count, $event_count, "
        "$is_bounce, $entry_current_url, $exit_current_url, $entry_pathname, $exit_pathname, $channel_type, "
        "$entry_utm_source, toStartOfSecond($start_timestamp), toStartOfSecond($end_timestamp) "
        "from sessions order by session_id"
    )
    got = pd.DataFrame(rows, columns=["session_id", *expected.columns[:-2], "start", "end"]).set_index("session_id")
    got["bounce"] = got["bounce"].map(lambda b: None if pd.isna(b) else bool(b)).astype(object)
    got["start"] = pd.to_datetime(got["start"], utc=True)
    got["end"] = pd.to_datetime(got["end"], utc=True)
    assert len(got) == len(CHANNELS)
    assert project.rows("select id from sessions order by id") == [[s] for s in expected.index]
    pd.testing.assert_frame_equal(got, expected[got.columns], check_dtype=False)


def test_channel_type_per_rule(project: ServiceProject) -> None:
    rows = project.rows("select $channel_type, count() from sessions group by 1 order by 1")
    counts = pd.Series([c for c, _ in CHANNELS]).value_counts().sort_index()
    assert [(c, int(n)) for c, n in rows] == list(counts.items())


def test_bounce_rate_and_averages(project: ServiceProject, expected: pd.DataFrame) -> None:
    [[bounce_rate, avg_duration, sessions]] = project.rows(
        "select avg($is_bounce), avg($session_duration), count() from sessions"
    )
    assert bounce_rate == pytest.approx(expected["bounce"].dropna().astype(float).mean())
    assert avg_duration == pytest.approx(expected["duration"].mean())
    assert sessions == len(CHANNELS)


def test_events_join_their_session(project: ServiceProject, expected: pd.DataFrame) -> None:
    rows = project.rows(
        "select $session_id, session.$channel_type, session.$pageview_count, count() from events "
        "group by 1, 2, 3 order by 1"
    )
    assert [r[0] for r in rows] == list(expected.index)
    for session_id, channel, pageviews, events in rows:
        assert (channel, pageviews, events) == tuple(expected.loc[session_id, ["channel", "pageviews", "events"]])


def test_new_events_update_their_session(hoglab_service: LocalService) -> None:
    fresh = new_service_project(hoglab_service, "sessions growing")
    first = {"event": "$pageview", "distinct_id": "a", "timestamp": "2025-04-02T10:00:00Z",
             "properties": {"$session_id": "g1", "$current_url": "https://x.example/a"}}  # fmt: skip
    fresh.capture([first])
    assert fresh.rows("select $pageview_count, $is_bounce, $exit_pathname from sessions") == [[1, True, "/a"]]
    later = {**first, "timestamp": "2025-04-02T10:01:00Z",
             "properties": {"$session_id": "g1", "$current_url": "https://x.example/b"}}  # fmt: skip
    fresh.capture([later])
    assert fresh.rows("select $pageview_count, $is_bounce, $exit_pathname, $session_duration from sessions") == [
        [2, False, "/b", 60]
    ]
    fresh.http.close()


def test_the_neighbours_sessions_are_invisible(project: ServiceProject) -> None:
    rows = project.rows("select * from sessions")
    assert len(rows) == len(CHANNELS)
    assert "NEIGHBOUR" not in json.dumps(rows)
    assert project.rows("select count() from events where session.distinct_id like 'NEIGHBOUR%'") == [[0]]
