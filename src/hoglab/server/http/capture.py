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
from datetime import UTC, datetime
from typing import Any, ClassVar

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from hoglab.schema import ErrorType

from ..errors import APIError, AuthenticationFailed, NotAuthenticated, ValidationFailed
from ..ingest import IngestError, Ingestor, Triage, decode_payload, triage_batch

__all__ = ["CAPTURE_PATHS", "router"]

CAPTURE_PATHS = ("/batch", "/capture", "/e", "/i/v0/e")
_KEY_HELP = "You can find your project API key in PostHog project settings."

router = APIRouter(tags=["capture"])


class PayloadTooLarge(APIError):
    status_code = 413
    error_type: ClassVar[ErrorType] = "invalid_request"
    default_code = "payload_too_large"
    default_detail = "Request body too large."


def _cors(request: Request) -> dict[str, str]:
    # Browser SDKs (posthog-js) post from the site's own origin.
    origin = request.headers.get("origin")
    headers = {"Access-Control-Allow-Origin": origin or "*"}
    if origin:
        headers["Access-Control-Allow-Credentials"] = "true"
        headers["Vary"] = "Origin"
    return headers


def _prepare(request: Request, body: bytes, now: datetime) -> tuple[int, Triage]:
    """Decode, authenticate, validate: everything but the write (runs in a worker thread)."""
    try:
        payload = decode_payload(
            body,
            content_encoding=request.headers.get("content-encoding"),
            content_type=request.headers.get("content-type"),
            query=request.query_params,
        )
    except IngestError as exc:
        if exc.code == "payload_too_large":
            raise PayloadTooLarge(exc.detail) from None
        raise ValidationFailed(exc.detail, code=exc.code, attr=exc.attr) from None
    if not payload.token:
        raise NotAuthenticated(f"API key not provided. {_KEY_HELP}", code="missing_api_key")
    hoglab = request.app.state.hoglab
    project = hoglab.store.projects.get_by_token(payload.token)
    if project is None:
        raise AuthenticationFailed(f"Project API key invalid. {_KEY_HELP}", code="invalid_api_key")
    triage = triage_batch(payload.events, sent_at=payload.sent_at, now=now, attr_prefix=payload.attr_prefix)
    return int(project.id), triage


def _ingestor(request: Request) -> Ingestor:
    hoglab = request.app.state.hoglab
    ingestor: Any = getattr(hoglab, "ingestor", None)
    return ingestor if isinstance(ingestor, Ingestor) else Ingestor.for_engine(hoglab.engine)


async def capture(request: Request) -> Response:
    """Store the request's good events and the warnings of its bad ones; answer once they are on disk."""
    now = datetime.now(UTC)
    body = await request.body()
    try:
        project_id, triage = await run_in_threadpool(_prepare, request, body, now)
    except APIError as exc:
        exc.headers = {**_cors(request), **exc.headers}
        raise
    await asyncio.wrap_future(_ingestor(request).submit(project_id, triage.events, triage.dropped))
    answer = {"status": 1, "kept": len(triage.events), "dropped": len(triage.dropped), "repaired": triage.repaired,
              "problems": triage.problems}  # fmt: skip
    return JSONResponse(answer, headers=_cors(request))


async def preflight(request: Request) -> Response:
    headers = _cors(request)
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
