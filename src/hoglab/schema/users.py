"""The user nested in answers as ``created_by`` (PostHog's ``UserBasic``)."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from ._base import ResponseModel

__all__ = ["User"]


class User(ResponseModel):
    id: int
    uuid: UUID
    distinct_id: str
    first_name: str = ""
    last_name: str = ""
    email: str
    is_email_verified: bool = False
    hedgehog_config: dict[str, Any] | None = None
