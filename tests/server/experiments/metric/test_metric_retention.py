"""Retention metrics (PostHog's ``ExperimentRetentionMetric``) through hoglab's ``/query``.

The first cases are PostHog's own (``test_retention_metric.py``: ``test_basic_retention_calculation``,
``test_retention_window_boundaries``), events and expected sums as PostHog wrote them; the experiment's window
covers the events, as PostHog's helper sets it. The others check the rules of ``experiment_retention_query_builder``
one at a time (start handling, the start occurrence never its own completion, the exposure-anchored start, start
events only after the exposure, hour windows by the clock, the project's days, the matured-users default), and
that the statistics are PostHog's ratio statistics on those sums.
"""

from __future__ import annotations

from typing import Any

import pytest

from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import CACHE_FIELDS, assert_valid

from .metric_cases import arms, event, exposure, run

pytestmark = pytest.mark.xdist_group("metric-experiments")

WINDOW = {"start": "2019-12-31T00:00:00Z", "end": "2020-01-31T00:00:00Z"}


def retention(start: str | dict[str, Any], completion: str, low: int, high: int, unit: str = "day",
              handling: str = "first_seen", **extra: Any) -> dict[str, Any]:  # fmt: skip
    node = start if isinstance(start, dict) else {"kind": "EventsNode", "event": start}
    return {"kind": "ExperimentMetric", "metric_type": "retention", "start_event": node,
            "completion_event": {"kind": "EventsNode", "event": completion}, "retention_window_start": low,
            "retention_window_end": high, "retention_window_unit": unit, "start_handling": handling,
            **extra}  # fmt: skip


def ratio_fields(arm: dict[str, Any]) -> tuple[Any, ...]:
    return (arm["number_of_samples"], arm["sum"], arm["sum_squares"], arm["denominator_sum"],
            arm["denominator_sum_squares"], arm["numerator_denominator_sum_product"])  # fmt: skip


def test_basic_retention_calculation(results_project):
    """PostHog: control 10 exposed, 6 sign up, 4 return (4/6); test 10, 8, 6 (6/8)."""
    rows = []
    for variant, started, retained in (("control", 6, 4), ("test", 8, 6)):
        for i in range(10):
            user = f"user_{variant}_{i}"
            rows.append(exposure(user, variant, "2020-01-02T12:00:00Z"))
            if i < started:
                rows.append(event("signup", user, "2020-01-02T12:01:00Z"))
                if i < retained:
                    rows.append(event("login", user, "2020-01-05T12:00:00Z"))
    answer = run(results_project, rows, retention("signup", "login", 1, 7), {"method": "frequentist"}, **WINDOW)
    control, test = arms(answer)
    assert ratio_fields(control) == (6, 4, 4, 6, 6, 4)
    assert ratio_fields(test) == (8, 6, 6, 8, 8, 6)


def test_retention_window_boundaries(results_project):
    """PostHog: a [7, 14] day window counts returns on days 7 and 14, not 5, 6 or 20."""
    offsets = {"control": [5, 7, 10, 13, 14, 20, None], "test": [6, 7, 9, 12, 13, 14, None]}
    rows = []
    for variant, days in offsets.items():
        for i, day in enumerate(days, 1):
            user = f"{variant}_{i}"
            rows += [exposure(user, variant, "2024-01-02T12:00:00Z"), event("signup", user, "2024-01-02T12:01:00Z")]
            if day is not None:
                rows.append(event("return_visit", user, f"2024-01-{2 + day:02d}T12:01:00Z"))
    answer = run(results_project, rows, retention("signup", "return_visit", 7, 14), {"method": "frequentist"},
                 start="2024-01-01T00:00:00Z", end="2024-01-31T00:00:00Z")  # fmt: skip
    control, test = arms(answer)
    assert ratio_fields(control) == (7, 4, 4, 7, 7, 4)
    assert ratio_fields(test) == (7, 5, 5, 7, 7, 5)


def _one(user: str, variant: str, *events: tuple[str, str]) -> list[dict[str, Any]]:
    return [exposure(user, variant, "2020-01-02T12:00:00Z"), *(event(name, user, ts) for name, ts in events)]


def test_first_seen_and_last_seen_pick_different_starts(results_project):
    # Signups on days 0 and 5, a purchase on day 8: 8 days after the first start, 3 after the last.
    rows = _one("a", "control", ("signup", "2020-01-02T12:01:00Z"), ("signup", "2020-01-07T12:00:00Z"),
                ("purchase", "2020-01-10T12:00:00Z"))  # fmt: skip
    rows += _one("b", "test", ("signup", "2020-01-02T12:01:00Z"))
    first = arms(run(results_project, rows, retention("signup", "purchase", 1, 7), {}, **WINDOW))[0]
    last = arms(run(results_project, rows, retention("signup", "purchase", 1, 7, handling="last_seen"), {},
                    **WINDOW))[0]  # fmt: skip
    assert (first["number_of_samples"], first["sum"]) == (1, 0)
    assert (last["number_of_samples"], last["sum"]) == (1, 1)


def test_the_start_occurrence_is_never_its_own_completion(results_project):
    # The same event as start and completion over a [0, 0] day window: only a second one that day retains.
    rows = _one("once", "control", ("visit", "2020-01-03T10:00:00Z"))
    rows += _one("twice", "control", ("visit", "2020-01-03T10:00:00Z"), ("visit", "2020-01-03T18:00:00Z"))
    rows += _one("t", "test", ("visit", "2020-01-03T10:00:00Z"))
    control = arms(run(results_project, rows, retention("visit", "visit", 0, 0), {}, **WINDOW))[0]
    assert (control["number_of_samples"], control["sum"]) == (2, 1)


def test_start_events_count_only_after_the_exposure_and_within_the_conversion_window(results_project):
    rows = [event("signup", "before", "2020-01-02T11:00:00Z"), *_one("before", "control")]
    rows += _one("late", "control", ("signup", "2020-01-06T12:00:00Z"), ("login", "2020-01-08T12:00:00Z"))
    rows += _one("soon", "control", ("signup", "2020-01-02T13:00:00Z"), ("login", "2020-01-04T12:00:00Z"))
    rows += _one("t", "test", ("signup", "2020-01-02T13:00:00Z"))
    metric = retention("signup", "login", 1, 7, conversion_window=2, conversion_window_unit="day")
    control = arms(run(results_project, rows, metric, {}, **WINDOW))[0]
    # "before" signed up before being exposed, "late" more than two days after: only "soon" started.
    assert (control["number_of_samples"], control["sum"]) == (1, 1)
    without_window = arms(run(results_project, rows, retention("signup", "login", 1, 7), {}, **WINDOW))[0]
    assert (without_window["number_of_samples"], without_window["sum"]) == (2, 2)


def test_an_exposure_start_anchors_on_the_first_exposure(results_project):
    rows = _one("a", "control", ("login", "2020-01-04T09:00:00Z"))
    rows += _one("b", "control", ("login", "2020-01-02T18:00:00Z"))  # day 0: outside [1, 7]
    rows += _one("c", "control")
    rows += _one("t", "test")
    metric = retention({"kind": "ExperimentExposureNode"}, "login", 1, 7)
    control = arms(run(results_project, rows, metric, {}, **WINDOW))[0]
    assert (control["number_of_samples"], control["sum"]) == (3, 1)  # every exposed person started


@pytest.mark.parametrize(("extra", "says"), [
    ({"conversion_window": 1, "conversion_window_unit": "day"}, "a conversion window cannot be combined"),
    ({"start_handling": "last_seen"}, "start_handling 'last_seen' cannot be combined"),
])  # fmt: skip
def test_an_exposure_start_refuses_settings_it_would_ignore(results_project, extra, says):
    metric = {**retention({"kind": "ExperimentExposureNode"}, "login", 1, 7), **extra}
    refused = run(results_project, _one("a", "control"), metric, {}, status=400, **WINDOW)
    assert refused["attr"] == "query__metric" and says in refused["detail"]


def test_hour_windows_count_whole_clock_hours(results_project):
    # Start at 10:50; [1, 1] hour: any completion in the 11:00-11:59 hour, even 11:05 (15 minutes later).
    rows = _one("a", "control", ("open", "2020-01-03T10:50:00Z"), ("use", "2020-01-03T11:05:00Z"))
    rows += _one("b", "control", ("open", "2020-01-03T10:50:00Z"), ("use", "2020-01-03T12:00:00Z"))
    rows += _one("t", "test", ("open", "2020-01-03T10:50:00Z"))
    control = arms(run(results_project, rows, retention("open", "use", 1, 1, unit="hour"), {}, **WINDOW))[0]
    assert (control["number_of_samples"], control["sum"]) == (2, 1)


def test_day_windows_use_the_projects_days(results_project):
    # A start at 10:30 UTC and a completion 40 minutes later: the same day in UTC, the next day in Auckland
    # (UTC+13 in January: 23:30, then 00:10), so [1, 1] retains in the Auckland project only.
    rows = _one("a", "control", ("open", "2020-01-03T10:30:00Z"), ("use", "2020-01-03T11:10:00Z"))
    rows += _one("t", "test", ("open", "2020-01-03T10:30:00Z"))
    metric = retention("open", "use", 1, 1)
    auckland = arms(run(lambda events: results_project(events, timezone="Pacific/Auckland"), rows, metric, {},
                        **WINDOW))[0]  # fmt: skip
    utc = arms(run(results_project, rows, metric, {}, **WINDOW))[0]
    assert (auckland["sum"], utc["sum"]) == (1, 0)


def test_the_statistics_are_posthogs_ratio_statistics(results_project):
    rows = []
    for variant, started, retained in (("control", 60, 20), ("test", 60, 33)):
        for i in range(started):
            user = f"{variant}-{i}"
            rows += _one(user, variant, ("signup", "2020-01-02T13:00:00Z"))
            if i < retained:
                rows.append(event("login", user, "2020-01-04T13:00:00Z"))
    answer = run(results_project, rows, retention("signup", "login", 1, 7), {"method": "frequentist"}, **WINDOW)
    assert_valid({k: v for k, v in answer.items() if k != "metric"}, "ExperimentQueryResponse",
                 drop=(*CACHE_FIELDS, "query_status", "timings"))  # fmt: skip
    control, test = arms(answer)
    stats = {arm["key"]: ExperimentStats.from_posthog(arm) for arm in (control, test)}
    _, [expected] = experiment_results("retention", stats["control"], [stats["test"]],
                                       stats_config={"method": "frequentist"})  # fmt: skip
    assert test["p_value"] == pytest.approx(expected.p_value, rel=1e-12)
    assert test["confidence_interval"] == pytest.approx(list(expected.confidence_interval), rel=1e-12)
    # Independent of hoglab's statistics: retention 33/60 vs 20/60 is a relative lift of +65%.
    assert (test["sum"] / test["denominator_sum"]) / (control["sum"] / control["denominator_sum"]) - 1 == \
        pytest.approx(0.65)  # fmt: skip
