"""``GET /query/draft_sql?prompt=...``: a starter HogQL statement from words, without a language model.

PostHog answers this with an AI-written statement. hoglab builds one deterministically from the prompt and the
project's own vocabulary (its event names, event property keys and person property keys):

* the shape comes from phrases: "per day"/"daily" (also hour, week, month) buckets by time; "by <x>",
  "per <x>", "for each <x>" breaks down by the property whose key shares the most words with ``x`` ("by browser"
  → ``properties.$browser``, "by person plan" → ``person.properties.plan``, "by event" → ``event``);
  "unique users"/"people"/"visitors" counts ``DISTINCT person_id``; "average/sum/min/max <key>" aggregates a
  numeric property; "top 5 <x>"/"most common <x>" breaks down by ``x`` and keeps the first rows by count;
  "last 7 days"/"past 2 weeks"/"today" sets the range (30 days otherwise); "where <key> is <value>" filters
  on a property;
* the remaining words pick the events whose names share a word with them (``$pageview`` for "page views",
  ``signup`` for "signups"); none matched: every event, counted by name.

The statement always compiles for the project: it is checked with the compiler before it is returned (a draft
that would not compile falls back to the plain count by event).

>>> vocab = Vocabulary(events=("$pageview", "signup"), event_properties=("$browser",), person_properties=())
>>> print(draft_sql("daily signups by browser", vocab, team_id=1))
SELECT toStartOfDay(timestamp) AS day, properties.`$browser` AS browser, count() AS count
FROM events
WHERE event = 'signup' AND timestamp >= now() - INTERVAL 30 DAY
GROUP BY day, browser
ORDER BY day, browser
LIMIT 10000
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..hogql import HogQLError, compile_hogql, escape_identifier, escape_literal
from .catalog import ENGINE_CATALOG

__all__ = ["MAX_PROMPT_CHARS", "Vocabulary", "draft_sql", "project_vocabulary"]

MAX_PROMPT_CHARS = 400
DEFAULT_DAYS = 30
FALLBACK = (
    "SELECT event, count() AS count\nFROM events\nWHERE timestamp >= now() - INTERVAL 30 DAY\n"
    "GROUP BY event\nORDER BY count DESC"
)

_INTERVALS = {"minute": "toStartOfMinute", "hour": "toStartOfHour", "day": "toStartOfDay",
              "week": "toStartOfWeek", "month": "toStartOfMonth"}  # fmt: skip
_ADVERBS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month"}
_UNITS = {"minute": "MINUTE", "hour": "HOUR", "day": "DAY", "week": "WEEK", "month": "MONTH", "year": "YEAR"}
_AGGREGATES = {"average": "avg", "avg": "avg", "mean": "avg", "sum": "sum", "total": "sum", "median": "median",
               "max": "max", "maximum": "max", "min": "min", "minimum": "min"}  # fmt: skip
_SYNONYMS = {"visit": "pageview", "view": "pageview", "page": "pageview", "register": "signup",
             "registration": "signup", "buy": "purchase", "bought": "purchase", "order": "purchase"}  # fmt: skip
# Words that shape the statement or carry no meaning: they never pick an event or a property.
_STOP_WORDS = """
a an the of in on at to for from and or with without by per each every all any how many much number count counts
what which who show list me give get find total unique distinct users user people person persons visitors visitor
events event last past previous this today yesterday over during since between is are was were be been where
whose that than top most least time trend trends daily weekly monthly hourly day days week weeks month months hour
hours minute minutes year years did do does has have grouped broken down split group sum average avg mean median
max maximum min minimum
"""
_STOP = frozenset(_STOP_WORDS.split())

_PERIOD = re.compile(r"\b(?:per|by|each|every|a|an)\s+(minute|hour|day|week|month)\b")
_ADVERB = re.compile(r"\b(hourly|daily|weekly|monthly)\b")
_RANGE = re.compile(r"\b(?:last|past|previous)\s+(\d{1,4})\s+(minute|hour|day|week|month|year)s?\b")
_RANGE_ONE = re.compile(r"\b(?:last|past|this)\s+(hour|day|week|month|year)\b")
_BREAKDOWN = re.compile(
    r"\b(?:by|per|for each|grouped by|broken down by|split by)\s+([a-z0-9_$/. -]+?)"
    r"(?=\s+(?:per|by|in|over|for|during|last|past|from|since|and|with|where|today|yesterday)\b|[,;?!]|$)"
)
_AGGREGATE = re.compile(
    r"\b(average|avg|mean|sum|total|median|max|maximum|min|minimum)\s+(?:of\s+)?(?:the\s+)?([a-z0-9_$]+)"
)
_WHERE = re.compile(r"\b(?:where|with|whose)\s+([a-z0-9_$]+)\s+(?:is|=|==|equals)\s+['\"]?([^'\"\s,;]+)")
_TOP = re.compile(r"\btop\s+(\d{1,4})\b")
_TOP_OF = re.compile(r"\b(?:top\s+\d{1,4}|most\s+(?:common|popular|frequent|used))\s+([a-z0-9_$]+)")
_UNIQUE = re.compile(r"\b(?:unique|distinct)\b|\b(?:users|people|persons|visitors|dau|wau|mau)\b")


@dataclass(frozen=True)
class Vocabulary:
    """A project's names, most used first."""

    events: tuple[str, ...] = ()
    event_properties: tuple[str, ...] = ()
    person_properties: tuple[str, ...] = ()


def _singular(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _words(text: str) -> list[str]:
    return [_singular(w) for w in re.findall(r"[a-z0-9]+", text.lower())]


def _name_tokens(name: str) -> set[str]:
    spaced = re.sub(r"([a-z])([A-Z])", r"\1 \2", name)
    words = _words(spaced)
    return {*words, "".join(words)} - {""}


def _prompt_tokens(words: Sequence[str]) -> set[str]:
    tokens = {w for w in words if w not in _STOP}
    tokens |= {_singular(a + b) for a, b in itertools.pairwise(words)}  # "page views" -> "pageview"
    tokens |= {_SYNONYMS[w] for w in words if w in _SYNONYMS}
    return tokens


def _best(names: Iterable[str], tokens: set[str]) -> list[str]:
    """The names sharing the most words with ``tokens`` (all ties), best first; none if nothing is shared."""
    scored: list[tuple[float, int, str]] = []
    for order, name in enumerate(names):
        parts = _name_tokens(name)
        shared = len(parts & tokens)
        if shared:
            scored.append((shared / len(parts), -order, name))
    if not scored:
        return []
    top = max(score for score, _, _ in scored)
    return [name for score, _, name in sorted(scored, reverse=True) if score == top]


def _property(phrase: str, vocab: Vocabulary) -> tuple[str, str] | None:
    """``(HogQL expression, column alias)`` for the property a phrase names, person properties when it says so."""
    words = _words(phrase)
    tokens = {w for w in words if w not in {"person", "user", "people", "their", "property"}} - {""}
    if not tokens:
        return None
    if {"event", "name"} >= tokens:
        return "event", "event"
    wants_person = bool({"person", "user", "people"} & set(words))
    sources = [("person.properties", vocab.person_properties), ("properties", vocab.event_properties)]
    if not wants_person:
        sources.reverse()
    for prefix, keys in sources:
        found = _best(keys, tokens)
        if found:
            key = found[0]
            alias = re.sub(r"\W+", "_", key).strip("_") or "value"
            return f"{prefix}.{escape_identifier(key)}", alias
    return None


def draft_sql(prompt: str, vocab: Vocabulary, *, team_id: int, timezone: str = "UTC") -> str:
    """A HogQL statement for ``prompt`` over the project's names; it compiles for ``team_id``."""
    text = " ".join(prompt.lower().split())
    period = next((m.group(1) for m in [_PERIOD.search(text)] if m), None)
    if period is None and (adverb := _ADVERB.search(text)):
        period = _ADVERBS[adverb.group(1)]
    where: list[str] = []
    consumed = text
    if (r := _RANGE.search(text)) is not None:
        where.append(f"timestamp >= now() - INTERVAL {int(r.group(1))} {_UNITS[r.group(2)]}")
    elif (r1 := _RANGE_ONE.search(text)) is not None:
        where.append(f"timestamp >= now() - INTERVAL 1 {_UNITS[r1.group(1)]}")
    elif "yesterday" in text:
        where.append("timestamp >= yesterday() AND timestamp < today()")
    elif "today" in text:
        where.append("timestamp >= today()")
    else:
        where.append(f"timestamp >= now() - INTERVAL {DEFAULT_DAYS} DAY")

    select: list[str] = []
    group: list[str] = []
    if period is not None:
        select.append(f"{_INTERVALS[period]}(timestamp) AS {period}")
        group.append(period)
    breakdown = None
    for match in _BREAKDOWN.finditer(text):
        phrase = match.group(1).strip()
        if _words(phrase) and _words(phrase)[0] in _INTERVALS:
            continue
        breakdown = _property(phrase, vocab)
        if breakdown is not None:
            consumed = consumed.replace(match.group(0), " ")
            break
    if breakdown is None and (ranked := _TOP_OF.search(text)) is not None:
        breakdown = _property(ranked.group(1), vocab)
    if breakdown is not None:
        expr, alias = breakdown
        select.append(expr if expr == "event" else f"{expr} AS {escape_identifier(alias)}")
        group.append(alias)

    measure, measure_alias = "count()", "count"
    if (agg := _AGGREGATE.search(consumed)) is not None and (prop := _property(agg.group(2), vocab)) is not None:
        if prop[0] != "event":
            function = _AGGREGATES[agg.group(1)]
            measure, measure_alias = f"{function}(toFloat({prop[0]}))", f"{function}_{prop[1]}"
            consumed = consumed.replace(agg.group(0), " ")
    elif _UNIQUE.search(text):
        measure, measure_alias = "count(DISTINCT person_id)", "users"
    select.append(f"{measure} AS {escape_identifier(measure_alias)}")

    if (cond := _WHERE.search(consumed)) is not None and (prop := _property(cond.group(1), vocab)) is not None:
        where.append(f"{prop[0]} = {escape_literal(cond.group(2))}")
        consumed = consumed.replace(cond.group(0), " ")

    events = _best(vocab.events, _prompt_tokens(_words(consumed)))
    if events and (breakdown is None or breakdown[0] != "event"):
        where.insert(0, f"event = {escape_literal(events[0])}" if len(events) == 1 else
                     f"event IN ({', '.join(escape_literal(e) for e in events)})")  # fmt: skip
        if len(events) > 1 and breakdown is None:
            select.insert(len(group), "event")
            group.append("event")
    elif not events and breakdown is None and period is None:
        select.insert(0, "event")
        group.append("event")

    lines = ["SELECT " + ", ".join(select), "FROM events", "WHERE " + " AND ".join(where)]
    if group:
        lines.append("GROUP BY " + ", ".join(group))
    top = _TOP.search(text)
    if period is not None:
        lines.append("ORDER BY " + ", ".join(group))
        lines.append("LIMIT 10000")
    elif group:
        lines.append(f"ORDER BY {escape_identifier(measure_alias)} DESC")
        if top is not None:
            lines.append(f"LIMIT {int(top.group(1))}")
    sql = "\n".join(lines)
    try:
        compile_hogql(sql, team_id=team_id, timezone=timezone, catalog=ENGINE_CATALOG)
    except HogQLError:
        return FALLBACK
    return sql


_VOCABULARY_SQL = {
    "events": "SELECT event AS name, count() AS n FROM events GROUP BY name ORDER BY n DESC, name LIMIT 500",
    "event_properties": (
        "SELECT arrayJoin(JSONExtractKeys(properties)) AS name, count() AS n "
        "FROM (SELECT properties FROM events ORDER BY timestamp DESC LIMIT 5000) GROUP BY name ORDER BY n DESC, name "
        "LIMIT 500"
    ),
    "person_properties": (
        "SELECT arrayJoin(JSONExtractKeys(properties)) AS name, count() AS n "
        "FROM (SELECT properties FROM persons ORDER BY created_at DESC LIMIT 2000) GROUP BY name "
        "ORDER BY n DESC, name LIMIT 500"
    ),
}


def project_vocabulary(engine: Any, project: Any) -> Vocabulary:
    """The project's event names (all of them, by use), and the property keys of its latest 5,000 events and
    2,000 persons; read through the HogQL compiler, so only the project's own rows are seen."""
    names: dict[str, tuple[str, ...]] = {}
    for field_name, hogql in _VOCABULARY_SQL.items():
        compiled = compile_hogql(
            hogql, team_id=int(project.id), timezone=project.timezone or "UTC", catalog=ENGINE_CATALOG
        )
        table = engine.execute(compiled.sql, settings=compiled.settings)
        names[field_name] = tuple(str(v) for v in table.column("name").to_pylist() if v)
    return Vocabulary(**names)
