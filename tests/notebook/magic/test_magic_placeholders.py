"""The magic finds ``{name}`` placeholders exactly where the server's HogQL tokenizer does (the oracle: the
server's own dialect, imported here only, never by the notebook code)."""

from __future__ import annotations

import random
import re

import pytest
from sqlglot import exp
from sqlglot.tokens import TokenType

from hoglab.notebook.magic.placeholders import UndefinedName, bind_names, find_placeholders, line_column
from hoglab.translate.dialect import HOGQL_PLACEHOLDER, HogQLDialect
from hoglab.translate.parse import parse_hogql

_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKENIZER = HogQLDialect().tokenizer_class()


def server_placeholders(text: str) -> list[str]:
    """The names the server's parser takes as placeholders: ``{``, a word or quoted identifier, ``}`` tokens
    (the rule of ``HogQLParser._parse_query_parameter``)."""
    tokens = _TOKENIZER.tokenize(text)
    return [
        name.text
        for brace, name, close in zip(tokens, tokens[1:], tokens[2:], strict=False)
        if brace.token_type == TokenType.L_BRACE
        and close.token_type == TokenType.R_BRACE
        and (name.token_type == TokenType.IDENTIFIER or _WORD.match(name.text))
        and name.token_type not in (TokenType.STRING, TokenType.NUMBER)
    ]


CASES = [
    ("select {a}", ["a"]),
    ("select { a }, {b}+{a}", ["a", "b", "a"]),
    ("select '{a}', '{{b}}', 'it''s {c}', 'x\\'{d}'", []),
    ("select `{a}`, \"{b}\", `x``{c}`", []),
    ("select 1 -- {a}\n, {b}", ["b"]),
    ("select 1 # {a}\n, {b}", ["b"]),
    ("select /* {a} /* {b} */ {c} */ {d}", ["d"]),
    ("select {# {a} #} {b}", ["b"]),
    ("select {a:String}, {1}, {a.b}, {$a}", []),
    ("select {`quoted`}", ["quoted"]),
    ("select {select}, {from}", ["select", "from"]),
    ("select { /* note */ a }", ["a"]),
    ("select map('k', {v})", ["v"]),
]


@pytest.mark.parametrize(("text", "names"), CASES)
def test_known_cases_agree_with_the_server(text: str, names: list[str]) -> None:
    assert [p.name for p in find_placeholders(text)] == names
    assert server_placeholders(text) == names


def test_random_texts_agree_with_the_server_tokenizer() -> None:
    # Fragments that open and close every lexical state: quotes, escapes, comments of each kind, braces.
    fragments = ["{", "}", "a", "x1", " ", "\n", "'", "''", "\\", '"', "`", "--", "#", "/*", "*/", "{#", "#}",
                 ":", "1", ".", "$", "select", "{x}", "{ y }", "-", "*", "/", "é", ","]  # fmt: skip
    rng = random.Random(20250301)
    compared = 0
    for _ in range(6000):
        text = "".join(rng.choice(fragments) for _ in range(rng.randint(1, 14)))
        if re.search(r"\{\{[-+]|\{%", text):  # Jinja block tokens: refused by the server's parser anyway
            continue
        try:
            expected = server_placeholders(text)
        except Exception:  # text the server cannot tokenize is refused before any binding
            continue
        compared += 1
        assert [p.name for p in find_placeholders(text)] == expected, text
    assert compared > 2500


def test_positions_point_at_the_braces() -> None:
    text = "select\n  {a} + { b }"
    spans = [(p.start, p.end) for p in find_placeholders(text)]
    assert [text[s:e] for s, e in spans] == ["{a}", "{ b }"]
    assert line_column(text, spans[1][0]) == (2, 9)


def test_placeholders_parse_where_the_server_parses_them() -> None:
    text = "select {a}, '{b}' from events where event = {c} -- {d}"
    nodes = parse_hogql(text).find_all(exp.Placeholder)
    parsed = sorted(node.name for node in nodes if node.args.get("kind") == HOGQL_PLACEHOLDER)
    assert parsed == sorted(p.name for p in find_placeholders(text)) == ["a", "c"]


def test_bind_names_locals_first_and_server_placeholders_left_alone() -> None:
    text = "select {a}, {b}, {filters}"
    assert bind_names(text, {"a": "local"}, {"a": "global", "b": 2, "filters": "not mine"}) == {"a": "local", "b": 2}
    with pytest.raises(UndefinedName, match=r"\{missing\} \(line 2, column 7\) is not a defined variable"):
        bind_names("select 1,\n      {missing}", {})
