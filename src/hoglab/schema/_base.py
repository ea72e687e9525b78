"""Base classes shared by every schema model.

Requests are strict (unknown fields are a 400 naming the field), responses are lenient (PostHog adds fields over
time and the client must keep working against it).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = ["RequestModel", "ResponseModel", "SettingsModel"]


class RequestModel(BaseModel):
    """A model the service validates: unknown fields are rejected, values are validated on assignment."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, validate_assignment=True)

    def to_json_dict(self) -> dict[str, Any]:
        """The JSON body PostHog expects: aliases applied, unset and ``None`` fields left out."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)


class SettingsModel(RequestModel):
    """Display and UI settings nested in a query: kept as sent (PostHog's UI adds such keys often)."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)


class ResponseModel(BaseModel):
    """A model of an answer: extra fields are kept, so newer PostHog answers still parse."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
