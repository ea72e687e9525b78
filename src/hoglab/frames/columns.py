"""THE ClickHouse-type -> pandas-dtype table, and the conversion of a JSON answer's columns by it.

Each ClickHouse type name belongs to one kind (:func:`column_kind`); a kind decides the dtype. A JSON answer's
columns are converted here (:func:`convert`, one vectorised step per column), an Arrow answer's columns by
:mod:`hoglab.frames.arrow` from the same kinds, so a statement gives the same dtypes either way. The mapping,
decided once so every frame looks the same on pandas 2.2 and 3:

=========================================  ==========================================================
ClickHouse type                            pandas dtype
=========================================  ==========================================================
``Int8..Int64``, ``UInt8..UInt32``         ``Int64`` (nullable, whether or not the type is Nullable)
``UInt64``                                 ``Int64``; ``UInt64`` only when a value exceeds 2**63-1
``Int128/256``, ``UInt128/256``            ``object`` (Python ints)
``Float32/64``                             ``float64``; ``Nullable(Float*)`` -> ``Float64``
``Decimal(P, S)`` and friends              ``float64``; Nullable -> ``Float64`` (analysts compute on it)
``Bool``                                   ``boolean``
``String``, ``FixedString``, ``UUID``,     ``string`` (``pd.StringDtype()``, missing = ``pd.NA``)
``Enum*``, ``IPv4``, ``IPv6``
``DateTime('tz')``, ``DateTime64(p, 'tz')``  ``datetime64[us, tz]`` (``ns`` when p > 6); no tz -> UTC
``Date``, ``Date32``                       ``datetime64[us]`` at midnight, naive (a day, not an instant)
``Array(T)``                               ``object``, each cell a list (elements as JSON gave them)
``Tuple(...)``                             ``object``, each cell a tuple
``Map(K, V)``, ``JSON``, ``Object``        ``object``, each cell a dict
``Nothing`` and anything unknown           ``object``, values untouched
=========================================  ==========================================================

``LowCardinality(T)`` and ``Nullable(T)`` are unwrapped first.

>>> parse_type("LowCardinality(Nullable(String))")
CHType(name='String', args=(), nullable=True)
>>> parse_type("DateTime64(6, 'Europe/Paris')").timezone
'Europe/Paris'
>>> convert([1, None], "Nullable(UInt8)").dtype
Int64Dtype()
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal

import numpy as np
import pandas as pd

__all__ = ["CHType", "ColumnKind", "column_kind", "convert", "json_loads", "parse_json_column", "parse_type"]

ColumnKind = Literal["int", "big_int", "float", "string", "datetime", "date", "bool", "tuple", "object"]
"""What a column becomes: ``int`` -> ``Int64`` (``UInt64`` past 2**63-1), ``big_int`` -> Python ints,
``float`` -> ``float64``/``Float64``, ``string`` -> ``string``, ``datetime`` -> tz-aware ``datetime64``,
``date`` -> naive ``datetime64``, ``bool`` -> ``boolean``, ``tuple`` -> tuples, ``object`` -> values as they are."""

_KINDS: dict[str, ColumnKind] = {
    **dict.fromkeys(("Int8", "Int16", "Int32", "Int64", "UInt8", "UInt16", "UInt32", "UInt64"), "int"),
    **dict.fromkeys(("Int128", "Int256", "UInt128", "UInt256"), "big_int"),
    **dict.fromkeys(("Float32", "Float64", "BFloat16"), "float"),
    **dict.fromkeys(("Decimal", "Decimal32", "Decimal64", "Decimal128", "Decimal256"), "float"),
    **dict.fromkeys(("String", "FixedString", "UUID", "Enum8", "Enum16", "Enum", "IPv4", "IPv6"), "string"),
    **dict.fromkeys(("DateTime", "DateTime64"), "datetime"),
    **dict.fromkeys(("Date", "Date32"), "date"),
    "Bool": "bool",
    "Tuple": "tuple",
}  # every other name (Array, Map, JSON, Object, Nothing, unknown): "object"
_OFFSET = re.compile(r"(Z|[+-]\d\d:?\d\d)$")


@dataclass(frozen=True)
class CHType:
    """A parsed ClickHouse type: its name, its arguments (types or literals) and whether NULL is allowed."""

    name: str
    args: tuple[CHType | str, ...] = ()
    nullable: bool = False

    @property
    def timezone(self) -> str | None:
        """The time zone of a ``DateTime``/``DateTime64`` (``None`` when the type names none)."""
        for arg in self.args:
            if isinstance(arg, str) and arg[:1] in "'\"":
                return arg[1:-1]
        return None

    @property
    def unit(self) -> Literal["us", "ns"]:
        """``us`` for up to microsecond precision (the usual ``DateTime64(6)``), ``ns`` beyond."""
        if self.name == "DateTime64" and self.args and isinstance(self.args[0], str) and self.args[0].isdigit():
            return "ns" if int(self.args[0]) > 6 else "us"
        return "us"


def _split_args(text: str) -> list[str]:
    # Split at top-level commas, ignoring commas inside parentheses or quotes (Enum8('a,b' = 1), Tuple(...)).
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            if ch == quote and text[i - 1] != "\\":
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    parts.append(text[start:].strip())
    return [p for p in parts if p]


@lru_cache(maxsize=512)
def parse_type(text: str) -> CHType:
    """Parse a ClickHouse type string; unknown names parse too (they become ``object`` columns)."""
    text = text.strip()
    nullable = False
    while True:
        m = re.fullmatch(r"(Nullable|LowCardinality)\((.*)\)", text, flags=re.S)
        if not m:
            break
        nullable = nullable or m.group(1) == "Nullable"
        text = m.group(2).strip()
    m = re.fullmatch(r"(\w+)\s*\((.*)\)", text, flags=re.S)
    if not m:
        return CHType(text, (), nullable)
    name, inner = m.group(1), m.group(2)
    args: list[CHType | str] = []
    for part in _split_args(inner):
        # Literals (precision, quoted time zones, Enum members, named tuple elements) stay strings.
        if part[:1] in "'\"" or part[:1].isdigit() or "=" in part:
            args.append(part)
        elif name == "Tuple" and re.match(r"^\w+\s+\w", part):
            args.append(parse_type(part.split(None, 1)[1]))
        else:
            args.append(parse_type(part))
    return CHType(name, tuple(args), nullable)


def column_kind(ch: CHType) -> ColumnKind:
    """The kind (and so the dtype) of a parsed ClickHouse type.

    >>> column_kind(parse_type("LowCardinality(Nullable(String))")), column_kind(parse_type("UInt64"))
    ('string', 'int')
    >>> column_kind(parse_type("Decimal(18, 4)")), column_kind(parse_type("Array(String)"))
    ('float', 'object')
    """
    return _KINDS.get(ch.name, "object")


def _objects(values: Sequence[Any]) -> np.ndarray[Any, Any]:
    # fromiter keeps list/dict cells as single objects (np.array would try to make a 2-D array of them).
    return np.fromiter(values, dtype=object, count=len(values))


def _ints(values: Sequence[Any]) -> Any:
    try:
        data = np.array(values, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        # NULLs present (pandas builds the mask), or a UInt64 beyond 2**63-1 (hashes): keep every value exact.
        try:
            return pd.array(list(values), dtype="Int64")
        except (TypeError, ValueError, OverflowError):
            return pd.array(list(values), dtype="UInt64")
    return pd.arrays.IntegerArray(data, np.zeros(len(data), dtype=bool))


def _floats(values: Sequence[Any], nullable: bool) -> Any:
    try:
        data = np.array(values, dtype=np.float64)  # None -> NaN
    except (TypeError, ValueError):
        data = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").to_numpy(np.float64)
    if not nullable:
        return data
    # JSON has no NaN (orjson writes null), so every NaN here was a NULL.
    return pd.arrays.FloatingArray(data, np.isnan(data))


def _strings(values: Sequence[Any]) -> Any:
    try:
        return pd.array(values, dtype=pd.StringDtype())
    except (TypeError, ValueError):
        return _objects(values)  # cells that are not strings (a dict from a ``*`` column): leave them be


def _datetimes(values: Sequence[Any], ch: CHType) -> Any:
    tz = ch.timezone or "UTC"
    first = next((v for v in values if v is not None), None)
    if isinstance(first, str) and not _OFFSET.search(first):
        # Wall-clock strings without an offset are in the column's own time zone.
        parsed = pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601").dt.tz_localize(tz)
    else:
        parsed = pd.to_datetime(pd.Series(values, dtype=object), utc=True, format="ISO8601")
        if tz not in ("UTC", "Etc/UTC"):
            parsed = parsed.dt.tz_convert(tz)
    return parsed.dt.as_unit(ch.unit).array


def _dates(values: Sequence[Any]) -> Any:
    parsed = pd.to_datetime(pd.Series(values, dtype=object), format="ISO8601")
    if isinstance(parsed.dtype, pd.DatetimeTZDtype):
        parsed = parsed.dt.tz_localize(None)
    return parsed.dt.as_unit("us").array


def convert(values: Sequence[Any], type_text: str | None) -> Any:
    """One column's JSON values to a typed pandas array, following its ClickHouse type string.

    >>> convert(["2025-06-01T12:00:00Z", None], "Nullable(DateTime64(6, 'UTC'))").dtype
    datetime64[us, UTC]
    >>> list(convert([["a"], []], "Array(String)"))
    [['a'], []]
    """
    if type_text is None:
        return _objects(values)
    ch = parse_type(type_text)
    kind = column_kind(ch)
    if kind == "int":
        return _ints(values)
    if kind == "float":
        return _floats(values, ch.nullable)
    if kind == "string":
        return _strings(values)
    if kind == "datetime":
        return _datetimes(values, ch)
    if kind == "date":
        return _dates(values)
    if kind == "bool":
        return pd.array(list(values), dtype="boolean")
    if kind == "tuple":
        return _objects([tuple(v) if isinstance(v, list) else v for v in values])
    # Array, Map, JSON, Nothing, big ints and unknown types: the JSON values as they are.
    return _objects(values)


def parse_json_column(values: Sequence[Any]) -> np.ndarray[Any, Any]:
    """Decode JSON text cells (``properties`` selected as a string) into dicts/lists; NULL stays ``None``.

    >>> parse_json_column(['{"a": 1}', None])[0]
    {'a': 1}
    """
    loads = json_loads()
    return _objects([loads(v) if isinstance(v, str | bytes) else v for v in values])


@lru_cache(maxsize=1)
def json_loads() -> Any:
    """The JSON parser for cells: orjson's when it is installed (the ``[server]`` extra has it), else the stdlib's."""
    try:
        import orjson

        return orjson.loads
    except ImportError:  # orjson is optional: the stdlib parser is only slower
        return json.loads
