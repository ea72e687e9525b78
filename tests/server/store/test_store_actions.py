"""The actions repository: soft deletes, names unique among live actions, and the per-project revision the query
service reads on every request to know whether the project's actions changed."""

from __future__ import annotations

import pytest

from hoglab.server.store import DuplicateActionName, Store


@pytest.fixture
def store(tmp_path):
    with Store.open_at(tmp_path) as opened:
        yield opened


def test_every_write_moves_only_its_projects_revision(store):
    a, b = store.projects.create("A"), store.projects.create("B")
    assert store.actions.revision(a.id) == store.actions.revision(b.id) == 0
    first = store.actions.create(a.id, {"name": "One", "steps": [{"event": "x"}]})
    assert store.actions.revision(a.id) == 1 and store.actions.revision(b.id) == 0
    store.actions.create(a.id, {"name": "Two", "steps": []})
    store.actions.update(a.id, first.id, {"deleted": True})  # a soft delete is a write too
    assert store.actions.revision(a.id) == 3
    store.actions.create(b.id, {"name": "One", "steps": []})
    assert store.actions.revision(a.id) == 3 and store.actions.revision(b.id) == 1


def test_a_refused_write_leaves_the_revision(store):
    project = store.projects.create("P")
    store.actions.create(project.id, {"name": "Same", "steps": []})
    with pytest.raises(DuplicateActionName):
        store.actions.create(project.id, {"name": "Same", "steps": []})
    assert store.actions.revision(project.id) == 1
    assert [a.name for a in store.actions.list(project.id)] == ["Same"]


def test_an_action_of_no_fields_is_stored(store):
    # PostHog's serializer requires nothing: POST {} makes an unnamed action without steps (it matches every event).
    project = store.projects.create("P")
    action = store.actions.create(project.id, {})
    assert (action.name, list(action.steps), action.deleted) == (None, [], False)
    assert store.actions.revision(project.id) == 1
