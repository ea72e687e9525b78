"""ExperimentQuery over HTTP against a real service, checked against an independent pandas restatement.

One project holds seeded events (``metric_oracle.generate``) and three experiments on three flags: exposure by
``$feature_flag_called`` with ``exclude``, the same with ``first_seen``, and a custom exposure event
(``checkout_seen`` with ``plan = pro``). Each test posts a metric and compares ``number_of_samples``, ``sum``,
``sum_squares`` (and ``step_counts``, the ratio sums) with the oracle's, then the method's fields with
``hoglab.stats.posthog`` on the same sums, and the answer with PostHog's OpenAPI.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pandas as pd
import pytest

from hoglab.stats.posthog import ExperimentStats, experiment_results
from posthog_openapi import CACHE_FIELDS, assert_valid

from . import metric_oracle as oracle

pytestmark = pytest.mark.xdist_group("metric-experiments")

# PostHog's ExperimentQueryResponse lists neither the cache fields nor query_status/timings that every answer of
# the query endpoint carries (PostHog's cached responses add them too).
ANSWER_EXTRAS = (*CACHE_FIELDS, "query_status", "timings")


@pytest.fixture(scope="module")
def setup(results_project) -> dict[str, Any]:
    events = oracle.generate(20251125)
    project = results_project(events)
    ids = {}
    for flag, criteria in oracle.CRITERIA.items():
        method = "frequentist" if flag == "mx-first" else "bayesian"
        body = {"name": flag, "feature_flag_key": flag, "start_date": oracle.START.isoformat(),
                "end_date": oracle.END.isoformat(), "exposure_criteria": criteria, "stats_config": {"method": method}}
        ids[flag] = project.create(**body)["id"]
    return {"project": project, "events": events, "ids": ids}


def _query(setup: dict[str, Any], flag: str, metric: dict[str, Any], **request: Any) -> dict[str, Any]:
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": setup["ids"][flag], "metric": metric}, **request}
    response = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _exposed(setup: dict[str, Any], flag: str) -> Any:
    df = setup["events"]
    if flag == "mx-custom":
        return oracle.exposures(df, flag, event="checkout_seen", plan="pro")
    return oracle.exposures(df, flag, handling="first_seen" if flag == "mx-first" else "exclude")


def _by_key(answer: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["key"]: item for item in [answer["baseline"], *answer["variant_results"]]}


def _check_stats(answer: dict[str, Any], expected: dict[str, tuple[int, float, float]]) -> None:
    got = _by_key(answer)
    assert set(got) == set(oracle.VARIANTS)
    for key, (n, total, squares) in expected.items():
        assert got[key]["number_of_samples"] == n, key
        assert got[key]["sum"] == pytest.approx(total, rel=1e-9, abs=1e-9), key
        assert got[key]["sum_squares"] == pytest.approx(squares, rel=1e-9, abs=1e-9), key
    assert all(n > 20 for n, _, _ in expected.values())  # the data exercise the metric


def _check_method(answer: dict[str, Any], metric_type: str, method: str, goal: str = "increase") -> None:
    assert_valid(answer, "ExperimentQueryResponse", drop=ANSWER_EXTRAS)
    fields = ("key", "number_of_samples", "sum", "sum_squares", "denominator_sum", "denominator_sum_squares",
              "numerator_denominator_sum_product")  # fmt: skip

    def stats(item: dict[str, Any]) -> ExperimentStats:
        counts = tuple(item["step_counts"]) if item.get("step_counts") is not None else None
        return ExperimentStats(**{f: item.get(f) for f in fields}, step_counts=counts)

    base, results = experiment_results(metric_type, stats(answer["baseline"]),
                                       [stats(v) for v in answer["variant_results"]],
                                       stats_config={"method": method}, goal=goal)  # fmt: skip
    assert answer["baseline"] == base.to_posthog(baseline=True)
    assert answer["variant_results"] == [r.to_posthog() for r in results]
    assert answer["variant_results"][0]["method"] == method
    tested = "p_value" if method == "frequentist" else "chance_to_win"
    assert tested in answer["variant_results"][0]


def _window(metric: dict[str, Any]) -> timedelta | None:
    if "conversion_window" not in metric:
        return None
    return timedelta(**{f"{metric['conversion_window_unit']}s": metric["conversion_window"]})


MEANS = [
    ("mx-exclude", {"event": "purchase"}, {}),
    ("mx-exclude", {"event": "purchase", "math": "sum", "math_property": "price"}, {}),
    ("mx-first", {"event": "purchase", "math": "avg", "math_property": "price"}, {}),
    ("mx-first", {"event": "purchase", "math": "max", "math_property": "price"}, {"conversion_window": 2,
                                                                                 "conversion_window_unit": "day"}),
    ("mx-custom", {"event": "purchase", "math": "min", "math_property": "price"}, {}),
    ("mx-custom", {"event": "$pageview", "math": "unique_session"}, {"conversion_window": 36,
                                                                     "conversion_window_unit": "hour"}),
    ("mx-exclude", {"event": "cart", "math": "dau"}, {}),
    ("mx-exclude", {"event": "purchase", "math": "sum", "math_property": "price"},
     {"lower_bound_percentile": 0.1, "upper_bound_percentile": 0.9}),
    ("mx-first", {"event": "purchase", "math": "sum", "math_property": "price"},
     {"upper_bound_percentile": 0.8, "ignore_zeros": True, "conversion_window": 3, "conversion_window_unit": "day"}),
    ("mx-custom", {"event": "$pageview"}, {"lower_bound_percentile": 0.25}),
]


@pytest.mark.parametrize(("flag", "source", "extra"), MEANS, ids=[f"{m[0]}-{m[1].get('math', 'total')}-{i}"
                                                                  for i, m in enumerate(MEANS)])  # fmt: skip
def test_mean_metric_sums_equal_the_pandas_restatement(setup, flag, source, extra):
    metric = {"kind": "ExperimentMetric", "metric_type": "mean", "source": {"kind": "EventsNode", **source}, **extra}
    answer = _query(setup, flag, metric)
    exposed = _exposed(setup, flag)
    window = _window(extra)
    values = oracle.person_values(setup["events"], exposed, source["event"], source.get("math", "total"),
                                  source.get("math_property"), window)  # fmt: skip
    if "lower_bound_percentile" in extra or "upper_bound_percentile" in extra:
        values = oracle.capped(values, extra.get("lower_bound_percentile"), extra.get("upper_bound_percentile"),
                               bool(extra.get("ignore_zeros")))  # fmt: skip
    _check_stats(answer, oracle.sums(exposed, values))
    assert answer["kind"] == "ExperimentQuery" and answer["metric"] == metric
    _check_method(answer, "mean", "frequentist" if flag == "mx-first" else "bayesian")


HOGQL_MATHS = [
    # (math_hogql, the oracle's math on price it restates, a factor on each person's value)
    ("sum(toFloat(properties.price) * 2)", "sum", 2.0),
    ("toFloat(properties.price)", "sum", 1.0),
    ("avg(toFloat(properties.price))", "avg", 1.0),
    ("max(toFloat(properties.price))", "max", 1.0),
    ("count()", "total", 1.0),
]


@pytest.mark.parametrize(("math_hogql", "math", "factor"), HOGQL_MATHS, ids=[m[0] for m in HOGQL_MATHS])
def test_hogql_math_is_an_aggregate_of_a_value_per_event_as_posthog_reads_it(setup, math_hogql, math, factor):
    """One aggregate around an expression: its argument per event, its function per person; a bare expression is
    summed per person. Restated with the oracle's own maths on ``price``."""
    source = {"kind": "EventsNode", "event": "purchase", "math": "hogql", "math_hogql": math_hogql}
    answer = _query(setup, "mx-exclude", {"kind": "ExperimentMetric", "metric_type": "mean", "source": source})
    exposed = _exposed(setup, "mx-exclude")
    values = oracle.person_values(setup["events"], exposed, "purchase", math, None if math == "total" else "price",
                                  None) * factor  # fmt: skip
    _check_stats(answer, oracle.sums(exposed, values))


@pytest.mark.parametrize("math_hogql", ["sum(toFloat(properties.price)", "", "uniq(person_id) + 1",
                                        "count(distinct properties.price)", "sum(sum(1))"])  # fmt: skip
def test_hogql_math_that_cannot_run_is_a_400_naming_it(setup, math_hogql):
    source = {"kind": "EventsNode", "event": "purchase", "math": "hogql", "math_hogql": math_hogql}
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": setup["ids"]["mx-exclude"],
                      "metric": {"kind": "ExperimentMetric", "metric_type": "mean", "source": source}}}  # fmt: skip
    response = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/", json=body)
    assert response.status_code == 400, response.text
    assert response.json()["type"] == "validation_error"
    # An empty expression is the schema's refusal (of the source); the others are the runner's, of the field.
    assert response.json()["attr"] in ("metric.source.math_hogql", "query__metric__source"), response.text


FUNNELS = [
    ("mx-exclude", "ordered", {}),
    ("mx-exclude", "strict", {}),
    ("mx-exclude", "unordered", {}),
    ("mx-first", "ordered", {"conversion_window": 2, "conversion_window_unit": "day"}),
    ("mx-first", "strict", {"conversion_window": 3, "conversion_window_unit": "day"}),
    ("mx-first", "unordered", {"conversion_window": 30, "conversion_window_unit": "hour"}),
]


@pytest.mark.parametrize(("flag", "order", "extra"), FUNNELS, ids=[f"{f}-{o}-{bool(e)}" for f, o, e in FUNNELS])
def test_funnel_metric_step_counts_equal_the_pandas_restatement(setup, flag, order, extra):
    steps = ["cart", "purchase"]
    metric = {"kind": "ExperimentMetric", "metric_type": "funnel", "funnel_order_type": order,
              "series": [{"kind": "EventsNode", "event": e} for e in steps], **extra}  # fmt: skip
    answer = _query(setup, flag, metric)
    exposed = _exposed(setup, flag)
    reached = oracle.funnel_steps(setup["events"], exposed, flag, steps, order, _window(extra))
    got = _by_key(answer)
    for variant in oracle.VARIANTS:
        mine = reached[exposed["variant"] == variant]
        counts = [int((mine >= j).sum()) for j in range(1, len(steps) + 1)]
        assert got[variant]["number_of_samples"] == len(mine)
        assert got[variant]["step_counts"] == counts, variant
        assert got[variant]["sum"] == got[variant]["sum_squares"] == counts[-1]
        assert 0 < counts[-1] < counts[0] < len(mine)  # every step loses persons: the data exercise the funnel
    _check_method(answer, "funnel", "frequentist" if flag == "mx-first" else "bayesian")


RATIOS = [
    ("mx-exclude", {"event": "purchase", "math": "sum", "math_property": "price"}, {"event": "purchase"}, {}),
    ("mx-first", {"event": "purchase", "math": "sum", "math_property": "price"},
     {"event": "$pageview", "math": "unique_session"}, {"conversion_window": 4, "conversion_window_unit": "day"}),
    ("mx-custom", {"event": "cart"}, {"event": "$pageview"}, {"goal": "decrease"}),
]


@pytest.mark.parametrize(("flag", "numerator", "denominator", "extra"), RATIOS, ids=[r[0] for r in RATIOS])
def test_ratio_metric_sums_equal_the_pandas_restatement(setup, flag, numerator, denominator, extra):
    metric = {"kind": "ExperimentMetric", "metric_type": "ratio", "numerator": {"kind": "EventsNode", **numerator},
              "denominator": {"kind": "EventsNode", **denominator}, **extra}  # fmt: skip
    answer = _query(setup, flag, metric)
    exposed = _exposed(setup, flag)

    def values(node: dict[str, Any]) -> Any:
        return oracle.person_values(setup["events"], exposed, node["event"], node.get("math", "total"),
                                    node.get("math_property"), _window(extra))  # fmt: skip

    num, den = values(numerator), values(denominator)
    _check_stats(answer, oracle.sums(exposed, num))
    got = _by_key(answer)
    for variant in oracle.VARIANTS:
        mine = exposed["variant"] == variant
        assert got[variant]["denominator_sum"] == pytest.approx(float(den[mine].sum()), rel=1e-9)
        assert got[variant]["denominator_sum_squares"] == pytest.approx(float((den[mine] ** 2).sum()), rel=1e-9)
        product = float((num[mine] * den[mine]).sum())
        assert got[variant]["numerator_denominator_sum_product"] == pytest.approx(product, rel=1e-9)
    _check_method(answer, "ratio", "frequentist" if flag == "mx-first" else "bayesian", extra.get("goal", "increase"))


@pytest.mark.parametrize("flag", list(oracle.CRITERIA))
def test_exposures_per_day_are_running_totals_of_first_exposures(setup, flag):
    project = setup["project"]
    body = {"query": {"kind": "ExperimentExposureQuery", "experiment_id": setup["ids"][flag],
                      "experiment_name": flag, "feature_flag": {"key": flag}}}  # fmt: skip
    response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert_valid(answer, "ExperimentExposureQueryResponse", drop=ANSWER_EXTRAS)
    exposed = _exposed(setup, flag)
    days = [d.date().isoformat() for d in pd.date_range(oracle.START.date(), oracle.END.date())]
    expected = []
    for variant in [*oracle.VARIANTS, oracle.MULTIPLE]:
        mine = exposed[exposed["variant"] == variant]
        if len(mine):
            per_day = mine["first"].dt.strftime("%Y-%m-%d").value_counts()
            running = [int(per_day[per_day.index <= day].sum()) for day in days]
            expected.append({"variant": variant, "days": days, "exposure_counts": running})
    assert answer["timeseries"] == expected
    assert answer["total_exposures"] == {s["variant"]: s["exposure_counts"][-1] for s in expected}
    assert answer["date_range"]["date_from"] == oracle.START.isoformat()
    assert (flag != "mx-first") == any(s["variant"] == oracle.MULTIPLE for s in expected)
