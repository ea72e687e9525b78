"""GET /query/draft_sql: a deterministic starter statement from the prompt and the project's own names, which
compiles and runs for the project."""

from __future__ import annotations

import pytest
from querytesting import Seeded

from hoglab.server.hogql import compile_hogql
from hoglab.server.query.draft_sql import FALLBACK, Vocabulary, draft_sql

VOCAB = Vocabulary(
    events=("$pageview", "signup", "purchase", "$feature_flag_called"),
    event_properties=("$browser", "$current_url", "plan", "price", "$geoip_country_name", "$feature/new-checkout"),
    person_properties=("email", "plan", "$initial_os"),
)


def _draft(seeded: Seeded, prompt: str) -> str:
    response = seeded.a.http.get(seeded.a.path("draft_sql/"), params={"prompt": prompt})
    assert response.status_code == 200, response.text
    assert set(response.json()) == {"sql"}
    sql: str = response.json()["sql"]
    return sql


def test_daily_counts_of_an_event_by_a_property_run_and_match_pandas(seeded: Seeded) -> None:
    sql = _draft(seeded, "daily signups by browser")
    assert "event = 'signup'" in sql and "properties.`$browser`" in sql and "toStartOfDay(timestamp)" in sql
    # The drafted range is relative to now; the seeded events are from 2025: widen it to compare with pandas.
    rows = seeded.a.rows(sql.replace("now() - INTERVAL 30 DAY", "toDateTime('2000-01-01')"))
    df = seeded.frame[seeded.frame.event == "signup"]
    expected = df.groupby([df.timestamp.dt.strftime("%Y-%m-%dT00:00:00Z"), "browser"]).size().sort_index()
    assert [[r[0][:19] + "Z", r[1], r[2]] for r in rows] == [[d, b, int(n)] for (d, b), n in expected.items()]


def test_unknown_words_give_the_count_by_event(seeded: Seeded) -> None:
    assert _draft(seeded, "what is happening?") == FALLBACK


@pytest.mark.parametrize(
    ("prompt", "expected"),
    [
        ("how many page views per day", ["toStartOfDay(timestamp) AS day", "event = '$pageview'", "GROUP BY day"]),
        ("unique users by country last 7 days", ["count(DISTINCT person_id)", "`$geoip_country_name`", "7 DAY"]),
        ("top 5 browsers", ["properties.`$browser` AS browser", "ORDER BY count DESC", "LIMIT 5"]),
        ("average price of purchases per week", ["avg(toFloat(properties.price))", "toStartOfWeek", "'purchase'"]),
        ("signups and purchases daily", ["event IN ('signup', 'purchase')", "GROUP BY day, event"]),
        ("purchases where plan is pro", ["properties.plan = 'pro'", "event = 'purchase'"]),
        ("users by person plan", ["person.properties.plan AS plan", "count(DISTINCT person_id)"]),
        ("signups today", ["timestamp >= today()"]),
        ("sum price by new checkout", ["`$feature/new-checkout`", "sum(toFloat(properties.price))"]),
    ],
)
def test_prompt_shapes(prompt: str, expected: list[str]) -> None:
    sql = draft_sql(prompt, VOCAB, team_id=1)
    for part in expected:
        assert part in sql, (part, sql)
    compile_hogql(sql, team_id=1)


@pytest.mark.parametrize(
    "prompt",
    ["'; drop table events --", "by `) union all select * from system.tables", "{filters} {x}", "by " + "a" * 390],
)
def test_hostile_prompts_still_give_a_statement_that_compiles(seeded: Seeded, prompt: str) -> None:
    sql = _draft(seeded, prompt)
    assert seeded.a.query(sql).status_code == 200


def test_prompt_is_required_and_bounded(seeded: Seeded) -> None:
    missing = seeded.a.http.get(seeded.a.path("draft_sql/"))
    assert missing.status_code == 400
    assert (missing.json()["attr"], missing.json()["code"], missing.json()["detail"]) == (
        "prompt", "required", "This field is required."
    )  # fmt: skip
    long = seeded.a.http.get(seeded.a.path("draft_sql/"), params={"prompt": "x" * 401})
    assert (long.status_code, long.json()["code"]) == (400, "too_long")
    denied = seeded.a.client(seeded.a.new_key(["experiment:read"])).get(
        seeded.a.path("draft_sql/"), params={"prompt": "signups"}
    )
    assert denied.status_code == 403


def test_the_vocabulary_is_the_projects_own(seeded: Seeded) -> None:
    # Project B's events carry a "secret" property and marked browsers; A's draft can't pick them.
    sql = _draft(seeded, "count by secret")
    assert "secret" not in sql
