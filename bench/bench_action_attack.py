"""Another project's latency while one project attacks with actions (issue 35, F3).

    python bench/bench_action_attack.py [--probes 60] [--attackers 2] [--seconds 30]

Runs ``hoglab serve`` in a subprocess on a fresh data dir with two projects. The victim times ``--probes`` small
queries (a ``TrendsQuery`` of its own action, ``refresh: force_blocking``), one every 100 ms: first alone (the
baseline, same run), then while ``--attackers`` threads of the attacker post, back to back, what the red team
posted: an action of 100 steps × 100 property filters, a ``FunnelsQuery`` of 20 ``ActionsNode`` steps of its
biggest storable action, and HogQL of many ``matchesAction()`` of it. Prints the victim's p50 / p99 / max alone
and under attack, their ratio to the baseline's p50, and what the attacker's requests got (statuses, seconds).
Before issue 35 the red team measured the victim going from 0.01 s to 1.17 s; the bound is p99 <= 0.5 s.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx
from bench_capture_fairness import Served  # (this script runs from bench/)
from bench_fairness import percentile

from hoglab.server.store import Store


def _step(filters: int) -> dict[str, Any]:
    return {"event": "purchase", "properties": [{"key": f"p{i}", "value": f"v{i}", "operator": "exact",
                                                 "type": "event"} for i in range(filters)]}  # fmt: skip


def _client(url: str, key: str) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=300)


def _probe(http: httpx.Client, project: int, action: int) -> float:
    body = {"query": {"kind": "TrendsQuery", "series": [{"kind": "ActionsNode", "id": action}]},
            "refresh": "force_blocking"}  # fmt: skip
    start = time.perf_counter()
    answer = http.post(f"/api/projects/{project}/query/", json=body)
    assert answer.status_code == 200, answer.text[:300]
    return time.perf_counter() - start


def _probes(http: httpx.Client, project: int, action: int, count: int) -> list[float]:
    times = []
    for _ in range(count):
        times.append(_probe(http, project, action))
        time.sleep(0.1)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probes", type=int, default=60)
    parser.add_argument("--attackers", type=int, default=2)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "data"
        with Store.open_at(data) as store:
            user = store.users.default().id
            victim, attacker = store.projects.create("victim"), store.projects.create("attacker")
            _, victim_key = store.keys.create(user, ["*"], [victim.id])
            _, attacker_key = store.keys.create(user, ["*"], [attacker.id])
        served = Served(data, 5_000)
        try:
            v, a = _client(served.url, victim_key), _client(served.url, attacker_key)
            own = v.post(f"/api/projects/{victim.id}/actions/", json={"name": "buy", "steps": [{"event": "purchase"}]})
            biggest = a.post(f"/api/projects/{attacker.id}/actions/", json={"name": "big", "steps": [_step(49)] * 4})
            assert own.status_code == 201 and biggest.status_code == 201, (own.text, biggest.text)
            action, big = own.json()["id"], biggest.json()["id"]
            _probes(v, victim.id, action, 5)  # warm-up
            alone = _probes(v, victim.id, action, args.probes)

            got: Counter[tuple[str, int]] = Counter()
            slowest: dict[str, float] = {}
            stop = threading.Event()
            matches = " or ".join([f"matchesAction({big})"] * 20)
            funnel = {"kind": "FunnelsQuery", "series": [{"kind": "ActionsNode", "id": big}] * 20}
            hogql = {"kind": "HogQLQuery", "query": f"select count() from events where {matches}"}
            attacks = [
                ("action 100x100", "actions/", {"name": "huge", "steps": [_step(100)] * 100}),
                ("funnel of 20 actions", "query/", {"query": funnel, "refresh": "force_blocking"}),
                ("hogql matchesAction x20", "query/", {"query": hogql, "refresh": "force_blocking"}),
            ]

            def attack(n: int) -> None:
                http = _client(served.url, attacker_key)
                i = n
                while not stop.is_set():
                    name, path, body = attacks[i % len(attacks)]
                    start = time.perf_counter()
                    status = http.post(f"/api/projects/{attacker.id}/{path}", json=body).status_code
                    slowest[name] = max(slowest.get(name, 0.0), time.perf_counter() - start)
                    got[(name, status)] += 1
                    i += 1

            threads = [threading.Thread(target=attack, args=(n,)) for n in range(args.attackers)]
            for thread in threads:
                thread.start()
            time.sleep(1)
            loaded = _probes(v, victim.id, action, args.probes)
            stop.set()
            for thread in threads:
                thread.join()
        finally:
            served.stop()
    base = percentile(alone, 0.5)
    for label, times in (("alone", alone), ("under attack", loaded)):
        p50, p99 = percentile(times, 0.5), percentile(times, 0.99)
        print(f"victim {label:13} p50 {p50:.3f} s  p99 {p99:.3f} s  max {max(times):.3f} s   "
              f"x{p50 / base:.2f} / x{p99 / base:.2f} of the baseline p50")
    for (name, status), count in sorted(got.items()):
        print(f"attacker {name:26} {status}: {count} requests, slowest {slowest[name]:.2f} s")


if __name__ == "__main__":
    main()
