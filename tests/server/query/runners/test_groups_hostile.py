"""Hostile input in every field that reaches HogQL through groups: group property filters (key and value), group
breakdowns (property), ``GroupsQuery`` (select, orderBy, search, properties), the actors of a group insight, the
HogQL ``groups`` table and ``group_N`` joins, and the ``/groups/`` endpoints' parameters. Each is a 400 naming
what is wrong or an answer that holds nothing of another project, never a 500.

Another project holds ``T2SECRET`` as group keys, group property names and values, and events tagged with them;
the caller's project has ordinary groups.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from hoglab.server.ingest import Ingestor

pytestmark = pytest.mark.xdist_group("insights")

SECRET = "T2SECRET"
START = datetime.now(UTC) - timedelta(days=2)
RANGE = {"date_from": "-7d"}
PAYLOADS = [
    "(SELECT groupArray(key) FROM groups)",
    "(SELECT any(group_key) FROM hoglab.groups)",
    "(SELECT any(group_properties) FROM groups_local)",
    "(SELECT any(group_type) FROM group_type_mapping)",
    "(SELECT count() FROM file('/etc/passwd'))",
    "1) OR (1",
    "plan` OR 1 = 1 --",
    "x') OR key != '' --",
    "properties) UNION ALL SELECT properties FROM groups --",
    "sleep(3)",
    "getSetting('max_threads')",
]


def _batch(name: str, secret: bool) -> list[dict]:
    key = SECRET if secret else "acme"
    props = {SECRET: SECRET, "plan": SECRET} if secret else {"plan": "pro", "name": "Acme"}
    events = [{"event": "$groupidentify", "distinct_id": f"{name}-admin", "timestamp": START.isoformat(),
               "properties": {"$group_type": "company", "$group_key": key, "$group_set": props}}]  # fmt: skip
    for i in range(6):
        events.append({"event": "view" if i % 2 else "buy", "distinct_id": f"{name}-{i % 2}",
                       "timestamp": (START + timedelta(hours=i)).isoformat(),
                       "properties": {"$groups": {"company": key}}})  # fmt: skip
    return events


@pytest.fixture(scope="module")
def projects(hoglab_service):
    import httpx

    store, engine = hoglab_service.state.store, hoglab_service.state.engine
    mine = store.projects.create("hostile groups: mine")
    theirs = store.projects.create("hostile groups: theirs")
    Ingestor.for_engine(engine).capture_batch(mine.id, _batch("me", secret=False))
    Ingestor.for_engine(engine).capture_batch(theirs.id, _batch("them", secret=True))
    _, key = store.keys.create(store.users.default().id, ("*",), [mine.id], label="hostile groups")
    with httpx.Client(base_url=hoglab_service.url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        yield http, mine.id


def _places(fragment: str) -> dict[str, dict]:
    group_filter = [{"type": "group", "key": fragment, "value": fragment, "operator": "exact", "group_type_index": 0}]
    regex_filter = [{"type": "group", "key": "plan", "value": fragment, "operator": "regex", "group_type_index": 0}]
    views = {"kind": "EventsNode", "event": "view"}
    breakdown = {"breakdown": fragment, "breakdown_type": "group", "breakdown_group_type_index": 0}
    funnel = {"kind": "FunnelsQuery", "dateRange": RANGE, "aggregation_group_type_index": 0,
              "series": [{"kind": "EventsNode", "event": "buy"}, views]}  # fmt: skip
    return {
        "trends.group_filter": {"kind": "TrendsQuery", "dateRange": RANGE, "series": [views],
                                "properties": group_filter},
        "trends.regex": {"kind": "TrendsQuery", "dateRange": RANGE, "series": [views], "properties": regex_filter},
        "trends.breakdown": {"kind": "TrendsQuery", "dateRange": RANGE, "series": [
            {**views, "math": "unique_group", "math_group_type_index": 0}], "breakdownFilter": breakdown},
        "funnel.breakdown": {**funnel, "breakdownFilter": breakdown},
        "retention.breakdown": {"kind": "RetentionQuery", "dateRange": RANGE, "aggregation_group_type_index": 0,
                                "retentionFilter": {"totalIntervals": 3}, "breakdownFilter": breakdown},
        "groups.select": {"kind": "GroupsQuery", "group_type_index": 0, "select": [fragment]},
        "groups.orderBy": {"kind": "GroupsQuery", "group_type_index": 0, "orderBy": [fragment]},
        "groups.search": {"kind": "GroupsQuery", "group_type_index": 0, "search": fragment},
        "groups.properties": {"kind": "GroupsQuery", "group_type_index": 0, "properties": group_filter},
        "groups.hogql": {"kind": "GroupsQuery", "group_type_index": 0,
                         "properties": [{"type": "hogql", "key": fragment}]},
        "actors.select": {"kind": "ActorsQuery", "select": [fragment], "search": fragment,
                          "source": {"kind": "FunnelsActorsQuery", "funnelStep": 1, "source": funnel}},
        "actors.orderBy": {"kind": "ActorsQuery", "orderBy": [fragment], "properties": group_filter,
                           "source": {"kind": "FunnelsActorsQuery", "funnelStep": 1, "source": funnel}},
        "hogql.groups": {"kind": "HogQLQuery", "query": f"SELECT key, properties FROM groups WHERE {fragment}"},
        "hogql.join": {"kind": "HogQLQuery", "query": f"SELECT group_0.properties, {fragment} FROM events"},
    }  # fmt: skip


@pytest.mark.parametrize("fragment", PAYLOADS)
def test_fragment_is_refused_or_reads_only_the_callers_groups(projects, fragment):
    http, project_id = projects
    for place, query in _places(fragment).items():
        answer = http.post(f"/api/projects/{project_id}/query/", json={"query": query})
        assert answer.status_code in (200, 400), (place, answer.status_code, answer.text[:300])
        assert SECRET not in answer.text, place
        if answer.status_code == 400:
            assert answer.json()["type"] == "validation_error" and answer.json()["detail"], place
    for path, params in (("groups/", {"group_type_index": 0, "search": fragment, "group_key": fragment}),
                         ("groups/find/", {"group_type_index": 0, "group_key": fragment}),
                         ("groups/property_values/", {"group_type_index": 0, "key": fragment, "value": fragment})):
        answer = http.get(f"/api/projects/{project_id}/{path}", params=params)
        assert answer.status_code in (200, 400, 404), (path, answer.status_code, answer.text[:300])
        assert SECRET not in answer.text, path


def test_the_callers_own_groups_are_read(projects):
    http, project_id = projects
    everything = {"kind": "HogQLQuery", "query": "SELECT index, key, properties.plan FROM groups"}
    answer = http.post(f"/api/projects/{project_id}/query/", json={"query": everything})
    assert answer.json()["results"] == [[0, "acme", "pro"]]
    joined = {"kind": "HogQLQuery", "query": "SELECT DISTINCT group_0.key, group_0.properties.name FROM events "
                                             "WHERE $group_0 != ''"}  # fmt: skip
    assert http.post(f"/api/projects/{project_id}/query/", json={"query": joined}).json()["results"] == [
        ["acme", "Acme"]]
    reserved = {"kind": "HogQLQuery", "query": "SELECT team_id FROM groups"}
    assert http.post(f"/api/projects/{project_id}/query/", json={"query": reserved}).status_code == 400
