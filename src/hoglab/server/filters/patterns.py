"""Regular expressions of flag and cohort conditions (``regex`` / ``not_regex``), matched in linear time by RE2.

Python's ``re`` backtracks: a planted ``^(a+)+$`` against ``"aaaa...!"`` doubles its time with every character
and holds the interpreter while it runs, so one project's flag could stall every other project's ``/flags``.
RE2 (Google's engine, the one ClickHouse's ``match`` uses; PostHog's Rust flags service used the ``regex`` crate,
of the same design) runs in time linear in the text, whatever the pattern. Its syntax is Perl's without the
features that need backtracking, so a pattern that uses them does not compile:

* backreferences (``(a)\\1``), lookarounds (``(?=``, ``(?!``, ``(?<=``, ``(?<!``), possessive quantifiers
  (``a*+``), ``\\Z``, ``(?x)`` and ``(?#...)`` comments, repetition counts over 1,000;
* a condition whose pattern does not compile does not match, for ``regex`` and ``not_regex`` alike, as in
  PostHog's flags service (a broken pattern never makes the request fail);
* RE2-only syntax is read as RE2 reads it: ``\\z``, ``\\Q...\\E``, ``\\p{Greek}``, ``(?<name>...)``;
* ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are ASCII (Python's are Unicode), ``$`` is the end of the text only (Python's
  also matches before a final newline), ``.`` does not match a newline (ClickHouse's ``match`` sets ``(?s)``).

:func:`invalid_patterns` is the one check of stored definitions: whoever stores flag or cohort filters (the
pull mirror) asks it which conditions have a pattern RE2 cannot compile.

>>> search("^me@.+\\\\.com$", "me@gmail.com"), search("(?=a)", "a")
(True, None)
>>> [(p.attr, p.reason) for p in invalid_patterns({"groups": [{"properties": [
...     {"key": "email", "operator": "regex", "value": "(a)\\\\1"}]}]})]
[('filters__groups__0__properties__0__value', 'invalid escape sequence: \\\\1')]
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson
import re2

__all__ = ["REGEX_OPERATORS", "InvalidPattern", "compile_pattern", "invalid_patterns", "search", "text_of"]

REGEX_OPERATORS = frozenset({"regex", "not_regex"})
# Compiled patterns are kept: a flag's pattern is matched on every request that evaluates it. RE2 bounds each
# one's memory (its default max_mem, 8 MiB, as ClickHouse), and the DFA a pattern builds only grows with use.
_CACHED_PATTERNS = 512


@dataclass(frozen=True)
class InvalidPattern:
    """A ``regex``/``not_regex`` condition whose pattern RE2 cannot compile: where (``attr``, in PostHog's
    ``a__0__b`` form), the pattern, and RE2's reason."""

    attr: str
    pattern: str
    reason: str

    def __str__(self) -> str:
        return f"{self.attr}: {self.pattern[:200]!r} is not a valid regular expression (RE2: {self.reason})"


def text_of(value: Any) -> str:
    """A property value as PostHog's flags service renders it for text comparisons (JSON text for non-strings).

    >>> text_of("a"), text_of(True), text_of(3), text_of(2.5), text_of({"a": 1})
    ('a', 'true', '3', '2.5', '{"a":1}')
    """
    if isinstance(value, str):
        return value
    if isinstance(value, float) and value.is_integer() and math.isfinite(value):
        return f"{value:.1f}"
    try:
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _utf8(text: str) -> bytes:
    # JSON may carry lone surrogates ("\ud800"); they pass as the bytes they are, which RE2 reads as invalid UTF-8.
    return text.encode("utf-8", "surrogatepass")


def _options() -> Any:
    options = re2.Options()
    options.log_errors = False  # RE2 would print every refused pattern to stderr; the caller reports it
    return options


_OPTIONS = _options()


@functools.lru_cache(maxsize=_CACHED_PATTERNS)
def _compiled(pattern: str) -> tuple[Any, str | None]:
    try:
        return re2.compile(_utf8(pattern), _OPTIONS), None
    except re2.error as exc:
        reason = exc.args[0] if exc.args else "invalid pattern"
        return None, reason.decode("utf-8", "replace") if isinstance(reason, bytes) else str(reason)


def compile_pattern(pattern: str) -> str | None:
    """``None`` if RE2 compiles ``pattern``, else RE2's reason (cached both ways).

    >>> compile_pattern("^[a-z]+$") is None, compile_pattern("(?<=a)b")
    (True, 'invalid perl operator: (?<=')
    """
    return _compiled(pattern)[1]


def search(pattern: Any, subject: Any) -> bool | None:
    """Whether ``pattern`` matches anywhere in ``subject`` (both read with :func:`text_of`), in time linear in
    the subject; ``None`` when the pattern does not compile.

    >>> search("^(a+)+$", "a" * 10_000 + "!"), search("(?i)pro", "PRO plan"), search("x*+", "x")
    (False, True, None)
    """
    compiled, _ = _compiled(text_of(pattern))
    if compiled is None:
        return None
    return compiled.search(_utf8(text_of(subject))) is not None


def invalid_patterns(filters: Any, attr: str = "filters") -> list[InvalidPattern]:
    """Every ``regex``/``not_regex`` condition in ``filters`` (a flag's ``filters``, a cohort's, or any tree of
    them) whose pattern RE2 cannot compile, in document order; an empty list when all are valid.

    A condition is an object with ``operator`` ``regex`` or ``not_regex`` and a ``value`` (the pattern, read as
    flag evaluation reads it); conditions are found wherever they are (condition groups, super groups, holdout
    groups, cohort trees, behavioural ``event_filters``).

    >>> invalid_patterns({"properties": {"type": "OR", "values": [
    ...     {"key": "plan", "operator": "not_regex", "value": "^(pro|team)$", "type": "person"}]}}, "filters")
    []
    """
    found: list[InvalidPattern] = []
    stack: list[tuple[str, Any]] = [(attr, filters)]
    while stack:  # iteratively: a stored definition may be nested deeper than Python's recursion limit
        path, node = stack.pop()
        if isinstance(node, Mapping):
            if node.get("operator") in REGEX_OPERATORS and node.get("value") is not None:
                pattern = text_of(node["value"])
                reason = compile_pattern(pattern)
                if reason is not None:
                    found.append(InvalidPattern(f"{path}__value", pattern, reason))
            stack.extend((f"{path}__{key}", value) for key, value in reversed(list(node.items())))
        elif isinstance(node, list):
            stack.extend((f"{path}__{i}", value) for i, value in reversed(list(enumerate(node))))
    return found
