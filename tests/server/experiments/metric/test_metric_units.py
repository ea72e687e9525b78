"""ExperimentUnitsQuery over HTTP against a real service: ``POST /query/arrow/`` answers one row per exposed unit,
and the rows' per-variant sums are the ``ExperimentQuery`` answer's statistics, metric by metric (mean with and
without outlier caps, CUPED, ratio, ordered and unordered funnels, retention), for each exposure rule.

The oracle of the sums is the ExperimentQuery answer, itself checked against a pandas restatement of PostHog's
rules in ``test_metric_queries.py``; the units are also checked against that restatement directly (who is exposed,
with which variant). Mistakes are PostHog-shaped 400/404s naming the field.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from . import metric_oracle as oracle

pytestmark = pytest.mark.xdist_group("metric-experiments")

PURCHASE_SUM = {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "price"}
METRICS: dict[str, dict[str, Any]] = {
    "mean": {"metric_type": "mean", "source": PURCHASE_SUM},
    "capped": {"metric_type": "mean", "source": PURCHASE_SUM, "lower_bound_percentile": 0.1,
               "upper_bound_percentile": 0.8, "ignore_zeros": True},
    "count_windowed": {"metric_type": "mean", "source": {"kind": "EventsNode", "event": "$pageview"},
                       "conversion_window": 2, "conversion_window_unit": "day"},
    "ratio": {"metric_type": "ratio", "numerator": PURCHASE_SUM,
              "denominator": {"kind": "EventsNode", "event": "$pageview"}},
    "funnel": {"metric_type": "funnel", "series": [{"kind": "EventsNode", "event": "cart"},
                                                   {"kind": "EventsNode", "event": "purchase"}]},
    "unordered": {"metric_type": "funnel", "funnel_order_type": "unordered",
                  "series": [{"kind": "EventsNode", "event": "cart"}, {"kind": "EventsNode", "event": "purchase"}]},
    "retention": {"metric_type": "retention", "start_event": {"kind": "EventsNode", "event": "cart"},
                  "completion_event": {"kind": "EventsNode", "event": "purchase"}, "retention_window_start": 0,
                  "retention_window_end": 3, "retention_window_unit": "day", "start_handling": "first_seen"},
}  # fmt: skip


@pytest.fixture(scope="module")
def setup(results_project) -> dict[str, Any]:
    events = oracle.generate(20261127, persons=300)
    tiers = []
    for k in range(0, 300, 3):  # a person property for a third of the persons, set on a late event
        tiers.append({"event": "tier_set", "distinct_id": f"u-{k}", "timestamp": oracle.END, "person": k,
                      "properties": {"$set": {"tier": ("gold", "silver")[k % 2], "seats": k % 7}}})  # fmt: skip
    events = pd.concat([events, pd.DataFrame(tiers)], ignore_index=True)
    project = results_project(events)
    ids = {}
    for flag, criteria in oracle.CRITERIA.items():
        body = {"name": flag, "feature_flag_key": flag, "start_date": oracle.START.isoformat(),
                "end_date": oracle.END.isoformat(), "exposure_criteria": criteria,
                "stats_config": {"method": "frequentist"}}  # fmt: skip
        ids[flag] = project.create(**body)["id"]
    return {"project": project, "events": events, "ids": ids}


def units(setup: dict[str, Any], flag: str, metrics: list[dict[str, Any]], properties: list[str] | None = None,
          experiment_id: int | None = None) -> Any:  # fmt: skip
    query = {"kind": "ExperimentUnitsQuery", "experiment_id": experiment_id or setup["ids"][flag],
             "metrics": metrics, "properties": properties or []}  # fmt: skip
    return setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/arrow/", json={"query": query})


def units_frame(setup: dict[str, Any], flag: str, metrics: list[dict[str, Any]], **options: Any) -> pd.DataFrame:
    response = units(setup, flag, metrics, **options)
    assert response.status_code == 200, response.text
    return pa.ipc.open_stream(response.content).read_all().to_pandas()


def answer(setup: dict[str, Any], flag: str, metric: dict[str, Any]) -> dict[str, dict[str, Any]]:
    query = {"kind": "ExperimentQuery", "experiment_id": setup["ids"][flag], "metric": metric}
    response = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/", json={"query": query})
    assert response.status_code == 200, response.text
    body = response.json()
    return {arm["key"]: arm for arm in [body["baseline"], *body["variant_results"]]}


def sums(df: pd.DataFrame, i: int, kind: str, steps: int = 2) -> dict[str, dict[str, Any]]:
    """The ExperimentQuery statistics of metric ``i``'s units, per variant."""
    out: dict[str, dict[str, Any]] = {}
    for variant, g in df[df[f"m{i}_counted"] == 1].groupby("variant"):
        if kind == "ratio":
            y, d = g[f"m{i}_numerator"].astype(float), g[f"m{i}_denominator"].astype(float)
            out[str(variant)] = {"number_of_samples": len(g), "sum": y.sum(), "sum_squares": (y * y).sum(),
                                 "denominator_sum": d.sum(), "denominator_sum_squares": (d * d).sum(),
                                 "numerator_denominator_sum_product": (y * d).sum()}  # fmt: skip
            continue
        v = g[f"m{i}_value"].astype(float)
        out[str(variant)] = {"number_of_samples": len(g), "sum": v.sum(), "sum_squares": (v * v).sum()}
        if kind == "funnel":
            step = g[f"m{i}_step"].fillna(0).astype(int)
            out[str(variant)]["step_counts"] = [int((step >= j).sum()) for j in range(1, steps + 1)]
            out[str(variant)]["sum_squares"] = v.sum()
        if f"m{i}_covariate" in g:
            c = g[f"m{i}_covariate"].astype(float)
            out[str(variant)].update(covariate_sum=c.sum(), covariate_sum_squares=(c * c).sum(),
                                     covariate_sum_product=(v * c).sum())  # fmt: skip
    return out


def assert_same(got: dict[str, dict[str, Any]], expected: dict[str, dict[str, Any]]) -> None:
    assert set(got) == set(expected) == set(oracle.VARIANTS)
    for variant, stats in got.items():
        for name, value in stats.items():
            # Float sums may differ in their last bits (pandas and ClickHouse add in different orders).
            assert expected[variant][name] == pytest.approx(value, rel=1e-12, abs=1e-9), (variant, name)


@pytest.mark.parametrize("flag", list(oracle.CRITERIA))
def test_every_metric_s_units_sum_to_the_experiment_query_answer(setup, flag):
    names = list(METRICS)
    df = units_frame(setup, flag, [METRICS[n] for n in names])
    assert df["entity_id"].is_unique and set(df["variant"]) <= set(oracle.VARIANTS)
    for i, name in enumerate(names):
        kind = METRICS[name]["metric_type"]
        assert_same(sums(df, i, kind), answer(setup, flag, METRICS[name]))


def test_the_units_are_the_oracle_s_exposed_persons_with_their_variant_and_first_exposure(setup):
    df = units_frame(setup, "mx-exclude", [METRICS["mean"]])
    exposed = oracle.exposures(setup["events"], "mx-exclude", handling="exclude")
    exposed = exposed[exposed["variant"] != oracle.MULTIPLE]
    assert len(df) == len(exposed)
    assert sorted(df["variant"].value_counts().items()) == sorted(exposed["variant"].value_counts().items())
    first = pd.to_datetime(df["first_exposure_time"], utc=True).sort_values().reset_index(drop=True)
    expected = pd.to_datetime(exposed["first"], utc=True).sort_values().reset_index(drop=True)
    assert (first == expected).all()


def test_cuped_covariates_sum_to_the_answer_s_covariate_sums(setup):
    project = setup["project"]
    url = f"{project.base}{setup['ids']['mx-first']}/"
    cuped = {"method": "frequentist", "cuped": {"enabled": True, "lookback_days": 1}}
    assert project.http.patch(url, json={"stats_config": cuped}).status_code == 200
    try:
        for name in ("mean", "funnel", "count_windowed"):
            df = units_frame(setup, "mx-first", [METRICS[name]])
            assert "m0_covariate" in df
            expected = answer(setup, "mx-first", METRICS[name])
            assert expected["control"]["covariate_sum"] > 0
            assert_same(sums(df, 0, METRICS[name]["metric_type"]), expected)
    finally:
        project.http.patch(url, json={"stats_config": {"method": "frequentist"}})


def test_person_properties_come_with_each_unit(setup):
    df = units_frame(setup, "mx-exclude", [METRICS["mean"]], properties=["tier", "seats", "absent"])
    exposed_ids = df["entity_id"].nunique()
    assert exposed_ids == len(df)
    tiers = df["p0"].dropna()
    assert set(tiers) == {"gold", "silver"} and 0 < len(tiers) < len(df)
    assert df["p2"].isna().all()


@pytest.mark.parametrize(
    ("query", "status", "attr"),
    [
        ({"experiment_id": 999_999, "metrics": []}, 404, None),
        ({"experiment_id": 1, "metrics": [{"metric_type": "median"}]}, 400, "query__metrics__0"),
        ({"metrics": []}, 400, "query__experiment_id"),
        ({"experiment_id": 1, "properties": [""]}, 400, "query__properties__0"),
    ],
)
def test_mistakes_are_posthog_shaped_errors(setup, query, status, attr):
    body = {"query": {"kind": "ExperimentUnitsQuery", **query}}
    response = setup["project"].http.post(f"/api/projects/{setup['project'].id}/query/arrow/", json=body)
    assert response.status_code == status, response.text
    error = response.json()
    assert set(error) >= {"type", "code", "detail", "attr"}
    if attr is not None:
        assert str(error["attr"]).startswith(attr)


def test_another_project_s_experiment_is_not_found(setup, results_project):
    other = results_project()
    query = {"kind": "ExperimentUnitsQuery", "experiment_id": setup["ids"]["mx-exclude"], "metrics": []}
    response = other.http.post(f"/api/projects/{other.id}/query/arrow/", json={"query": query})
    assert response.status_code == 404, response.text
