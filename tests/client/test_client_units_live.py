"""``client.experiments.units`` against a real hoglab service, and against a PostHog-shaped remote.

The project has 240 persons with a designed truth: a variant, a first exposure, purchases (amount 10) before and
after it, a cart visit for some, a ``plan`` and a number of ``seats`` set on the person. The units frame must hold
each exposed person once with that truth (a pandas restatement of the design), and each metric's per-variant sums
must be its ``ExperimentQuery`` statistics.

The PostHog-shaped remote is a MOCK of PostHog Cloud (``httpx.MockTransport``), the one remote here: it has no
``/query/arrow/`` (404), refuses OFFSET as PostHog does for personal API keys, and answers the HogQL and
``ExperimentQuery`` it is sent by passing them to the real hoglab service behind it (its data). So the client's
PostHog path (the HogQL compiled in the toolkit, keyset pages) is checked against the same answers.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from clienttesting import loaded_project

import hoglab
from hoglab.client import Client

pytestmark = pytest.mark.xdist_group("client_live")

START = datetime(2025, 4, 7, 9, tzinfo=UTC)
FLAG = "units-flag"
SPEND = hoglab.mean_metric("purchase", math="sum", math_property="amount", name="Spend")
BOUGHT = hoglab.funnel_metric(["cart", "purchase"], name="Cart to purchase")
PER_CART = hoglab.ratio_metric(hoglab.series("purchase", math="sum", math_property="amount"), "cart",
                               name="Spend per cart")  # fmt: skip


@pytest.fixture(scope="module")
def experiment(hoglab_service: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    rng = np.random.default_rng(26)
    lines, truth = [], []
    for k in range(240):
        variant = ("control", "test")[k % 2]
        seen = START + timedelta(hours=int(rng.integers(1, 72)), microseconds=int(rng.integers(0, 10**6)))
        did = f"u{k}"
        props = {"$set": {"plan": ("free", "pro")[int(rng.integers(2))], "seats": int(rng.integers(1, 9))}}
        lines.append({"event": "signed_in", "distinct_id": did, "timestamp": (seen - timedelta(days=3)).isoformat(),
                      "properties": props})  # fmt: skip
        exposed = k % 10 != 0  # a tenth never exposed
        if exposed:
            for extra in (timedelta(0), timedelta(hours=5)):  # two exposures: the first counts
                lines.append({"event": "$feature_flag_called", "distinct_id": did,
                              "timestamp": (seen + extra).isoformat(),
                              "properties": {"$feature_flag": FLAG, "$feature_flag_response": variant}})  # fmt: skip
        carts = int(rng.integers(0, 3))
        for c in range(carts):
            lines.append({"event": "cart", "distinct_id": did,
                          "timestamp": (seen + timedelta(minutes=30 + c)).isoformat(), "properties": {}})  # fmt: skip
        post = int(rng.poisson(1.0 + (0.5 if variant == "test" else 0)))
        for i in range(post):
            lines.append({"event": "purchase", "distinct_id": did,
                          "timestamp": (seen + timedelta(hours=1, minutes=i)).isoformat(),
                          "properties": {"amount": 10}})  # fmt: skip
        if exposed:
            truth.append({"entity": did, "variant": variant, "first": seen, "spend": 10.0 * post, "carts": carts,
                          "bought": int(carts > 0 and post > 0), "plan": props["$set"]["plan"],
                          "seats": props["$set"]["seats"]})  # fmt: skip
    project, key = loaded_project(hoglab_service, "client units", lines, tmp_path_factory.mktemp("client-units"))
    client = Client(hoglab_service.url, key, project, progress=False)
    made = client.experiments.create("units", FLAG, start=START, end=START + timedelta(days=6),
                                     metrics=[SPEND, BOUGHT], metrics_secondary=[PER_CART],
                                     stats_config=hoglab.stats_config("frequentist"))  # fmt: skip
    yield {"client": client, "id": made.id, "truth": pd.DataFrame(truth), "url": hoglab_service.url, "key": key,
           "project": project}  # fmt: skip
    client.close()


def _answers(client: Client, experiment_id: int) -> dict[str, dict[str, dict[str, Any]]]:
    """Each metric's ExperimentQuery statistics per variant, by metric name."""
    result = client.experiments.metric_results(experiment_id, exposures=False)
    out = {}
    for answer in result.metrics:
        assert answer.answer is not None, answer.error
        arms = [answer.answer["baseline"], *answer.answer["variant_results"]]
        out[answer.label] = {arm["key"]: arm for arm in arms}
    return out


def _check_sums(df: pd.DataFrame, answers: dict[str, dict[str, dict[str, Any]]]) -> None:
    for variant, g in df.groupby("variant"):
        spend = answers["Spend"][variant]
        assert (len(g), g["Spend"].sum(), (g["Spend"] ** 2).sum()) == (
            spend["number_of_samples"], spend["sum"], spend["sum_squares"])  # fmt: skip
        funnel = answers["Cart to purchase"][variant]
        steps = g["Cart to purchase step"]
        assert [int((steps >= j).sum()) for j in (1, 2)] == funnel["step_counts"]
        assert g["Cart to purchase"].sum() == funnel["sum"] == funnel["step_counts"][-1]
        ratio = answers["Spend per cart"][variant]
        y, d = g["Spend per cart numerator"], g["Spend per cart denominator"]
        assert (y.sum(), d.sum(), (y * d).sum(), (d * d).sum()) == (
            ratio["sum"], ratio["denominator_sum"], ratio["numerator_denominator_sum_product"],
            ratio["denominator_sum_squares"])  # fmt: skip


def test_units_hold_each_exposed_person_with_the_designed_values_and_real_dtypes(experiment):
    client, truth = experiment["client"], experiment["truth"]
    with pytest.warns(hoglab.QueryWarning, match="property 'missing': no exposed unit has it"):
        df = client.experiments.units(experiment["id"], properties=["plan", "seats", "missing"])
    assert client._bulk_rows is True  # one Arrow answer
    assert df.attrs["property_sources"]["plan"] == {"person": len(df)}
    assert len(df) == len(truth) and df["entity_id"].is_unique
    assert str(df["first_exposure_time"].dtype) == "datetime64[ns, UTC]" or df["first_exposure_time"].dt.tz
    assert str(df["variant"].dtype) == "string" and str(df["plan"].dtype) == "string"
    assert str(df["seats"].dtype) == "Int64" and df["Spend"].dtype == float
    assert str(df["Cart to purchase step"].dtype) == "Int64"
    assert df.attrs["columns"]["Spend per cart"] == ["Spend per cart numerator", "Spend per cart denominator"]
    assert df["missing"].isna().all()
    # Person by person: the frame has no person's distinct id, so match on the designed attributes' order.
    got = df.sort_values("first_exposure_time").reset_index(drop=True)
    want = truth.sort_values("first").reset_index(drop=True)
    assert (got["first_exposure_time"] == pd.to_datetime(want["first"], utc=True)).all()
    assert got["variant"].tolist() == want["variant"].tolist()
    assert got["Spend"].tolist() == want["spend"].tolist()
    assert got["Cart to purchase"].tolist() == want["bought"].tolist()
    assert got["plan"].tolist() == want["plan"].tolist() and got["seats"].tolist() == want["seats"].tolist()


def test_units_sum_to_each_metric_s_experiment_query_answer(experiment):
    client = experiment["client"]
    df = client.experiments.units(experiment["id"])
    assert list(df.attrs["columns"]) == ["Spend", "Cart to purchase", "Spend per cart"]
    _check_sums(df, _answers(client, experiment["id"]))
    one = client.experiments.units(experiment["id"], metric="Spend")
    assert list(one.columns) == ["entity_id", "variant", "first_exposure_time", "Spend"]
    assert one["Spend"].tolist() == df["Spend"].tolist()


def test_a_metric_not_in_the_experiment_is_refused_by_name(experiment):
    with pytest.raises(hoglab.errors.InvalidArgument, match="no metric named 'Revenue'"):
        experiment["client"].experiments.units(experiment["id"], metric="Revenue")


class PostHogShaped:
    """A MOCK of PostHog Cloud for the client (the one remote): no Arrow endpoint, no OFFSET for personal API keys,
    and everything else passed to the real hoglab service holding the data."""

    def __init__(self, url: str, key: str) -> None:
        self.real = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
        self.hogql: list[str] = []
        self.arrow_calls = 0

    def handler(self, request: httpx.Request) -> httpx.Response:
        path = request.url.path
        if path.endswith("/query/arrow/"):
            self.arrow_calls += 1
            return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found.",
                                             "attr": None})  # fmt: skip
        if request.method == "POST" and path.endswith("/query/"):
            body = json.loads(request.content)
            query = body["query"]
            if query["kind"] == "HogQLQuery":
                self.hogql.append(query["query"])
                if "OFFSET" in query["query"].upper():
                    return httpx.Response(400, json={
                        "type": "validation_error", "code": "invalid_input", "attr": None,
                        "detail": "OFFSET is not supported on queries made with a personal API key."})  # fmt: skip
            elif query["kind"] not in ("ExperimentQuery", "ExperimentExposureQuery"):
                return httpx.Response(400, json={"type": "validation_error", "code": "invalid_input", "attr": None,
                                                 "detail": f"Unsupported query kind: {query['kind']}"})  # fmt: skip
        answer = self.real.request(request.method, path, params=request.url.params, content=request.content,
                                   headers={"content-type": request.headers.get("content-type", "")})  # fmt: skip
        return httpx.Response(answer.status_code, content=answer.content,
                              headers={"content-type": answer.headers.get("content-type", "application/json")})


def test_against_a_posthog_shaped_remote_the_same_hogql_is_paged_by_unit(experiment):
    remote = PostHogShaped(experiment["url"], experiment["key"])
    with Client("https://us.posthog.example", "phx_remote", experiment["project"],
                transport=httpx.MockTransport(remote.handler), progress=False) as cloud:  # fmt: skip
        df = cloud.experiments.units(experiment["id"], properties=["plan", "seats"], page_size=50)
        assert remote.arrow_calls == 1 and cloud._bulk_rows is False
        pages = len(remote.hogql)
        assert pages == -(-len(experiment["truth"]) // 50) + (len(experiment["truth"]) % 50 == 0)
        assert all("LIMIT 50" in q for q in remote.hogql)
        _check_sums(df, _answers(cloud, experiment["id"]))
    local = experiment["client"].experiments.units(experiment["id"], properties=["plan", "seats"])
    pd.testing.assert_frame_equal(df.sort_values("entity_id").reset_index(drop=True),
                                  local.sort_values("entity_id").reset_index(drop=True))  # fmt: skip
    remote.real.close()


def test_against_a_posthog_shaped_remote_a_metric_by_action_counts_the_action_s_events(experiment):
    """The toolkit writes the HogQL for PostHog, so it must read the project's actions itself: without them an
    action compiles to a condition no event meets, and the metric would be 0 for everyone (the bug this catches)."""
    local = experiment["client"]
    action = local.actions.create("Spent", event="purchase")
    by_action = hoglab.mean_metric(action=action.id, math="sum", math_property="amount", name="Spent by action")
    remote = PostHogShaped(experiment["url"], experiment["key"])
    with Client("https://us.posthog.example", "phx_remote", experiment["project"],
                transport=httpx.MockTransport(remote.handler), progress=False) as cloud:  # fmt: skip
        df = cloud.experiments.units(experiment["id"], metric=[by_action], page_size=100)
    remote.real.close()
    # Person by person (matched on the first exposure, the frame has no distinct ids): the designed spend, as the
    # action's events are the purchases.
    got = df.sort_values("first_exposure_time").reset_index(drop=True)
    want = experiment["truth"].sort_values("first").reset_index(drop=True)
    assert got["Spent by action"].sum() > 0 and got["Spent by action"].tolist() == want["spend"].tolist()
    spent = df.set_index("entity_id")["Spent by action"]
    server = local.experiments.units(experiment["id"], metric=[by_action])
    pd.testing.assert_series_equal(spent.sort_index(), server.set_index("entity_id")["Spent by action"].sort_index())


def test_a_legacy_experiment_s_units_say_how_to_get_its_metric_per_unit(experiment):
    """A legacy experiment's target metric is an insight filter, with no per-unit stage: the frame has the units
    only, and says which builder gives the metric (the call it names works)."""
    client = experiment["client"]
    legacy = client.experiments.create("legacy units", "units-legacy", start=START, end=START + timedelta(days=6),
                                       filters={"insight": "FUNNELS", "events": [{"id": "cart", "order": 0},
                                                                                 {"id": "purchase", "order": 1}]})
    with pytest.warns(hoglab.QueryWarning, match=r"pass metric=hoglab\.funnel_metric\(\['cart', 'purchase'\]\)"):
        bare = client.experiments.units(legacy.id)
    assert list(bare.columns) == ["entity_id", "variant", "first_exposure_time"] and bare.attrs["warnings"]
    named = client.experiments.units(legacy.id, metric=hoglab.funnel_metric(["cart", "purchase"], name="bought"))
    assert "bought" in named.columns and not named.attrs.get("warnings")  # (its flag has no exposures: no rows)
