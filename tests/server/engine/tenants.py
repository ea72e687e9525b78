"""What the multi-tenant materialization tests share: events of string properties captured into a project, the
questions a tenant asks about a key over HTTP (a count, a group-by, a trend with a filter and a breakdown), and
the oracles for their answers: pandas over the events as they were captured, and the same questions answered
from the JSON (materialization suspended in this process, or asked before any column existed in another).
Keys travel as HogQL placeholder values and filter JSON, so any text can be a key."""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pandas as pd

from hoglab.server.engine import materialized
from hoglab.server.ingest import Ingestor

__all__ = ["START", "Tenant", "wait_for"]

START = datetime(2025, 3, 1, tzinfo=UTC)


def wait_for(done: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    """Poll ``done`` until it holds (the background job works on its own clock)."""
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def events(rows: Sequence[Mapping[str, str]]) -> list[dict[str, Any]]:
    """One event per properties dict, a minute apart from ``START``."""
    return [{"event": "e", "distinct_id": f"d{i % 5}", "properties": dict(props),
             "timestamp": (START + timedelta(minutes=i)).isoformat()} for i, props in enumerate(rows)]  # fmt: skip


class Tenant:
    """A project, its captured events (``rows``: one properties dict per event) and what it asks over ``http``."""

    def __init__(self, http: httpx.Client, project_id: int, rows: Sequence[Mapping[str, str]]) -> None:
        self.http = http
        self.project_id = project_id
        self.rows = [dict(r) for r in rows]

    @classmethod
    def of(cls, project: Any, engine: Any, rows: Sequence[Mapping[str, str]]) -> Tenant:
        """A tenant of the session's service (``make_project``), its events stored through the capture path."""
        Ingestor.for_engine(engine).capture_batch(project.id, events(rows))
        return cls(project.http, project.id, rows)

    def post(self, query: dict[str, Any]) -> dict[str, Any]:
        body = {"query": query, "refresh": "force_blocking"}
        response = self.http.post(f"/api/projects/{self.project_id}/query/", json=body)
        assert response.status_code == 200, response.text
        answer: dict[str, Any] = response.json()
        return answer

    def heat(self, key: str, uses: int) -> None:
        """Read ``key`` ``uses`` times in one freshly compiled statement (each read counts as one use)."""
        reads = ", ".join(f"properties[{{k}}] as r{i}" for i in range(uses))
        self.post({"kind": "HogQLQuery", "query": f"select '{uuid.uuid4()}' as nonce, {reads} from events limit 1",
                   "values": {"k": key}})  # fmt: skip

    @staticmethod
    def questions(key: str, value: str) -> list[dict[str, Any]]:
        """A filter, a group-by and a trend (filter and breakdown) on ``key`` (no trend for the empty key or one
        over 400 characters: a property filter's key is 1 to 400 characters)."""
        return [
            {"kind": "HogQLQuery", "query": "select count() as c from events where properties[{k}] = {v}",
             "values": {"k": key, "v": value}},
            {"kind": "HogQLQuery", "query": "select properties[{k}] as p, count() as c from events group by p "
             "order by p nulls first", "values": {"k": key}},
            {"kind": "TrendsQuery", "dateRange": {"date_from": "2025-03-01", "date_to": "2025-03-03"},
             "series": [{"kind": "EventsNode", "event": "e", "properties": [
                 {"key": key, "value": value, "operator": "exact", "type": "event"}]}],
             "breakdownFilter": {"breakdown": key, "breakdown_type": "event"}},
        ][: 3 if 0 < len(key) <= 400 else 2]  # fmt: skip

    def answers(self, key: str, value: str) -> list[Any]:
        """The three answers (results; a trend's as ``(breakdown value, count)`` pairs) and the filter's SQL last."""
        results: list[Any] = []
        sql = None
        for question in self.questions(key, value):
            answer = self.post(question)
            if "columns" in answer:
                sql = sql or answer["clickhouse"]
                results.append(answer["results"])
            else:
                results.append(sorted((str(r["breakdown_value"]), r["count"]) for r in answer["results"]))
        return [*results, sql]

    def pandas(self, key: str, value: str) -> list[Any]:
        """What pandas says the three questions answer, from the captured events."""
        column = pd.Series([r.get(key) for r in self.rows], dtype=object)
        groups = column.value_counts(dropna=False)
        by_value = sorted(((None if pd.isna(v) else v, int(n)) for v, n in groups.items()),
                          key=lambda vn: (vn[0] is not None, vn[0] or ""))  # fmt: skip
        matching = int((column == value).sum())
        trend = [(value, matching)] if matching else []
        return [[[matching]], [list(vn) for vn in by_value], trend][: 3 if 0 < len(key) <= 400 else 2]

    def check(self, key: str, value: str, *, from_json: list[Any] | None = None) -> str:
        """Assert the answers about ``key`` equal pandas' and those read from the JSON (``from_json``: answers
        taken before any column existed; by default, asked again now with materialization suspended); returns the
        SQL of the filter, to see which column it read."""
        *fast, sql = self.answers(key, value)
        if from_json is None:
            with materialized.suspended():
                *from_json, json_sql = self.answers(key, value)
            assert "mat_" not in json_sql
        expected = self.pandas(key, value)
        assert fast == from_json[: len(fast)] == expected, (key, fast, from_json, expected)
        return str(sql)
