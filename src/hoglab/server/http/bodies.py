"""Pieces every router uses: reading a JSON body safely, paging links.

Bodies are read raw here (and validated with ``validation.py``) rather than by FastAPI so that errors carry
PostHog's ``attr`` paths, a
``personal_api_key`` field (an auth method) is not mistaken for an unknown field, and values JSON can't carry
back (NaN, lone surrogates) are refused up front instead of failing when the answer is written.
"""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from pydantic import BaseModel
from starlette.datastructures import URL

from ..errors import InvalidRequest, UnsupportedMediaType, ValidationFailed

__all__ = [
    "DEFAULT_PAGE_LIMIT",
    "MAX_BODY_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_PAGE_LIMIT",
    "REQUEST_MODELS",
    "clamp_page",
    "json_body_openapi",
    "json_depth",
    "page_links",
    "parse_json_array",
    "parse_json_object",
    "raw_body",
]

MAX_BODY_BYTES = 5 * 1024 * 1024
DEFAULT_PAGE_LIMIT = 100
MAX_PAGE_LIMIT = 1000
MAX_OFFSET = 2**62
# Deeper values would parse and store, then fail when the answer is serialised (pydantic stops near 255 levels):
# refuse them on the way in. PostHog's filters and parameters stay within a dozen levels.
MAX_JSON_DEPTH = 100
# Request models named in OpenAPI bodies; app.py adds their JSON schemas to the document's components.
REQUEST_MODELS: dict[str, type[BaseModel]] = {}
# curl -d sends form encoding by default; such a body is still read as JSON, as people mean it.
_LENIENT_TYPES = {"", "application/x-www-form-urlencoded", "text/plain"}


async def raw_body(request: Request) -> bytes:
    """Dependency: the request body, refused above ``MAX_BODY_BYTES``."""
    declared = request.headers.get("content-length", "")
    if declared.isascii() and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ValidationFailed(f"Request body is larger than {MAX_BODY_BYTES} bytes.", code="request_too_large")
    body = await request.body()
    if len(body) > MAX_BODY_BYTES:
        raise ValidationFailed(f"Request body is larger than {MAX_BODY_BYTES} bytes.", code="request_too_large")
    return body


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def json_depth(value: Any) -> int:
    """How deeply ``value`` nests lists and objects (a scalar is 0), without recursion.

    >>> json_depth({"a": [1, {"b": 2}]}), json_depth(3)
    (3, 0)
    """
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict):
            children: Any = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, depth + 1)
        stack.extend((child, depth + 1) for child in children)
    return deepest


def parse_json_object(raw: bytes, content_type: str | None) -> dict[str, Any]:
    """The body as a JSON object (``{}`` when empty), without ``personal_api_key``.

    >>> parse_json_object(b'{"name": "A", "personal_api_key": "phx_x"}', "application/json")
    {'name': 'A'}
    """
    data = _parse_json(raw, content_type, {})
    if not isinstance(data, dict):
        raise ValidationFailed(f"Invalid data. Expected a dictionary, but got {type(data).__name__}.")
    data.pop("personal_api_key", None)
    return data


def parse_json_array(raw: bytes, content_type: str | None) -> list[Any]:
    """The body as a JSON array (``[]`` when empty), for the endpoints PostHog sends lists to.

    >>> parse_json_array(b'[{"group_type_index": 0}]', "application/json")
    [{'group_type_index': 0}]
    """
    data = _parse_json(raw, content_type, [])
    if not isinstance(data, list):
        raise ValidationFailed(f"Invalid data. Expected a list, but got {type(data).__name__}.")
    return data


def _parse_json(raw: bytes, content_type: str | None, empty: Any) -> Any:
    media_type = (content_type or "").split(";")[0].strip().lower()
    if media_type not in _LENIENT_TYPES and media_type != "application/json" and not media_type.endswith("+json"):
        raise UnsupportedMediaType(f'Unsupported media type "{media_type}" in request.')
    if not raw.strip():
        return empty
    try:
        data = json.loads(raw, parse_constant=_refuse_constant)
        # Some values parse but can't be written back: lone surrogates ("\ud800") aren't UTF-8, and 1e400 reads
        # as infinity, which JSON has no word for. Refuse them now rather than after storing them.
        json.dumps(data, ensure_ascii=False, allow_nan=False).encode("utf-8")
    except (ValueError, UnicodeError) as exc:
        raise InvalidRequest(f"Malformed JSON in request body: {str(exc)[:200]}") from None
    except RecursionError:
        raise InvalidRequest("Malformed JSON in request body: nested too deeply.") from None
    if json_depth(data) > MAX_JSON_DEPTH:
        raise InvalidRequest(f"Malformed JSON in request body: nested deeper than {MAX_JSON_DEPTH} levels.")
    return data


def json_body_openapi(model: type[BaseModel], *, required: bool = True) -> dict[str, Any]:
    """``openapi_extra`` documenting a JSON body of ``model`` for a route that reads the body itself."""
    REQUEST_MODELS[model.__name__] = model
    schema = {"$ref": f"#/components/schemas/{model.__name__}"}
    return {"requestBody": {"required": required, "content": {"application/json": {"schema": schema}}}}


def clamp_page(limit: int | None, offset: int | None) -> tuple[int, int]:
    """``(limit, offset)`` with the defaults applied and kept in range."""
    return min(limit or DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT), min(offset or 0, MAX_OFFSET)


def page_links(url: URL, *, total: int, limit: int, offset: int) -> tuple[str | None, str | None]:
    """``(next, previous)`` URLs of a limit/offset page, both carrying ``limit`` and ``offset``.

    >>> page_links(URL("http://h/api/x/?archived=true"), total=250, limit=100, offset=100)
    ('http://h/api/x/?archived=true&limit=100&offset=200', 'http://h/api/x/?archived=true&limit=100&offset=0')
    """
    following = str(url.include_query_params(limit=limit, offset=offset + limit)) if offset + limit < total else None
    previous = str(url.include_query_params(limit=limit, offset=max(0, offset - limit))) if offset > 0 else None
    return following, previous
