"""Eight threads creating and updating experiments at once over HTTP: nothing is lost, nothing is doubled."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

THREADS = 8
PER_THREAD = 6


def test_eight_writers_lose_nothing(make_project):
    project = make_project()
    base = f"/api/projects/{project.id}/experiments/"
    clients = [project.client(project.key) for _ in range(THREADS)]

    def work(worker: int) -> list[tuple[int, str]]:
        client = clients[worker]
        done: list[tuple[int, str]] = []
        for i in range(PER_THREAD):
            created = client.post(base, json={"name": f"w{worker}-{i}", "feature_flag_key": f"w{worker}-{i}"})
            assert created.status_code == 201, created.text
            experiment_id = created.json()["id"]
            for round_ in range(3):
                name = f"w{worker}-{i}-r{round_}"
                patched = client.patch(f"{base}{experiment_id}/", json={"name": name, "archived": round_ == 2})
                assert patched.status_code == 200, patched.text
            done.append((experiment_id, name))
        # Everyone also fights over one key: exactly one of the eight may win it.
        contested = client.post(base, json={"name": f"contest {worker}", "feature_flag_key": "contested"})
        assert contested.status_code in (201, 400), contested.text
        return done

    with ThreadPoolExecutor(THREADS) as pool:
        results = [item for batch in pool.map(work, range(THREADS)) for item in batch]

    assert len(results) == THREADS * PER_THREAD
    assert len({experiment_id for experiment_id, _ in results}) == THREADS * PER_THREAD
    listed = project.http.get(base, params={"archived": "true", "limit": 1000}).json()
    assert listed["count"] == THREADS * PER_THREAD
    assert {(e["id"], e["name"]) for e in listed["results"]} == set(results)
    live = project.http.get(base).json()["results"]
    assert [e["feature_flag_key"] for e in live] == ["contested"]
    flags = project.service.state.store.flags.list(project.id)
    assert len(flags) == THREADS * PER_THREAD + 1
