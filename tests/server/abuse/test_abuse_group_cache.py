"""Abuse: a public token cannot grow the service's group cache without bound (issue 35, F2). ``$groupidentify``
of tens of thousands of distinct groups with 2 KB of properties each keeps the serving process's memory within
the cache's bound (a 64th of the memory budget), and a group the cache forgot is read again, whole, when it is
next named. Against ``hoglab serve`` in a subprocess: the proof is its own Python heap (tracemalloc), where the
cache lives; the process's resident size also holds the engine's, which moves by tens of MiB with the inserts
themselves (25-70 MiB measured for the same run), as much as the unbounded cache would have added."""

from __future__ import annotations

from pathlib import Path

import pytest

from hoglab.server.store import Store
from served import ServedProcess

GROUPS = 16_000
BATCH = 1_000
PADDING = 4_000


@pytest.mark.slow
def test_many_identified_groups_keep_the_cache_within_its_bound(tmp_path: Path) -> None:
    with ServedProcess(tmp_path / "data", "--memory-budget", "512MiB", python_heap=True) as served:  # cache: 8 MiB
        project = served.project("a")
        with Store.open_at(served.data_dir) as store:
            record = store.projects.get(project.id)
            assert record is not None
            token = record.api_token
        padding = "x" * PADDING

        def identify(first: int) -> None:
            batch = [{"event": "$groupidentify", "distinct_id": "u", "properties": {
                "$group_type": "company", "$group_key": f"g{i}", "$group_set": {"pad": padding, "n": i}}}
                for i in range(first, first + BATCH)]  # fmt: skip
            answer = project.http.post("/batch/", json={"api_key": token, "batch": batch})
            assert answer.status_code == 200, answer.text

        for first in range(0, GROUPS // 2, BATCH):  # the cache fills up (and the engine's own caches)
            identify(first)
        half = served.python_heap()
        for first in range(GROUPS // 2, GROUPS, BATCH):
            identify(first)
        grown = served.python_heap() - half
        # Flat once full (measured: +0.01 MiB); unbounded, the cache held every group, +40 MiB for the second 8,000
        # (the red team's 168,000 of 2 KB: +537 MiB of resident memory).
        assert grown < 12 * 1024**2, grown / 1024**2

        # The first groups were forgotten long ago: named again, they are read whole and merged into.
        group = {"$group_type": "company", "$group_key": "g1", "$group_set": {"plan": "pro"}}
        update = {"event": "$groupidentify", "distinct_id": "u", "properties": group}
        assert project.http.post("/batch/", json={"api_key": token, "batch": [update]}).status_code == 200
        found = project.http.get(f"/api/projects/{project.id}/groups/find/",
                                 params={"group_type_index": 0, "group_key": "g1"})  # fmt: skip
        assert found.status_code == 200, found.text
        assert found.json()["group_properties"] == {"pad": padding, "n": 1, "plan": "pro"}
        count = project.query("select count() from groups").json()["results"]
        assert count == [[GROUPS]]
