"""Flag regexes (``flags/patterns.py``): RE2 in linear time, PostHog's answer for a pattern that does not compile,
the differences from Python's ``re`` pinned, and the one check of stored definitions, wired into ``hoglab pull``.

The oracle for what a pattern matches is Python's ``re`` (what hoglab used before, and what PostHog's Python
SDK evaluates locally) on the syntax both engines share; where they differ, the expected answer is RE2's
documented rule, written out by hand."""

from __future__ import annotations

import logging
import re
import threading
import time
import warnings
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from hoglab import Client, pull
from hoglab.server.flags import invalid_patterns, match_property
from hoglab.server.flags.patterns import compile_pattern, search

from .helpers import ask, capture, make_flag, values

pytestmark = pytest.mark.xdist_group("flags_service")

REDOS = "^(a+)+$"


def _regex_flag(project: Any, key: str, pattern: str, operator: str = "regex") -> None:
    condition = {"key": "name", "operator": operator, "value": pattern, "type": "person"}
    make_flag(project, key, groups=[{"properties": [condition], "rollout_percentage": 100}])


# -- the attack -------------------------------------------------------------------------------------------------


def test_a_redos_pattern_answers_in_milliseconds_and_another_project_is_unaffected(make_project) -> None:
    attacker, bystander = make_project(), make_project()
    _regex_flag(attacker, "planted", REDOS)
    # 28 characters: Python's re needs about 2**28 steps (10 s and more here), so a regression fails the bounds.
    planted = {"$set": {"name": "a" * 28 + "!"}}
    capture(attacker, [{"event": "$identify", "distinct_id": "victim", "properties": planted}])
    make_flag(bystander, "everyone")
    bound = 3.0  # generous: an answer takes milliseconds; the machine is shared

    start = time.perf_counter()
    assert values(ask(attacker, {"distinct_id": "victim"})) == {"planted": False}
    assert time.perf_counter() - start < bound
    long_value = {"distinct_id": "x", "person_properties": {"name": "a" * 200_000 + "!"}}
    start = time.perf_counter()
    assert values(ask(attacker, long_value)) == {"planted": False}
    assert time.perf_counter() - start < bound
    matching = {"distinct_id": "x", "person_properties": {"name": "a" * 200_000}}
    assert values(ask(attacker, matching)) == {"planted": True}

    # Four threads of the attacker keep asking while the bystander asks: the bystander's answers stay prompt.
    stop = threading.Event()
    attacker_times: list[float] = []

    def flood() -> None:
        with httpx.Client(timeout=60) as http:
            while not stop.is_set():
                began = time.perf_counter()
                answer = http.post(attacker.service.url + "/flags/?v=2",
                                   json={"api_key": attacker.api_token, "distinct_id": "victim"})  # fmt: skip
                attacker_times.append(time.perf_counter() - began)
                assert answer.status_code == 200

    threads = [threading.Thread(target=flood) for _ in range(4)]
    for thread in threads:
        thread.start()
    bystander_times = []
    try:
        for _ in range(20):
            began = time.perf_counter()
            assert values(ask(bystander, {"distinct_id": "someone"})) == {"everyone": True}
            bystander_times.append(time.perf_counter() - began)
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert attacker_times and max(attacker_times) < bound
    assert max(bystander_times) < bound


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


@pytest.mark.parametrize(
    ("pattern", "text", "expected", "python_re"),
    [
        # Backtracking features do not compile: the condition matches nothing (None), where re would answer.
        (r"(a)\1", "aa", None, True),
        (r"^(?=.*\d)", "a1", None, True),
        (r"^(?!test)", "prod", None, True),
        (r"(?<=@)posthog", "me@posthog", None, True),
        (r"(?<!x)y", "ay", None, True),
        (r"a*+", "aaa", None, True),
        (r"abc\Z", "abc", None, True),
        (r"(?x) a b", "ab", None, True),
        (r"a{1001}", "a" * 1001, None, True),
        (r"\u00e9", "é", None, True),
        # RE2 classes are ASCII; Python's are Unicode.
        (r"^\d+$", "١٢٣", False, True),
        (r"^\w+$", "café", False, True),
        (r"\bcafé\b", "un café noir", False, True),  # "é" is no word character for RE2: no boundary after it
        # "$" is the end of the text only; "." does not match a newline (PostHog's flags service, unlike ClickHouse).
        (r"^abc$", "abc\n", False, True),
        (r"a.b", "a\nb", False, False),
        (r"(?s)a.b", "a\nb", True, True),
        (r"(?m)^b$", "a\nb\nc", True, True),
        # RE2-only syntax is RE2's.
        (r"abc\z", "abc", True, "error"),
        (r"\Qa.b\E", "a.b", True, "error"),
        (r"\Qa.b\E", "axb", False, "error"),
        (r"^\p{Greek}+$", "αβγ", True, "error"),
        (r"(?<year>\d{4})", "2024", True, "error"),
        (r"^[[:alpha:]]+$", "abc", True, False),  # re reads "[[:alpha:]" as a set, then "]"
        # Case-insensitive and Unicode text work as in re.
        (r"(?i)ÉTÉ", "été", True, True),
        (r"^.{3}$", "日本語", True, True),
    ],
)
def test_where_re2_and_pythons_re_differ(pattern: str, text: str, expected: bool | None, python_re: Any) -> None:
    assert search(pattern, text) is expected
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)  # re's "possible nested set" for "[[:alpha:]]"
            answer: Any = re.search(pattern, text) is not None
    except re.error:
        answer = "error"
    assert answer == python_re  # the difference is real: the old engine answered this
    condition = {"key": "k", "operator": "regex", "value": pattern}
    negated = {**condition, "operator": "not_regex"}
    if expected is None:  # PostHog: a pattern that does not compile fails the condition in both directions
        assert not match_property(condition, {"k": text}) and not match_property(negated, {"k": text})
        assert compile_pattern(pattern)
    else:
        assert match_property(condition, {"k": text}) is expected
        assert match_property(negated, {"k": text}) is (not expected)


def test_values_are_read_as_the_flags_service_reads_them() -> None:
    # Non-string values are matched as JSON text, invalid UTF-8 (a lone surrogate) is matched as bytes.
    assert match_property({"key": "k", "operator": "regex", "value": r"^\d+\.0$"}, {"k": 3.0})
    assert match_property({"key": "k", "operator": "regex", "value": "^true$"}, {"k": True})
    assert match_property({"key": "k", "operator": "regex", "value": '"a":1'}, {"k": {"a": 1}})
    assert match_property({"key": "k", "operator": "regex", "value": "^x"}, {"k": "x\ud800"})
    assert not match_property({"key": "k", "operator": "regex", "value": "\ud800"}, {"k": "x"})  # not UTF-8
    # A missing property: regex does not match, not_regex does (before any pattern is read).
    assert match_property({"key": "k", "operator": "not_regex", "value": "(?=x)"}, {})


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


def test_a_pulled_flag_with_a_pattern_re2_refuses_is_kept_with_that_condition_disabled(
    make_project, hoglab_service, caplog
) -> None:
    remote = make_project()
    lookahead = {"key": "email", "operator": "regex", "value": "^(?!.*@spam\\.com$)", "type": "person"}
    negated = {**lookahead, "operator": "not_regex"}
    plain = {"key": "plan", "operator": "regex", "value": "^pro$", "type": "person"}
    make_flag(remote, "lookahead", groups=[{"properties": [lookahead], "rollout_percentage": 100}])
    make_flag(remote, "negated", groups=[{"properties": [negated], "rollout_percentage": 100}])
    make_flag(remote, "plain", groups=[{"properties": [plain], "rollout_percentage": 100}])
    client = Client(hoglab_service.url, remote.key, remote.id, progress=False)
    with caplog.at_level(logging.WARNING, logger="hoglab.server.pull"):
        report = pull(client=client, service=hoglab_service, rate="100/second", persons=False)
    assert report.flags == 3  # the copy went on
    warnings = [r.getMessage() for r in caplog.records if r.name == "hoglab.server.pull"]
    assert len(warnings) == 2 and all("is disabled (never matches)" in w for w in warnings)
    assert "flag 'lookahead'" in warnings[0] or "flag 'lookahead'" in warnings[1]
    assert all("filters__groups__0__properties__0__value" in w and "(?!" in w for w in warnings)
    local = hoglab_service.state.store.flags.get_by_key(report.local_project_id, "lookahead")
    assert local is not None and local.filters["groups"][0]["properties"] == [lookahead]  # stored as the remote has it
    token = hoglab_service.state.store.projects.get(report.local_project_id).api_token
    answer = httpx.post(hoglab_service.url + "/flags/?v=2", json={
        "api_key": token, "distinct_id": "p", "person_properties": {"email": "me@ok.com", "plan": "pro"}})  # fmt: skip
    assert values(answer) == {"lookahead": False, "negated": False, "plain": True}
