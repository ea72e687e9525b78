"""How a metric's statistics are chosen: the project's defaults (``/experiments_config/``, PostHog's
``TeamExperimentsConfig``), sequential testing, hoglab's ratio CUPED extension and the matured-users switch.

Every answer's test is compared with :func:`hoglab.stats.posthog.experiment_results` on the answer's own sums with
the settings PostHog would resolve, and the sums with a restatement of the events where they are new.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
import pytest

from hoglab.stats.posthog import ExperimentStats, TeamDefaults, experiment_results

from .metric_cases import END, FLAG, START, arms, correlated, event, exposure

pytestmark = pytest.mark.xdist_group("metric-experiments")

SUM = {"kind": "ExperimentMetric", "metric_type": "mean",
       "source": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"}}  # fmt: skip
PER_PURCHASE = {"kind": "ExperimentMetric", "metric_type": "ratio",
                "numerator": {"kind": "EventsNode", "event": "purchase", "math": "sum", "math_property": "amount"},
                "denominator": {"kind": "EventsNode", "event": "purchase"}}  # fmt: skip


def _project(results_project: Any, rows: list[dict[str, Any]]) -> Any:
    frame = pd.DataFrame(rows).assign(person=lambda f: f["distinct_id"])
    return results_project(frame.sort_values("timestamp", kind="stable").reset_index(drop=True))


def _query(project: Any, stats_config: dict[str, Any], metric: dict[str, Any], key: str) -> dict[str, Any]:
    experiment = project.create(name=key, feature_flag_key=key, start_date=START, end_date=END,
                                stats_config=stats_config)  # fmt: skip
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
    response = project.http.post(f"/api/projects/{project.id}/query/", json=body)
    assert response.status_code == 200, response.text
    return dict(response.json())


def _flags(rows: list[dict[str, Any]], *keys: str) -> list[dict[str, Any]]:
    """The rows with each exposure once per flag key: several experiments over the same persons and events."""
    out = [row for row in rows if row["event"] != "$feature_flag_called"]
    for key in keys:
        out += [{**row, "properties": {**row["properties"], "$feature_flag": key}}
                for row in rows if row["event"] == "$feature_flag_called"]  # fmt: skip
    return out


def test_experiments_config_reads_patches_and_refuses(results_project):
    project = results_project()
    url = f"/api/projects/{project.id}/experiments_config/"
    assert project.http.get(url).json() == {
        "experiment_recalculation_time": None, "default_experiment_confidence_level": None,
        "default_experiment_stats_method": None, "experiment_precomputation_enabled": False,
        "default_only_count_matured_users": False, "default_cuped_enabled": False,
        "default_cuped_lookback_days": None, "default_minimum_detectable_effect": None,
        "default_sequential_testing_enabled": False, "default_sequential_tuning_parameter": None,
    }  # fmt: skip
    patched = project.http.patch(url, json={"default_cuped_enabled": True, "default_cuped_lookback_days": 7})
    assert patched.status_code == 200, patched.text
    assert patched.json()["default_cuped_enabled"] is True and patched.json()["default_cuped_lookback_days"] == 7
    again = project.http.patch(url, json={"default_sequential_testing_enabled": True}).json()
    assert again["default_cuped_lookback_days"] == 7 and again["default_sequential_testing_enabled"] is True
    for body, attr in (({"default_cuped_lookback_days": 31}, "default_cuped_lookback_days"),
                       ({"default_sequential_tuning_parameter": 0}, "default_sequential_tuning_parameter"),
                       ({"default_experiment_stats_method": "magic"}, "default_experiment_stats_method"),
                       ({"nonsense": 1}, "nonsense")):  # fmt: skip
        refused = project.http.patch(url, json=body)
        assert refused.status_code == 400 and refused.json()["attr"] == attr, refused.text
    assert project.http.get(url).json()["default_cuped_lookback_days"] == 7  # nothing written by a refusal
    other = results_project()
    assert project.http.get(f"/api/projects/{other.id}/experiments_config/").status_code in (403, 404)


def test_the_projects_cuped_default_applies_unless_the_experiment_says(results_project):
    project = _project(results_project, _flags(correlated(), "team-a", "team-b"))
    project.http.patch(f"/api/projects/{project.id}/experiments_config/",
                       json={"default_cuped_enabled": True, "default_cuped_lookback_days": 3})  # fmt: skip
    by_default = arms(_query(project, {"method": "frequentist"}, SUM, "team-a"))[0]
    assert by_default["covariate_sum"] == 1830  # the pre purchases, one day before exposure, inside 3 days
    refused = arms(_query(project, {"method": "frequentist", "cuped": {"enabled": False}}, SUM, "team-b"))[0]
    assert "covariate_sum" not in refused  # an explicit false beats the project's true, as in PostHog


@pytest.mark.parametrize("where", ["experiment", "project"])
def test_sequential_testing_gives_the_always_valid_test(results_project, where):
    rng = np.random.default_rng(7)
    rows = []
    for variant, mean in (("control", 10.0), ("test", 11.5)):
        for i in range(400):
            user = f"{variant}-{i}"
            amount = round(float(rng.gamma(4, mean / 4)), 2)
            rows += [exposure(user, variant, "2020-01-10T12:00:00Z"),
                     event("purchase", user, "2020-01-11T12:00:00Z", amount=amount)]
    project = _project(results_project, rows)
    fixed_answer = _query(project, {"method": "frequentist"}, SUM, FLAG)
    control, fixed = arms(fixed_answer)
    experiment_id = project.http.get(f"/api/projects/{project.id}/experiments/").json()["results"][0]["id"]
    tuning = {"sequential_testing_enabled": True, "sequential_tuning_parameter": 2000}
    if where == "experiment":
        stats_config = {"method": "frequentist", "frequentist": tuning}
        team = None
        changed = project.http.patch(f"/api/projects/{project.id}/experiments/{experiment_id}/",
                                     json={"stats_config": stats_config})  # fmt: skip
    else:  # the project's default, the experiment silent (the next query resolves it: a new cache key)
        stats_config = {"method": "frequentist"}
        team = TeamDefaults(sequential_testing_enabled=True, sequential_tuning_parameter=2000)
        changed = project.http.patch(f"/api/projects/{project.id}/experiments_config/",
                                     json={f"default_{k}": v for k, v in tuning.items()})  # fmt: skip
    assert changed.status_code == 200, changed.text
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment_id, "metric": SUM}}
    served = arms(project.http.post(f"/api/projects/{project.id}/query/", json=body).json())[1]
    stats = [ExperimentStats.from_posthog(arm) for arm in (control, served)]
    _, [expected] = experiment_results("mean", stats[0], [stats[1]], stats_config=stats_config, team=team)
    assert expected.sequential
    assert served["p_value"] == pytest.approx(expected.p_value, rel=1e-9)
    assert served["confidence_interval"] == pytest.approx(list(expected.confidence_interval), rel=1e-9)
    # A confidence sequence is wider than the fixed-horizon interval on the same data.
    width = lambda arm: arm["confidence_interval"][1] - arm["confidence_interval"][0]  # noqa: E731
    assert width(served) > width(fixed) and served["p_value"] > fixed["p_value"]


def _habitual_buyers(seed: int = 3, persons: int = 150) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """Persons whose purchases before the exposure predict those after: rows, and per person y, d (revenue and
    purchases after) and a, b (the same in the week before)."""
    rng = np.random.default_rng(seed)
    rows, truth = [], []
    for variant in ("control", "test"):
        for k in range(persons):
            user = f"{variant}-{k}"
            rate, basket = float(rng.gamma(2.0, 1.0)), float(rng.gamma(5.0, 8.0))
            rows.append(exposure(user, variant, "2020-01-10T12:00:00Z"))
            sums = {"y": 0.0, "d": 0.0, "a": 0.0, "b": 0.0}
            for when, value, count in (("2020-01-08T12:00:00Z", "a", "b"), ("2020-01-11T12:00:00Z", "y", "d")):
                for _ in range(1 + int(rng.poisson(rate))):  # one at least: every denominator is positive
                    amount = round(basket * float(rng.uniform(0.8, 1.2)) * (1.1 if variant == "test" else 1), 2)
                    rows.append(event("purchase", user, when, amount=amount))
                    sums[value] += amount
                    sums[count] += 1
            truth.append({"variant": variant, **sums})
    return rows, pd.DataFrame(truth)


def test_ratio_cuped_is_hoglabs_opt_in_extension(results_project):
    rows, truth = _habitual_buyers()
    project = _project(results_project, _flags(rows, "ratio-plain", "ratio-cuped", "ratio-posthog"))
    plain = arms(_query(project, {"method": "frequentist"}, PER_PURCHASE, "ratio-plain"))[1]
    on = {"method": "frequentist", "cuped": {"enabled": True, "lookback_days": 7, "ratio": True}}
    control, adjusted = arms(_query(project, on, PER_PURCHASE, "ratio-cuped"))
    posthog_like = arms(_query(project, {"method": "frequentist", "cuped": {"enabled": True}}, PER_PURCHASE,
                               "ratio-posthog"))[1]  # fmt: skip
    assert "ratio_covariate" not in posthog_like and "covariate_sum" not in posthog_like  # PostHog has none
    assert posthog_like["confidence_interval"] == plain["confidence_interval"]
    # The extension's nine sums, from the generated purchases.
    for arm in (control, adjusted):
        t = truth[truth["variant"] == arm["key"]]
        y, d, a, b = (t[c].to_numpy() for c in "ydab")
        expected = {"pre_sum": a.sum(), "pre_sum_squares": (a * a).sum(), "pre_denominator_sum": b.sum(),
                    "pre_denominator_sum_squares": (b * b).sum(), "pre_product": (a * b).sum(),
                    "numerator_pre_product": (y * a).sum(), "numerator_pre_denominator_product": (y * b).sum(),
                    "denominator_pre_product": (d * a).sum(), "denominator_pre_denominator_product": (d * b).sum()}
        assert arm["ratio_covariate"] == pytest.approx(expected, rel=1e-9)
        assert (arm["sum"], arm["denominator_sum"]) == (pytest.approx(y.sum()), pytest.approx(d.sum()))
    stats = [ExperimentStats.from_posthog(arm) for arm in (control, adjusted)]
    _, [unadjusted] = experiment_results("ratio", stats[0], [stats[1]], stats_config={"method": "frequentist"})
    assert plain["confidence_interval"] == pytest.approx(list(unadjusted.confidence_interval), rel=1e-9)
    width = lambda arm: arm["confidence_interval"][1] - arm["confidence_interval"][0]  # noqa: E731
    assert width(adjusted) < 0.9 * width(plain)  # each person's basket size carries over


def test_the_projects_matured_users_default_drops_unfinished_retention_windows(results_project):
    now = pd.Timestamp.now(tz="UTC").floor("s")

    def ago(delta: pd.Timedelta) -> str:
        return (now - delta).isoformat()

    rows = []
    for variant in ("control", "test"):
        # One signup 9 days ago (its 7-day window has elapsed), one an hour ago (still open).
        for i, when in enumerate((pd.Timedelta(days=9), pd.Timedelta(hours=1))):
            user = f"{variant}-{i}"
            rows += [exposure(user, variant, ago(pd.Timedelta(days=10))), event("signup", user, ago(when))]
    metric = {"kind": "ExperimentMetric", "metric_type": "retention",
              "start_event": {"kind": "EventsNode", "event": "signup"},
              "completion_event": {"kind": "EventsNode", "event": "login"}, "retention_window_start": 1,
              "retention_window_end": 7, "retention_window_unit": "day", "start_handling": "first_seen"}  # fmt: skip
    project = _project(results_project, rows)
    experiment = project.create(name="m", feature_flag_key=FLAG, start_date=ago(pd.Timedelta(days=11)))
    body = {"query": {"kind": "ExperimentQuery", "experiment_id": experiment["id"], "metric": metric}}
    everyone = arms(project.http.post(f"/api/projects/{project.id}/query/", json=body).json())[0]
    project.http.patch(f"/api/projects/{project.id}/experiments_config/",
                       json={"default_only_count_matured_users": True})  # fmt: skip
    matured = arms(project.http.post(f"/api/projects/{project.id}/query/", json=body).json())[0]
    assert (everyone["number_of_samples"], matured["number_of_samples"]) == (2, 1)
