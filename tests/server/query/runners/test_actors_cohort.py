"""ActorsQuery with a cohort property filter: the persons of the cohort (rows are persons, so the filter tests the
person's ``id``, not an event's ``person_id``), and ``not_in`` the others."""

from __future__ import annotations

from datetime import UTC, datetime


def test_a_cohort_filter_selects_its_persons(make_world) -> None:
    when = datetime(2025, 6, 10, tzinfo=UTC)
    events = [{"event": "seen", "distinct_id": f"u{i}", "timestamp": when} for i in range(6)]
    world = make_world(events)
    team = world.project.id
    persons = world.engine.execute(
        f"SELECT toString(person_id) AS p, distinct_id AS d FROM hoglab.person_distinct_ids WHERE team_id = {team}"
    ).to_pylist()
    by_id = {row["d"]: row["p"] for row in persons}
    members = sorted(by_id[d] for d in ("u1", "u3", "u4"))
    cohort = 9_000_001
    values = ",".join(f"({team}, {cohort}, '{pid}', 1)" for pid in members)
    world.engine.command(f"INSERT INTO hoglab.cohort_people (team_id, cohort_id, person_id, version) VALUES {values}")

    def ids(operator: str) -> list[str]:
        flt = {"type": "cohort", "key": "id", "value": cohort, "operator": operator}
        answer = world.run({"kind": "ActorsQuery", "select": ["id"], "properties": [flt]})
        return sorted(str(row[0]) for row in answer["results"])

    assert ids("in") == members
    assert ids("not_in") == sorted(set(by_id.values()) - set(members))
