"""Two projects of rows, as plain Python data: what the tests insert into chDB and compute expectations from.

Team 1 is the caller. Team 2 is the neighbour whose rows must never be seen: every text it holds contains
``T2SECRET``, it reuses team 1's distinct ids and person ids, and its persons/distinct ids/overrides/cohort
rows have higher versions, so any missing guard shows up as either the marker or a changed answer.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

TEAM = 1
OTHER = 2
MARKER = "T2SECRET"


def pid(n: int) -> str:
    return str(uuid.UUID(int=n))


P1, P2, P3, P4, P5, P9 = (pid(n) for n in (1, 2, 3, 4, 5, 9))


@dataclass
class World:
    events: list[dict[str, Any]] = field(default_factory=list)
    persons: list[dict[str, Any]] = field(default_factory=list)
    pdi: list[dict[str, Any]] = field(default_factory=list)
    cohorts: list[dict[str, Any]] = field(default_factory=list)
    overrides: list[dict[str, Any]] = field(default_factory=list)
    warnings: list[dict[str, Any]] = field(default_factory=list)

    def team(self, table: str, team: int = TEAM) -> list[dict[str, Any]]:
        return [r for r in getattr(self, table) if r["team_id"] == team]

    # ---- expectations, computed without the compiler ---------------------------------------------------

    def persons_now(self, team: int = TEAM) -> dict[str, dict[str, Any]]:
        """Newest version of each person of ``team``, deleted ones dropped."""
        newest: dict[str, dict[str, Any]] = {}
        for row in self.team("persons", team):
            if row["id"] not in newest or row["version"] > newest[row["id"]]["version"]:
                newest[row["id"]] = row
        return {k: v for k, v in newest.items() if not v["is_deleted"]}

    def pdi_now(self, team: int = TEAM) -> dict[str, str]:
        newest: dict[str, dict[str, Any]] = {}
        for row in self.team("pdi", team):
            if row["distinct_id"] not in newest or row["version"] > newest[row["distinct_id"]]["version"]:
                newest[row["distinct_id"]] = row
        return {k: v["person_id"] for k, v in newest.items() if not v["is_deleted"]}

    def override_of(self, person_id: str, team: int = TEAM) -> str:
        rows = [r for r in self.team("overrides", team) if r["old_person_id"] == person_id]
        return max(rows, key=lambda r: r["version"])["override_person_id"] if rows else person_id

    def cohort_members(self, cohort_id: int, team: int = TEAM) -> set[str]:
        rows = [r for r in self.team("cohorts", team) if r["cohort_id"] == cohort_id]
        if not rows:
            return set()
        latest = max(r["version"] for r in rows)
        return {r["person_id"] for r in rows if r["version"] == latest}


def prop(event: dict[str, Any], *path: str) -> str | None:
    """PostHog's property semantics: a string value as is, other scalars as JSON text, missing/null -> None."""
    value: Any = json.loads(event["properties"])
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    return json.dumps(value, separators=(",", ":"))


T0 = datetime(2026, 1, 1, 10, 0, 0)


def _event(
    world: World, team: int, n: int, event: str, distinct_id: str, person_id: str, props: dict[str, Any], at: datetime
) -> None:
    world.events.append(
        {
            "team_id": team,
            "uuid": str(uuid.UUID(int=team * 1000 + n)),
            "event": event,
            "distinct_id": distinct_id,
            "person_id": person_id,
            "timestamp": at.strftime("%Y-%m-%d %H:%M:%S.%f"),
            "properties": json.dumps(props),
            "elements_chain": MARKER if team == OTHER else "",
            "created_at": at.strftime("%Y-%m-%d %H:%M:%S.%f"),
        }
    )


def _person(world: World, team: int, person_id: str, props: dict[str, Any], version: int, deleted: int = 0) -> None:
    world.persons.append(
        {
            "team_id": team,
            "id": person_id,
            "created_at": (T0 - timedelta(days=10 - version)).strftime("%Y-%m-%d %H:%M:%S.%f"),
            "properties": json.dumps(props),
            "is_identified": 1,
            "is_deleted": deleted,
            "version": version,
        }
    )


def _pdi(world: World, team: int, distinct_id: str, person_id: str, version: int, deleted: int = 0) -> None:
    world.pdi.append(
        {"team_id": team, "distinct_id": distinct_id, "person_id": person_id, "is_deleted": deleted, "version": version}
    )


def _warning(world: World, team: int, kind: str, details: dict[str, Any], at: datetime) -> None:
    world.warnings.append(
        {"team_id": team, "source": "capture", "type": kind, "details": json.dumps(details),
         "timestamp": at.strftime("%Y-%m-%d %H:%M:%S.%f")}
    )  # fmt: skip


def build_world() -> World:
    w = World()
    # ---- team 1 -------------------------------------------------------------------------------------------
    _person(w, TEAM, P1, {"email": "old@x.com", "name": "Ann"}, 1)
    _person(w, TEAM, P1, {"email": "ann@x.com", "plan": "pro", "age": 31}, 2)
    _person(w, TEAM, P2, {"email": "bob@x.com", "plan": "free", "age": "25"}, 1)
    _person(w, TEAM, P3, {"email": "del@x.com"}, 1)
    _person(w, TEAM, P3, {"email": "del@x.com"}, 2, deleted=1)
    _person(w, TEAM, P4, {"email": "carol@x.com", "nested": {"k": "v"}}, 1)
    _person(w, TEAM, P5, {"email": "merged@x.com"}, 1)
    for distinct_id, person in (
        ("d1", P1),
        ("d1b", P1),
        ("d2", P2),
        ("d3", P3),
        ("d5", P5),
        ("dmove", P2),
        ("ddel", P2),
    ):
        _pdi(w, TEAM, distinct_id, person, 1)
    _pdi(w, TEAM, "dmove", P1, 2)
    _pdi(w, TEAM, "ddel", P2, 2, deleted=1)
    w.overrides.append({"team_id": TEAM, "old_person_id": P5, "override_person_id": P1, "version": 1})
    for version, members in ((1, (P1, P2, P3)), (2, (P1, P2))):
        w.cohorts += [{"team_id": TEAM, "cohort_id": 1, "person_id": p, "version": version} for p in members]
    w.cohorts.append({"team_id": TEAM, "cohort_id": 2, "person_id": P4, "version": 1})
    day = timedelta(days=1)
    _event(
        w,
        TEAM,
        1,
        "$pageview",
        "d1",
        P1,
        {
            "$browser": "Chrome",
            "price": 10,
            "a": {"b": "deep", "n": 1},
            "$feature/new-checkout": "test",
            "flag": True,
            "$session_id": "s1",
            "$window_id": "w1",
        },
        T0,
    )
    _event(
        w,
        TEAM,
        2,
        "$pageview",
        "d1b",
        P1,
        {"$browser": "Firefox", "price": "20.5", "flag": False},
        T0 + day + timedelta(hours=13, minutes=30),
    )
    _event(
        w, TEAM, 3, "signup", "d2", P2, {"$browser": "Chrome", "price": 5, "nullish": None, "empty": ""}, T0 + 2 * day
    )
    _event(
        w,
        TEAM,
        4,
        "purchase",
        "d2",
        P2,
        {"price": 100, "quote": 'it\'s "x"', "uni": "é€😀", "team_id": "7"},
        T0 + 3 * day,
    )
    _event(w, TEAM, 5, "$pageview", "d3", P3, {"$browser": "Safari"}, T0 + 4 * day)
    _event(w, TEAM, 6, "$pageview", "d5", P5, {"$browser": "Chrome", "$feature/new-checkout": "control"}, T0 + 5 * day)
    _event(w, TEAM, 7, "$pageview", "anon", P9, {}, T0 + 6 * day)
    _event(w, TEAM, 8, "purchase", "dmove", P2, {"price": 7.5}, T0 + 6 * day + timedelta(hours=1))
    _warning(w, TEAM, "missing_distinct_id", {"eventUuid": "", "eventName": "signup", "index": 3}, T0)
    _warning(w, TEAM, "ignored_invalid_timestamp", {"eventUuid": pid(1001), "field": "timestamp", "value": "x"}, T0)
    # ---- team 2: same ids, newer versions, marker everywhere ----------------------------------------------
    for person in (P1, P2, P3, P4, P5, P9):
        _person(w, OTHER, person, {"email": f"{MARKER}@evil", "secret": MARKER, "plan": MARKER}, 99)
    for distinct_id in ("d1", "d2", "anon", f"{MARKER}-d"):
        _pdi(w, OTHER, distinct_id, P2, 99)
    w.overrides.append({"team_id": OTHER, "old_person_id": P1, "override_person_id": P9, "version": 99})
    w.overrides.append({"team_id": OTHER, "old_person_id": P2, "override_person_id": P9, "version": 99})
    w.cohorts += [{"team_id": OTHER, "cohort_id": c, "person_id": P9, "version": 99} for c in (1, 2)]
    for n in range(3):
        _warning(w, OTHER, f"{MARKER}_type" if n else "missing_distinct_id",
                 {"eventUuid": pid(1001), "eventName": MARKER, "secret": MARKER, "index": 3}, T0 + n * day)  # fmt: skip
    for n in range(1, 6):
        _event(
            w,
            OTHER,
            n,
            "$pageview" if n % 2 else f"{MARKER}_event",
            "d1",
            P1,
            # the neighbour's session "s1" is also the caller's: its sessions row must stay invisible
            {
                "secret": MARKER,
                "$browser": MARKER,
                "price": 1000,
                "$session_id": "s1",
                "$current_url": f"https://{MARKER}.example/{n}",
                "utm_source": MARKER,
            },
            T0 + n * day,
        )
    return w
