"""The experiment picker, driven through its attributes (no browser), against the session's REAL hoglab service.

Experiments, flags, listings, the results endpoint's 400 and the demo experiment's results are the real
service's. To also check the picker on what PostHog Cloud answers (its Monte Carlo verdicts can disagree with
the counts near a threshold), a scripted httpx transport answers PostHog's documented ``GET
/experiments/:id/results/`` (reference §5.4) for chosen experiment ids only: a mock of REMOTE PostHog, never of
hoglab; every other request goes to the real service. Tables are checked against scipy closed forms and
quadrature, and against ``hoglab.stats`` called directly.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pytest
from notebooktesting import Demo, PartlyRemote, drawn_on_the_edge, project_client
from scipy import integrate, stats

import hoglab
from hoglab.client import SIGNIFICANCE_EXPLAINED, Client
from hoglab.client._legacy_results import explain_no_results
from hoglab.notebook import ExperimentPicker, pick_experiment
from hoglab.notebook.picker.widget import DRAFT_MESSAGE
from hoglab.stats import Proportion, compare, funnel_verdict, recommend

FUNNEL_METRIC = {"insight": "FUNNELS", "events": [{"id": "$pageview"}, {"id": "purchase"}]}
TREND_METRIC = {"insight": "TRENDS", "events": [{"id": "purchase"}]}


def posthog_funnel_answer(variants: dict[str, tuple[int, int]], code: str = "significant") -> dict[str, Any]:
    """PostHog's legacy funnel results answer (reference §5.4), for ``{key: (success, failure)}``."""
    return {
        "result": {
            "insight": [[{"breakdown_value": [k], "count": s + f}, {"count": s}] for k, (s, f) in variants.items()],
            "filters": FUNNEL_METRIC,
            "probability": {k: 1 / len(variants) for k in variants},  # PostHog's Monte Carlo values: not used
            "significant": code == "significant",
            "significance_code": code,
            "expected_loss": 0.0021,
            "variants": [{"key": k, "success_count": s, "failure_count": f} for k, (s, f) in variants.items()],
            "credible_intervals": {k: [0.0, 1.0] for k in variants},
        },
        "last_refresh": "2025-06-01T12:00:00Z",
        "is_cached": False,
    }


# PostHog's documented trend example, verbatim (its verdict says "significant" with p = 0.021).
POSTHOG_TREND_ANSWER: dict[str, Any] = {
    "result": {
        "insight": [{"breakdown_value": "control", "count": 120}, {"breakdown_value": "test", "count": 150}],
        "filters": TREND_METRIC,
        "probability": {"control": 0.08, "test": 0.92},
        "significant": True,
        "significance_code": "significant",
        "p_value": 0.021,
        "variants": [
            {"key": "control", "count": 120, "exposure": 1.0, "absolute_exposure": 1000},
            {"key": "test", "count": 150, "exposure": 1.02, "absolute_exposure": 1020},
        ],
        "credible_intervals": {"control": [0.0996, 0.1424], "test": [0.1245, 0.1722]},
    },
    "last_refresh": "2025-06-01T12:00:00Z",
    "is_cached": True,
}


class PostHogResults(PartlyRemote):
    """Answers ``GET .../experiments/<id>/results/`` for the scripted ids like PostHog Cloud; the rest goes to
    the real hoglab service. A scripted exception is raised as the network would."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: dict[int, dict[str, Any] | Exception] = {}
        self.results_calls: list[tuple[int, dict[str, str]]] = []

    def remote_answer(self, request: httpx.Request) -> httpx.Response | None:
        found = re.search(r"/experiments/(\d+)/results/$", request.url.path)
        if not found:
            return None
        self.results_calls.append((int(found.group(1)), dict(request.url.params)))
        answer = self.answers.get(int(found.group(1)))
        if isinstance(answer, Exception):
            raise answer
        return None if answer is None else httpx.Response(200, json=answer, request=request)


@pytest.fixture
def remote() -> Iterator[PostHogResults]:
    transport = PostHogResults()
    yield transport
    transport.close()


@pytest.fixture
def client(make_project: Callable[..., Any], remote: PostHogResults) -> Iterator[Client]:
    """A client of a fresh project on the real service, through the results-scripting transport."""
    c = project_client(make_project, remote)
    yield c
    c.close()


def launched(client: Client, name: str, metric: dict[str, Any], variants: Any = None) -> int:
    return client.experiments.create(name, f"flag-{uuid.uuid4().hex[:8]}", filters=metric, variants=variants,
                                     start=True).id  # fmt: skip


def test_draft_shows_its_summary_and_asks_for_no_results(client: Client, remote: PostHogResults) -> None:
    draft = client.experiments.create("Pricing page", "pricing-flag", variants={"control": 70, "test": 30},
                                      description="a draft", filters=FUNNEL_METRIC)  # fmt: skip
    picker = ExperimentPicker(client)
    picker.value = draft.id
    assert picker.experiment is not None and picker.experiment.status == "draft"
    assert picker.error == DRAFT_MESSAGE and DRAFT_MESSAGE in picker.results.value
    assert (picker.result, picker.comparison, picker.table, picker.figure) == (None, None, None, None)
    assert remote.results_calls == []
    summary = picker.summary.value
    for text in ("Pricing page", "pricing-flag", "control 70% · test 30%", "draft", "not started", "a draft",
                 "funnel: $pageview → purchase"):  # fmt: skip
        assert text in summary, text
    assert picker.plot.layout.display == "none"


def test_running_without_results_shows_the_servers_400_and_keeps_working(client: Client) -> None:
    running = launched(client, "No data yet", FUNNEL_METRIC)
    draft = client.experiments.create("Later", f"later-{uuid.uuid4().hex[:6]}").id
    with pytest.raises(hoglab.ValidationError) as answer:  # what the service itself says
        client.experiments.results(running)
    picker = ExperimentPicker(client)
    picker.value = running
    assert picker.experiment is not None and picker.experiment.status == "running"
    assert picker.result is None and picker.figure is None
    # The service's no-data flags ({"no-events": true, ...} as text), each put in words.
    flags = json.loads(str(answer.value.detail))
    assert set(flags) == {"no-events", "no-flag-info", "no-control-variant", "no-test-variant"}
    assert picker.error == explain_no_results(str(answer.value.detail))
    assert picker.error.startswith("No results yet: ") and picker.error.count(";") == sum(flags.values()) - 1
    assert "color:#cf222e" in picker.results.value  # shown as an error, in place of the results
    picker.value = draft
    assert picker.error == DRAFT_MESSAGE and picker.value == draft


def test_funnel_results_table_against_closed_forms(client: Client, remote: PostHogResults) -> None:
    exp = launched(client, "Checkout", FUNNEL_METRIC, {"control": 50, "test": 50})
    remote.answers[exp] = posthog_funnel_answer({"control": (60, 440), "test": (85, 415)})
    picker = ExperimentPicker(client)
    picker.value = exp
    assert picker.error is None and picker.result is not None and picker.result.raw == remote.answers[exp]
    table = picker.table.set_index("variant")
    assert table[["units", "conversions"]].values.tolist() == [[500, 60], [500, 85]]
    test = table.loc["test"]
    p_c, p_t = 60 / 500, 85 / 500
    assert test["rate"] == pytest.approx(p_t) and test["lift"] == pytest.approx(p_t / p_c - 1)
    pooled = 145 / 1000  # two-proportion z-test, pooled variance
    z = (p_t - p_c) / np.sqrt(pooled * (1 - pooled) * (2 / 500))
    assert test["p_value"] == pytest.approx(2 * stats.norm.sf(z), rel=1e-9)
    half = stats.norm.ppf(0.975) * np.sqrt(1 / 85 - 1 / 500 + 1 / 60 - 1 / 500)  # Katz log interval
    katz = np.exp(np.log(p_t / p_c) + np.array([-half, half])) - 1
    assert [test["confidence_low"], test["confidence_high"]] == pytest.approx(katz, rel=1e-9)
    beat, _ = integrate.quad(lambda x: stats.beta.pdf(x, 86, 416) * stats.beta.cdf(x, 61, 441), 0, 1, epsabs=1e-12)
    assert test["chance_to_win"] == pytest.approx(beat, abs=1e-8)
    assert test["chance_to_be_best"] == pytest.approx(beat, abs=1e-8)
    assert table.loc["control", "chance_to_be_best"] == pytest.approx(1 - beat, abs=1e-8)
    direct = compare({"control": Proportion(500, 60), "test": Proportion(500, 85)}, method="bayesian")
    assert [test["credible_low"], test["credible_high"]] == list(direct.row("test").lift_ci)
    # PostHog's verdict as the answer states it, with its reason; hoglab.stats agrees on these counts.
    assert picker.verdict is not None and picker.verdict.significance_code.value == "significant"
    # Said once: "Significant: a variant is ...", never "significant — Significant: ...".
    reason = SIGNIFICANCE_EXPLAINED["significant"].split(": ", 1)[1].rstrip(".")
    assert f"Significant</span>: {reason}" in picker.results.value and "Significant: a" not in picker.results.value
    assert "evaluates PostHog's rules as" not in picker.results.value
    assert "+41.67%" in picker.results.value
    # SRM against the flag's 50/50 rollout: 500 and 500 is exactly as planned.
    assert picker.srm is not None and picker.srm.p_value == pytest.approx(stats.chisquare([500, 500]).pvalue)
    assert "Traffic split as planned (50%/50%)" in picker.results.value
    # One reconciled verdict above the results, from the same counts (hoglab.stats.recommend).
    direct = recommend({"control": Proportion(500, 60), "test": Proportion(500, 85)})
    assert picker.recommendation is not None and picker.recommendation.variant == "test"
    assert picker.recommendation.sequential_p_value == direct.sequential_p_value
    assert picker.results.value.startswith('<div style="margin:4px 0"><b>Recommendation: ')
    # The plot: the forest plot of the Bayesian comparison, and the SRM bars; shown as a PNG.
    assert picker.figure is not None and len(picker.figure.axes) == 2
    forest = picker.figure.axes[0]
    interval = next(line for line in forest.get_lines() if str(line.get_gid()).startswith("interval:"))
    assert list(interval.get_xdata()) == pytest.approx(list(picker.comparison.row("test").lift_ci))
    assert bytes(picker.plot.value).startswith(b"\x89PNG") and picker.plot.layout.display is None


def test_trend_results_and_a_verdict_that_disagrees(client: Client, remote: PostHogResults) -> None:
    exp = launched(client, "Purchases", TREND_METRIC)
    remote.answers[exp] = POSTHOG_TREND_ANSWER
    picker = ExperimentPicker(client)
    picker.value = exp
    test = picker.table.set_index("variant").loc["test"]
    assert (test["units"], test["count"], test["rate"]) == (1020, 150, pytest.approx(150 / 1020))
    # Exact conditional Poisson test: k_T ~ Binomial(k_C + k_T, e_T / (e_C + e_T)), the smaller tail doubled.
    tails = stats.binom.cdf(150, 270, 1020 / 2020), stats.binom.sf(149, 270, 1020 / 2020)
    assert test["p_value"] == pytest.approx(min(1.0, 2 * min(tails)), rel=1e-9)
    def density(x: float) -> float:  # Gamma(count + 1, rate = exposure) posteriors: P(test rate > control rate)
        return float(stats.gamma.pdf(x, 151, scale=1 / 1020) * stats.gamma.cdf(x, 121, scale=1 / 1000))

    beat, _ = integrate.quad(density, 0, 1, epsabs=1e-12, points=[0.12, 0.15])
    assert test["chance_to_win"] == pytest.approx(beat, abs=1e-8)
    # The ratio of the Gamma posteriors is beta-prime: the lift's credible interval in closed form.
    b = stats.beta.ppf([0.025, 0.975], 151, 121)
    assert [test["credible_low"], test["credible_high"]] == pytest.approx(list(1000 / 1020 * b / (1 - b) - 1), rel=1e-7)
    # The answer says "significant" (p = 0.021); PostHog's own rules on these counts give p ≈ 0.109.
    assert picker.result.significance_code == "significant"
    assert picker.verdict.significance_code.value == "high_p_value"
    html = picker.results.value
    assert SIGNIFICANCE_EXPLAINED["significant"].split(": ", 1)[1].rstrip(".") in html and "p-value 0.021" in html
    assert "evaluates PostHog&#x27;s rules as &#x27;high_p_value&#x27;" in html
    assert "(cached)" in html


def test_srm_uses_the_flags_rollout(client: Client, remote: PostHogResults) -> None:
    planned = launched(client, "Three arms", FUNNEL_METRIC, {"control": 50, "a": 25, "b": 25})
    skewed = launched(client, "Skewed", FUNNEL_METRIC, {"control": 50, "test": 50})
    remote.answers[planned] = posthog_funnel_answer({"control": (50, 450), "a": (30, 220), "b": (20, 230)})
    remote.answers[skewed] = posthog_funnel_answer({"control": (100, 900), "test": (90, 710)})
    picker = ExperimentPicker(client)
    picker.value = planned
    assert picker.srm.expected_shares == (0.5, 0.25, 0.25) and not picker.srm.mismatch
    assert picker.srm.p_value == pytest.approx(stats.chisquare([500, 250, 250], [500, 250, 250]).pvalue)
    picker.value = skewed
    assert picker.srm.mismatch
    assert picker.srm.p_value == pytest.approx(stats.chisquare([1000, 800]).pvalue, rel=1e-9)
    assert "Sample ratio mismatch" in picker.results.value


def test_refresh_lists_again_and_recomputes_on_the_server(client: Client, remote: PostHogResults) -> None:
    exp = launched(client, "Refreshing", FUNNEL_METRIC)
    remote.answers[exp] = posthog_funnel_answer({"control": (60, 440), "test": (85, 415)})
    picker = pick_experiment(exp, client)
    assert picker.value == exp and remote.results_calls == [(exp, {})]
    later = client.experiments.create("Created later", f"later-{uuid.uuid4().hex[:6]}").id
    assert later not in picker.options
    picker.refresh_button.click()
    assert later in picker.options and picker.value == exp
    assert remote.results_calls[-1] == (exp, {"refresh": "true"}) and picker.table is not None


def test_archived_experiments_on_request(client: Client) -> None:
    kept = client.experiments.create("Kept", f"kept-{uuid.uuid4().hex[:6]}").id
    old = client.experiments.create("Old", f"old-{uuid.uuid4().hex[:6]}").id
    client.experiments.archive(old)
    picker = ExperimentPicker(client)
    assert set(picker.options) == {kept}
    with pytest.raises(ValueError, match=f"experiment {old} is not in this project's list .archived"):
        picker.value = old
    picker.archived_box.value = True  # the checkbox
    assert set(picker.options) == {kept, old} and "archived" in picker.options[old]
    picker.value = old
    assert picker.experiment is not None and picker.experiment.archived
    picker.archived = False
    assert picker.value is None and picker.experiment is None and set(picker.options) == {kept}


def test_network_error_is_shown_and_the_picker_keeps_working(client: Client, remote: PostHogResults) -> None:
    broken = launched(client, "Unreachable", FUNNEL_METRIC)
    fine = launched(client, "Fine", FUNNEL_METRIC)
    remote.answers[broken] = httpx.ConnectError("connection refused")
    remote.answers[fine] = posthog_funnel_answer({"control": (60, 440), "test": (85, 415)})
    picker = ExperimentPicker(client)
    picker.value = broken
    assert picker.error is not None and "ConnectError" in picker.error and picker.result is None
    picker.value = fine
    assert picker.error is None and picker.table is not None


def test_choosing_in_the_box(client: Client) -> None:
    ids = [client.experiments.create(f"Box {i}", f"box-{i}-{uuid.uuid4().hex[:6]}").id for i in range(2)]
    picker = ExperimentPicker(client)
    assert picker.value is None  # two drafts, none running: nothing to open on
    picker.box.value = picker.options[ids[1]]  # what the browser sends when an option is chosen
    assert picker.value == ids[1] and picker.experiment is not None and picker.experiment.name == "Box 1"
    picker.box.value = "Box"  # typing: partial text chooses nothing and keeps the choice
    assert picker.value == ids[1]
    picker.box.value = ""
    assert picker.value is None and picker.summary.value == ""
    picker.value = ids[0]
    assert picker.box.value == picker.options[ids[0]]


def test_it_opens_on_the_newest_running_experiment(client: Client, remote: PostHogResults) -> None:
    now = datetime.now(UTC)
    older = client.experiments.create("Older", f"older-{uuid.uuid4().hex[:6]}", filters=FUNNEL_METRIC,
                                      start=now - timedelta(days=30)).id  # fmt: skip
    newer = client.experiments.create("Newer", f"newer-{uuid.uuid4().hex[:6]}", filters=FUNNEL_METRIC,
                                      start=now - timedelta(days=2)).id  # fmt: skip
    client.experiments.create("Made last, a draft", f"draft-{uuid.uuid4().hex[:6]}")
    ended = client.experiments.create("Ended", f"ended-{uuid.uuid4().hex[:6]}", filters=FUNNEL_METRIC,
                                      start=now - timedelta(days=1)).id  # fmt: skip
    client.experiments.stop(ended)
    for exp in (older, newer):
        remote.answers[exp] = posthog_funnel_answer({"control": (60, 440), "test": (85, 415)})
    picker = ExperimentPicker(client)
    assert picker.value == newer and picker.box.value == picker.options[newer] and picker.table is not None
    assert remote.results_calls == [(newer, {})]
    picker.value = newer  # choosing it again asks the server nothing more
    assert remote.results_calls == [(newer, {})]
    assert pick_experiment(older, client).value == older and remote.results_calls[-1] == (older, {})
    assert ExperimentPicker(client, newest=False).value is None


def test_with_one_experiment_it_opens_on_that_one(client: Client) -> None:
    only = client.experiments.create("The only one", f"only-{uuid.uuid4().hex[:6]}").id
    picker = ExperimentPicker(client)
    assert picker.value == only and picker.error == DRAFT_MESSAGE  # a draft, but the only choice there is


def test_a_service_that_cannot_be_reached() -> None:
    with Client("http://127.0.0.1:9", "phx_unused", 1, max_retries=0, progress=False) as offline:
        picker = ExperimentPicker(offline)
        assert picker.options == {} and "Could not list the experiments" in picker.status.value
        assert picker.value is None
        with pytest.raises(ValueError, match="experiment 7 cannot be chosen: the experiments could not be listed"):
            picker.value = 7
        shown = pick_experiment(7, offline)  # said in the picker, not raised
    assert shown.value is None and shown.error == "experiment 7 cannot be chosen: the experiments could not be listed"
    assert shown.error in shown.results.value and "Could not list the experiments" in shown.status.value


def test_an_unknown_id_is_shown_in_the_picker(client: Client) -> None:
    kept = client.experiments.create("Kept", f"kept-{uuid.uuid4().hex[:6]}").id
    picker = pick_experiment(kept + 1000, client)
    assert picker.value is None and picker.options.keys() == {kept}
    hint = "(archived experiments are listed with archived=True)"
    assert picker.error == f"experiment {kept + 1000} is not in this project's list {hint}"
    assert "color:#cf222e" in picker.results.value and "is not in this project" in picker.results.value
    picker.value = kept  # and the picker keeps working
    assert picker.error == DRAFT_MESSAGE and picker.experiment is not None and picker.experiment.id == kept


def test_no_client_configured_is_shown_and_refresh_finds_one(
    make_project: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import hoglab.client._default as default

    monkeypatch.setattr(default, "_default", None)
    for name in ("HOGLAB_HOST", "HOGLAB_API_KEY", "HOGLAB_PROJECT_ID", "POSTHOG_HOST", "POSTHOG_PERSONAL_API_KEY",
                 "POSTHOG_PROJECT_ID"):  # fmt: skip
        monkeypatch.delenv(name, raising=False)
    picker = pick_experiment(3)
    assert picker.options == {} and picker.value is None
    assert "Could not list the experiments: No API key: pass api_key=" in picker.status.value
    assert picker.error == "experiment 3 cannot be chosen: the experiments could not be listed"
    project = make_project()
    with Client(str(project.http.base_url).rstrip("/"), project.key, project.id) as c:
        created = c.experiments.create("Found", f"found-{uuid.uuid4().hex[:6]}").id
    monkeypatch.setenv("HOGLAB_HOST", str(project.http.base_url).rstrip("/"))
    monkeypatch.setenv("HOGLAB_API_KEY", project.key)
    try:
        picker.refresh_button.click()  # the environment now configures the default client
        assert picker.client is default._default and set(picker.options) == {created}
        assert "1 experiment." in picker.status.value
    finally:
        if default._default is not None:
            default._default.close()


def test_a_client_of_the_wrong_type_is_named() -> None:
    with pytest.raises(hoglab.InvalidArgumentType, match=r"expected a hoglab.Client, got a int .hoglab.pick_exp"):
        ExperimentPicker(7)  # type: ignore[arg-type]


def test_displays_as_a_widget(client: Client) -> None:
    picker = hoglab.ExperimentPicker(client)
    bundle = picker._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == picker.widget.model_id
    assert hoglab.ExperimentPicker.__module__ == "hoglab" and hoglab.pick_experiment is pick_experiment


def test_the_demo_experiment_with_the_services_own_results(demo: Demo) -> None:
    """No scripting: the picker on hoglab's /results for the seeded demo experiment."""
    picker = ExperimentPicker(demo.client)
    picker.value = demo.experiment_id
    assert picker.error is None and picker.result is not None
    frame = picker.result.to_frame().set_index("key")  # type: ignore[union-attr]
    table = picker.table.set_index("variant")  # type: ignore[union-attr]
    assert table["units"].to_dict() == (frame["success_count"] + frame["failure_count"]).astype(float).to_dict()
    assert table["conversions"].to_dict() == frame["success_count"].astype(float).to_dict()
    expected = funnel_verdict({k: (int(r.success_count), int(r.failure_count)) for k, r in frame.iterrows()})
    assert picker.verdict == expected and expected.significance_code.value == "significant"
    assert table["chance_to_be_best"].to_dict() == pytest.approx(frame["probability"].to_dict(), abs=1e-12)
    assert picker.srm is not None and not picker.srm.mismatch
    assert picker.figure is not None and "Significant</span>: a variant" in picker.results.value
    # The figure whole: nothing drawn on the image's edge, shown at most at the CSS width it was drawn for.
    assert drawn_on_the_edge(picker.plot.value) == 0
    assert picker.plot.width == str(round(picker.figure.get_figwidth() * 96))
    assert picker.plot.layout.max_width == "100%" and picker.plot.layout.height == "auto"
