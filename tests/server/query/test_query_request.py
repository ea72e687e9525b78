"""``project_actions``: the project's actions as every query reads them, kept per store and read again exactly
when the project's actions revision moved, including after a write by another process on the same data dir."""

from __future__ import annotations

import pytest

from hoglab.server.query.request import project_actions
from hoglab.server.store import Store


@pytest.fixture
def store(tmp_path):
    with Store.open_at(tmp_path) as opened:
        yield opened


def test_definitions_follow_every_write(store, tmp_path):
    project = store.projects.create("P")
    assert project_actions(store, project.id) == ()
    action = store.actions.create(project.id, {"name": "Paid", "steps": [{"event": "paid"}]})
    first = project_actions(store, project.id)
    assert [(a.id, a.name, a.steps) for a in first] == [(action.id, "Paid", ({"event": "paid"},))]
    assert project_actions(store, project.id) is first  # unchanged: the kept tuple, not a new read
    store.actions.update(project.id, action.id, {"deleted": True})
    deleted = project_actions(store, project.id)
    assert [a.deleted for a in deleted] == [True]  # still there: queries read deleted actions by id
    # Another process writing to the same data dir: a second store, as a second worker would open it.
    with Store.open_at(tmp_path) as other:
        other.actions.update(project.id, action.id, {"steps": [{"event": "refunded"}]})
    assert [a.steps for a in project_actions(store, project.id)] == [({"event": "refunded"},)]


def test_projects_and_stores_never_share_definitions(tmp_path):
    with Store.open_at(tmp_path / "one") as one, Store.open_at(tmp_path / "two") as two:
        p1, p2 = one.projects.create("A"), two.projects.create("A")  # the same project id in both
        assert p1.id == p2.id
        one.actions.create(p1.id, {"name": "Mine", "steps": [{"event": "a"}]})
        two.actions.create(p2.id, {"name": "Theirs", "steps": [{"event": "b"}]})  # the same revision, 1
        assert [a.name for a in project_actions(one, p1.id)] == ["Mine"]
        assert [a.name for a in project_actions(two, p2.id)] == ["Theirs"]
        other = one.projects.create("B")
        assert project_actions(one, other.id) == ()
