"""PostHog's flag property operators (``match_property``), one behaviour per case."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hoglab.server.flags.properties import UnsupportedFilter, match_property, parse_date, text_of


def _m(operator: str, value, props: dict, key: str = "k", **kw) -> bool:
    return match_property({"key": key, "operator": operator, "value": value}, props, **kw)


@pytest.mark.parametrize(
    ("value", "actual", "expected"),
    [
        ("pro", "pro", True),
        ("PRO", "pro", True),  # text compares case-insensitively, as PostHog's flags service
        ("pro", "team", False),
        (["pro", "team"], "team", True),  # a list means any of
        (["pro", "team"], "free", False),
        ("5", 5, True),  # numbers compare by their text
        (5, "5", True),
        ("true", True, True),  # boolean-looking values compare as booleans
        (True, "True", True),
        (False, "false", True),
        ("true", "false", False),
        (["true"], True, True),
    ],
)
def test_exact(value, actual, expected):
    assert _m("exact", value, {"k": actual}) is expected
    assert _m("is_not", value, {"k": actual}) is not expected


def test_operator_defaults_to_exact():
    assert match_property({"key": "plan", "value": "pro"}, {"plan": "pro"})


def test_missing_property_matches_only_the_negative_operators():
    for operator in ("exact", "icontains", "regex", "gt", "lt", "gte", "lte", "is_date_before", "between"):
        assert _m(operator, "1", {}) is False, operator
    for operator in ("is_not", "not_icontains", "not_regex"):
        assert _m(operator, "1", {}) is True, operator
    assert _m("is_set", None, {}) is False and _m("is_not_set", None, {}) is True
    assert _m("is_set", None, {"k": None}) is True  # a null property is still set
    assert _m("is_not_set", None, {"k": 0}) is False


def test_contains_and_regex():
    assert _m("icontains", "MAIL", {"k": "me@gmail.com"})
    assert _m("not_icontains", "yahoo", {"k": "me@gmail.com"})
    assert _m("regex", r"^me@.+\.com$", {"k": "me@gmail.com"})
    assert not _m("regex", r"^you", {"k": "me@gmail.com"})
    assert _m("not_regex", r"^you", {"k": "me@gmail.com"})
    # A broken pattern matches nothing, in both directions, rather than failing the request.
    assert not _m("regex", "([", {"k": "x"}) and not _m("not_regex", "([", {"k": "x"})


@pytest.mark.parametrize(
    ("operator", "value", "actual", "expected"),
    [
        ("gt", "30", 31, True),
        ("gt", 30, "30", False),
        ("gte", 30, "30", True),
        ("lt", "2.5", 2, True),
        ("lte", 2, 2.0, True),
        ("gt", "abc", 5, False),  # numbers only: a non-numeric side never matches
        ("gt", 1, "abc", False),
        ("gt", 1, True, False),
    ],
)
def test_numeric_comparisons(operator, value, actual, expected):
    assert _m(operator, value, {"k": actual}) is expected


def test_between():
    assert _m("between", [1, 5], {"k": 5}) and not _m("between", [1, 5], {"k": 6})
    assert _m("not_between", [1, 5], {"k": 6}) and not _m("not_between", [1, 5], {"k": 1})
    assert not _m("between", [5, 1], {"k": 3}) and not _m("between", "1-5", {"k": 3})


def test_dates_read_naive_values_in_the_project_zone():
    assert _m("is_date_before", "2024-06-01", {"k": "2024-05-31T23:00:00Z"}, timezone="UTC")
    # Midnight of June 1st in Berlin is 22:00 UTC on May 31st.
    assert not _m("is_date_before", "2024-06-01", {"k": "2024-05-31T23:00:00Z"}, timezone="Europe/Berlin")
    assert _m("is_date_after", "2024-06-01", {"k": "2024-06-02"})
    assert _m("is_date_exact", "2024-06-01T00:00:00+00:00", {"k": "2024-06-01"})
    assert _m("is_date_after", "-7d", {"k": datetime.now(UTC).isoformat()})
    assert _m("is_date_before", "-1y", {"k": 0})  # a Unix timestamp
    assert not _m("is_date_before", "2024-06-01", {"k": "not a date"})
    assert not _m("is_date_before", 20240601, {"k": "2024-01-01"})  # the filter value must be text


def test_relative_dates():
    now = datetime(2024, 3, 31, 12, tzinfo=UTC)
    assert parse_date("-1m", now=now) == datetime(2024, 2, 29, 12, tzinfo=UTC)
    assert parse_date("-2w", now=now) == datetime(2024, 3, 17, 12, tzinfo=UTC)
    assert parse_date("-12h", now=now) == datetime(2024, 3, 31, tzinfo=UTC)
    assert parse_date("-1y", now=now) == datetime(2023, 3, 31, 12, tzinfo=UTC)
    assert parse_date("soon") is None


def test_cohort_and_dependency_operators_are_not_decided_here():
    for operator in ("in", "not_in", "flag_evaluates_to"):
        with pytest.raises(UnsupportedFilter):
            _m(operator, 1, {"k": 1})
    with pytest.raises(UnsupportedFilter):
        _m("semver_gt", "1.0.0", {"k": "1.2.0"})


def test_a_filter_without_a_value_matches_nothing():
    assert not _m("exact", None, {"k": None}) and not _m("is_not", None, {"k": 1})


def test_text_of():
    assert [text_of(v) for v in ("a", 1, 1.0, 1.5, None, [1, "a"])] == ["a", "1", "1.0", "1.5", "null", '[1,"a"]']
