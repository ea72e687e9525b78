"""The ``sessions`` table: one row per ``$session_id`` of a project, kept by a materialized view over ``events``.

Every insert into ``events`` (capture, file loads, pulls) also writes partial aggregates of the sessions it
touches into ``sessions`` (an ``AggregatingMergeTree``); readers merge them (the compiler's view of the table,
``hogql/sessions.py``), so a session that spans several batches is still one session. The same statements run
on chDB and on a ClickHouse server.

A data dir made before the table existed is backfilled once when the engine opens it: every event with a
``$session_id`` is aggregated into ``sessions`` *if the materialized view does not exist yet*, then the view is
created. Engines open before they take inserts, so no event falls between the two; and a later open reads nothing
(a condition on ``sessions`` being empty would scan ``events`` at every start of a data dir without sessions).

>>> [" ".join(s.split()[:2]) for s in session_statements("hoglab")]
['CREATE TABLE', 'INSERT INTO', 'CREATE MATERIALIZED']
"""

from __future__ import annotations

__all__ = ["SESSIONS_TABLE", "session_statements"]

SESSIONS_TABLE = "sessions"

_TS = "DateTime64(6, 'UTC')"

# Firsts and lasts are argMin/argMax states: min() of (timestamp, value) tuples compares tuples generically and
# made a load ~5x slower than these. The first event's properties are kept whole and read at query time (the
# entry attribution: which keys is the compiler's view's choice, hogql/sessions.py), so each event is parsed once,
# for its URL.
_TABLE = f"""
CREATE TABLE IF NOT EXISTS {{db}}.sessions (
    team_id Int64,
    session_id String,
    first_distinct_id AggregateFunction(argMin, String, {_TS}),
    min_timestamp SimpleAggregateFunction(min, {_TS}),
    max_timestamp SimpleAggregateFunction(max, {_TS}),
    entry_url AggregateFunction(argMin, String, {_TS}),
    exit_url AggregateFunction(argMax, String, {_TS}),
    first_properties AggregateFunction(argMin, String, {_TS}),
    pageview_count SimpleAggregateFunction(sum, UInt64),
    autocapture_count SimpleAggregateFunction(sum, UInt64),
    screen_count SimpleAggregateFunction(sum, UInt64),
    event_count SimpleAggregateFunction(sum, UInt64)
) ENGINE = AggregatingMergeTree
ORDER BY (team_id, session_id)
"""


def _aggregate_select(db: str) -> str:
    return f"""
SELECT
    team_id,
    session_id,
    argMinState(distinct_id, timestamp) AS first_distinct_id,
    min(timestamp) AS min_timestamp,
    max(timestamp) AS max_timestamp,
    argMinStateIf(url, timestamp, url != '') AS entry_url,
    argMaxStateIf(url, timestamp, url != '') AS exit_url,
    argMinState(properties, timestamp) AS first_properties,
    countIf(event = '$pageview') AS pageview_count,
    countIf(event = '$autocapture') AS autocapture_count,
    countIf(event = '$screen') AS screen_count,
    count() AS event_count
FROM (
    SELECT team_id, `$session_id` AS session_id, distinct_id, timestamp, event, properties,
           JSONExtractString(properties, '$current_url') AS url
    FROM {db}.events
    WHERE `$session_id` != ''
)
GROUP BY team_id, session_id
"""


def session_statements(db: str) -> list[str]:
    """The table, the one-time backfill and the materialized view that feeds the table; each idempotent."""
    select = _aggregate_select(db)
    view = f"CREATE MATERIALIZED VIEW IF NOT EXISTS {db}.sessions_mv TO {db}.sessions AS {select}"
    # The backfill's condition is a constant (a scalar subquery read first): once the view exists, nothing is read.
    no_view_yet = f"WHERE (SELECT count() FROM system.tables WHERE database = '{db}' AND name = 'sessions_mv') = 0 AND "
    backfill = f"INSERT INTO {db}.sessions {select.replace('WHERE ', no_view_yet, 1)}"
    return [" ".join(sql.split()) for sql in (_TABLE.format(db=db), backfill, view)]
