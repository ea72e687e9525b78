"""``POST /api/personal_api_keys/`` with odd ``expires_at`` values: a clear 400 naming the field or a key that
expires at the instant asked (in UTC), never a 500.

PostHog reads the field with Django REST framework's ``DateTimeField``: an aware time is converted to UTC (a time
the conversion takes out of the calendar, ``9999-12-31T23:59:59-14:00``, is "Datetime value out of range."), a
naive one is read in the server's zone, UTC. The oracle below is Python's own ``datetime`` arithmetic."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.store.db import utcnow

# (value, accepted): accepted values are within the calendar in UTC and in the future.
EDGES: list[tuple[Any, bool]] = [
    ("9999-12-31T23:59:59-14:00", False),  # the 500: in UTC it is year 10000
    ("9999-12-31T23:59:59.999999-00:01", False),
    ("9999-12-31T23:59:59.999999Z", True),
    ("9999-12-31T23:59:59+14:00", True),  # 09:59:59 UTC
    ("9999-12-31", True),  # a date: its midnight, UTC
    ("0001-01-01T00:00:00+14:00", False),  # before year 1 in UTC
    ("0001-01-01T00:00:00-14:00", False),  # in the calendar, in the past
    ("0001-01-01", False),
    ("2030-02-30T00:00:00Z", False),
    ("2030-01-01T24:00:00Z", False),
    ("2030-01-01T23:59:60Z", False),
    ("2030-01-01T00:00:00+24:00", False),
    ("2030-01-01T00:00:00+99:99", False),
    ("+10000-01-01T00:00:00Z", False),
    ("10000-01-01T00:00:00Z", False),
    ("2030-13-01", False),
    ("", False),
    (" ", False),
    ("now", False),
    ("2030-01-01T00:00:00 Europe/Paris", False),
    # Numbers are no Unix times for PostHog's field (ISO text only), whatever their size.
    (1_900_000_000, False),
    (0, False),
    (-1, False),
    (2**63, False),
    (2**64, False),
    (1e308, False),
    (True, False),
    ([], False),
    ({}, False),
    ({"$date": "2030-01-01"}, False),
]


def _renders(moment: datetime, offset: timedelta | None) -> st.SearchStrategy[tuple[str, bool]]:
    """Texts of ``moment`` (naive, plus ``offset`` when given): ``(text, canonical)``, canonical for RFC 3339's
    ``YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±HH:MM)`` (or no offset), which any ISO reader must take."""
    zone = ""
    if offset is not None:
        minutes = int(offset.total_seconds()) // 60
        zone = "Z" if minutes == 0 else f"{'-' if minutes < 0 else '+'}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"
    canonical = moment.isoformat() + zone
    forms = [(canonical, True), (canonical.replace("T", " "), False), (moment.date().isoformat(), False),
             (moment.strftime("%Y-%m-%dT%H:%M") + zone, False), (canonical.lower(), False)]  # fmt: skip
    return st.sampled_from(forms)


_OFFSETS = st.none() | st.builds(lambda minutes: timedelta(minutes=minutes), st.integers(-(24 * 60 - 1), 24 * 60 - 1))
_MOMENTS = st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999)) | (
    st.datetimes(min_value=datetime(9999, 12, 30), max_value=datetime(9999, 12, 31, 23, 59, 59, 999999))
) | st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(1, 1, 2))
_TEXTS = st.tuples(_MOMENTS, _OFFSETS).flatmap(lambda pair: _renders(*pair).map(lambda r: (*r, pair)))


def _expected(moment: datetime, offset: timedelta | None) -> datetime | None:
    """The instant in UTC (Python's arithmetic), ``None`` outside the calendar."""
    aware = moment.replace(tzinfo=UTC if offset is None else timezone(offset))
    try:
        return aware.astimezone(UTC)
    except OverflowError:
        return None


def test_odd_expiry_times_are_a_400_naming_the_field_or_the_instant_asked(make_project) -> None:
    project = make_project(projects="all")  # managing keys needs '*' on every project
    store = project.service.state.store

    def create(value: Any) -> tuple[int, dict[str, Any]]:
        response = project.http.post("/api/personal_api_keys/", content=json.dumps({"scopes": ["query:read"],
                                     "expires_at": value}), headers={"Content-Type": "application/json"})  # fmt: skip
        assert response.status_code in (201, 400), (value, response.status_code, response.text)
        body = response.json()
        if response.status_code == 201:
            store.keys.delete(body["id"])  # the session's store keeps no pile of test keys
        else:
            assert body["type"] == "validation_error" and body["attr"] == "expires_at", (value, body)
        return response.status_code, body

    for value, accepted in EDGES:
        assert create(value)[0] == (201 if accepted else 400), value
    assert create("9999-12-31T23:59:59-14:00")[1]["detail"] == "Datetime is out of the supported range."
    assert create(1_900_000_000)[1]["detail"].startswith("Datetime has wrong format. Use ISO 8601")
    assert create("9999-12-31T23:59:59Z")[1]["expires_at"] == "9999-12-31T23:59:59+00:00"
    assert create("2999-06-01T12:00:00")[1]["expires_at"] == "2999-06-01T12:00:00+00:00"  # naive: UTC

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_TEXTS)
    def odd(case: tuple[str, bool, tuple[datetime, timedelta | None]]) -> None:
        text, canonical, (moment, offset) = case
        status, body = create(text)
        expected = _expected(moment, offset)
        if status == 201:
            got = datetime.fromisoformat(body["expires_at"])
            assert got > utcnow() and (not canonical or got == expected), (text, got, expected)
        elif canonical and expected is not None and abs(expected - utcnow()) > timedelta(minutes=5):
            # A well-formed time: refused only when it is outside the calendar in UTC or not in the future.
            assert expected < utcnow(), (text, body)

    odd()
