"""Regular expressions of conditions (``filters/patterns.py``): RE2 matches what Python's ``re`` matches on the
syntax both engines share, and :func:`invalid_patterns` names every condition of a stored definition whose pattern
RE2 cannot compile. How flags answer for such patterns is ``tests/server/flags/test_regex_conditions.py``."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab.server.filters.patterns import compile_pattern, invalid_patterns, search

# -- what a pattern matches -------------------------------------------------------------------------------------

# Patterns of the shape PostHog users write in flag conditions (emails, URLs, versions, plans, ids), each with
# texts that match and texts that do not.
COMMON = [
    (r"@posthog\.com$", ["me@posthog.com", "me@posthog.com.evil", "me@posthogXcom", ""]),
    (r"^.*@(gmail|yahoo)\.com$", ["a.b@gmail.com", "x@yahoo.com", "x@hotmail.com", "@gmail.com"]),
    (r"^https?://(www\.)?example\.com(/.*)?$", ["https://example.com", "http://www.example.com/a?b=1",
                                                 "https://example.com.evil", "ftp://example.com"]),
    (r"^/blog/[^/]+/?$", ["/blog/post-1", "/blog/post-1/", "/blog/a/b", "/blog/"]),
    (r"^(pro|team|enterprise)$", ["pro", "team", "pro ", "Pro", "professional"]),
    (r"(?i)^PRO", ["pro plan", "PRO", "a pro"]),
    (r"^\d{3}-\d{4}$", ["555-1234", "5555-1234", "555-12345", "abc-defg"]),
    (r"^[A-Z]{2}$", ["US", "us", "USA", "U"]),
    (r"^v?1\.[2-9]\.\d+$", ["1.2.0", "v1.9.13", "1.10.0", "2.2.0"]),
    (r"^1\.(1[0-9]|[2-9])\.", ["1.12.3", "1.5.0", "1.1.0", "11.12.0"]),
    (r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$",
     ["0190a2f1-7a3c-4b6e-9d4e-1f2a3b4c5d6e", "0190a2f1-7a3c-7b6e-9d4e-1f2a3b4c5d6e", "not-a-uuid"]),
    (r"beta", ["beta tester", "alphabet", "BETA"]),
    (r"^$", ["", " ", "x"]),
    (r"[?&]utm_source=newsletter(&|$)", ["/?utm_source=newsletter", "/?a=1&utm_source=newsletter&b=2",
                                        "/?utm_source=newsletters"]),
    (r"\bcheckout\b", ["go to checkout now", "checkouts", "pre-checkout"]),
    (r"^(?:[a-z0-9-]+\.)*shop\.io$", ["shop.io", "eu.shop.io", "eu.shop.io.evil"]),
    (r"^\s*$", ["", "   ", "\t", " a "]),
    (r"^[^@\s]+@[^@\s]+\.[a-z]{2,}$", ["a@b.co", "a b@c.de", "a@@b.co"]),
    (r"^.{0,5}$", ["", "12345", "123456"]),
]


@pytest.mark.parametrize(("pattern", "texts"), COMMON)
def test_common_patterns_match_as_pythons_re(pattern: str, texts: list[str]) -> None:
    assert compile_pattern(pattern) is None
    for text in texts:
        assert search(pattern, text) is (re.search(pattern, text) is not None), (pattern, text)


_ATOMS = st.sampled_from(["a", "b", "c", ".", r"\.", "[ab]", "[^a]", "[a-c]", r"\d", r"\w", r"\s", "1", " ", "-"])


def _regexes() -> st.SearchStrategy[str]:
    quantifier = st.sampled_from(["", "", "*", "+", "?", "*?", "+?", "{2}", "{1,3}", "{0,2}"])

    def extend(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
        group = st.builds(lambda body, kind, q: f"({kind}{body}){q}", inner, st.sampled_from(["", "?:"]), quantifier)
        alternation = st.builds(lambda a, b: f"{a}|{b}", inner, inner)
        sequence = st.lists(inner, min_size=2, max_size=4).map("".join)
        return group | alternation | sequence

    leaf = st.builds(lambda atom, q: atom + q, _ATOMS, quantifier)
    body = st.recursive(leaf, extend, max_leaves=8)
    return st.builds(lambda start, middle, end, flags: f"{flags}{start}{middle}{end}", st.sampled_from(["", "^"]),
                     body, st.sampled_from(["", "$", r"\b"]), st.sampled_from(["", "(?i)"]))  # fmt: skip


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pattern=_regexes(), text=st.text(alphabet="abcABC1 .-_", max_size=12))
def test_patterns_of_the_shared_syntax_match_as_pythons_re(pattern: str, text: str) -> None:
    # ASCII text without newlines: where RE2 and re agree by definition (classes, anchors, case folding).
    assert compile_pattern(pattern) is None, pattern
    assert search(pattern, text) is (re.search(pattern, text) is not None), (pattern, text)


# -- checking stored definitions ----------------------------------------------------------------------------------


def test_invalid_patterns_names_every_bad_condition_where_it_is() -> None:
    flag = {
        "groups": [
            {"properties": [{"key": "a", "operator": "regex", "value": "^ok$"},
                            {"key": "b", "operator": "not_regex", "value": "(?<=x)y"}]},
            {"properties": [{"key": "c", "operator": "exact", "value": "(?<=x)y"}]},  # not a regex: ignored
        ],
        "super_groups": [{"properties": [{"key": "d", "operator": "regex", "value": r"(a)\1"}]}],
        "holdout_groups": [{"properties": [{"key": "e", "operator": "regex", "value": None}]}],  # no pattern
    }
    found = invalid_patterns(flag)
    assert [(p.attr, p.pattern) for p in found] == [
        ("filters__groups__0__properties__1__value", "(?<=x)y"),
        ("filters__super_groups__0__properties__0__value", r"(a)\1"),
    ]
    assert found[0].reason == "invalid perl operator: (?<="
    assert str(found[1]) == ("filters__super_groups__0__properties__0__value: '(a)\\\\1' is not a valid regular "
                             "expression (RE2: invalid escape sequence: \\1)")  # fmt: skip
    cohort = {"properties": {"type": "OR", "values": [{"type": "AND", "values": [
        {"key": "plan", "operator": "regex", "value": "["},
        {"type": "behavioral", "value": "performed_event", "key": "x",
         "event_filters": [{"key": "$current_url", "operator": "not_regex", "value": "x**"}]}]}]}}  # fmt: skip
    assert [p.attr for p in invalid_patterns(cohort, "filters")] == [
        "filters__properties__values__0__values__0__value",
        "filters__properties__values__0__values__1__event_filters__0__value",
    ]
    assert invalid_patterns({"groups": [{"properties": [{"operator": "regex", "value": "^a|b$"}]}]}) == []
    deep: Any = {"operator": "regex", "value": "("}
    for _ in range(5_000):  # deeper than Python's recursion limit
        deep = {"values": [deep]}
    assert len(invalid_patterns(deep)) == 1
