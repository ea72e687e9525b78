"""Hostile statements: each is refused with a HogQLError, or compiled, RUN on chDB and seen to return only the
caller's rows (team 2 holds ``T2SECRET`` in every text column, reuses team 1's ids, and has newer versions of
its persons, distinct ids, overrides and cohorts, so a missing guard shows up in the rows or the counts).

The expected outcome of each statement is pinned: a refusal that turns into a compiled query (or back) is a
change someone must look at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from hoglab.server.hogql import HogQLError, compile_hogql

from .conftest import DATABASE, Runner
from .world import MARKER, OTHER, P1, TEAM, World, prop

pytestmark = pytest.mark.xdist_group("hogql_chdb")

Check = Callable[[list[list[Any]], World], bool]
REFUSED = "refused"
NO_LEAK = "no leak"  # compiles; the engine may reject it, but what it returns is only the caller's


def count_is(fn: Callable[[World], int]) -> Check:
    return lambda rows, world: rows == [[fn(world)]]


def n_events(world: World) -> int:
    return len(world.team("events"))


def sessions_events(world: World) -> int:
    """Events of the caller's sessions (events with a ``$session_id``)."""
    return sum(1 for e in world.team("events") if prop(e, "$session_id"))


def count_rows(fn: Callable[[World], int]) -> Check:
    return lambda rows, world: len(rows) == fn(world)


def rows_at_most(n: int) -> Check:
    return lambda rows, world: len(rows) <= n


def anything(rows: list[list[Any]], world: World) -> bool:
    return True


# (statement, REFUSED | a check of the rows it returns, values)
CORPUS: list[tuple[str, str | Check, dict[str, Any] | None]] = [
    # ---- other databases and system tables
    ("SELECT * FROM system.tables", REFUSED, None),
    ("SELECT * FROM system.numbers LIMIT 5", REFUSED, None),
    (f"SELECT * FROM {DATABASE}.events", REFUSED, None),
    ("SELECT * FROM hoglab.events", REFUSED, None),
    ("SELECT * FROM default.events", REFUSED, None),
    ("SELECT * FROM `hoglab`.`events`", REFUSED, None),
    ('SELECT * FROM "system"."tables"', REFUSED, None),
    ("SELECT * FROM INFORMATION_SCHEMA.TABLES", REFUSED, None),
    ("SELECT * FROM information_schema.columns", REFUSED, None),
    ("sElEcT * FrOm SYSTEM.TABLES", REFUSED, None),
    ("SELECT * FROM ｓystem.tables", REFUSED, None),
    ("SELECT * FROM Events", REFUSED, None),
    ("SELECT * FROM events_local", REFUSED, None),
    # ---- table functions, in FROM, joins, subqueries and IN
    ("SELECT * FROM file('/etc/passwd', 'LineAsString')", REFUSED, None),
    ("SELECT * FROM url('http://169.254.169.254/latest/meta-data', 'CSV')", REFUSED, None),
    ("SELECT * FROM remote('127.0.0.1', hoglab.events)", REFUSED, None),
    ("SELECT * FROM remoteSecure('127.0.0.1', 'hoglab', 'events')", REFUSED, None),
    ("SELECT * FROM cluster('default', hoglab.events)", REFUSED, None),
    ("SELECT * FROM s3('http://x/y.csv', 'CSV')", REFUSED, None),
    ("SELECT * FROM hdfs('hdfs://x/y', 'CSV')", REFUSED, None),
    ("SELECT * FROM mysql('h:3306', 'db', 't', 'u', 'p')", REFUSED, None),
    ("SELECT * FROM postgresql('h:5432', 'db', 't', 'u', 'p')", REFUSED, None),
    ("SELECT * FROM jdbc('jdbc:x', 't')", REFUSED, None),
    ("SELECT * FROM merge('hoglab', '.*')", REFUSED, None),
    ("SELECT * FROM view(SELECT * FROM hoglab.events)", REFUSED, None),
    ("SELECT * FROM input('x String')", REFUSED, None),
    ("SELECT * FROM executable('ls', 'TSV', 'x String')", REFUSED, None),
    ("SELECT * FROM dictionary('d')", REFUSED, None),
    ("SELECT * FROM generateRandom('a String')", REFUSED, None),
    ("SELECT * FROM values('a Int32', 1)", REFUSED, None),
    ("SELECT * FROM numbers(10) n JOIN file('x') f ON 1", REFUSED, None),
    ("SELECT * FROM events WHERE event IN (SELECT * FROM file('x'))", REFUSED, None),
    ("SELECT * FROM events WHERE (SELECT count() FROM system.one) > 0", REFUSED, None),
    ("SELECT arrayJoin((SELECT groupArray(event) FROM remote('x', hoglab.events)))", REFUSED, None),
    ("SELECT * FROM events ARRAY JOIN (SELECT groupArray(name) FROM system.tables) AS t", REFUSED, None),
    ("SELECT arrayMap(x -> (SELECT count() FROM hoglab.events), [1])", REFUSED, None),
    ("SELECT count() FROM events WHERE event IN events", REFUSED, None),
    ("SELECT count() FROM events WHERE person_id IN persons", REFUSED, None),
    ("SELECT count() FROM events WHERE event IN hoglab.events", REFUSED, None),
    # ---- functions that read tables, the host, or stall
    ("SELECT dictGet('d', 'x', toUInt64(1))", REFUSED, None),
    ("SELECT joinGet('hoglab.events', 'event', 1)", REFUSED, None),
    ("SELECT in(1, events)", REFUSED, None),
    ("SELECT hostName()", REFUSED, None),
    ("SELECT version()", REFUSED, None),
    ("SELECT currentDatabase()", REFUSED, None),
    ("SELECT currentUser()", REFUSED, None),
    ("SELECT getSetting('readonly')", REFUSED, None),
    ("SELECT sleep(3)", REFUSED, None),
    ("SELECT sleepEachRow(1) FROM events", REFUSED, None),
    ("SELECT throwIf(1)", REFUSED, None),
    ("SELECT `file`('x')", REFUSED, None),
    ("SELECT FILE('/etc/passwd')", REFUSED, None),
    ("SELECT hasColumnInTable('hoglab', 'events', 'team_id')", REFUSED, None),
    # ---- team_id: reserved in every spelling and position
    ("SELECT team_id FROM events", REFUSED, None),
    ("SELECT events.team_id FROM events", REFUSED, None),
    ("SELECT * FROM events WHERE team_id = 2", REFUSED, None),
    ("SELECT * FROM events WHERE 1 = 1 OR team_id = 2", REFUSED, None),
    ("SELECT * FROM events e WHERE e.team_id != 1", REFUSED, None),
    ("SELECT * FROM events WHERE `team_id` = 2", REFUSED, None),
    ('SELECT * FROM events WHERE "team_id" = 2', REFUSED, None),
    ("SELECT * FROM events WHERE TEAM_ID = 2", REFUSED, None),
    ("SELECT event AS team_id FROM events", REFUSED, None),
    ("SELECT count() FROM events GROUP BY team_id", REFUSED, None),
    ("SELECT * FROM events ORDER BY team_id", REFUSED, None),
    ("SELECT x.team_id FROM (SELECT 1 AS team_id) x", REFUSED, None),
    ("SELECT * FROM events PREWHERE team_id = 2", REFUSED, None),
    ("SELECT identity(team_id) FROM events", REFUSED, None),
    ("WITH 2 AS team_id SELECT count() FROM events", REFUSED, None),
    ("SELECT * FROM events e LEFT JOIN events e2 ON e.uuid = e2.uuid AND e2.team_id = 2", REFUSED, None),
    ("SELECT * FROM (SELECT * FROM events) WHERE team_id = 2", REFUSED, None),
    ("SELECT * REPLACE (1 AS team_id) FROM events", REFUSED, None),
    ("SELECT __hq_e.team_id FROM events", REFUSED, None),
    ("SELECT * FROM events AS __hq_e", REFUSED, None),
    ("SELECT count() FROM events WHERE 1 = 1 OR 1 = 1", count_is(n_events), None),
    ("SELECT count() FROM events WHERE NOT (event = 'x' AND 0)", count_is(n_events), None),
    ("SELECT properties.team_id FROM events WHERE properties.team_id IS NOT NULL", lambda r, w: r == [["7"]], None),
    # ---- statements other than one SELECT, and modifiers that change the session or the output
    ("SELECT 1; SELECT * FROM hoglab.events", REFUSED, None),
    ("SELECT 1; DROP TABLE events", REFUSED, None),
    ("SELECT * FROM events /* x */ ; DROP TABLE events", REFUSED, None),
    ("DROP TABLE events", REFUSED, None),
    ("INSERT INTO events (event) VALUES ('x')", REFUSED, None),
    ("ALTER TABLE events DELETE WHERE 1", REFUSED, None),
    ("CREATE TABLE x AS SELECT * FROM events", REFUSED, None),
    ("SET readonly = 0", REFUSED, None),
    ("SYSTEM SHUTDOWN", REFUSED, None),
    ("KILL QUERY WHERE 1", REFUSED, None),
    ("OPTIMIZE TABLE events FINAL", REFUSED, None),
    ("ATTACH TABLE x FROM '/tmp/x'", REFUSED, None),
    ("GRANT ALL ON *.* TO default", REFUSED, None),
    ("EXPLAIN SELECT * FROM hoglab.events", REFUSED, None),
    ("SHOW TABLES FROM hoglab", REFUSED, None),
    ("USE hoglab", REFUSED, None),
    ("FROM events SELECT *", REFUSED, None),
    ("SELECT * FROM events SETTINGS readonly = 0", REFUSED, None),
    ("SELECT * FROM (SELECT * FROM events SETTINGS max_threads = 100)", REFUSED, None),
    ("SELECT * FROM events WHERE event IN (SELECT event FROM events SETTINGS readonly = 0)", REFUSED, None),
    ("SELECT * FROM events FORMAT TabSeparated", REFUSED, None),
    ("SELECT * FROM (SELECT 1 FORMAT JSON)", REFUSED, None),
    ("SELECT * FROM events INTO OUTFILE '/tmp/x'", REFUSED, None),
    ("SELECT {x:String}", REFUSED, None),
    ("SELECT * FROM {t}", REFUSED, {"t": f"{DATABASE}.events"}),
    ("SELECT * FROM events FINAL", REFUSED, None),
    ("SELECT COLUMNS('.*') FROM events", REFUSED, None),
    ("SELECT * APPLY(toString) FROM events", REFUSED, None),
    ("WITH RECURSIVE r AS (SELECT 1) SELECT * FROM r", REFUSED, None),
    ("SELECT * FROM events LIMIT -100000", REFUSED, None),
    ("SELECT * FROM events LIMIT 0.99", REFUSED, None),
    ("SELECT * FROM numbers(1000000000000)", REFUSED, None),
    ("ＳＥＬＥＣＴ * FROM events", REFUSED, None),
    # ---- comments and quoting
    ("SELECT count() FROM events -- ; SELECT * FROM hoglab.events", count_is(n_events), None),
    ("SELECT count() FROM events # ; DROP TABLE events", count_is(n_events), None),
    ("SELECT count() /* ; SELECT * FROM system.tables */ FROM events", count_is(n_events), None),
    ("SELECT count() FROM events WHERE event = ''' OR 1=1 --'", count_is(lambda w: 0), None),
    ("SELECT count() FROM events WHERE event = '\\' OR 1=1 --'", count_is(lambda w: 0), None),
    ("SELECT * FROM events AS `hoglab.events` LIMIT 3", rows_at_most(3), None),
    # ---- placeholders are values, never text
    ("SELECT count() FROM events WHERE event = {e}", count_is(lambda w: 0), {"e": "x' OR 1=1 --"}),
    ("SELECT count() FROM events WHERE event = {e}", count_is(lambda w: 0), {"e": "'; DROP TABLE events; --"}),
    ("SELECT count() FROM events WHERE event IN {e}", count_is(lambda w: 0), {"e": ["a') OR (1=1", "b"]}),
    (
        "SELECT {e}",
        lambda r, w: r == [["x') UNION ALL SELECT * FROM system.tables --"]],
        {"e": "x') UNION ALL SELECT * FROM system.tables --"},
    ),
    ("SELECT count() FROM events WHERE distinct_id = {d}", count_is(lambda w: 1), {"d": "d1"}),
    # ---- shadowing and aliasing
    ("WITH events AS (SELECT * FROM hoglab.events) SELECT * FROM events", REFUSED, None),
    ("WITH system AS (SELECT 1) SELECT * FROM system.tables", REFUSED, None),
    ("WITH events AS (SELECT * FROM events) SELECT count() FROM events", count_is(n_events), None),
    (
        "WITH events AS (SELECT * FROM events WHERE 1) SELECT count() FROM events AS a, events AS b",
        count_is(lambda w: n_events(w) ** 2),
        None,
    ),
    ("WITH x AS (SELECT event FROM events) SELECT count() FROM events WHERE event IN x", count_is(n_events), None),
    ("SELECT count() FROM numbers(10) AS events", count_is(lambda w: 10), None),
    ("SELECT count() FROM (SELECT * FROM events) AS persons", count_is(n_events), None),
    # ---- every construct still sees one team
    ("SELECT count() FROM events WHERE distinct_id = 'd1'", count_is(lambda w: 1), None),
    ("SELECT person_id FROM person_distinct_ids WHERE distinct_id = 'd1'", lambda r, w: r == [[P1]], None),
    ("SELECT person.properties.email FROM events WHERE distinct_id = 'd1'", lambda r, w: r == [["ann@x.com"]], None),
    # tables and fields added for PostHog's queries (issue 33): each reads the caller's rows only
    (  # rows of one distinct id may already be merged into its newest (ReplacingMergeTree): compare the ids
        "SELECT DISTINCT distinct_id FROM raw_person_distinct_ids ORDER BY distinct_id",
        lambda r, w: r == [[d] for d in sorted({row["distinct_id"] for row in w.team("pdi")})],
        None,
    ),
    ("SELECT count() FROM raw_person_distinct_ids WHERE version = 99", count_is(lambda w: 0), None),
    ("SELECT poe.properties.email FROM events WHERE distinct_id = 'd1'", lambda r, w: r == [["ann@x.com"]], None),
    ("SELECT count() FROM events WHERE poe.properties.secret IS NOT NULL", count_is(lambda w: 0), None),
    (
        "SELECT count() FROM events WHERE in(distinct_id, (SELECT distinct_id FROM raw_person_distinct_ids))",
        count_is(
            lambda w: sum(e["distinct_id"] in {d["distinct_id"] for d in w.team("pdi")} for e in w.team("events"))
        ),
        None,
    ),
    ("SELECT count() FROM numbers(2 + (SELECT count() FROM events))", REFUSED, None),
    (
        "SELECT pdi.person.properties.email FROM events WHERE distinct_id = 'd1'",
        lambda r, w: r == [["ann@x.com"]],
        None,
    ),
    ("SELECT (SELECT count() FROM events) AS c", count_is(n_events), None),
    ("SELECT count() FROM events WHERE event GLOBAL IN (SELECT event FROM events)", count_is(n_events), None),
    (
        "SELECT count() FROM events WHERE EXISTS (SELECT 1 FROM events WHERE event = 'T2SECRET_event')",
        count_is(lambda w: 0),
        None,
    ),
    ("SELECT count() FROM events WHERE event LIKE '%SECRET%'", count_is(lambda w: 0), None),
    ("SELECT properties FROM events WHERE event = 'T2SECRET_event'", lambda r, w: r == [], None),
    ("SELECT e2.* FROM events e RIGHT JOIN events e2 ON 1 = 0", anything, None),
    ("SELECT * FROM events e FULL OUTER JOIN persons p ON 0", anything, None),
    ("SELECT * FROM events e CROSS JOIN persons p", anything, None),
    ("SELECT * FROM events e PASTE JOIN events e2", anything, None),
    ("SELECT * FROM events e JOIN person_distinct_ids USING distinct_id", anything, None),
    (
        "SELECT * FROM events e ASOF LEFT JOIN events e2 "
        "ON e.distinct_id = e2.distinct_id AND e.timestamp >= e2.timestamp",
        anything,
        None,
    ),
    ("SELECT * FROM events UNION ALL SELECT * FROM events", anything, None),
    ("SELECT * FROM events UNION ALL SELECT * FROM system.tables", REFUSED, None),
    ("SELECT event FROM events UNION ALL SELECT name FROM system.databases", REFUSED, None),
    ("SELECT * FROM events e JOIN system.processes p ON 1", REFUSED, None),
    ("SELECT e.* FROM events e, system.one", REFUSED, None),
    ("SELECT * FROM events WHERE 1 = 1 UNION ALL SELECT * FROM events e2 WHERE e2.team_id = 2", REFUSED, None),
    ("SELECT p.properties FROM persons p", anything, None),
    ("SELECT count() FROM persons", count_is(lambda w: len(w.persons_now())), None),
    ("SELECT person.properties FROM events", anything, None),
    ("SELECT tuple(*) FROM events", anything, None),
    ("SELECT * FROM cohort_people", anything, None),
    ("SELECT * FROM person_overrides", anything, None),
    ("SELECT count() FROM person_overrides", count_is(lambda w: len(w.team("overrides"))), None),
    ("SELECT * FROM events SAMPLE 1", anything, None),
    ("SELECT * FROM events SAMPLE 1/2", anything, None),
    ("SELECT * FROM events SAMPLE 1/2 OFFSET 1/2", NO_LEAK, None),
    (
        "SELECT (SELECT count() FROM events SAMPLE 1/3) + (SELECT count() FROM events SAMPLE 1/3 OFFSET 1/3) + "
        "(SELECT count() FROM events SAMPLE 1/3 OFFSET 2/3)",
        count_is(n_events),
        None,
    ),
    ("SELECT * FROM persons SAMPLE 1/2 OFFSET 1/2", REFUSED, None),
    ("SELECT * FROM events INNER ARRAY JOIN [1, 2] AS x", count_rows(lambda w: 2 * n_events(w)), None),
    ("SELECT * FROM events INNER ARRAY JOIN [1] AS team_id", REFUSED, None),
    ("SELECT x FROM events INNER ARRAY JOIN (SELECT groupArray(name) FROM system.tables) AS x", REFUSED, None),
    ("SELECT count() FROM events WHERE properties.secret.1 IS NOT NULL", count_is(lambda w: 0), None),
    ("SELECT count() FROM persons WHERE properties.secret.1 IS NOT NULL OR properties.a[1].b IS NOT NULL",
     count_is(lambda w: 0), None),
    ("SELECT groupArray(properties.$browser) FROM events", anything, None),
    ("SELECT arrayJoin(groupArray(properties)) FROM events", anything, None),
    ("SELECT * FROM events LIMIT 1000000", rows_at_most(10_000), None),
    # ---- ClickHouse's lexer knows more than the parser: heredocs ($$..$$) and Unicode quotes in names
    ("SELECT 1 AS $$, 'a$$ AS b, * FROM hoglab.events --' FROM events", anything, None),
    (f"SELECT $$, 'x$$, * FROM {DATABASE}.events --' FROM (SELECT count() FROM events)", NO_LEAK, None),
    (f"SELECT $t$, 'x$t$, * FROM {DATABASE}.events --' FROM (SELECT count() FROM events)", NO_LEAK, None),
    (f"SELECT a“b, '” , * FROM {DATABASE}.events --' FROM (SELECT count() FROM events)", NO_LEAK, None),
    (f"SELECT a‘b, '’ , * FROM {DATABASE}.events --' FROM (SELECT count() FROM events)", NO_LEAK, None),
    ("SELECT - -1, 1 - -1, -(-1) FROM events", anything, None),
    # ---- more reserved-name games
    ("SELECT * FROM events a JOIN events b USING (team_id)", REFUSED, None),
    ("SELECT count() FROM events AS e WHERE e.`team_id` = 2", REFUSED, None),
    ("SELECT count() FROM events WHERE team_id\u200b = 2", REFUSED, None),
    ("SELECT 1 FROM events WHERE 1 OR team_id", REFUSED, None),
    ("SELECT * FROM events LEFT ARRAY JOIN [1] AS team_id", REFUSED, None),
    ("SELECT arrayMap(team_id -> 1, [1])", REFUSED, None),
    ("SELECT count() OVER team_id FROM events WINDOW team_id AS ()", REFUSED, None),
    ("SELECT * FROM events e1 JOIN events e1 ON 1", REFUSED, None),
    ("SELECT * FROM (SELECT * FROM events) AS __hq_cte_1", REFUSED, None),
    ("WITH __hq_cte_1 AS (SELECT 1) SELECT * FROM __hq_cte_1", REFUSED, None),
    ("SELECT * FROM events UNION ALL SELECT * FROM (SELECT * FROM events SETTINGS readonly = 0)", REFUSED, None),
    # ---- joins and subqueries over the neighbour's ids still see one team
    ("SELECT count() FROM events WHERE properties.secret = 'T2SECRET'", count_is(lambda w: 0), None),
    ("SELECT count() FROM events WHERE person.properties.secret IS NOT NULL", count_is(lambda w: 0), None),
    ("SELECT count() FROM events WHERE pdi.person.properties.secret IS NOT NULL", count_is(lambda w: 0), None),
    ("SELECT count() FROM persons WHERE properties LIKE '%SECRET%'", count_is(lambda w: 0), None),
    ("SELECT * FROM persons p JOIN person_distinct_ids d ON d.person_id = p.id", anything, None),
    ("SELECT count() FROM cohort_people WHERE cohort_id = 1", count_is(lambda w: len(w.cohort_members(1))), None),
    (
        "SELECT * FROM events WHERE timestamp > (SELECT max(timestamp) FROM events WHERE event = 'T2SECRET_event')",
        anything,
        None,
    ),
    # ---- sessions: the neighbour has a session with the same id, spanning five events
    ("SELECT * FROM sessions", rows_at_most(1), None),
    ("SELECT sum($event_count) FROM sessions", count_is(lambda w: sessions_events(w)), None),
    ("SELECT count() FROM sessions WHERE $entry_current_url LIKE '%SECRET%'", count_is(lambda w: 0), None),
    ("SELECT session.$exit_current_url, session.$entry_utm_source FROM events", NO_LEAK, None),
    ("SELECT count() FROM events WHERE session.$event_count > 1", count_is(lambda w: 0), None),
    ("SELECT * FROM sessions s FULL OUTER JOIN sessions t ON s.session_id = t.session_id", NO_LEAK, None),
    ("SELECT * FROM sessions s RIGHT JOIN events e ON e.$session_id = s.session_id", NO_LEAK, None),
    ("SELECT * FROM sessions CROSS JOIN sessions AS b", NO_LEAK, None),
    ("SELECT max($end_timestamp) FROM sessions", NO_LEAK, None),
    ("SELECT team_id FROM sessions", REFUSED, None),
    ("SELECT sessions.team_id FROM sessions", REFUSED, None),
    ("SELECT * FROM sessions FINAL", REFUSED, None),
    ("SELECT * FROM sessions SAMPLE 0.5", REFUSED, None),
    ("SELECT * FROM hoglab.sessions", REFUSED, None),
    ("SELECT * FROM sessions_mv", REFUSED, None),
    ("SELECT argMinMerge(first_distinct_id) FROM sessions", REFUSED, None),
    ("SELECT * FROM raw_sessions", REFUSED, None),
    # ---- ingestion_warnings: the neighbour has warnings of the same types and event uuids, marked everywhere
    ("SELECT * FROM ingestion_warnings", count_rows(lambda w: len(w.team("warnings"))), None),
    ("SELECT count() FROM ingestion_warnings", count_is(lambda w: len(w.team("warnings"))), None),
    ("SELECT count() FROM ingestion_warnings WHERE details LIKE '%SECRET%' OR type LIKE '%SECRET%'",
     count_is(lambda w: 0), None),
    ("SELECT count() FROM ingestion_warnings WHERE details.eventName = 'T2SECRET'", count_is(lambda w: 0), None),
    ("SELECT type, count() FROM ingestion_warnings GROUP BY type", rows_at_most(2), None),
    ("SELECT count() FROM ingestion_warnings w JOIN events e ON toString(e.uuid) = w.details.eventUuid",
     count_is(lambda w: 1), None),
    ("SELECT * FROM ingestion_warnings a FULL OUTER JOIN ingestion_warnings b ON a.type = b.type", NO_LEAK, None),
    ("SELECT max(timestamp), groupArray(details) FROM ingestion_warnings", NO_LEAK, None),
    ("SELECT team_id FROM ingestion_warnings", REFUSED, None),
    ("SELECT count() FROM ingestion_warnings WHERE team_id = 2", REFUSED, None),
    ("SELECT * FROM ingestion_warnings FINAL", REFUSED, None),
    ("SELECT * FROM hoglab.ingestion_warnings", REFUSED, None),
    (f"SELECT * FROM {DATABASE}.ingestion_warnings", REFUSED, None),
    ("SELECT * FROM sharded_ingestion_warnings", REFUSED, None),
    # ---- query_log: literal rows of the caller's own runs (none here)
    ("SELECT * FROM query_log", rows_at_most(0), None),
    ("SELECT count() FROM query_log q JOIN events e ON q.query_id = toString(e.uuid)", count_is(lambda w: 0), None),
    ("SELECT team_id FROM query_log", REFUSED, None),
    ("SELECT hogql_name, result_rows, RealTimeMicroseconds FROM query_log", rows_at_most(0), None),
    ("SELECT memory_usage FROM query_log", REFUSED, None),
    ("SELECT * FROM hoglab.query_log", REFUSED, None),
    ("SELECT * FROM system.query_log", REFUSED, None),
    (
        "SELECT count() FROM events WHERE event = 'x'' UNION ALL SELECT * FROM system.tables --'",
        count_is(lambda w: 0),
        None,
    ),
]


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) >= 50
    assert sum(1 for _, expect, _ in CORPUS if expect == REFUSED) >= 50


@pytest.mark.parametrize(("statement", "expect", "values"), CORPUS, ids=[f"h{i:03d}" for i in range(len(CORPUS))])
def test_hostile(ch: Runner, world: World, statement: str, expect: str | Check, values: dict[str, Any] | None) -> None:
    if expect == REFUSED:
        with pytest.raises(HogQLError) as info:
            ch.compile(statement, values=values)
        assert not info.value.internal, info.value
        return
    for overrides in (False, True):
        if expect == NO_LEAK:
            try:
                rows = ch.query(statement, values=values, person_overrides=overrides)
            except HogQLError:
                raise
            except Exception as e:  # the engine refused it: nothing was returned
                assert MARKER not in str(e)
                continue
            assert MARKER not in repr(rows)
            continue
        rows = ch.query(statement, values=values, person_overrides=overrides)
        assert MARKER not in repr(rows)
        assert callable(expect) and expect(rows, world), rows


def test_the_data_is_still_there(ch: Runner, world: World) -> None:
    """After the corpus, nothing was dropped or changed (the raw table is read directly)."""
    rows = ch.rows(f"SELECT team_id, count() FROM {DATABASE}.events GROUP BY team_id ORDER BY team_id")
    assert rows == [[TEAM, n_events(world)], [OTHER, len(world.team("events", OTHER))]]


def test_other_team_sees_only_its_rows(ch: Runner, world: World) -> None:
    rows = ch.rows(compile_hogql("select distinct properties.secret from events", team_id=OTHER, database=DATABASE).sql)
    assert rows == [[MARKER]]
    rows = ch.rows(compile_hogql("select properties.$browser from events", team_id=TEAM, database=DATABASE).sql)
    assert sorted(r[0] or "" for r in rows) == sorted(prop(e, "$browser") or "" for e in world.team("events"))


def _meta(key: str, operator: str = "icontains", value: Any = MARKER) -> dict[str, Any]:
    """PostHog's ``event_metadata`` filter: one of the events row's own fields, by name."""
    return {"properties": [{"type": "event_metadata", "key": key, "operator": operator, "value": value}]}


def _session(key: str, operator: str = "icontains", value: Any = MARKER) -> dict[str, Any]:
    return {"properties": [{"type": "session", "key": key, "operator": operator, "value": value}]}


def _events_where(fn: Callable[[dict[str, Any]], bool]) -> Check:
    return count_is(lambda w: sum(1 for e in w.team("events") if fn(e)))


SINCE_2000 = {"dateRange": {"date_from": "2000-01-01"}}
SESSIONS_COUNT = "SELECT count() FROM sessions WHERE {filters}"

# ({filters}, REFUSED | a check of ``SELECT count() FROM events WHERE {filters}``, or of the statement given):
# the filter types issue 33 added (event_metadata, session properties, {filters} over sessions) read only the
# caller's rows, and a field name cannot reach team_id, another table or the SQL around it.
FILTER_CORPUS: list[tuple[dict[str, Any], str | Check, str]] = [
    # ---- event_metadata: the event's own fields, the neighbour's marker in every text column of its rows
    (_meta("distinct_id"), count_is(lambda w: 0), ""),
    (_meta("event"), count_is(lambda w: 0), ""),
    (_meta("properties"), count_is(lambda w: 0), ""),
    (_meta("elements_chain"), count_is(lambda w: 0), ""),
    (_meta("$group_0"), count_is(lambda w: 0), ""),
    (_meta("$session_id", "exact", "s1"), _events_where(lambda e: prop(e, "$session_id") == "s1"), ""),
    (_meta("distinct_id", "exact", "d1"), _events_where(lambda e: e["distinct_id"] == "d1"), ""),  # team 2's d1 too
    # person_id is the resolved person (team 2's five events are P1's too): some of the caller's events, no more
    (_meta("person_id", "exact", P1), lambda rows, w: 0 < rows[0][0] <= n_events(w), ""),
    (_meta("uuid", "is_set", None), count_is(n_events), ""),
    (_meta("timestamp", "is_set", None), count_is(n_events), ""),
    (_meta("distinct_id", "is_not", "d1"), _events_where(lambda e: e["distinct_id"] != "d1"), ""),
    (_meta("team_id", "exact", 2), REFUSED, ""),
    (_meta("TEAM_ID", "is_set", None), REFUSED, ""),
    (_meta("`team_id`", "exact", 2), REFUSED, ""),
    (_meta("events.team_id", "exact", 2), REFUSED, ""),
    (_meta("e.team_id", "exact", 2), REFUSED, ""),
    (_meta("distinct_id` = 'x' OR team_id = 2 OR `x", "exact", 1), REFUSED, ""),
    (_meta("person.properties.secret"), REFUSED, ""),
    (_meta("pdi.person_id", "is_set", None), REFUSED, ""),
    (_meta("session.$entry_current_url"), REFUSED, ""),
    # ---- session properties: the caller's session s1 is also the neighbour's
    (_session("$entry_current_url"), count_is(lambda w: 0), ""),
    (_session("$entry_utm_source"), count_is(lambda w: 0), ""),
    (_session("session_id", "exact", "s1"), _events_where(lambda e: prop(e, "$session_id") == "s1"), ""),
    (_session("$pageview_count", "gt", 1), count_is(lambda w: 0), ""),  # a typed column compared as a number
    (_session("$event_count", "gte", 1), _events_where(lambda e: prop(e, "$session_id") is not None), ""),
    (_session("$session_duration", "between", [0, 10**9]), _events_where(lambda e: bool(prop(e, "$session_id"))), ""),
    (_meta("timestamp", "is_date_after", "2000-01-01"), count_is(n_events), ""),
    (_session("team_id", "exact", 2), REFUSED, ""),
    # ---- {filters} over sessions
    (SINCE_2000, rows_at_most(1), "SELECT session_id, $entry_current_url FROM sessions WHERE {filters}"),
    ({**SINCE_2000, **_session("$entry_current_url")}, count_is(lambda w: 0), SESSIONS_COUNT),
]


@pytest.mark.parametrize(("filters", "expect", "statement"), FILTER_CORPUS,
                         ids=[f"f{i:03d}" for i in range(len(FILTER_CORPUS))])  # fmt: skip
def test_hostile_filters(
    ch: Runner, world: World, filters: dict[str, Any], expect: str | Check, statement: str
) -> None:
    statement = statement or "SELECT count() FROM events WHERE {filters}"
    if expect == REFUSED:
        with pytest.raises(HogQLError) as info:
            ch.compile(statement, filters=filters)
        assert not info.value.internal, info.value
        return
    for overrides in (False, True):
        rows = ch.query(statement, filters=filters, person_overrides=overrides)
        assert MARKER not in repr(rows)
        assert callable(expect) and expect(rows, world), rows
