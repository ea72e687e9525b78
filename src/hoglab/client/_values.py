"""HogQL ``values`` as JSON can carry them: Python, numpy and pandas values turned into what the server binds.

The server binds each value as a literal (``{name}`` never becomes SQL text), but the values travel as JSON, so
dates and times arrive as strings. ClickHouse compares a DateTime column with a string read in the column's
zone, which on hoglab and PostHog is the project's: so a datetime is written as wall-clock text, a naive one as
given (project time, as the server binds a naive datetime) and an aware one converted to the project's zone.

>>> encode_value("n", np.int64(3)), encode_value("d", dt.date(2025, 3, 1)), encode_value("s", {"b", "a"})
(3, '2025-03-01', ['a', 'b'])
>>> encode_value("t", dt.datetime(2025, 3, 1, 12, 30))
'2025-03-01 12:30:00.000000'
>>> encode_value("t", pd.Timestamp("2025-03-01 12:00", tz="UTC"), timezone="Europe/Berlin")
'2025-03-01 13:00:00.000000'
"""

from __future__ import annotations

import datetime as dt
import math
import uuid
import zoneinfo
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..errors import InvalidArgument, InvalidArgumentType
from ..schema import Project

if TYPE_CHECKING:
    from ._client import Client

__all__ = ["encode_value", "encode_values"]

_WALL_CLOCK = "%Y-%m-%d %H:%M:%S.%f"
_SEQUENCES = (list, tuple, set, frozenset, np.ndarray, pd.Series, pd.Index)
# (host, project id) -> the project's time zone: asked once per process, and only when an aware datetime is bound
# (keyed by project, not by client, so the clients of `%%hogql --project` and `Client.for_project` share it)
_zones: dict[tuple[str, int], str] = {}


def _has_aware_datetime(value: Any) -> bool:
    if isinstance(value, dt.datetime):
        return value.tzinfo is not None
    if isinstance(value, _SEQUENCES):
        return any(_has_aware_datetime(v) for v in value)
    return False


def project_timezone(client: Client) -> str:
    """The project's time zone (``GET /api/projects/:id/``), remembered per host and project."""
    where = (client.host, client.project_id)
    if where not in _zones:
        _zones[where] = Project.model_validate(client.get_json(client.path(""))).timezone
    return _zones[where]


def encode_value(name: str, value: Any, *, timezone: str = "UTC") -> Any:
    """One value as JSON-ready data the server binds as the literal meant; ``timezone`` is the project's.

    str, int, float, bool and None go as they are; numpy scalars as their Python value; Decimal as an int or
    float; UUID as text; date as ``YYYY-MM-DD``; datetime (and pandas Timestamp) as wall-clock text in the
    project's zone; lists, tuples, sets, arrays, Series and Index as lists (sets sorted). pandas' missing values
    (NaN, NaT, NA) are None. An infinity raises :class:`~hoglab.InvalidArgument` (the server binds finite
    numbers only); anything else raises :class:`~hoglab.InvalidArgumentType` naming the value.
    """
    if value is None or value is pd.NaT or value is pd.NA:
        return None
    if isinstance(value, np.datetime64):  # .item() would give nanoseconds as an int
        return None if np.isnat(value) else encode_value(name, pd.Timestamp(value), timezone=timezone)
    if isinstance(value, np.generic):
        return encode_value(name, value.item(), timezone=timezone)
    if isinstance(value, Decimal):
        value = int(value) if value.is_finite() and value == value.to_integral_value() else float(value)
    if isinstance(value, float) and not math.isfinite(value):
        if math.isnan(value):
            return None
        # JSON has no infinity: it would arrive as null and match nothing, silently.
        raise InvalidArgument(f"values[{name!r}]: {value} cannot be bound; use a finite number.", argument="values")
    if isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(zoneinfo.ZoneInfo(timezone)).replace(tzinfo=None)
        return value.strftime(_WALL_CLOCK)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, set | frozenset):
        items = [encode_value(name, v, timezone=timezone) for v in value]
        try:
            return sorted(items)
        except TypeError:  # mixed types: any order binds the same set
            return items
    if isinstance(value, _SEQUENCES):
        return [encode_value(name, v, timezone=timezone) for v in value]
    raise InvalidArgumentType(
        f"values[{name!r}]: a {type(value).__name__} cannot be bound in HogQL; use str, int, float, bool, None, "
        "a date, a datetime, a UUID, or a list of them.",
        argument="values",
    )


def encode_values(client: Client, values: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """``values`` ready to send (see :func:`encode_value`); the project's zone is asked for only when needed."""
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise InvalidArgumentType("values: expected a dict of placeholder values.", argument="values")
    zone = project_timezone(client) if any(_has_aware_datetime(v) for v in values.values()) else "UTC"
    return {str(k): encode_value(str(k), v, timezone=zone) for k, v in values.items()}
