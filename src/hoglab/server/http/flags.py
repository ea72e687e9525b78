"""Flag evaluation for PostHog's SDKs: ``POST /flags/`` and ``POST /decide/``.

Authenticated like capture, by the project API key (``phc_...``) in the body (``api_key`` or ``token``) or the
query string; bodies are decoded by capture's decoder (JSON, gzip by header, ``?compression=gzip-js`` or magic
bytes, form ``data=`` base64), and answers carry capture's CORS headers so posthog-js can call from a page.
The answer's shape follows ``?v=`` (see ``hoglab.server.flags.responses``): posthog-python 7.9x asks for
``/flags/?v=4``, posthog-js for ``/flags/?v=2&config=true``, older SDKs for ``/decide/?v=3``.

Errors, as PostHog's: no key 401 ``no_api_key``, unknown key 401 ``invalid_api_key``, a body that is not a JSON
object 400 ``malformed_data``, no ``distinct_id`` 400 ``missing_distinct_id``.

Also mounted from here: ``flag_resources`` (feature flag and cohort reads under ``/api/projects/:id/``, and the
flag definitions for SDK local evaluation).

    curl -s "$HOST/flags/?v=2" -d '{"api_key": "phc_...", "distinct_id": "user-1"}'
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse

from ..errors import NotAuthenticated, ValidationFailed
from ..flags import Evaluation, FlagsRequestError, decide_body, evaluate_request, flags_body, parse_flags_request
from ..flags.request import FlagsRequest, process_bool
from ..state import ServiceState
from ..store import ProjectRecord
from . import flag_resources
from .capture import KEY_HELP, cors_headers, decode_request, preflight, project_for_key, run_with_cors

__all__ = ["router"]

router = APIRouter(tags=["flags"])
router.include_router(flag_resources.router)


def _version(request: Request, default: int) -> int:
    # PostHog reads ``v`` as an integer and falls back when it isn't one (posthog-js 1.19 sent junk).
    raw = request.query_params.get("v", "")
    return int(raw) if raw.isascii() and raw.isdigit() and len(raw) < 4 else default


def _prepare(request: Request, body: bytes) -> tuple[ServiceState, ProjectRecord, FlagsRequest]:
    """Decode, authenticate, validate (in a worker thread: decompression and SQLite reads block)."""
    payload = decode_request(request, body, malformed_code="malformed_data")
    data = payload.events[0] if payload.attr_prefix is None and payload.events else None
    if not isinstance(data, dict):
        raise ValidationFailed("Malformed request data: the body must be a JSON object.", code="malformed_data")
    if not payload.token:
        raise NotAuthenticated(f"No project API key provided. {KEY_HELP}", code="no_api_key")
    state: ServiceState = request.app.state.hoglab
    project = project_for_key(state.store, payload.token)
    try:
        return state, project, parse_flags_request(data)
    except FlagsRequestError as exc:
        raise ValidationFailed(exc.detail, code=exc.code, attr=exc.attr) from None


def _answer_flags(request: Request, body: bytes) -> dict[str, Any]:
    state, project, flags_request = _prepare(request, body)
    evaluation = evaluate_request(state, project, flags_request)
    config = process_bool(request.query_params.get("config"))
    return flags_body(evaluation, _version(request, 1), str(uuid.uuid4()), config=config)


def _answer_decide(request: Request, body: bytes) -> dict[str, Any]:
    state, project, flags_request = _prepare(request, body)
    evaluation = evaluate_request(state, project, flags_request)
    return decide_body(evaluation, _version(request, 1), str(uuid.uuid4()))


async def _respond(request: Request, answer: Callable[[Request, bytes], dict[str, Any]]) -> Response:
    content = await run_with_cors(request, answer)
    return JSONResponse(content, headers=cors_headers(request))


async def flags(request: Request) -> Response:
    """Evaluate the project's active flags for ``distinct_id`` (PostHog's flags service)."""
    return await _respond(request, _answer_flags)


async def decide(request: Request) -> Response:
    """Evaluate the project's active flags for ``distinct_id``, with client config (PostHog's ``/decide``)."""
    return await _respond(request, _answer_decide)


async def decide_without_body(request: Request) -> Response:
    # PostHog answers a GET of /decide with the default config and no flags.
    return JSONResponse(decide_body(Evaluation([]), 2, str(uuid.uuid4())), headers=cors_headers(request))


_DOC = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {
                        "api_key": {"type": "string", "description": "The project API key (or use token)."},
                        "token": {"type": "string"},
                        "distinct_id": {"type": "string"},
                        "person_properties": {"type": "object"},
                        "groups": {"type": "object"},
                        "flag_keys_to_evaluate": {"type": "array", "items": {"type": "string"}},
                        "$anon_distinct_id": {"type": "string"},
                    },
                }
            }
        },
    },
    "security": [],
}

for _path, _endpoint in (("/flags", flags), ("/decide", decide)):
    for _variant in (_path, _path + "/"):
        router.add_api_route(
            _variant,
            _endpoint,
            methods=["POST"],
            include_in_schema=_variant.endswith("/"),
            operation_id=_path.strip("/") + "_evaluate",
            openapi_extra=_DOC,
            summary=(_endpoint.__doc__ or "").strip().splitlines()[0],
        )
        router.add_api_route(_variant, preflight, methods=["OPTIONS"], include_in_schema=False)
for _variant in ("/decide", "/decide/"):
    router.add_api_route(_variant, decide_without_body, methods=["GET"], include_in_schema=False)
