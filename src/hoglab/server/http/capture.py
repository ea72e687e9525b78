"""The capture API PostHog's SDKs speak: ``POST /batch/``, ``/capture/``, ``/e/``, ``/i/v0/e/``.

Authenticated by the project API key (``phc_...``) found in the body, the query string or the first event
(``ingest/payload.py``). A request that cannot be read (not JSON, no events, over 20 MB) is a 400/413
``{type, code, detail, attr}`` and stores nothing; a missing or unknown key is a 401 with PostHog's wording.

Otherwise every good event is stored, and each bad one is dropped, or repaired as PostHog repairs it (a time it
cannot use becomes the capture time), with an ingestion warning the project can read (``ingest/warnings.py``).
The answer, once the events and warnings are stored (the group-commit writer, ``ingest/writer.py``), is PostHog's
``{"status": 1}`` (what its SDKs check: a 200) with how many events were kept and dropped:
``{"status": 1, "kept": 9, "dropped": 1, "repaired": 0, "problems": [{"index": 3, "result": "drop",
"type": "missing_distinct_id", "attr": "batch__3__distinct_id", "detail": "..."}]}`` (the first 20 problems).

Mount with ``app.include_router(capture.router)``. It reads ``request.app.state.hoglab``: ``.engine``, and
``.store.projects.get_by_token(token)`` (a record with ``.id``, or ``None``); ``.ingestor`` if the app made one,
else the engine's shared :class:`~hoglab.server.ingest.Ingestor`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, ClassVar, Concatenate, ParamSpec, TypeVar

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from hoglab.schema import ErrorType

from ..errors import APIException, AuthenticationFailed, NotAuthenticated, Throttled, ValidationFailed
from ..ingest import IngestError, Ingestor, Payload, Triage, decode_payload, triage_batch
from ..ingest.budget import DEFAULT_MAX_EVENTS, CaptureCharge, check_event_count, events_cost
from ..store import ProjectRecord, Store

__all__ = ["CAPTURE_PATHS", "KEY_HELP", "cors_headers", "decode_request", "preflight", "project_for_key", "router",
           "run_with_cors"]  # fmt: skip

CAPTURE_PATHS = ("/batch", "/capture", "/e", "/i/v0/e")
KEY_HELP = "You can find your project API key in PostHog project settings."

P = ParamSpec("P")
T = TypeVar("T")

router = APIRouter(tags=["capture"])


class PayloadTooLarge(APIException):
    status_code = 413
    error_type: ClassVar[ErrorType] = "invalid_request"
    default_code = "payload_too_large"
    default_detail = "Request body too large."


def cors_headers(request: Request) -> dict[str, str]:
    """The CORS headers of an SDK answer (capture, flags): browser SDKs (posthog-js) post from the site's origin."""
    origin = request.headers.get("origin")
    headers = {"Access-Control-Allow-Origin": origin or "*"}
    if origin:
        headers["Access-Control-Allow-Credentials"] = "true"
        headers["Vary"] = "Origin"
    return headers


def ingest_failure(exc: IngestError) -> APIException:
    """The HTTP error of a capture request refused whole: 413 for one too big (bytes, events, memory), 429 while
    the memory budget's share is held by other requests (``ingest/budget.py``), else a 400 naming the part."""
    if exc.code == "payload_too_large":
        return PayloadTooLarge(exc.detail, attr=exc.attr)
    if exc.code == "throttled":
        return Throttled(1, exc.detail)
    return ValidationFailed(exc.detail, code=exc.code, attr=exc.attr)


def decode_request(
    request: Request, body: bytes, *, malformed_code: str | None = None, charge: CaptureCharge | None = None
) -> Payload:
    """The request's SDK payload (``ingest/payload.py``: JSON, gzip, form ``data=``, the key wherever it is sent).

    A body over the limit is a 413; any other failure a 400 with the decoder's code and ``attr``, or
    ``malformed_code`` (and no ``attr``) for an endpoint that answers one code for every unreadable body.
    ``charge``: what parsing takes is reserved on it before the body is parsed (a 413 or 429 if it can't be).
    """
    try:
        return decode_payload(
            body,
            content_encoding=request.headers.get("content-encoding"),
            content_type=request.headers.get("content-type"),
            query=request.query_params,
            before_parse=charge.parse if charge is not None else None,
        )
    except IngestError as exc:
        if exc.code in ("payload_too_large", "throttled"):
            raise ingest_failure(exc) from None
        if malformed_code is not None:
            raise ValidationFailed(exc.detail, code=malformed_code) from None
        raise ingest_failure(exc) from None


def project_for_key(store: Store, token: str) -> ProjectRecord:
    """The project whose API key (``phc_...``) is ``token``; an unknown key is PostHog's 401 ``invalid_api_key``."""
    project = store.projects.get_by_token(token)
    if project is None:
        raise AuthenticationFailed(f"Project API key invalid. {KEY_HELP}", code="invalid_api_key")
    return project


async def run_with_cors(
    request: Request, work: Callable[Concatenate[Request, bytes, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """``work(request, body, ...)`` in a worker thread (decompression and SQLite reads block); its errors carry
    the CORS headers, so that a browser SDK can read them."""
    body = await request.body()
    try:
        return await run_in_threadpool(work, request, body, *args, **kwargs)
    except APIException as exc:
        exc.headers = {**cors_headers(request), **exc.headers}
        raise


def _prepare(request: Request, body: bytes, now: datetime, charge: CaptureCharge) -> tuple[int, Triage]:
    """Decode, authenticate, validate: everything but the write (runs in a worker thread), each step's memory
    reserved on ``charge`` before it is taken (``ingest/budget.py``)."""
    payload = decode_request(request, body, charge=charge)
    if not payload.token:
        raise NotAuthenticated(f"API key not provided. {KEY_HELP}", code="missing_api_key")
    hoglab = request.app.state.hoglab
    project = project_for_key(hoglab.store, payload.token)
    max_events = int(getattr(getattr(hoglab, "config", None), "capture_max_events", DEFAULT_MAX_EVENTS))
    try:
        charge.to_project(int(project.id))
        check_event_count(len(payload.events), max_events, "batch" if payload.attr_prefix else None)
    except IngestError as exc:
        raise ingest_failure(exc) from None
    triage = triage_batch(payload.events, sent_at=payload.sent_at, now=now, attr_prefix=payload.attr_prefix)
    del payload  # the raw events: what is kept is the triage's
    try:
        charge.add(events_cost(len(triage.events), len(body)))
    except IngestError as exc:
        raise ingest_failure(exc) from None
    return int(project.id), triage


def _ingestor(request: Request) -> Ingestor:
    hoglab = request.app.state.hoglab
    ingestor: Any = getattr(hoglab, "ingestor", None)
    return ingestor if isinstance(ingestor, Ingestor) else Ingestor.for_engine(hoglab.engine)


def _charge(request: Request) -> CaptureCharge:
    """A reservation on the engine's answer memory, the budget's part that queries' answers are counted in."""
    engine = getattr(request.app.state.hoglab, "engine", None)
    return CaptureCharge(getattr(engine, "answers", None))


async def capture(request: Request) -> Response:
    """Store the request's good events and the warnings of its bad ones (one per cause); answer once they are on
    disk. What the request holds meanwhile is reserved on the memory budget, and given back after."""
    now = datetime.now(UTC)
    charge = _charge(request)
    try:
        project_id, triage = await run_with_cors(request, _prepare, now, charge)
        await asyncio.wrap_future(_ingestor(request).submit(project_id, triage.events, triage.dropped.rows()))
    finally:
        charge.release()
    answer = {"status": 1, "kept": len(triage.events), "dropped": len(triage.dropped), "repaired": triage.repaired,
              "problems": triage.problems}  # fmt: skip
    return JSONResponse(answer, headers=cors_headers(request))


async def preflight(request: Request) -> Response:
    headers = cors_headers(request)
    headers["Access-Control-Allow-Methods"] = "POST, OPTIONS"
    headers["Access-Control-Allow-Headers"] = request.headers.get("access-control-request-headers", "content-type")
    headers["Access-Control-Max-Age"] = "86400"
    return Response(status_code=200, headers=headers)


for _path in CAPTURE_PATHS:
    for _variant in (_path, _path + "/"):
        router.add_api_route(
            _variant,
            capture,
            methods=["POST"],
            include_in_schema=_variant.endswith("/"),
            # One OpenAPI operation per path: ids must be unique across the document.
            operation_id="capture_" + _path.strip("/").replace("/", "_"),
        )
        router.add_api_route(_variant, preflight, methods=["OPTIONS"], include_in_schema=False)
