"""``client.groups`` and queries built with group type names, against the live service: types, every group of a
type through the cursor, one group, names resolved before sending, frames and plots that say "companies"."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import matplotlib

matplotlib.use("Agg")

import pandas as pd
import pytest

import hoglab
from hoglab.errors import InvalidArgument, NotFound
from hoglab.server.ingest import Ingestor

START = (datetime.now(UTC) - timedelta(days=3)).replace(microsecond=0)


@pytest.fixture
def client(live_client, live_project):
    events = [{"event": "$groupidentify", "distinct_id": "admin",
               "timestamp": (START + timedelta(seconds=i)).isoformat(),
               "properties": {"$group_type": "company", "$group_key": f"c{i}", "$group_set": {"seats": i}}}
              for i in range(120)]  # fmt: skip
    for i in range(30):
        events.append({"event": "view", "distinct_id": f"u{i}", "timestamp": (START + timedelta(hours=i)).isoformat(),
                       "properties": {"$groups": {"company": f"c{i % 6}", "project": "p"}}})  # fmt: skip
    Ingestor.for_engine(live_project.service.state.engine).capture_batch(live_project.id, events)
    live_project.http.patch(f"/api/projects/{live_project.id}/groups_types/update_metadata/", json=[
        {"group_type_index": 0, "name_singular": "Company", "name_plural": "Companies"}])
    return live_client


def test_types_list_and_find(client) -> None:
    types = client.groups.types()
    assert types["group_type"].tolist() == ["company", "project"] and types["group_type_index"].tolist() == [0, 1]
    assert types.loc[0, "name_plural"] == "Companies" and types.loc[1, "name_plural"] is pd.NA
    groups = client.groups.list("company")  # 120 groups: two pages of PostHog's cursor
    assert len(groups) == 120 and groups["group_key"].tolist()[0] == "c119"
    assert groups.set_index("group_key").loc["c7", "seats"] == 7
    assert isinstance(groups["created_at"].dtype, pd.DatetimeTZDtype)
    assert client.groups.list("company", search="c11")["group_key"].tolist() == ["c11"]
    assert client.groups.find("company", "c3")["group_properties"] == {"seats": 3}
    with pytest.raises(NotFound):
        client.groups.find(0, "nope")
    with pytest.raises(InvalidArgument, match="'company', 'project'"):
        client.groups.list("team")


def test_names_resolve_and_frames_say_what_they_count(client) -> None:
    trend = client.query(hoglab.trends("view", aggregate_by="company", interval="day", date_from="-7d"))
    assert trend.attrs["unit"] == "Companies" and trend["value"].sum() > 0
    sticky = client.query(hoglab.stickiness("view", aggregate_by="project", date_from="-7d"))
    assert "projects" in sticky.columns and "persons" not in sticky.columns
    assert sticky["projects"].sum() == 1  # one project, seen on several days
    ax = hoglab.plot_stickiness(sticky)
    assert ax.get_ylabel() == "projects"
    lifecycle = client.query(hoglab.lifecycle("view", aggregate_by="company", date_from="-7d"))
    assert hoglab.plot_lifecycle(lifecycle).get_ylabel() == "Companies"
    people = client.query(hoglab.stickiness("view", date_from="-7d"))
    assert "persons" in people.columns and "unit" not in people.attrs
    table = client.query(hoglab.groups("company", select=["properties.seats"], where={"seats__lt": 3},
                                       order_by=["properties.seats"]))  # fmt: skip
    assert table.columns.tolist() == ["group_name", "key", "properties.seats"]
    assert table["key"].tolist() == ["c0", "c1", "c2"]
    assert isinstance(table, pd.DataFrame)
    with pytest.raises(InvalidArgument, match="not one of the project's"):
        client.query(hoglab.funnel(["view", "view"], aggregate_by="team"))
