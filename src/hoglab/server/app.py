"""The FastAPI app factory: routers, PostHog-shaped errors, OpenAPI at ``/api/schema/``, a lifespan that opens
the metadata store and the events engine (shared by every app of the process on the same data).

>>> from hoglab.server.config import ServerConfig
>>> app = create_app(ServerConfig(data_dir="/tmp/hoglab-doc"))
>>> app.state.hoglab.engine is None
True
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from pydantic.json_schema import models_json_schema

from hoglab import __version__
from hoglab.schema import ErrorBody

from . import demo
from .config import ServerConfig
from .experiments.event_samples import sample_event_properties
from .experiments.legacy import experiment_results
from .experiments.metric.timeseries import fail_orphans as fail_timeseries_orphans
from .flags.cohorts import calculate_quietly
from .http import load_routers
from .http.bodies import REQUEST_MODELS
from .http.errors import install_error_handlers
from .http.ratelimit import RateLimiter
from .http.redaction import install_key_redaction
from .state import ServiceState, StartupHook, get_state
from .store import Store

if TYPE_CHECKING:
    from .engine.base import Engine
    from .query.jobs import QueryJobs

__all__ = ["ServiceState", "StartupHook", "create_app", "get_state", "seed_demo_hook"]

log = logging.getLogger("hoglab.server")

OPENAPI_PATH = "/api/schema/"
_ERROR_STATUSES = {
    "400": "Invalid input: the body names the field in attr.",
    "401": "No key, or an unknown key.",
    "403": "The key lacks the scope, or access to the project.",
    "404": "No such project or object.",
    "429": "Rate limit hit; Retry-After says when to come back.",
}


def _close_ingestion(engine: Engine) -> None:
    # Capture requests still queued must reach the engine before it closes: they were (or will be) answered 200.
    from .ingest import Ingestor

    Ingestor.for_engine(engine).close()


def _configure_ingestion(state: ServiceState) -> None:
    from .ingest import Ingestor

    assert state.engine is not None
    Ingestor.for_engine(state.engine).slice_events = max(1, int(state.config.capture_slice_events))


def _start_query_jobs(state: ServiceState) -> QueryJobs:
    from .query.failures import describe_failure
    from .query.jobs import QueryJobs

    assert state.engine is not None
    jobs = QueryJobs(
        state.store.async_queries,
        state.engine,
        workers=state.config.query_workers,
        ttl_seconds=state.config.query_status_ttl_seconds,
        describe=describe_failure,
        project_quota=state.config.project_async_queue,
        fair=state.config.fair_share,
    )
    jobs.start()
    return jobs


@asynccontextmanager
async def _lifespan(app: FastAPI) -> AsyncIterator[None]:
    state: ServiceState = app.state.hoglab
    state.store.open()
    if state.engine is None:
        # The app owns its engine: opened here, in the serving process (chDB must never be forked after).
        from .engine import acquire_engine

        state.engine = acquire_engine(state.config)
        state.owns_engine = True
    try:
        _configure_ingestion(state)
        state.query_jobs = _start_query_jobs(state)
        fail_timeseries_orphans(state)
        if state.config.auto_materialize and state.owns_engine:
            from .engine.autoprops import AutoMaterializer

            job = AutoMaterializer(
                state.engine,
                interval=state.config.materialize_interval_seconds,
                min_uses=state.config.materialize_min_uses,
                max_columns=state.config.materialize_max_columns,
                project_columns=state.config.materialize_project_columns,
            )
            job.start()
            state.extras["auto_materializer"] = job
        for hook in state.startup_hooks:
            try:
                hook(state)
            except Exception:
                # A failed optional step (demo data) must not take the whole service down; say so loudly.
                log.exception("startup step %s failed; the service runs without it", getattr(hook, "__name__", hook))
        yield
    finally:
        # Async queries stop first (their statuses are written, their engine queries killed), then the rest.
        if state.query_jobs is not None:
            state.query_jobs.close()
            state.query_jobs = None
        if (job := state.extras.pop("auto_materializer", None)) is not None:
            job.close()
        state.store.close()
        if state.owns_engine and state.engine is not None:
            from .engine import release_engine

            release_engine(state.engine, before_close=_close_ingestion)
            state.engine = None
            state.owns_engine = False


def create_app(
    config: ServerConfig, *, engine: Engine | None = None, startup_hooks: Sequence[StartupHook] = ()
) -> FastAPI:
    """The service over ``config.data_dir``. Serve it with uvicorn in one process (chDB can't be forked).

    ``engine``: the events engine to use, owned by the caller (it is not closed with the app).
    ``startup_hooks``: run in order when the app starts, after the store is open.
    """
    install_key_redaction()  # before uvicorn logs its first request line
    app = FastAPI(
        title="hoglab",
        version=__version__,
        description="PostHog's Experiments and Query API over events in chDB or ClickHouse.",
        lifespan=_lifespan,
        openapi_url="/openapi.json",
        generate_unique_id_function=lambda route: route.name,
    )
    app.state.hoglab = ServiceState(
        config=config,
        store=Store(config.data_dir),
        limiter=RateLimiter.from_config(config),
        engine=engine,
        startup_hooks=tuple(startup_hooks),
        # Event-backed parts of the experiments API: they read the engine, so they answer only once it runs.
        sample_event_properties=sample_event_properties,
        calculate_cohort=calculate_quietly,
        experiment_results=experiment_results,
    )
    install_error_handlers(app)
    for router in load_routers():
        app.include_router(router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = _complete_openapi(FastAPI.openapi(app))
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]

    @app.get(OPENAPI_PATH, include_in_schema=False)
    @app.get(OPENAPI_PATH.rstrip("/"), include_in_schema=False)
    def openapi_document() -> JSONResponse:
        return JSONResponse(app.openapi())

    return app


def seed_demo_hook(
    project_id: int, on_load: Callable[[], None] | None = None, *, history: bool = True
) -> StartupHook:
    """A startup hook filling the demo project with :func:`hoglab.server.demo.seed` (events and experiment, once,
    and the history of past experiments with ``history``); ``on_load`` is called when the events are about to be
    loaded (a first start)."""

    def seed_demo(state: ServiceState) -> None:
        project = state.store.projects.get(project_id)
        if project is not None:
            demo.seed(state, project, on_load=on_load, history=history)

    return seed_demo


def _complete_openapi(document: dict[str, Any]) -> dict[str, Any]:
    """Add what FastAPI can't infer: bodies read by the routes themselves, PostHog's error answers, the key."""
    components = document.setdefault("components", {})
    schemas = components.setdefault("schemas", {})
    if REQUEST_MODELS:
        _, definitions = models_json_schema(
            [(model, "validation") for model in REQUEST_MODELS.values()],
            ref_template="#/components/schemas/{model}",
        )
        for name, schema in definitions.get("$defs", {}).items():
            schemas.setdefault(name, schema)
    schemas.setdefault("ErrorBody", ErrorBody.model_json_schema(ref_template="#/components/schemas/{model}"))
    for name in ("HTTPValidationError", "ValidationError"):
        schemas.pop(name, None)
    components["securitySchemes"] = {
        "PersonalAPIKey": {"type": "http", "scheme": "bearer", "description": "A personal API key, phx_..."}
    }
    document["security"] = [{"PersonalAPIKey": []}]
    error_ref = {"$ref": "#/components/schemas/ErrorBody"}
    for path_item in document.get("paths", {}).values():
        for operation in path_item.values():
            responses = operation.setdefault("responses", {})
            responses.pop("422", None)
            for status, description in _ERROR_STATUSES.items():
                responses.setdefault(
                    status, {"description": description, "content": {"application/json": {"schema": error_ref}}}
                )
    return document
