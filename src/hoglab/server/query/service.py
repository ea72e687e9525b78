"""The one query service: everything ``/query`` does between the HTTP view and the runners.

PostHog's ``QueryRunner.run`` is the model: the request is validated into a :class:`Prepared` query; its execution
mode decides between the cache, a blocking run and an async job; the kind's runner computes the answer through
a :class:`LimitedEngine`; every failure becomes PostHog's error body (:mod:`.failures`). The views in
``http/query.py`` only read the body, call this service and write its bytes.

    service = QueryService.of(state)
    status, body = service.run(project, {"query": {"kind": "HogQLQuery", "query": "select 1"}})
    status, body = service.status(project.id, query_id)     # an async query's query_status
    service.cancel(project.id, query_id)

Answers are bytes: a runner's rows (JSON straight from the engine) are spliced in unparsed (:mod:`.answers`).
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from hoglab.translate.budget import CompileBudget, action_allowance

from ..engine.base import EngineError, MemoryLimitExceeded, TooManyRows
from ..engine.limits import LimitedEngine, release_memory, statement_limits
from ..errors import InternalError, ResourceNotFound, ValidationFailed
from ..store.db import utcnow
from . import draft_sql as drafting
from .answers import answer_members, cache_members, dumps, join_members
from .cache import LAZY_TARGET_AGE, TARGET_AGE, QueryCache, data_version
from .failures import AnswerTooLarge, api_error, is_result_bytes_overflow
from .fairness import FairGate
from .jobs import QueryJobs
from .query_log import Reads, is_refusal, log_run, measured
from .request import ASYNC_MODES, Prepared, prepare, project_catalog, resolve
from .runners import RUNNERS, RunContext, has_person_overrides

if TYPE_CHECKING:
    from ..engine.base import Engine
    from ..state import ServiceState
    from ..store import ProjectRecord, Store

__all__ = ["QueryService", "compute"]

_QUERY_ID = re.compile(r"^[A-Za-z0-9_.:-]{1,200}$")


def compute(
    prepared: Prepared,
    *,
    project: ProjectRecord,
    engine: Engine,
    limits: Mapping[str, Any],
    tag: str,
    now: datetime,
    person_overrides: bool | None = None,
    cancelled: threading.Event | None = None,
    gate: FairGate | None = None,
    compile_budget: CompileBudget | None = None,
) -> bytes:
    """Run the query through its kind's runner; the answer's members (see :func:`.answers.answer_members`).

    Its statements compile under ``compile_budget``, one at a time for the project (``gate.compiling``), and run
    in the project's share of the memory budget; the answer bytes the engine produces are counted on the
    project's share of the answer memory until the answer is written (``engine/memory.py``). The compiler reads
    the engine's catalog with the project's actions the request was resolved with (``prepared.actions``).
    """
    with LimitedEngine(engine, limits, cancelled, project_id=int(project.id)) as view:
        if person_overrides is None:
            person_overrides = has_person_overrides(view, int(project.id))
        ctx = RunContext(
            project=project,
            engine=view,
            now=now,
            tag=tag,
            person_overrides=person_overrides,
            compile_budget=compile_budget,
            compile_slot=partial(gate.compiling, int(project.id)) if gate is not None else None,
            catalog=project_catalog(prepared.actions),
        )
        start = time.perf_counter()
        # The actions a query names are expanded by its runner before any statement compiles: bounded here.
        allowance = (compile_budget or CompileBudget()).max_action_filters
        with action_allowance(allowance):
            answer = RUNNERS[prepared.kind](prepared.query, ctx)
        return answer_members(answer, ctx.timings.to_list(time.perf_counter() - start))


class QueryService:
    """Validation, execution modes, the result cache and async jobs of the Query API, over one engine."""

    def __init__(
        self,
        engine: Engine,
        jobs: QueryJobs,
        cache: QueryCache,
        limits: Mapping[str, Any],
        store: Store | None = None,
        gate: FairGate | None = None,
        max_bulk_bytes: int = 0,
        compile_budget: CompileBudget | None = None,
    ) -> None:
        self.engine = engine
        self.jobs = jobs
        self.cache = cache
        self.limits = dict(limits)
        self.store = store
        self.gate = gate or FairGate(slots=1, max_waiting=0, timeout=0, enabled=False)
        self.max_bulk_bytes = max_bulk_bytes
        self.compile_budget = compile_budget or CompileBudget()

    @classmethod
    def of(cls, state: ServiceState) -> QueryService:
        """The service of a running app (a 500 while the engine is not open)."""
        if state.engine is None or state.query_jobs is None:
            raise InternalError("The query service is not running.")
        gate = FairGate.for_engine(state.engine, state.config)
        limits = statement_limits(state.config, getattr(state.engine, "memory", None))
        bulk = int(getattr(state.config, "max_bulk_bytes", 0))
        budget = CompileBudget.from_config(state.config)
        return cls(state.engine, state.query_jobs, state.query_cache, limits, state.store, gate, bulk, budget)

    # -- POST /query ----------------------------------------------------------------------------------------------

    def run(
        self, project: ProjectRecord, data: dict[str, Any], *, path_kind: str | None = None, key_id: int | None = None
    ) -> tuple[int, bytes]:
        """Answer one request body: ``(200, answer)``, or ``(202, query_status)`` while an async run goes on.
        ``key_id``: the caller's key, which gets its own share of the engine (``fairness.py``)."""
        prepared = prepare(data, team_id=project.id, timezone=project.timezone or "UTC", path_kind=path_kind)
        return self.answer(project, resolve(prepared, project, self.store), key_id=key_id)

    def answer(self, project: ProjectRecord, prepared: Prepared, *, key_id: int | None = None) -> tuple[int, bytes]:
        """PostHog's execution modes: a fresh cached answer when the mode allows it, else an async job or a
        blocking run whose answer is cached."""
        now = utcnow()
        try:
            version = data_version(self.engine)
        except EngineError as exc:
            raise api_error(exc) from None
        mode = prepared.mode
        forced = mode in ("force_blocking", "force_async")
        entry = None if forced else self.cache.get(prepared.cache_key, version=version)
        fresh_for = LAZY_TARGET_AGE if mode == "lazy_async" else TARGET_AGE
        if entry is not None and entry.age(now) < fresh_for:
            self._check_size(entry.body)  # the limit may have been lowered since it was stored
            return 200, join_members(entry.body, self._cache_fields(project, prepared, True, entry.last_refresh))
        if mode in ASYNC_MODES or (mode == "async_except_on_cache_miss" and entry is not None):
            return self._submit(project, prepared, key_id)
        with self.jobs.track(project.id, prepared.query_id) as tag:
            try:
                with self.gate.hold(project_id=project.id, key_id=key_id):
                    members = self._compute(project, prepared, tag=tag, version=version, now=now)
            except Exception as exc:
                raise api_error(exc) from None
        return 200, self._store(project, prepared, members, version=version)

    def _submit(self, project: ProjectRecord, prepared: Prepared, key_id: int | None) -> tuple[int, bytes]:
        def work(tag: str, cancelled: threading.Event) -> bytes:
            started = utcnow()
            at_version = data_version(self.engine)
            with self.gate.hold(project_id=project.id, key_id=key_id):
                members = self._compute(
                    project, prepared, tag=tag, version=at_version, now=started, cancelled=cancelled
                )
            return self._store(project, prepared, members, version=at_version)

        try:
            status = self.jobs.submit(project.id, prepared.query_id, work)
        except Exception as exc:
            raise api_error(exc) from None
        body = dumps({"cache_key": prepared.cache_key, "query_status": status})
        return (200 if status.get("complete") else 202), body

    def _compute(
        self,
        project: ProjectRecord,
        prepared: Prepared,
        *,
        tag: str,
        version: int,
        now: datetime,
        cancelled: threading.Event | None = None,
    ) -> bytes:
        overrides = self.cache.person_overrides(
            project.id, version, lambda: has_person_overrides(self.engine, project.id)
        )
        started, clock = time.time(), time.perf_counter()
        reads = Reads()
        try:
            with measured() as reads:
                members = compute(
                    prepared,
                    project=project,
                    engine=self.engine,
                    limits=self.limits,
                    tag=tag,
                    now=now,
                    person_overrides=overrides,
                    cancelled=cancelled,
                    gate=self.gate,
                    compile_budget=self.compile_budget,
                )
            self._check_size(members)
        except Exception as exc:
            failure: BaseException = exc
            if isinstance(exc, (TooManyRows, MemoryLimitExceeded)):
                release_memory(self.engine)  # the engine held a large partial result: give it back now
                if is_result_bytes_overflow(exc):
                    failure = AnswerTooLarge(self.limits.get("max_result_bytes"))
            log_run(project.id, prepared, started, clock, error=api_error(failure).detail,
                    before_start=is_refusal(failure), reads=reads)  # fmt: skip
            if failure is not exc:
                raise failure from None
            del failure  # no cycle through this frame: what the error references goes with it
            raise
        log_run(project.id, prepared, started, clock, result_bytes=len(members), reads=reads)
        return members

    def bulk_limits(self) -> dict[str, Any]:
        """The statement limits of an all-rows answer: ``max_bulk_bytes`` in place of ``max_result_bytes``."""
        limits = {k: v for k, v in self.limits.items() if k not in ("max_result_bytes", "result_overflow_mode")}
        if self.max_bulk_bytes:
            limits.update(max_result_bytes=self.max_bulk_bytes, result_overflow_mode="throw")
        return limits

    def _check_size(self, members: bytes) -> None:
        limit = self.limits.get("max_result_bytes") or 0
        if limit and len(members) > limit:
            release_memory(self.engine)
            raise AnswerTooLarge(limit)

    def _store(self, project: ProjectRecord, prepared: Prepared, members: bytes, *, version: int) -> bytes:
        done = utcnow()
        self.cache.put(prepared.cache_key, members, version=version, now=done)
        return join_members(members, self._cache_fields(project, prepared, False, done))

    @staticmethod
    def _cache_fields(project: ProjectRecord, prepared: Prepared, is_cached: bool, last_refresh: datetime) -> bytes:
        return cache_members(
            prepared,
            is_cached=is_cached,
            last_refresh=last_refresh,
            target_age=TARGET_AGE,
            timezone=project.timezone or "UTC",
        )

    # -- GET / DELETE /query/{id} ---------------------------------------------------------------------------------

    def status(self, team_id: int, query_id: str, *, progress: bool = False) -> tuple[int, bytes]:
        """An async query's ``{"query_status": ...}``: 202 running, 200 complete (``results`` is the whole
        answer), 400 failed with ``error_message``, 500 failed without one; 404 unknown or expired."""
        if not _QUERY_ID.match(query_id):
            raise _not_found(query_id, team_id)
        try:
            found = self.jobs.status(team_id, query_id, progress=progress)
        except EngineError as exc:
            raise api_error(exc) from None
        if found is None:
            raise _not_found(query_id, team_id)
        status, results = found
        status.pop("results", None)
        code = 202
        if status.get("error"):
            code = 400 if status.get("error_message") else 500
        elif status.get("complete"):
            code = 200
        inner = join_members(dumps(status)[1:-1], b'"results":' + (results if results is not None else b"null"))
        return code, b'{"query_status":' + inner + b"}"

    def cancel(self, team_id: int, query_id: str) -> None:
        """Dequeue a waiting query, kill a running one, drop a finished one's status; 404 for an unknown id."""
        if not _QUERY_ID.match(query_id) or not self.jobs.cancel(team_id, query_id):
            raise _not_found(query_id, team_id)

    # -- GET /query/draft_sql -------------------------------------------------------------------------------------

    def draft_sql(self, project: ProjectRecord, prompt: str | None) -> dict[str, str]:
        """A starter HogQL statement from the words of ``prompt`` and the project's own vocabulary."""
        if not prompt or not prompt.strip():
            raise ValidationFailed("This field is required.", attr="prompt", code="required")
        if len(prompt) > drafting.MAX_PROMPT_CHARS:
            raise ValidationFailed("This field is too long.", attr="prompt", code="too_long")
        try:
            vocabulary = drafting.project_vocabulary(self.engine, project)
        except Exception as exc:
            raise api_error(exc) from None
        return {"sql": drafting.draft_sql(prompt, vocabulary, team_id=project.id, timezone=project.timezone)}


def _not_found(query_id: str, team_id: int) -> ResourceNotFound:
    return ResourceNotFound(f"Query {query_id[:200]} not found for team {team_id}")
