"""``GET /experiments/eligible_feature_flags/``: the project's flags an experiment can run on.

PostHog source: ``products/experiments/backend/presentation/views.py`` (``eligible_feature_flags``) and its service.
A flag is eligible when it is multivariate with at least two variants, the first one being ``control``. The
answer is ``{"results": [FeatureFlag...], "count": N}`` (not the usual paged envelope), filtered by ``search``
(key or name, any case), ``active``, ``created_by_id``, ``evaluation_runtime`` and ``has_evaluation_contexts``,
ordered by ``order`` (``created_at``, ``key`` or ``name``, ``-`` for descending; newest first by default), paged by
``limit`` (20, at most 100) and ``offset``.

>>> parse_page("5", None), parse_page(None, "-3")
((5, 0), (20, 0))
"""

from __future__ import annotations

from collections.abc import Sequence

from hoglab.schema import CONTROL_VARIANT_KEY

from ..errors import ValidationFailed
from ..store import FlagRecord

__all__ = ["ORDER_FIELDS", "PageError", "eligible_flags", "parse_page"]

ORDER_FIELDS = ("created_at", "key", "name")
DEFAULT_LIMIT, MAX_LIMIT = 20, 100


class PageError(ValidationFailed):
    """``limit`` or ``offset`` is not a number (PostHog answers ``{"error": "Invalid limit or offset"}``)."""


def parse_page(limit: str | None, offset: str | None) -> tuple[int, int]:
    """``(limit, offset)`` as PostHog reads them: ``min(limit, 100)``, ``max(offset, 0)``."""
    try:
        size = min(int(limit if limit is not None else DEFAULT_LIMIT), MAX_LIMIT)
        start = max(int(offset if offset is not None else 0), 0)
    except ValueError:
        raise PageError("Invalid limit or offset", attr="limit") from None
    return max(size, 0), start


def _eligible(flag: FlagRecord) -> bool:
    variants = flag.variants
    return len(variants) >= 2 and isinstance(variants[0], dict) and variants[0].get("key") == CONTROL_VARIANT_KEY


def _true(value: str | None) -> bool | None:
    return None if value is None else value.strip().lower() == "true"


def eligible_flags(
    flags: Sequence[FlagRecord],
    *,
    search: str | None = None,
    active: str | None = None,
    created_by_id: str | None = None,
    order: str | None = None,
    evaluation_runtime: str | None = None,
    has_evaluation_contexts: str | None = None,
) -> list[FlagRecord]:
    """The eligible flags among ``flags`` (the project's live ones), filtered and ordered, before paging."""
    field = (order or "-created_at").lstrip("-")
    if field not in ORDER_FIELDS:
        raise ValidationFailed(f"Invalid order field: {order!r}", attr="order")
    found = [f for f in flags if not f.deleted and _eligible(f)]
    if search:
        needle = search.casefold()
        found = [f for f in found if needle in f.key.casefold() or needle in f.name.casefold()]
    wanted_active = _true(active)
    if wanted_active is not None:
        found = [f for f in found if f.active == wanted_active]
    if created_by_id:
        found = [f for f in found if str(f.created_by_id) == created_by_id.strip()]
    # hoglab's flags all evaluate everywhere ("all") and have no evaluation contexts.
    if evaluation_runtime and evaluation_runtime not in ("all", "server", "client"):
        found = []
    if _true(has_evaluation_contexts):
        found = []
    descending = (order or "-created_at").startswith("-")
    keys = {
        "created_at": lambda f: (f.created_at, f.id),
        "key": lambda f: (f.key, f.id),
        "name": lambda f: (f.name, f.id),
    }
    return sorted(found, key=keys[field], reverse=descending)
