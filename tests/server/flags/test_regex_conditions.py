"""Regex conditions of flags (RE2, ``filters/patterns.py``): answered in linear time, PostHog's answer for a pattern
that does not compile, the differences from Python's ``re`` pinned, and the check of stored definitions wired into
``hoglab pull``.

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

from hoglab import Client
from hoglab.pull import pull
from hoglab.server.filters.patterns import compile_pattern, search
from hoglab.server.flags import match_property

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
