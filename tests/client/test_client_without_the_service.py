"""Against PostHog, the toolkit writes its HogQL with ``hoglab.translate`` alone: ``client.experiments.units`` and
``hoglab.by_variant`` run in a fresh interpreter and leave no module of the service, nor fastapi, pyarrow, re2 or
chDB, in ``sys.modules`` (a PostHog user installs the toolkit's dependencies only). The interpreter has the
service's dependencies installed (this test environment) but refuses to import them, as one without them would
(pandas itself would otherwise load pyarrow whenever it is installed).

The remote is a MOCK of PostHog Cloud (``httpx.MockTransport``), the one remote here: no ``/query/arrow/`` (404),
an experiment whose metrics read an action and a funnel, the project's actions and settings, and HogQL answers with
the columns the statement asks for. What the numbers are is ``test_client_units_live.py``'s business (against a
PostHog-shaped remote over a real service); this checks what the toolkit needs to compute them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    '''
    import json, re, sys

    SERVICE_ONLY = ("fastapi", "starlette", "uvicorn", "pyarrow", "re2", "chdb", "clickhouse_connect", "orjson")

    class WithoutTheService:  # the toolkit's dependencies alone: the service's extra is not installed
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in SERVICE_ONLY:
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, WithoutTheService())
    import httpx
    import hoglab

    EXPERIMENT = {
        "id": 3, "name": "Checkout", "feature_flag_key": "checkout", "start_date": "2026-01-01T00:00:00Z",
        "end_date": None, "type": "product", "stats_config": {"cuped": {"enabled": True}},
        "feature_flag": {"key": "checkout", "filters": {"multivariate": {"variants": [
            {"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]}}},
        "exposure_criteria": {"filterTestAccounts": True},
        "metrics": [
            {"kind": "ExperimentMetric", "metric_type": "mean", "name": "Spent", "uuid": "m-1",
             "source": {"kind": "ActionsNode", "id": 9, "math": "sum", "math_property": "amount"}},
            {"kind": "ExperimentMetric", "metric_type": "funnel", "name": "Bought", "uuid": "m-2",
             "series": [{"kind": "EventsNode", "event": "cart"}, {"kind": "EventsNode", "event": "purchase"}]},
        ],
        "metrics_secondary": [],
    }
    ACTION = {"id": 9, "name": "Spent", "deleted": False, "steps": [{"event": "purchase"}]}
    SETTINGS = {"id": 7, "name": "Shop", "timezone": "Europe/Paris",
                "test_account_filters": [{"key": "email", "value": "@example.com", "operator": "not_icontains",
                                          "type": "person"}]}
    hogql = []

    def answer(sql):
        names = ["entity_id", "variant", "first_exposure_time", *re.findall(r" AS (m\\d+_\\w+)", sql)]
        types = {"entity_id": "String", "variant": "String", "first_exposure_time": "DateTime64(6, 'UTC')"}
        rows = [[f"u{i}", ["control", "test"][i % 2], "2026-01-02 10:00:00.000000",
                 *[1 for _ in names[3:]]] for i in range(4)]
        return {"results": rows, "columns": names, "types": [[n, types.get(n, "Float64")] for n in names],
                "hasMore": False, "is_cached": False, "timezone": "UTC"}

    def posthog(request):  # a MOCK of PostHog Cloud
        path = request.url.path
        if path.endswith("/query/arrow/"):
            return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found.",
                                             "attr": None})
        if request.method == "POST" and path.endswith("/query/"):
            query = json.loads(request.content)["query"]
            hogql.append(query["query"])
            return httpx.Response(200, json=answer(query["query"]))
        if path.endswith("/experiments/3/"):
            return httpx.Response(200, json=EXPERIMENT)
        if path.endswith("/actions/"):
            return httpx.Response(200, json={"count": 1, "next": None, "previous": None, "results": [ACTION]})
        if path == "/api/projects/7/":
            return httpx.Response(200, json=SETTINGS)
        return httpx.Response(404, json={"type": "invalid_request", "code": "not_found", "detail": "Not found.",
                                         "attr": None})

    with hoglab.Client("https://us.posthog.example", "phx_remote", 7, transport=httpx.MockTransport(posthog),
                       progress=False) as cloud:
        units = cloud.experiments.units(3, properties=["plan"])
        split = hoglab.by_variant(hoglab.retention("signup", period="week"), 3, client=cloud)
    heavy = sorted(m for m in sys.modules if m.startswith("hoglab.server") or m.split(".")[0] in SERVICE_ONLY)
    print(json.dumps({"heavy": heavy, "rows": len(units), "columns": list(units.columns), "hogql": hogql,
                      "breakdown": split.breakdownFilter.breakdown,
                      "translate": "hoglab.translate.metric.units" in sys.modules}))
    '''
)


def test_units_and_by_variant_against_posthog_import_nothing_of_the_service() -> None:
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["heavy"] == []
    assert seen["translate"]  # the HogQL was written, by the one writer
    assert seen["rows"] == 4 and seen["columns"][:3] == ["entity_id", "variant", "first_exposure_time"]
    assert {"Spent", "Bought", "Bought step", "plan"} <= set(seen["columns"])
    (units_sql,) = seen["hogql"]
    assert "purchase" not in units_sql  # values travel as placeholders, the action's event among them
    assert "multiIf(" in seen["breakdown"] and "'test'" in seen["breakdown"]
