"""A metric experiment fed by the official ``posthog`` SDK and analysed end to end over HTTP, on the real service.

``hoglab.notebook.tours.feed_metric_experiment`` creates an experiment with a funnel, a mean and a ratio metric
(and a secondary mean), launches it, and plays a week of seeded visits through the SDK: ``/flags`` assigns each
user, ``/batch`` receives the exposure and the visit's events. ``client.experiments.results`` then runs an
``ExperimentQuery`` per metric and the ``ExperimentExposureQuery``. Every number is checked against a pandas
restatement of the stored events (read back over HogQL), and the tests against ``hoglab.stats.posthog`` called
on those restated sums; every answer validates against PostHog's OpenAPI document.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

from hoglab.notebook.tours import METRIC_FLAG_KEY, feed_metric_experiment
from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import CACHE_FIELDS, assert_valid

from .conftest import Fed

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS = 400
# Every answer of the query endpoint carries query_status and timings, as PostHog's cached responses do; its
# answer components list neither.
ANSWER_EXTRAS = (*CACHE_FIELDS, "query_status", "timings")


@pytest.fixture(scope="module")
def fed(feed_sdk_project: Callable[..., Fed]) -> Fed:
    """One project, fed once: the client, what the feed made, the results, and the stored events."""
    return feed_sdk_project(
        "metric experiment", lambda client, _: feed_metric_experiment(client, users=USERS, stats_method="frequentist")
    )


def _restated(events: pd.DataFrame) -> pd.DataFrame:
    """Per exposed person: variant and the metric values PostHog's rules give, from the raw events alone.

    Exposure: the person's first ``$feature_flag_called`` for the flag; persons seen with two variants are
    dropped (``exclude``, PostHog's default); metric events count from the exposure on (no window set).
    """
    calls = events[(events["event"] == "$feature_flag_called") & (events["flag"] == METRIC_FLAG_KEY)]
    calls = calls.sort_values("timestamp")
    first = calls.groupby("person_id").agg(variant=("response", "first"), exposed_at=("timestamp", "first"),
                                           variants=("response", "nunique"))  # fmt: skip
    first = first[first["variants"] == 1].drop(columns="variants")
    after = events.merge(first, left_on="person_id", right_index=True)
    after = after[after["timestamp"] >= after["exposed_at"]]
    purchases = after[after["event"] == "purchase"]
    checkouts = after[after["event"] == "checkout"].groupby("person_id")["timestamp"].min()
    bought_after_checkout = purchases.assign(checkout=purchases["person_id"].map(checkouts))
    converted = set(bought_after_checkout.loc[bought_after_checkout["timestamp"] > bought_after_checkout["checkout"],
                                              "person_id"])  # fmt: skip
    per_person = first.assign(
        revenue=purchases.groupby("person_id")["price"].sum(),
        pageviews=after[after["event"] == "$pageview"].groupby("person_id").size(),
    ).fillna({"revenue": 0.0, "pageviews": 0})
    per_person["converted"] = per_person.index.isin(converted).astype(float)
    return per_person


def _stats(per_person: pd.DataFrame, value: str, denominator: str | None = None) -> dict[str, ExperimentStats]:
    out = {}
    for variant, rows in per_person.groupby("variant"):
        x = rows[value].astype(float)
        extra: dict[str, Any] = {}
        if denominator is not None:
            d = rows[denominator].astype(float)
            extra = {"denominator_sum": float(d.sum()), "denominator_sum_squares": float((d * d).sum()),
                     "numerator_denominator_sum_product": float((x * d).sum())}  # fmt: skip
        out[str(variant)] = ExperimentStats(str(variant), len(rows), float(x.sum()), float((x * x).sum()), **extra)
    return out


def test_the_sdk_assigned_and_captured_what_the_flag_says(fed: Any) -> None:
    _, demo, result, events = fed
    assert len(demo.assigned) == USERS and set(demo.assigned.values()) == {"control", "test"}
    assert len(events) == demo.events  # every event the SDK sent is stored, once
    exposures = events[events["event"] == "$feature_flag_called"]
    assert Counter(exposures["response"]) == Counter(demo.assigned.values())
    # The exposure query counts the same persons per variant, its last cumulative count being the total.
    assert result.exposures is not None
    assert_valid(dict(result.exposures), "ExperimentExposureQueryResponse", drop=ANSWER_EXTRAS)
    assert result.total_exposures == {k: float(v) for k, v in Counter(demo.assigned.values()).items()}
    last = result.exposures_frame().groupby("variant")["cumulative"].last().to_dict()
    assert last == result.total_exposures


@pytest.mark.parametrize(
    ("uuid_of", "value", "denominator"),
    [("checkout → purchase", "converted", None), ("revenue per person", "revenue", None),
     ("revenue per pageview", "revenue", "pageviews"), ("pageviews", "pageviews", None)],
)  # fmt: skip
def test_variant_sums_equal_a_pandas_restatement_of_the_events(
    fed: Any, uuid_of: str, value: str, denominator: str | None
) -> None:
    _, _, result, events = fed
    assert result.errors == {}
    answer = next(a for a in result.metrics if a.label == uuid_of)
    assert answer.answer is not None
    assert_valid(dict(answer.answer), "ExperimentQueryResponse", drop=ANSWER_EXTRAS)
    expected = _stats(_restated(events), value, denominator)
    arms = [answer.answer["baseline"], *answer.answer["variant_results"]]
    for arm in arms:
        mine = expected[arm["key"]]
        assert arm["number_of_samples"] == mine.number_of_samples, arm["key"]
        assert arm["sum"] == pytest.approx(mine.sum, rel=1e-9), arm["key"]
        if answer.metric_type != "funnel":  # a funnel's squares are its conversions again
            assert arm["sum_squares"] == pytest.approx(mine.sum_squares, rel=1e-9), arm["key"]
        if denominator is not None:
            assert arm["denominator_sum"] == pytest.approx(mine.denominator_sum, rel=1e-9)
            assert arm["numerator_denominator_sum_product"] == pytest.approx(
                mine.numerator_denominator_sum_product, rel=1e-9)  # fmt: skip
    # PostHog's frequentist engine on the restated sums gives the answer's test, to the last digits.
    _, [test] = experiment_results(answer.metric_type, expected["control"], [expected["test"]],  # type: ignore[arg-type]
                                   stats_config={"method": "frequentist"})  # fmt: skip
    served = answer.answer["variant_results"][0]
    assert served["p_value"] == pytest.approx(test.p_value, rel=1e-9)
    assert served["confidence_interval"] == pytest.approx(list(test.confidence_interval), rel=1e-9)
    # The tidy frame reads the same numbers.
    frame = result.to_frame().set_index(["metric", "variant"])
    row = frame.loc[(uuid_of, "test")]
    control = expected["control"]
    base_mean = control.sum / (control.denominator_sum if denominator else control.number_of_samples)
    mean = expected["test"].sum / (
        expected["test"].denominator_sum if denominator else expected["test"].number_of_samples
    )
    assert row["lift"] == pytest.approx(mean / base_mean - 1, rel=1e-9) and row["p_value"] == served["p_value"]


def test_the_demo_effect_shows(fed: Any) -> None:
    """The feed makes test convert better (42% vs 30% of checkouts): the funnel metric's lift is positive."""
    _, _, result, _ = fed
    frame = result.to_frame()
    funnel = frame[(frame["metric_type"] == "funnel") & (frame["variant"] == "test")]
    assert float(funnel["lift"].iloc[0]) > 0
    assert list(frame["role"].unique()) == ["primary", "secondary"]
    assert json.dumps(result.raw, default=str)  # the raw answers serialise as they came


def test_the_picker_and_the_report_read_the_services_own_answers(fed: Any, tmp_path: Any) -> None:
    """The views over hoglab's answers (their PostHog Cloud counterparts: tests/notebook/test_metric_experiments.py)."""
    from hoglab.notebook import ExperimentPicker, experiment_report

    client, demo, result, _ = fed
    picker = ExperimentPicker(client)
    picker.value = demo.experiment.id
    assert picker.error is None, picker.error
    assert picker.metrics is not None and picker.metrics["metric"].tolist() == [a.label for a in result.metrics]
    assert picker.table is not None
    pd.testing.assert_frame_equal(picker.table, result.to_frame(), check_like=False)
    assert picker.srm is not None and picker.srm.observed == tuple(
        result.total_exposures[v] for v in picker.srm.variants
    )
    report = experiment_report(demo.experiment.id, client)
    assert report.metrics is not None and report.verdict in ("significant", "not_significant")
    assert report.metrics.to_frame().equals(result.to_frame())
    page = report.write(tmp_path).read_text()
    # metric_effects, exposures, over_time (the first primary metric day by day, issue 34), srm, and novelty when
    # its trend could be tested (issue 37)
    figures = 4 + (report.novelty is not None)
    assert "checkout → purchase" in page and page.count("data:image/png;base64,") == figures
