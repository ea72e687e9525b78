"""The compiler reads what a catalog tells it: a key the catalog names is read from its column, in every view and
plan, with the same answers as the JSON extraction; without a catalog nothing is materialized; a view built for
one set of columns is never reused for another."""

from __future__ import annotations

import re

import pytest

from hoglab.server.hogql import NO_MATERIALIZED, StaticCatalog

from .conftest import DATABASE, Runner

pytestmark = pytest.mark.xdist_group("hogql_chdb")

# Columns of this suite's own database, made here with the engine's expression for the key (so the catalog tells
# the truth, as the engine's does): the events' $browser and the persons' email.
COLUMNS = {(DATABASE, "events"): {"$browser": "cat_browser"}, (DATABASE, "persons"): {"email": "cat_email"}}
CATALOG = StaticCatalog(COLUMNS)

EXTRACTION = re.compile(r"JSONExtract\([^()]*`properties`, '(\$browser|email)', ")
QUERIES = [
    "select properties.$browser as b, count() as c from events group by b order by b nulls first",
    "select count() from events where properties['$browser'] = 'Chrome'",
    "select person.properties.email as e, count() as c from events group by e order by e nulls first",
    "select properties.email as e from persons order by e nulls first",
    "select properties.$browser.x as nested from events order by nested nulls first",
]


@pytest.fixture(scope="module")
def columns(ch: Runner) -> StaticCatalog:
    for table, column, key in (("events", "cat_browser", "$browser"), ("persons", "cat_email", "email")):
        ch.conn.query(
            f"ALTER TABLE {DATABASE}.{table} ADD COLUMN IF NOT EXISTS `{column}` Nullable(String) "
            f"MATERIALIZED JSONExtract(properties, '{key}', 'Nullable(String)')"
        )
    return CATALOG


@pytest.mark.parametrize("hogql", QUERIES)
def test_a_catalog_column_is_read_and_answers_as_the_json(ch: Runner, columns: StaticCatalog, hogql: str) -> None:
    with_columns = ch.compile(hogql, catalog=columns)
    without = ch.compile(hogql)
    assert ch.rows(with_columns.sql) == ch.rows(without.sql)
    assert "cat_" not in without.sql
    assert EXTRACTION.search(without.sql)
    # a key the catalog names is no longer extracted from the JSON; properties.$browser.x reads a path, no column
    assert (EXTRACTION.search(with_columns.sql) is None) == (".x" not in hogql)


def test_a_view_is_never_reused_for_another_set_of_columns(ch: Runner, columns: StaticCatalog) -> None:
    hogql = "select properties.$browser from events"
    first = ch.compile(hogql, catalog=columns).sql
    plain = ch.compile(hogql, catalog=NO_MATERIALIZED).sql
    other = ch.compile(hogql, catalog=StaticCatalog({(DATABASE, "events"): {"plan": "cat_plan"}})).sql
    assert "cat_browser" in first and "cat_" not in plain
    assert "cat_plan" in other and "cat_browser" not in other  # the view carries that catalog's columns only
    assert ch.compile(hogql, catalog=columns).sql == first


def test_another_database_is_not_given_this_ones_columns(ch: Runner) -> None:
    catalog = StaticCatalog({("elsewhere", "events"): {"$browser": "cat_browser"}})
    assert "cat_" not in ch.compile("select properties.$browser from events", catalog=catalog).sql


def test_static_catalog_versions_follow_their_columns() -> None:
    assert StaticCatalog().version() == NO_MATERIALIZED.version()
    assert CATALOG.version() == StaticCatalog(dict(reversed(COLUMNS.items()))).version()  # order does not matter
    assert CATALOG.version() != NO_MATERIALIZED.version()
