"""A mock PostHog Cloud project served over real HTTP on 127.0.0.1, for ``hoglab pull`` to read, and to misbehave.

The remote is mocked because it is remote: hoglab's own service is never mocked (the pull writes into the session's
real service). The mock answers what ``hoglab pull`` asks PostHog Cloud, in PostHog's shapes (its good answers
validate against PostHog's published OpenAPI document: see ``test_pull_faults.py``):

* ``GET /api/projects/:id/`` (the project: name, ``timezone``),
* ``GET /api/projects/:id/feature_flags/``, ``/cohorts/``, ``/experiments/?archived=``,
  ``/experiment_holdouts/``, ``/experiment_saved_metrics/`` (paginated listings; this project has no holdout or
  saved metric: ``tests/pulling/test_pull_experiment_objects.py`` pulls those), ``/actions/`` (PostHog's server
  answers ``{"results": [...]}`` alone there),
* ``POST /api/projects/:id/query/`` with a ``HogQLQuery``: the events count, events pages on the keyset
  ``(timestamp, uuid)``, persons and distinct ids pages, read from the SQL and its ``values`` as PostHog would run
  them, answered as ``HogQLQueryResponse``.

:meth:`CloudRemote.fault` makes one endpoint misbehave: its JSON answer transformed, or raw bytes, a status, a
redirect, a connection dropped mid-body or a body dripped a byte at a time.
"""

from __future__ import annotations

import copy
import json
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

KEY = "phx_cloud_mock_key"
START = datetime(2026, 1, 5, 9, 0, tzinfo=UTC)
USER = {"id": 1, "uuid": "0190b2a4-0000-7000-8000-000000000001", "distinct_id": "owner", "first_name": "Ada",
        "last_name": "", "email": "ada@example.com", "is_email_verified": True, "hedgehog_config": None,
        "role_at_organization": None}  # fmt: skip
_VALUE = re.compile(r"\{(\w+)\}")


def _stamp(moment: datetime) -> str:
    """A timestamp as PostHog's HogQL JSON writes it."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace(" ", "T")).replace(tzinfo=UTC)


@dataclass
class Fault:
    """How one endpoint misbehaves. ``label`` is ``project``, ``feature_flags``, ``cohorts``, ``experiments``,
    ``experiment_holdouts``, ``experiment_saved_metrics``,
    ``count``, ``events``, ``persons`` or ``distinct_ids``; ``page`` the events page it hits (1 first)."""

    label: str
    transform: Callable[[Any], Any] | None = None  # the good JSON answer -> what is sent (as JSON)
    raw: bytes | None = None
    status: int = 200
    content_type: str = "application/json"
    redirect: str | None = None  # a Location to answer 302 with
    drop_after: int | None = None  # bytes sent before the connection is closed (Content-Length says more)
    drip: float | None = None  # seconds between single bytes of the body
    headers: dict[str, str] = field(default_factory=dict)
    page: int = 1
    hits: int = 0


@dataclass
class CloudRemote:
    """One PostHog Cloud project with events, persons, a flag, a cohort and an experiment."""

    project_id: int = 4242
    events_count: int = 60
    timezone: str = "Europe/Berlin"
    name: str = field(default_factory=lambda: f"Cloud shop {uuid.uuid4().hex[:8]}")
    faults: list[Fault] = field(default_factory=list)
    requests: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.persons = [{"id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.name}/p{i}")),
                         "created_at": _stamp(START - timedelta(days=3, minutes=i)),
                         "properties": json.dumps({"email": f"p{i}@example.com", "plan": ("free", "pro")[i % 2]}),
                         "is_identified": i % 3 == 0} for i in range(12)]  # fmt: skip
        self.distinct_ids = [{"distinct_id": f"d{i}", "person_id": self.persons[i % 12]["id"]} for i in range(15)]
        self.events = [self._event(i) for i in range(self.events_count)]
        self.flags = [self._flag()]
        self.cohorts = [self._cohort()]
        self.experiments = [self._experiment()]
        self.actions = [self._action()]
        self.stop = threading.Event()

    # -- the data ------------------------------------------------------------------------------------------------

    def _event(self, i: int) -> dict[str, Any]:
        steps = ("$pageview", "$pageview", "signup", "purchase")
        return {
            "uuid": str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.name}/e{i}")),
            "event": steps[i % 4],
            "distinct_id": f"d{i % 15}",
            "person_id": self.persons[(i % 15) % 12]["id"],
            "timestamp": START + timedelta(minutes=7 * i, microseconds=i),
            "properties": json.dumps({"$browser": ("Chrome", "Firefox")[i % 2], "price": i % 9}),
            "elements_chain": "",
            "created_at": _stamp(START + timedelta(minutes=7 * i, seconds=2)),
        }

    def _flag(self) -> dict[str, Any]:
        filters = {"groups": [{"properties": [{"key": "email", "type": "person", "operator": "regex",
                                               "value": "@example\\.com$"}], "rollout_percentage": 50}],
                   "multivariate": None, "payloads": {}}  # fmt: skip
        return {"id": 11, "name": "Beta users", "key": "beta", "filters": filters, "deleted": False, "active": True,
                "created_by": USER, "created_at": _stamp(START), "updated_at": _stamp(START), "version": 3,
                "last_modified_by": USER, "is_simple_flag": False, "rollout_percentage": None,
                "ensure_experience_continuity": False, "experiment_set": "", "surveys": {}, "features": {},
                "can_edit": True, "tags": [], "usage_dashboard": 7, "user_access_level": "editor",
                "status": "ACTIVE", "evaluation_runtime": "all"}  # fmt: skip

    def _cohort(self) -> dict[str, Any]:
        filters = {"properties": {"type": "OR", "values": [{"type": "AND", "values": [
            {"key": "purchase", "type": "behavioral", "value": "performed_event", "negation": False,
             "event_type": "events", "time_value": 30, "time_interval": "day"}]}]}}  # fmt: skip
        return {"id": 21, "name": "Buyers", "description": "bought in 30 days", "groups": [], "deleted": False,
                "filters": filters, "query": None, "is_calculating": False, "created_by": USER,
                "created_at": _stamp(START), "last_calculation": _stamp(START), "errors_calculating": 0,
                "count": 4, "is_static": False, "experiment_set": []}  # fmt: skip

    def _action(self) -> dict[str, Any]:
        step = {"event": "$pageview", "properties": None, "selector": None, "tag_name": None, "text": None,
                "text_matching": None, "href": None, "href_matching": None, "url": "/checkout",
                "url_matching": "contains"}  # fmt: skip
        return {"id": 51, "name": "Viewed checkout", "description": "", "tags": [], "post_to_slack": False,
                "slack_message_format": "", "steps": [step], "created_at": _stamp(START), "created_by": USER,
                "deleted": False, "is_calculating": False, "last_calculated_at": _stamp(START),
                "team_id": self.project_id, "is_action": True, "bytecode_error": None, "pinned_at": None,
                "creation_context": None, "user_access_level": "editor"}  # fmt: skip

    def _experiment(self) -> dict[str, Any]:
        variants = [{"key": "control", "rollout_percentage": 50}, {"key": "test", "rollout_percentage": 50}]
        flag = {"id": 12, "team_id": self.project_id, "name": "Checkout", "key": "checkout-exp",
                "filters": {"groups": [{"properties": [], "rollout_percentage": 100}],
                            "multivariate": {"variants": variants}}, "deleted": False, "active": True,
                "ensure_experience_continuity": False, "has_encrypted_payloads": False, "version": 1,
                "evaluation_tags": []}  # fmt: skip
        holdout = {"id": 41, "name": "5% holdout", "description": None, "created_by": USER,
                   "filters": [{"properties": [], "rollout_percentage": 5, "variant": "holdout-41"}],
                   "created_at": _stamp(START), "updated_at": _stamp(START)}  # fmt: skip
        return {"id": 31, "name": "Checkout", "description": "", "start_date": _stamp(START),
                "end_date": None, "feature_flag_key": "checkout-exp", "feature_flag": flag, "holdout": holdout,
                "holdout_id": 41, "exposure_cohort": None, "parameters": {"feature_flag_variants": variants},
                "secondary_metrics": [], "saved_metrics": [],
                "filters": {"insight": "FUNNELS", "events": [{"id": "$pageview", "order": 0},
                                                             {"id": "purchase", "order": 1}]},
                "archived": False, "deleted": False, "created_by": USER, "created_at": _stamp(START),
                "updated_at": _stamp(START), "type": "product", "metrics": [], "metrics_secondary": [],
                "user_access_level": "editor"}  # fmt: skip

    def project(self) -> dict[str, Any]:
        return {"id": self.project_id, "uuid": "0190b2a4-0000-7000-8000-00000000aaaa", "organization":
                "0190b2a4-0000-7000-8000-00000000bbbb", "api_token": "phc_cloudmock", "name": self.name,
                "created_at": _stamp(START - timedelta(days=90)), "updated_at": _stamp(START),
                "effective_membership_level": 8, "has_group_types": False, "group_types": [],
                "live_events_token": None, "secret_api_token": None, "secret_api_token_backup": None,
                # typed as text in PostHog's OpenAPI document (method fields), so given as text here
                "default_modifiers": "{}", "person_on_events_querying_enabled": "true", "product_intents": "[]",
                "ingested_event": True, "timezone": self.timezone, "is_demo": False}  # fmt: skip

    # -- answers -------------------------------------------------------------------------------------------------

    def query_answer(self, sql: str, values: dict[str, Any]) -> tuple[str, dict[str, Any], int]:
        """``(label, answer, page)`` for a HogQL statement the pull sends."""
        limit = int(re.search(r"LIMIT (\d+)", sql)[1]) if "LIMIT" in sql else 100  # type: ignore[index]
        if "count()" in sql:
            since = _parse(values["since"])
            rows = [[sum(1 for e in self.events if e["timestamp"] >= since)]]
            return "count", self._hogql(sql, values, ["n"], [("n", "UInt64")], rows), 1
        if "FROM events" in sql:
            since, after, after_uuid = _parse(values["since"]), _parse(values["after"]), values["after_uuid"]
            chosen = sorted((e for e in self.events if e["timestamp"] >= since
                             and (e["timestamp"], e["uuid"]) > (after, after_uuid)),
                            key=lambda e: (e["timestamp"], e["uuid"]))[:limit]  # fmt: skip
            page = 1 + sum(1 for e in self.events if (e["timestamp"], e["uuid"]) <= (after, after_uuid)) // limit
            columns = ["uuid", "event", "distinct_id", "person_id", "timestamp", "properties", "elements_chain",
                       "created_at"]  # fmt: skip
            types = [("uuid", "String"), ("event", "String"), ("distinct_id", "String"), ("person_id", "String"),
                     ("timestamp", "DateTime64(6, 'UTC')"), ("properties", "String"), ("elements_chain", "String"),
                     ("created_at", "DateTime64(6, 'UTC')")]  # fmt: skip
            rows = [[e[c] if c != "timestamp" else _stamp(e[c]) for c in columns] for e in chosen]
            return "events", self._hogql(sql, values, columns, types, rows), page
        if "FROM persons" in sql:
            chosen = sorted((p for p in self.persons if p["id"] > values["after"]), key=lambda p: p["id"])[:limit]
            columns = ["id", "created_at", "properties", "is_identified"]
            types = [("id", "String"), ("created_at", "DateTime64(3, 'UTC')"), ("properties", "String"),
                     ("is_identified", "Bool")]  # fmt: skip
            return "persons", self._hogql(sql, values, columns, types, [[p[c] for c in columns] for p in chosen]), 1
        chosen = sorted((d for d in self.distinct_ids if d["distinct_id"] > values["after"]),
                        key=lambda d: d["distinct_id"])[:limit]  # fmt: skip
        columns = ["distinct_id", "person_id"]
        rows = [[d[c] for c in columns] for d in chosen]
        return "distinct_ids", self._hogql(sql, values, columns, [("distinct_id", "String"),
                                                                  ("person_id", "String")], rows), 1  # fmt: skip

    def _hogql(self, sql: str, values: dict[str, Any], columns: list[str], types: list[tuple[str, str]],
               rows: list[list[Any]]) -> dict[str, Any]:  # fmt: skip
        printed = _VALUE.sub(lambda m: repr(values.get(m[1])), sql)
        return {"clickhouse": f"/* mock */ {printed}", "columns": columns, "error": None, "hasMore": False,
                "hogql": printed, "limit": 10_000, "modifiers": {}, "offset": 0, "query": sql, "results": rows,
                "timings": [{"k": "./execute", "t": 0.01}], "types": [list(t) for t in types]}  # fmt: skip

    @staticmethod
    def listing(items: list[dict[str, Any]]) -> dict[str, Any]:
        return {"count": len(items), "next": None, "previous": None, "results": copy.deepcopy(items)}

    def answer(self, method: str, path: str, query: dict[str, list[str]], body: Any) -> tuple[str, Any, int]:
        """``(label, answer, page)`` of a request, or ``("", error body, 404)``."""
        base = f"/api/projects/{self.project_id}/"
        if method == "GET" and path == base:
            return "project", self.project(), 1
        if method == "GET" and path == f"/api/environments/{self.project_id}/":
            return "environment", self.project(), 1
        if method == "GET" and path == base + "feature_flags/":
            return "feature_flags", self.listing(self.flags), 1
        if method == "GET" and path == base + "cohorts/":
            return "cohorts", self.listing(self.cohorts), 1
        if method == "GET" and path in (base + "experiment_holdouts/", base + "experiment_saved_metrics/"):
            return path[len(base):-1], self.listing([]), 1
        if method == "GET" and path == base + "actions/":
            return "actions", {"results": copy.deepcopy(self.actions)}, 1
        if method == "GET" and path == base + "experiments/":
            archived = query.get("archived", ["false"])[0] == "true"
            return "experiments", self.listing([e for e in self.experiments if e["archived"] == archived]), 1
        if method == "POST" and path == base + "query/":
            return self.query_answer(body["query"]["query"], body["query"].get("values") or {})
        return "", {"type": "invalid_request", "code": "not_found", "detail": "Not found.", "attr": None}, 404

    def fault(self, label: str, **how: Any) -> Fault:
        """Make ``label``'s answer misbehave (see :class:`Fault`); returns it (``hits`` counts its use)."""
        made = Fault(label, **how)
        self.faults.append(made)
        return made

    # -- serving -------------------------------------------------------------------------------------------------

    def serve(self) -> Iterator[str]:
        """Serve on 127.0.0.1 until the generator is closed; yields the base URL."""
        remote = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._handle("GET")

            def do_POST(self) -> None:
                self._handle("POST")

            def _send(self, status: int, payload: bytes, content_type: str, extra: dict[str, str] | None = None,
                      length: int | None = None) -> None:  # fmt: skip
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(payload) if length is None else length))
                for name, value in (extra or {}).items():
                    self.send_header(name, value)
                self.end_headers()

            def _handle(self, method: str) -> None:
                split = urlsplit(self.path)
                remote.requests.append(f"{method} {split.path}")
                size = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(size)) if size else None
                if self.headers.get("Authorization") != f"Bearer {KEY}":
                    payload = json.dumps({"type": "authentication_error", "code": "authentication_failed",
                                          "detail": "Invalid API key.", "attr": None}).encode()  # fmt: skip
                    self._send(401, payload, "application/json")
                    self.wfile.write(payload)
                    return
                label, answer, page = remote.answer(method, split.path, parse_qs(split.query), body)
                fault = next((f for f in remote.faults if f.label == label and f.page == page), None)
                if fault is None:
                    status = 404 if not label else 200
                    payload = json.dumps(answer).encode()
                    self._send(status, payload, "application/json")
                    self.wfile.write(payload)
                    return
                fault.hits += 1
                self._misbehave(fault, answer)

            def _misbehave(self, fault: Fault, answer: Any) -> None:
                if fault.redirect is not None:
                    self._send(302, b"", "text/plain", {"Location": fault.redirect})
                    return
                payload = fault.raw if fault.raw is not None else json.dumps(
                    fault.transform(copy.deepcopy(answer)) if fault.transform else answer).encode()  # fmt: skip
                if fault.drip is not None:
                    self._send(fault.status, payload, fault.content_type)
                    for byte in payload:
                        if remote.stop.wait(fault.drip):
                            return
                        try:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        except OSError:  # the pull gave up on us: what the drip test wants
                            return
                    return
                if fault.drop_after is not None:
                    self._send(fault.status, payload, fault.content_type, length=len(payload))
                    self.wfile.write(payload[: fault.drop_after])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self._send(fault.status, payload, fault.content_type, fault.headers)
                self.wfile.write(payload)

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, name="cloud-mock", daemon=True)
        thread.start()
        try:
            yield f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            self.stop.set()
            server.shutdown()
            server.server_close()
            thread.join(5)


def wait_for(predicate: Callable[[], bool], seconds: float = 5.0) -> bool:
    """Whether ``predicate`` holds within ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()
