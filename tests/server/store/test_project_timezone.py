"""A project's time zone: only IANA zones are stored, and one that is not (written by an older ``hoglab pull``,
which stored a remote's text as given) no longer breaks the project's queries: it computes in UTC and says so."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.server.ingest import Ingestor
from hoglab.server.store import Store

HOSTILE = "Mars/Olympus'); DROP TABLE events; --"


def test_only_iana_zones_are_stored(tmp_path: Any) -> None:
    with Store.open_at(tmp_path) as store:
        assert store.projects.create("Berlin", timezone="Europe/Berlin").timezone == "Europe/Berlin"
        for bad in (HOSTILE, "localtime", "../../etc/passwd", ""):
            with pytest.raises(ValueError, match="unknown time zone"):
                store.projects.create("Mars", timezone=bad)
        assert [p.name for p in store.projects.list()] == ["Berlin"]


def test_a_stored_time_zone_that_is_not_one_computes_in_utc_and_says_so(
    make_project: Callable[..., Any], hoglab_service: Any, caplog: pytest.LogCaptureFixture
) -> None:
    project = make_project()
    start = datetime.now(UTC).replace(hour=22, minute=30, second=0, microsecond=0) - timedelta(days=3)
    moments = [start + timedelta(hours=h) for h in (0, 1, 2, 25, 26)]  # across midnight UTC
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(project.id, [
        {"event": "$pageview", "distinct_id": f"u{i}", "timestamp": m.isoformat()} for i, m in enumerate(moments)
    ])  # fmt: skip
    with hoglab_service.state.store.db.write() as conn:  # what an older pull left behind
        conn.execute("UPDATE projects SET timezone = ? WHERE id = ?", (HOSTILE, project.id))

    with caplog.at_level(logging.WARNING, logger="hoglab.server.store"):
        http, base = project.http, f"/api/projects/{project.id}"
        hogql = http.post(f"{base}/query/", json={"query": {"kind": "HogQLQuery",
                          "query": "select toDate(timestamp), count() from events group by 1 order by 1"}})  # fmt: skip
        trends = http.post(f"{base}/query/", json={"query": {"kind": "TrendsQuery", "interval": "day",
                           "series": [{"kind": "EventsNode", "event": "$pageview"}],
                           "dateRange": {"date_from": "-7d"}}})  # fmt: skip
        shown = http.get(f"{base}/")
    assert hogql.status_code == 200, hogql.text
    assert trends.status_code == 200, trends.text
    assert shown.json()["timezone"] == "UTC"
    assert trends.json()["timezone"] == "UTC"
    # The days are UTC days: the oracle counts the same moments by their UTC date.
    expected = pd.Series(moments).dt.date.value_counts().sort_index()
    assert [(row[0], row[1]) for row in hogql.json()["results"]] == [(str(d), n) for d, n in expected.items()]
    result = trends.json()["results"][0]
    by_day = {day[:10]: count for day, count in zip(result["days"], result["data"], strict=True) if count}
    assert by_day == {str(d): n for d, n in expected.items()}
    assert f"project {project.id}: its stored time zone" in caplog.text and "computing in UTC" in caplog.text
