"""The error body every non-2xx answer carries, as PostHog's drf-exceptions-hog shapes it.

``{"type": "validation_error", "code": "invalid_input", "detail": "...", "attr": "field__sub"}``
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import ValidationError

from ._base import ResponseModel

__all__ = ["ErrorBody", "ErrorType", "validation_error_body"]

ErrorType = Literal[
    "validation_error",
    "authentication_error",
    "invalid_request",
    "throttled_error",
    "server_error",
    "multiple",
]


class ErrorBody(ResponseModel):
    """``{type, code, detail, attr}``: what went wrong, machine-readable (type, code) and for people (detail)."""

    type: ErrorType
    code: str
    detail: str
    attr: str | None = None


def _loc_to_attr(loc: tuple[int | str, ...], data: Any = None) -> str | None:
    # pydantic's location mixes field names with union bookkeeping: the tag of a tagged union ("TrendsQuery",
    # "event", an experiment metric's "mean") and names like "list[...]" or "function-after[...]". PostHog's attr
    # is the field path alone, joined by "__". Walk the input alongside the location so a tag is told apart from
    # a field of that name.
    parts: list[str] = []
    node = data
    for part in loc:
        if isinstance(part, int):
            parts.append(str(part))
            node = node[part] if isinstance(node, list) and -len(node) <= part < len(node) else None
            continue
        if isinstance(node, dict):
            if part in node:
                parts.append(part)
                node = node[part]
            elif part in (node.get("kind"), node.get("type"), node.get("metric_type")) or "[" in part:
                continue
            elif part[:1].isupper():
                continue  # the tag a node without "kind" defaults to (an EventsNode); no field starts upper-case
            else:
                parts.append(part)
                node = None
        elif "[" in part or part.startswith("function-"):
            continue
        else:
            parts.append(part)
    return "__".join(parts) or None


def validation_error_body(exc: ValidationError, data: Any = None) -> ErrorBody:
    """Turn the first error of a pydantic ``ValidationError`` into a PostHog error body.

    Pass the validated ``data`` so union tags are told apart from field names in ``attr``.

    >>> from hoglab.schema import TrendsQuery
    >>> body = {"series": [{"kind": "EventsNode", "math": "sum"}]}
    >>> try:
    ...     TrendsQuery.model_validate(body)
    ... except ValidationError as e:
    ...     validation_error_body(e, body).attr
    'series__0'
    """
    first = exc.errors(include_url=False)[0]
    attr = _loc_to_attr(tuple(first.get("loc", ())), data)
    message = str(first.get("msg", "Invalid input."))
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    if first.get("type") == "extra_forbidden":
        message = f"Unknown field {attr.split('__')[-1] if attr else ''!r}: it is not part of this request."
    elif first.get("type") == "missing":
        message = "This field is required."
    return ErrorBody(type="validation_error", code="invalid_input", detail=message, attr=attr)
