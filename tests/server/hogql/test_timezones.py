"""The project's time zone: columns are read in it, zone-less DateTime constructors default to it."""

from __future__ import annotations

from collections import Counter
from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from .conftest import Runner
from .world import World

pytestmark = pytest.mark.xdist_group("hogql_chdb")

ZONES = ["UTC", "Europe/Berlin", "America/Los_Angeles", "Asia/Kolkata"]


def _local(ts: str, zone: str) -> datetime:
    return datetime.fromisoformat(ts).replace(tzinfo=ZoneInfo("UTC")).astimezone(ZoneInfo(zone))


@pytest.mark.parametrize("zone", ZONES)
def test_days_are_project_days(ch: Runner, world: World, zone: str) -> None:
    rows = ch.query("select toDate(timestamp) as d, count() from events group by d order by d", timezone=zone)
    expected = Counter(_local(e["timestamp"], zone).date().isoformat() for e in world.team("events"))
    assert rows == [[d, n] for d, n in sorted(expected.items())]
    rows = ch.query("select toStartOfDay(timestamp) as d, count() from events group by d order by d", timezone=zone)
    assert rows == [[f"{d} 00:00:00", n] for d, n in sorted(expected.items())]


@pytest.mark.parametrize("zone", ZONES)
def test_hours_and_timestamps_are_local(ch: Runner, world: World, zone: str) -> None:
    rows = ch.query("select uuid, toHour(timestamp), timestamp from events", timezone=zone)
    expected = {
        e["uuid"]: [_local(e["timestamp"], zone).hour, _local(e["timestamp"], zone).strftime("%Y-%m-%d %H:%M:%S.%f")]
        for e in world.team("events")
    }
    assert {r[0]: r[1:] for r in rows} == expected


@pytest.mark.parametrize("zone", ZONES)
def test_string_datetimes_are_local(ch: Runner, world: World, zone: str) -> None:
    rows = ch.query("select count() from events where timestamp >= toDateTime('2026-01-03 00:00:00')", timezone=zone)
    bound = datetime(2026, 1, 3, tzinfo=ZoneInfo(zone))
    assert rows == [[sum(1 for e in world.team("events") if _local(e["timestamp"], zone) >= bound)]]
    rows = ch.query("select count() from events where timestamp >= '2026-01-03 00:00:00'", timezone=zone)
    assert rows == [[sum(1 for e in world.team("events") if _local(e["timestamp"], zone) >= bound)]]


def test_now_and_today_carry_the_zone(ch: Runner) -> None:
    compiled = ch.compile("select now(), today(), yesterday(), now64(), parseDateTimeBestEffort('2026-01-01')",
                          timezone="Asia/Kolkata")  # fmt: skip
    assert "now('Asia/Kolkata')" in compiled.sql
    assert "toDate(now('Asia/Kolkata'))" in compiled.sql
    assert "parseDateTimeBestEffort('2026-01-01', 'Asia/Kolkata')" in compiled.sql
    today = datetime.now(ZoneInfo("Asia/Kolkata")).date().isoformat()
    rows = ch.rows(compiled.sql)
    assert rows[0][1] in (today, datetime.now(ZoneInfo("UTC")).date().isoformat())  # midnight races
    explicit = ch.compile("select toDateTime('2026-01-01 00:00:00', 'UTC')", timezone="Asia/Kolkata")
    assert "'Asia/Kolkata'" not in explicit.sql


def test_persons_created_at_is_local(ch: Runner, world: World) -> None:
    rows = ch.query("select id, created_at from persons", timezone="America/Los_Angeles")
    expected = {
        pid: _local(p["created_at"], "America/Los_Angeles").strftime("%Y-%m-%d %H:%M:%S.%f")
        for pid, p in world.persons_now().items()
    }
    assert {r[0]: r[1] for r in rows} == expected


def test_unknown_zone_is_refused(ch: Runner) -> None:
    from hoglab.server.hogql import HogQLError

    with pytest.raises(HogQLError, match="time zone"):
        ch.compile("select 1", timezone="Mars/Olympus")
