"""What a request's values must be, checked without HTTP: the domain's rules (experiments, holdouts, saved
metrics, the pull mirror) validate bodies here, and so do the routers; a failure is a ``ValidationFailed`` naming
the field, which ``http/errors.py`` answers as a 400.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hoglab.schema import validation_error_body

from .errors import ValidationFailed

__all__ = ["MAX_ID", "char_field", "validate_body"]

M = TypeVar("M", bound=BaseModel)

MAX_ID = 2**63 - 1
"""The largest id of a stored object (SQLite's integer)."""


def validate_body(model: type[M], data: dict[str, Any], *, model_error_attrs: dict[str, str] | None = None) -> M:
    """``model`` validated from ``data``; a 400 naming the field in ``attr`` otherwise.

    ``model_error_attrs`` maps messages of model-level checks (which pydantic reports without a field) to the
    field they are about, e.g. ``{"End date must be after start date": "end_date"}``.
    """
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        body = validation_error_body(exc, data)
        attr = body.attr or (model_error_attrs or {}).get(body.detail)
        raise ValidationFailed(body.detail, attr=attr) from None
    except RecursionError:
        raise ValidationFailed("Input is nested too deeply.") from None


def char_field(data: Mapping[str, Any], field: str, *, required: bool, nullable: bool) -> str | None:
    """A DRF ``CharField(max_length=400)`` of PostHog's serializers (holdouts, saved metrics), with DRF's messages
    and codes; ``None`` when absent or null.

    >>> char_field({"name": "Q3"}, "name", required=True, nullable=False)
    'Q3'
    >>> char_field({"name": None}, "name", required=True, nullable=False)
    Traceback (most recent call last):
    ...
    hoglab.server.errors.ValidationFailed: This field may not be null.
    """
    if field not in data:
        if required:
            raise ValidationFailed("This field is required.", attr=field, code="required")
        return None
    value = data[field]
    if value is None:
        if not nullable:
            raise ValidationFailed("This field may not be null.", attr=field, code="null")
        return None
    if not isinstance(value, str | int | float) or isinstance(value, bool):
        raise ValidationFailed("Not a valid string.", attr=field, code="invalid")
    text = str(value)
    if not text.strip() and not nullable:
        raise ValidationFailed("This field may not be blank.", attr=field, code="blank")
    if len(text) > 400:
        raise ValidationFailed("Ensure this field has no more than 400 characters.", attr=field, code="max_length")
    return text
