"""Finding HogQL ``{name}`` placeholders in text, as the server's parser finds them, and binding notebook variables.

The server reads ``{`` + a name + ``}`` as a placeholder wherever its tokenizer sees those three tokens: a word
(``[A-Za-z_][A-Za-z0-9_]*``, keywords included) or a quoted identifier, with any spacing. Braces inside string
literals, quoted identifiers and comments are text, and ``{name:Type}`` (ClickHouse's own parameters) is not a
placeholder (the server refuses it with its position). :func:`find_placeholders` follows the same lexical
rules (``''`` and backslash escapes, ``--``/``#`` line comments, nested ``/* */`` and ``{# #}`` comments)
without importing the server; the tests check it against the server's tokenizer.

>>> [p.name for p in find_placeholders("select '{not}', `{nor}` -- {this}\\nfrom events where event = { e }")]
['e']
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...errors import HoglabError

__all__ = ["SERVER_PLACEHOLDERS", "Placeholder", "UndefinedName", "bind_names", "find_placeholders", "line_column"]

SERVER_PLACEHOLDERS = frozenset({"filters"})
"""Placeholders the server fills itself (``{filters}``: the query's ``filters``), never notebook variables."""

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_SPACE = re.compile(r"\s*")
# sqlglot reads Jinja's {# #} as a comment in every dialect, so the server's tokenizer does too.
_BLOCK_COMMENTS = (("/*", "*/"), ("{#", "#}"))


@dataclass(frozen=True)
class Placeholder:
    """A ``{name}`` in the text: its name and where it is (``text[start:end]`` is the whole ``{...}``)."""

    name: str
    start: int
    end: int


class UndefinedName(HoglabError, NameError):
    """A ``{name}`` that names no notebook variable; the message says where it is."""


def _skip_quoted(text: str, i: int, quote: str) -> int:
    """The index after the literal or identifier opened by ``text[i] == quote``.

    Doubled quotes and backslashes escape; an unterminated one runs to the end (the server reports it).
    """
    i += 1
    while i < len(text):
        char = text[i]
        if char == "\\":
            i += 2
        elif char == quote:
            if text.startswith(quote, i + 1):
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return len(text)


def _skip_block_comment(text: str, i: int, opening: str, closing: str) -> int:
    """The index after the block comment opened at ``i``, scanned as sqlglot's tokenizer does.

    Comments nest, and an opening counts only from the second character after the previous delimiter.
    """
    depth, i = 1, i + 2
    while i < len(text) - 1:
        if text.startswith(closing, i):
            depth -= 1
            if depth == 0:
                return i + 2
        i += 1
        if text.startswith(opening, i):
            depth, i = depth + 1, i + 2
    return len(text)


def _skip_comment(text: str, i: int) -> int:
    """The index after the comment starting at ``i``, or ``i`` when none starts there."""
    for opening, closing in _BLOCK_COMMENTS:
        if text.startswith(opening, i):
            return _skip_block_comment(text, i, opening, closing)
    if text.startswith("--", i) or text.startswith("#", i):
        newline = text.find("\n", i)
        return len(text) if newline < 0 else newline + 1
    return i


def _skip_trivia(text: str, i: int) -> int:
    """Past spaces and comments (the tokenizer drops both, so ``{ /* x */ name }`` is still a placeholder)."""
    while True:
        i = _SPACE.match(text, i).end()  # type: ignore[union-attr]  # \s* always matches
        after = _skip_comment(text, i)
        if after == i:
            return i
        i = after


def _placeholder_at(text: str, i: int) -> Placeholder | None:
    """The placeholder whose ``{`` is at ``i``, if the next tokens are a name and ``}``."""
    j = _skip_trivia(text, i + 1)
    if j < len(text) and text[j] in "`\"":
        quote = text[j]
        end = _skip_quoted(text, j, quote)
        name = text[j + 1 : end - 1].replace(quote * 2, quote).replace("\\" + quote, quote)
    else:
        word = _WORD.match(text, j)
        if word is None:
            return None
        end, name = word.end(), word.group()
    close = _skip_trivia(text, end)
    if close < len(text) and text[close] == "}":
        return Placeholder(name, i, close + 1)
    return None


def find_placeholders(text: str) -> list[Placeholder]:
    """Every ``{name}`` placeholder of a HogQL statement, in order (a name may appear more than once)."""
    found: list[Placeholder] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char in "'\"`":
            i = _skip_quoted(text, i, char)
        elif (after := _skip_comment(text, i)) != i:
            i = after
        elif char == "{" and (placeholder := _placeholder_at(text, i)) is not None:
            found.append(placeholder)
            i = placeholder.end
        else:
            i += 1
    return found


def line_column(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of ``offset`` in ``text``.

    >>> line_column("select\\n  nope", 9)
    (2, 3)
    """
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def bind_names(text: str, *namespaces: Mapping[str, Any]) -> dict[str, Any]:
    """``{name: value}`` for every placeholder of ``text``, looked up in ``namespaces`` in order (locals first).

    A name found in none of them raises :class:`UndefinedName` with its position; the server's own
    placeholders (``{filters}``) are left to the server.

    >>> bind_names("select {a} + {a}, {filters}", {"a": 1})
    {'a': 1}
    >>> bind_names("select 1\\nwhere x = {nope}", {})
    Traceback (most recent call last):
    ...
    hoglab.notebook.magic.placeholders.UndefinedName: {nope} (line 2, column 11) is not a defined variable
    """
    values: dict[str, Any] = {}
    for placeholder in find_placeholders(text):
        name = placeholder.name
        if name in values or name in SERVER_PLACEHOLDERS:
            continue
        for namespace in namespaces:
            if name in namespace:
                values[name] = namespace[name]
                break
        else:
            line, column = line_column(text, placeholder.start)
            raise UndefinedName(f"{{{name}}} (line {line}, column {column}) is not a defined variable")
    return values
