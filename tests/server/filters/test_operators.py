"""Every property operator, pinned to PostHog's semantics, the same through the insight runners and HogQL
``{filters}`` (one translator), and the flag matcher's own rules (PostHog's flags service differs on purpose).

One event per value of ``v`` (missing, JSON null, numbers, numeric strings, booleans, text, dates); each filter
must select exactly the events a plain-Python restatement of PostHog's rules selects. The restatement reads
HogQL's view of a property: text, or NULL for a missing key or a JSON null.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from hoglab.server.flags.properties import match_property
from hoglab.server.ingest import Ingestor

MISSING = object()
VALUES: list[Any] = [
    MISSING, None, "5", 5, "5.0", 5.5, "abc", True, "true", "Chrome", "chrome", "", "10", -3,
    "2025-06-01T10:00:00Z", "2025-05-01", 0,
]  # fmt: skip


def hogql_text(value: Any) -> str | None:
    """``properties.v`` as HogQL reads it: the string itself, JSON text for other values, NULL when absent."""
    if value is MISSING or value is None:
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value)


def number(text: str | None) -> float | None:
    # ClickHouse's toFloat64OrNull: a plain decimal number, nothing around it.
    if text is None or not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        return None
    return float(text)


def date_of(text: str | None) -> datetime | None:
    if text is None or not re.fullmatch(r"\d{4}-\d{2}-\d{2}(T.*)?", text):
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def equals_any(text: str | None, wanted: list[Any]) -> bool:
    texts = ["true" if w is True else "false" if w is False else str(w) for w in wanted]
    numbers = [float(w) for w in wanted if isinstance(w, int | float) and not isinstance(w, bool)]
    return text in texts or (number(text) is not None and number(text) in numbers)


def posthog(op: str, wanted: Any, text: str | None, now: datetime) -> bool:
    """PostHog's HogQL rules (property_to_expr + the printer's ifNull wrapping), restated."""
    values = wanted if isinstance(wanted, list) else [wanted]
    if op == "is_set":
        return text is not None
    if op == "is_not_set":
        return text is None
    if op in ("is_not", "not_icontains", "not_regex") and text is None:
        return True
    if text is None:
        return False
    if op == "exact":
        return equals_any(text, values)
    if op == "is_not":
        return not equals_any(text, values)
    if op in ("icontains", "not_icontains"):
        found = any(str(v).lower() in text.lower() for v in values)
        return found if op == "icontains" else not found
    if op in ("regex", "not_regex"):
        found = any(re.search(str(v), text) for v in values)
        return found if op == "regex" else not found
    n = number(text)
    if op in ("gt", "gte", "lt", "lte", "min", "max"):
        cmp: dict[str, Callable[[float, float], bool]] = {
            "gt": float.__gt__, "gte": float.__ge__, "lt": float.__lt__, "lte": float.__le__,
            "min": float.__ge__, "max": float.__le__,
        }  # fmt: skip
        return n is not None and cmp[op](n, float(values[0]))
    if op == "between":
        return n is not None and values[0] <= n <= values[1]
    if op == "not_between":
        return n is not None and (n < values[0] or n > values[1])
    moment = date_of(text)
    target = now - timedelta(days=30) if values[0] == "-30d" else date_of(str(values[0]))
    target = target.replace(hour=0, minute=0, second=0, microsecond=0) if values[0] == "-30d" else target
    assert target is not None
    if moment is None:
        return False
    return {"is_date_before": moment < target, "is_date_after": moment > target, "is_date_exact": moment == target}[op]


CASES: list[tuple[str, Any]] = [
    ("exact", 5), ("exact", "5"), ("exact", [5, "abc"]), ("exact", True), ("exact", "Chrome"), ("exact", 0),
    ("is_not", 5), ("is_not", ["Chrome", "abc"]), ("icontains", "CHR"), ("icontains", ["abc", "hro"]),
    ("not_icontains", "chr"), ("not_icontains", ["chr", "abc"]), ("regex", "^[0-9]+$"), ("not_regex", "^[0-9]+$"),
    ("gt", 5), ("gte", 5), ("lt", 5), ("lte", 5), ("min", 5), ("max", 5), ("between", [0, 6]),
    ("not_between", [0, 6]), ("is_set", None), ("is_not_set", None), ("is_date_before", "2025-05-15"),
    ("is_date_after", "2025-05-15"), ("is_date_exact", "2025-05-01"), ("is_date_before", "-30d"),
]  # fmt: skip


@pytest.fixture(scope="module")
def seeded(hoglab_service: Any) -> tuple[Any, datetime]:
    store = hoglab_service.state.store
    record = store.projects.create("operators")
    _, key = store.keys.create(store.users.default().id, ["*"], [record.id], label="operators")
    now = datetime.now(UTC)
    events = []
    for i, value in enumerate(VALUES):
        properties: dict[str, Any] = {"i": i}
        if value is not MISSING:
            properties["v"] = value
        events.append({"event": "e", "distinct_id": f"d{i}", "properties": properties,
                       "timestamp": (now - timedelta(hours=1)).isoformat()})  # fmt: skip
    Ingestor.for_engine(hoglab_service.state.engine).capture_batch(record.id, events)
    import httpx

    http = httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
    yield (http, record.id), now
    http.close()


def _ids(response: Any) -> set[int]:
    assert response.status_code == 200, response.text
    return {int(row[0]) for row in response.json()["results"]}


@pytest.mark.parametrize(("op", "value"), CASES, ids=[f"{op}-{value}" for op, value in CASES])
def test_runners_and_hogql_filters_answer_as_posthog(seeded: Any, op: str, value: Any) -> None:
    (http, project_id), now = seeded
    flt = {"key": "v", "type": "event", "operator": op, **({"value": value} if value is not None else {})}
    expected = {i for i, v in enumerate(VALUES) if posthog(op, value, hogql_text(v), now)}
    through_filters = http.post(f"/api/projects/{project_id}/query/", json={"query": {
        "kind": "HogQLQuery", "query": "select toInt(properties.i) from events where {filters}",
        "filters": {"properties": [flt]}}, "refresh": "force_blocking"})  # fmt: skip
    through_runner = http.post(f"/api/projects/{project_id}/query/", json={"query": {
        "kind": "EventsQuery", "select": ["toInt(properties.i)"], "properties": [flt], "after": "-7d"},
        "refresh": "force_blocking"})  # fmt: skip
    if op.startswith("is_date_"):
        # ClickHouse's best-effort date parser (PostHog's too) reads a bare number as a day of this month or a
        # Unix time: pinned only on values that are dates or plainly not dates.
        judged = {i for i, v in enumerate(VALUES) if number(hogql_text(v)) is None}
        expected &= judged
        assert _ids(through_filters) & judged == expected
        assert _ids(through_runner) & judged == expected
        return
    assert _ids(through_filters) == expected
    assert _ids(through_runner) == expected


def test_between_refuses_low_above_high_naming_the_field(seeded: Any) -> None:
    (http, project_id), _ = seeded
    flt = {"key": "v", "type": "event", "operator": "between", "value": [6, 0]}
    answer = http.post(f"/api/projects/{project_id}/query/", json={"query": {
        "kind": "EventsQuery", "select": ["event"], "properties": [flt]}})  # fmt: skip
    assert answer.status_code == 400
    assert answer.json()["attr"] == "properties.0"


# -- flags: PostHog's flags service compares differently on purpose -----------------------------------------


def flag_rule(op: str, wanted: Any, value: Any) -> bool:
    """PostHog's flags service (``match_property``), restated: text is case-insensitive, a boolean-looking value
    compares as a boolean, a missing key matches only the negative operators, numbers compare as numbers."""
    present = value is not MISSING
    if op == "is_set":
        return present
    if op == "is_not_set":
        return not present
    if not present:
        return op in ("is_not", "not_icontains", "not_regex")
    text = value if isinstance(value, str) else json.dumps(value)
    if isinstance(value, float) and value.is_integer():
        text = f"{value:.1f}"
    if op in ("exact", "is_not"):
        targets = wanted if isinstance(wanted, list) else [wanted]
        if all(isinstance(t, bool) or str(t).lower() in ("true", "false") for t in targets):
            hit = all(str(t).lower() == "true" for t in targets) == (str(text).lower() == "true")
        else:
            hit = any(str(t).lower() == text.lower() for t in targets)
        return hit if op == "exact" else not hit
    if op in ("icontains", "not_icontains"):
        hit = str(wanted).lower() in text.lower()
        return hit if op == "icontains" else not hit
    try:
        left = float(value) if not isinstance(value, bool) and value is not None else math.nan
    except ValueError:
        left = math.nan
    right = float(wanted)
    return {"gt": left > right, "gte": left >= right, "lt": left < right, "lte": left <= right}[op]


FLAG_CASES = [("exact", "CHROME"), ("exact", ["5", "abc"]), ("exact", True), ("is_not", "chrome"),
              ("icontains", "HRO"), ("not_icontains", "hro"), ("gt", 4), ("lte", 5), ("is_set", None),
              ("is_not_set", None)]  # fmt: skip


@pytest.mark.parametrize(("op", "value"), FLAG_CASES, ids=[f"{op}-{value}" for op, value in FLAG_CASES])
def test_flags_match_as_posthogs_flags_service(op: str, value: Any) -> None:
    flt = {"key": "v", "operator": op, "value": value}
    for v in VALUES:
        properties = {} if v is MISSING else {"v": v}
        if v is None:
            continue  # a JSON null person property is stored as absent by person updates
        assert match_property(flt, properties) == flag_rule(op, value, v), (op, value, v)
