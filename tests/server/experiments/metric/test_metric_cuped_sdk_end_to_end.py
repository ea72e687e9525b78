"""PostHog's 2026 experiment features in ONE experiment, end to end, fed by the official ``posthog`` SDK, checked
against numpy.

``hoglab.notebook.tours.feed_cuped_experiment`` creates a holdout (20% of persons), a saved metric (purchases per
person) and an experiment using both (frequentist, sequential testing, CUPED with a 14-day lookback), with a mean
metric broken down by the exposure's browser and a retention metric; it launches it and plays each shopper through
the SDK: their purchases in the fortnight before, ``/flags`` for the flag value (a variant, or the holdout's
``holdout-<id>``), the exposure, the week after, a possible return. ``client.experiments.results`` then runs every
metric, PostHog's way (the holdout left out) and against the holdout (hoglab's ``compare_to_holdout``).

Every served figure is compared with a numpy restatement written here from PostHog's definitions, on the events
as stored (read back over HogQL), never by calling hoglab's code: who is held out (SHA-1 of ``holdout-<distinct
id>``), who is exposed and with what browser, each person's value and pre-exposure covariate, θ, the adjusted means
and variances, the relative effect and its delta variance, Waudby-Smith et al.'s confidence sequence and
always-valid p-value; and for retention the day windows and the ratio's delta-method variance. The CUPED interval
is narrower than the unadjusted one, by about √(1 − ρ²). The objects and the answers (their CUPED members and
breakdowns aside, which PostHog's published document predates) validate against PostHog's OpenAPI components.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.client import MetricExperimentResult
from hoglab.notebook.tours import CUPED_FLAG_KEY, CUPED_HOLDOUT_SHARE, CUPED_LOOKBACK_DAYS, feed_cuped_experiment
from posthog_openapi import CACHE_FIELDS, assert_valid, assert_valid_experiment

from .conftest import Fed
from .test_holdout_sdk_end_to_end import _held_out

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

USERS = 600
ALPHA, TUNING = 0.05, 5000.0  # PostHog's defaults: stats_config sets neither
NULL = "$$_posthog_breakdown_null_$$"
ANSWER_EXTRAS = (*CACHE_FIELDS, "query_status", "timings")
SAVED = f"purchases per person ({CUPED_FLAG_KEY})"


@pytest.fixture(scope="module")
def fed(feed_sdk_project: Callable[..., Fed]) -> Fed:
    # The restatement also reads each event's uuid and browser.
    events = ("select event, person_id, toString(uuid) as uuid, timestamp, toFloat(properties.price) as price, "
              "properties.$feature_flag as flag, properties.$feature_flag_response as response, "
              "properties.$browser as browser from events order by timestamp")  # fmt: skip
    return feed_sdk_project("CUPED experiment", lambda client, _: feed_cuped_experiment(client, users=USERS),
                            events_hogql=events)  # fmt: skip


# ---- the restatement ------------------------------------------------------------------------------------------


def _people(events: pd.DataFrame) -> pd.DataFrame:
    """Per exposed person (one flag value only; the holdout's included): the value (``variant``), first exposure
    (time, uuid, browser), revenue (``y``) and purchases (``count``) after it and in the 14 days before it (``x``,
    ``count_before``), and whether they came back on days 1-7."""
    calls = events[(events["event"] == "$feature_flag_called") & (events["flag"] == CUPED_FLAG_KEY)]
    calls = calls.sort_values("timestamp", kind="stable")
    first = calls.drop_duplicates("person_id").set_index("person_id")
    variants = calls.groupby("person_id")["response"].nunique()
    people = pd.DataFrame({"variant": first["response"], "exposed": first["timestamp"], "uuid": first["uuid"],
                           "browser": first["browser"].fillna(NULL)})  # fmt: skip
    people = people[variants.reindex(people.index) == 1]
    buys = events[events["event"] == "purchase"].join(people["exposed"], on="person_id", how="inner")
    after = buys[buys["timestamp"] >= buys["exposed"]]
    before = buys[(buys["timestamp"] >= buys["exposed"] - timedelta(days=CUPED_LOOKBACK_DAYS))
                  & (buys["timestamp"] < buys["exposed"])]  # fmt: skip
    people["y"] = after.groupby("person_id")["price"].sum().reindex(people.index, fill_value=0.0)
    people["x"] = before.groupby("person_id")["price"].sum().reindex(people.index, fill_value=0.0)
    people["count"] = after.groupby("person_id").size().reindex(people.index, fill_value=0).astype(float)
    people["count_before"] = before.groupby("person_id").size().reindex(people.index, fill_value=0).astype(float)
    views = events[events["event"] == "$pageview"].join(people[["exposed", "uuid"]], on="person_id", how="inner",
                                                        rsuffix="_start")  # fmt: skip
    day = lambda t: t.dt.floor("D")  # noqa: E731 - the project's zone is UTC
    back = (views["timestamp"] >= views["exposed"]) & (views["timestamp"] <= views["exposed"] + timedelta(days=8))
    back &= (day(views["timestamp"]) >= day(views["exposed"]) + timedelta(days=1))
    back &= day(views["timestamp"]) <= day(views["exposed"]) + timedelta(days=7)
    back &= views["uuid"] != views["uuid_start"]
    people["retained"] = views[back].groupby("person_id").size().reindex(people.index, fill_value=0).clip(upper=1)
    return people


def _confidence_sequence(effect: float, variance: float, n: int) -> tuple[float, float, float]:
    """Waudby-Smith, Arbour, Sinha, Kennedy & Ramdas (arXiv:2103.06476): the asymptotic confidence sequence
    (eq. 9) with ρ² from the tuning parameter N* (eq. 161), and the always-valid p-value (eq. 155)."""
    rho2 = (-2 * math.log(ALPHA) + math.log(-2 * math.log(ALPHA) + 1)) / TUNING
    sigma = math.sqrt(variance * n)  # the per-unit standard deviation of the effect
    half = sigma * math.sqrt(2 * (n * rho2 + 1) / (n * n * rho2) * math.log(math.sqrt(n * rho2 + 1) / ALPHA))
    t2 = effect * effect * n / variance
    log_e = rho2 * t2 / (2 * (n * rho2 + 1)) - 0.5 * math.log(n * rho2 + 1)
    return effect - half, effect + half, min(1.0, math.exp(-log_e))


def _moments(arm: pd.DataFrame, y_col: str, x_col: str) -> dict[str, float]:
    y, x = arm[y_col].to_numpy(float), arm[x_col].to_numpy(float)
    return {"n": len(arm), "y": y.mean(), "x": x.mean(), "vy": y.var(ddof=1), "vx": x.var(ddof=1),
            "cxy": np.cov(y, x, ddof=1)[0, 1]}  # fmt: skip


def _mean_metric(people: pd.DataFrame, *, cuped: bool, baseline: str = "control", variant: str = "test",
                 y: str = "y", x: str = "x") -> dict[str, float]:  # fmt: skip
    """PostHog's relative effect of ``variant`` over ``baseline`` on ``y``, with CUPED on the covariate ``x`` (θ
    per pair, pooled) or without."""
    c, t = (_moments(people[people["variant"] == v], y, x) for v in (baseline, variant))
    theta = 0.0
    if cuped:
        both = people[people["variant"].isin([baseline, variant])]
        pooled_var = np.var(both[x].to_numpy(float), ddof=1)
        theta = np.cov(both[y], both[x], ddof=1)[0, 1] / pooled_var if pooled_var >= 1e-10 else 0.0
    adjusted = {}
    for name, m in (("c", c), ("t", t)):
        mean = m["y"] - theta * m["x"]
        var = max(m["vy"] + theta**2 * m["vx"] - 2 * theta * m["cxy"], 1e-10)
        adjusted[name] = (mean, var)
    (c_mean, c_var), (t_mean, t_var) = adjusted["c"], adjusted["t"]
    base = c["y"]  # the unadjusted control mean is the relative effect's denominator, with or without CUPED
    effect = (t_mean - c_mean) / base
    variance = t_var / (t["n"] * base**2) + t_mean**2 * c_var / (c["n"] * base**4)
    low, high, p = _confidence_sequence(effect, variance, int(t["n"] + c["n"]))
    return {"theta": theta, "effect": effect, "low": low, "high": high, "p": p, "control_n": c["n"], "test_n": t["n"]}


def _ratio_moments(values: np.ndarray) -> tuple[float, float, int]:
    # Retention as PostHog's RatioStatistic: numerator = retained (0/1), denominator = 1 per started unit.
    m, d = values, np.ones_like(values)
    mean_m, mean_d = m.mean(), d.mean()
    var = (m.var(ddof=1) / mean_d**2 + d.var(ddof=1) * mean_m**2 / mean_d**4
           - 2 * np.cov(m, d, ddof=1)[0, 1] * mean_m / mean_d**3)  # fmt: skip
    return mean_m / mean_d, var, len(values)


# ---- the tests ------------------------------------------------------------------------------------------------


def _answer(result: MetricExperimentResult, label: str, *, holdout: bool = False) -> dict[str, Any]:
    answers = result.holdout_metrics if holdout else result.metrics
    answer = next(a for a in answers if a.label == label)
    assert answer.error is None and answer.answer is not None
    return dict(answer.answer)


def _posthog_shape(answer: dict[str, Any]) -> dict[str, Any]:
    """The answer without what PostHog's published document predates (CUPED's sums, breakdowns, the metric)."""
    plain = {k: v for k, v in answer.items() if k not in ("metric", "breakdown_results")}
    strip = lambda arm: {k: v for k, v in arm.items() if not k.startswith("covariate")}  # noqa: E731
    return {**plain, "baseline": strip(plain["baseline"]), "variant_results": [strip(r) for r in
                                                                               plain["variant_results"]]}  # fmt: skip


def _check_arm_sums(arm: dict[str, Any], rows: pd.DataFrame, y: str, x: str) -> None:
    values, covariate = rows[y].to_numpy(float), rows[x].to_numpy(float)
    assert arm["number_of_samples"] == len(rows)
    assert arm["sum"] == pytest.approx(values.sum(), rel=1e-9)
    assert arm["sum_squares"] == pytest.approx((values * values).sum(), rel=1e-9)
    assert arm["covariate_sum"] == pytest.approx(covariate.sum(), rel=1e-9)
    assert arm["covariate_sum_squares"] == pytest.approx((covariate * covariate).sum(), rel=1e-9)
    assert arm["covariate_sum_product"] == pytest.approx((values * covariate).sum(), rel=1e-9)


def _check_test(served: dict[str, Any], restated: dict[str, float]) -> None:
    assert served["confidence_interval"] == pytest.approx([restated["low"], restated["high"]], rel=1e-9)
    assert served["p_value"] == pytest.approx(restated["p"], rel=1e-9, abs=1e-12)
    assert served["significant"] == (restated["p"] < ALPHA)


def test_the_sdk_fed_every_user_flags_from_flags_with_posthogs_holdout(fed: Any) -> None:
    _, demo, result, events = fed
    assert len(demo.assigned) == USERS and len(events) == demo.events
    held = demo.holdout.variant_key
    assert held == f"holdout-{demo.holdout.id}" and demo.holdout.exclusion_percentage == CUPED_HOLDOUT_SHARE
    for user, value in demo.assigned.items():  # /flags holds out exactly the persons PostHog's hash does
        assert (value == held) == _held_out(user, CUPED_HOLDOUT_SHARE), user
        assert value in ("control", "test", held)
    assert 0.13 < sum(v == held for v in demo.assigned.values()) / USERS < 0.27
    people = _people(events)
    assert len(people) == USERS and (people["x"] > 0).mean() > 0.6  # most shoppers bought in the fortnight before
    calls = events[events["event"] == "$feature_flag_called"]
    assert (calls["response"] == held).sum() == sum(v == held for v in demo.assigned.values())
    assert result.errors == {} and result.holdout_errors == {} and result.exposures_error is None
    assert result.settings_line == "frequentist, sequential testing (N* = 5,000), CUPED (14-day lookback)"
    labels = [(a.label, a.role, a.metric_type) for a in result.metrics]
    assert labels == [("revenue per person", "primary", "mean"), (SAVED, "primary", "mean"),
                      ("back within a week", "secondary", "retention")]  # fmt: skip


def test_the_objects_validate_against_posthogs_components(fed: Any) -> None:
    client, demo, result, _ = fed
    body = client.experiments._json(demo.experiment.id)
    assert_valid_experiment(dict(body))
    assert body["holdout"]["id"] == demo.holdout.id and body["holdout_id"] == demo.holdout.id
    (link,) = body["saved_metrics"]
    assert link["saved_metric"] == demo.saved_metric.id and link["name"] == SAVED
    assert_valid(link, "ExperimentToSavedMetric", drop=())
    holdout = client.get_json(client.path(f"experiment_holdouts/{demo.holdout.id}/"))
    assert_valid(dict(holdout), "ExperimentHoldout", drop=())
    saved = client.get_json(client.path(f"experiment_saved_metrics/{demo.saved_metric.id}/"))
    assert_valid(dict(saved), "ExperimentSavedMetric", drop=())
    assert result.exposures is not None
    assert_valid(dict(result.exposures), "ExperimentExposureQueryResponse", drop=ANSWER_EXTRAS)
    for answer in (*result.metrics, *result.holdout_metrics):
        assert answer.answer is not None
        assert_valid(_posthog_shape(dict(answer.answer)), "ExperimentQueryResponse", drop=ANSWER_EXTRAS)


def test_posthogs_answers_leave_the_holdout_out_and_the_exposures_show_it(fed: Any) -> None:
    _, demo, result, events = fed
    people = _people(events)
    held = demo.holdout.variant_key
    for answer in result.metrics:
        assert answer.answer is not None
        arms = [answer.answer["baseline"], *answer.answer["variant_results"]]
        assert [a["key"] for a in arms] == ["control", "test"]
    counts = people["variant"].value_counts().to_dict()
    assert result.total_exposures == {k: float(v) for k, v in counts.items()}
    assert set(counts) == {"control", "test", held}
    assert result.exposures is not None
    assert [s["variant"] for s in result.exposures["timeseries"]] == ["control", "test", held]


def test_cuped_on_the_mean_metric_equals_the_numpy_restatement(fed: Any) -> None:
    _, _, result, events = fed
    people = _people(events)
    answer = _answer(result, "revenue per person")
    for arm in (answer["baseline"], *answer["variant_results"]):
        _check_arm_sums(arm, people[people["variant"] == arm["key"]], "y", "x")
    restated, unadjusted = _mean_metric(people, cuped=True), _mean_metric(people, cuped=False)
    served = answer["variant_results"][0]
    _check_test(served, restated)
    # CUPED narrows the interval: the pre-exposure revenue predicts the metric.
    width = restated["high"] - restated["low"]
    assert width < 0.8 * (unadjusted["high"] - unadjusted["low"])
    assert served["confidence_interval"][1] - served["confidence_interval"][0] == pytest.approx(width, rel=1e-9)
    # The frame shows both, with the CUPED estimate at the interval's centre and θ.
    frame = result.to_frame()
    row = frame[(frame["metric"] == "revenue per person") & frame["breakdown"].isna()
                & (frame["variant"] == "test")].iloc[0]  # fmt: skip
    assert bool(row["sequential"]) and bool(row["cuped"])
    assert row["lift_cuped"] == pytest.approx(restated["effect"], rel=1e-9)
    assert row["theta"] == pytest.approx(restated["theta"], rel=1e-9)
    raw = [row["raw_interval_low"], row["raw_interval_high"]]
    assert raw == pytest.approx([unadjusted["low"], unadjusted["high"]], rel=1e-9)
    assert row["raw_interval_high"] - row["raw_interval_low"] > row["interval_high"] - row["interval_low"]
    assert row["lift"] == pytest.approx(people[people["variant"] == "test"]["y"].mean()
                                        / people[people["variant"] == "control"]["y"].mean() - 1, rel=1e-9)  # fmt: skip


def test_the_saved_metric_is_analysed_as_linked_with_cuped(fed: Any) -> None:
    _, demo, result, events = fed
    people = _people(events)
    linked = next(a for a in result.metrics if a.label == SAVED).metric
    assert linked["isSharedMetric"] is True and linked["sharedMetricId"] == demo.saved_metric.id
    assert linked["uuid"] == demo.saved_metric.query["uuid"]
    answer = _answer(result, SAVED)
    for arm in (answer["baseline"], *answer["variant_results"]):
        _check_arm_sums(arm, people[people["variant"] == arm["key"]], "count", "count_before")
    restated = _mean_metric(people, cuped=True, y="count", x="count_before")
    unadjusted = _mean_metric(people, cuped=False, y="count", x="count_before")
    _check_test(answer["variant_results"][0], restated)
    assert restated["high"] - restated["low"] < unadjusted["high"] - unadjusted["low"]


def test_each_browser_gets_the_same_statistics(fed: Any) -> None:
    _, _, result, events = fed
    people = _people(events)
    answer = _answer(result, "revenue per person")
    values = [r["breakdown_value"] for r in answer["breakdown_results"]]
    arms = people[people["variant"].isin(["control", "test"])]
    assert values == sorted([[b] for b in arms["browser"].unique()])
    for item in answer["breakdown_results"]:
        (browser,) = item["breakdown_value"]
        subset = arms[arms["browser"] == browser]
        for arm in (item["baseline"], *item["variants"]):
            _check_arm_sums(arm, subset[subset["variant"] == arm["key"]], "y", "x")
        restated = _mean_metric(subset, cuped=True)
        served = item["variants"][0]
        if served.get("confidence_interval") is None:  # a browser with fewer than 50 shoppers in an arm
            assert min(restated["control_n"], restated["test_n"]) < 50
            continue
        _check_test(served, restated)
    # The frame has a row per (browser, variant) after the overall ones.
    frame = result.to_frame()
    rows = frame[frame["metric"] == "revenue per person"]
    assert rows["breakdown"].isna().sum() == 2 and rows["breakdown"].notna().sum() == 2 * len(values)


def test_the_retention_metric_equals_the_numpy_restatement(fed: Any) -> None:
    _, _, result, events = fed
    people = _people(events)
    answer = _answer(result, "back within a week")
    arms = {}
    for arm in (answer["baseline"], *answer["variant_results"]):
        rows = people[people["variant"] == arm["key"]]
        retained = rows["retained"].to_numpy(float)
        assert (arm["number_of_samples"], arm["denominator_sum"]) == (len(rows), len(rows))  # the exposure starts
        assert arm["sum"] == retained.sum() and arm["numerator_denominator_sum_product"] == retained.sum()
        arms[arm["key"]] = _ratio_moments(retained)
    (rc, vc, nc), (rt, vt, nt) = arms["control"], arms["test"]
    effect = (rt - rc) / rc
    variance = vt / (nt * rc**2) + rt**2 * vc / (nc * rc**4)
    low, high, p = _confidence_sequence(effect, variance, nt + nc)
    _check_test(answer["variant_results"][0], {"low": low, "high": high, "p": p})
    assert "covariate_sum" not in answer["variant_results"][0]  # PostHog gives retention no CUPED


@pytest.mark.parametrize(("label", "y", "x"), [("revenue per person", "y", "x"), (SAVED, "count", "count_before")])
def test_against_the_holdout_equals_the_numpy_restatement(fed: Any, label: str, y: str, x: str) -> None:
    _, demo, result, events = fed
    people = _people(events)
    held = demo.holdout.variant_key
    answer = _answer(result, label, holdout=True)
    assert answer["baseline"]["key"] == held and [v["key"] for v in answer["variant_results"]] == ["control", "test"]
    for arm in (answer["baseline"], *answer["variant_results"]):
        _check_arm_sums(arm, people[people["variant"] == arm["key"]], y, x)
    for served in answer["variant_results"]:  # each variant against the holdout: θ of that pair, CUPED, sequential
        restated = _mean_metric(people, cuped=True, baseline=held, variant=served["key"], y=y, x=x)
        _check_test(served, restated)
    frame = result.holdout_frame()
    assert frame.attrs["baseline"] == held
    rows = frame[(frame["metric"] == label) & frame["breakdown"].isna()].set_index("variant")
    for arm in ("control", "test"):
        restated = _mean_metric(people, cuped=True, baseline=held, variant=arm, y=y, x=x)
        assert rows.loc[arm, "lift_cuped"] == pytest.approx(restated["effect"], rel=1e-9)
        assert rows.loc[arm, "theta"] == pytest.approx(restated["theta"], rel=1e-9)


def test_the_report_and_picker_show_it_all(fed: Any, tmp_path: Any) -> None:
    from hoglab.notebook import ExperimentPicker, experiment_report

    client, demo, result, _ = fed
    held = demo.holdout.variant_key
    picker = ExperimentPicker(client)
    picker.value = demo.experiment.id
    assert picker.error is None, picker.error
    assert picker.table is not None
    pd.testing.assert_frame_equal(picker.table, result.to_frame())
    # SRM over every arm: the holdout at its planned share of all exposed, the variants sharing the rest.
    assert picker.srm is not None and set(picker.srm.variants) == {"control", "test", held}
    share = CUPED_HOLDOUT_SHARE / 100
    shares = dict(zip(picker.srm.variants, picker.srm.expected_shares, strict=True))
    assert shares == pytest.approx({"control": (1 - share) / 2, "test": (1 - share) / 2, held: share})
    report = experiment_report(demo.experiment.id, client)
    assert f"Against {held}" in report.summary() and "Health: " in report.summary()
    assert report.over_time is not None and set(report.over_time["variant"]) == {"test"}, report.over_time_note
    assert "over_time" in report.figures
    page = report.write(tmp_path).read_text()
    for text in ("CUPED", "sequential", "Chrome", "back within a week", "revenue per person", SAVED,
                 f"Against the holdout {held}"):  # fmt: skip
        assert text in page, text
