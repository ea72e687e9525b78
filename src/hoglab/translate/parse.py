"""Text to one SELECT (or set operation) tree, or a HogQLError that points at the problem.

>>> parse_hogql("select event from events").sql()
'SELECT event FROM events'
>>> parse_hogql("select 1; select 2")
Traceback (most recent call last):
...
hoglab.translate.errors.HogQLError: Only one statement is allowed (line 1, column 9)
"""

from __future__ import annotations

import re

from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, TokenError
from sqlglot.tokens import Token, TokenType

from .dialect import HogQLDialect
from .errors import HogQLError

__all__ = ["MAX_QUERY_LENGTH", "parse_hogql", "parse_hogql_expr"]

MAX_QUERY_LENGTH = 100_000
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Statement keywords that can only start something other than a read. Naming them gives a clearer refusal
# than sqlglot's parse error and catches them before any parser fallback (sqlglot turns unknown statements
# such as SYSTEM or KILL into an opaque ``Command``).
_WRITE_KEYWORDS = {
    "ALTER", "ATTACH", "BACKUP", "CHECK", "CREATE", "DELETE", "DESCRIBE", "DESC", "DETACH", "DROP", "EXCHANGE",
    "EXPLAIN", "GRANT", "INSERT", "KILL", "MOVE", "OPTIMIZE", "RENAME", "REPLACE", "RESTORE", "REVOKE", "SET",
    "SHOW", "SYSTEM", "TRUNCATE", "UNDROP", "UPDATE", "USE", "WATCH", "EXISTS",
}  # fmt: skip


def _tokenize(text: str) -> list[Token]:
    try:
        tokens: list[Token] = HogQLDialect().tokenize(text)
        return tokens
    except TokenError as e:
        raise HogQLError(f"Syntax error: {_first_line(str(e))}") from None


def _first_line(message: str) -> str:
    return message.strip().splitlines()[0] if message.strip() else "invalid query"


def _check_tokens(tokens: list[Token]) -> None:
    if not tokens:
        raise HogQLError("The query is empty")
    first = tokens[0]
    if first.token_type not in (TokenType.SELECT, TokenType.WITH, TokenType.L_PAREN):
        word = first.text.upper()
        what = f"{word} statements are" if word in _WRITE_KEYWORDS else f"Statements starting with {first.text!r} are"
        raise HogQLError(f"{what} not allowed: HogQL runs SELECT queries only", start=first.start, end=first.end + 1)
    for token in tokens:
        if token.token_type == TokenType.INTO:
            raise HogQLError("INTO is not allowed in HogQL", start=token.start, end=token.end + 1)
    semicolons = [i for i, tok in enumerate(tokens) if tok.token_type == TokenType.SEMICOLON]
    # A single trailing ';' is harmless; anything after a ';' is a second statement.
    if semicolons and semicolons[0] != len(tokens) - 1:
        tok = tokens[semicolons[0]]
        raise HogQLError("Only one statement is allowed", start=tok.start, end=tok.end + 1)


# Tokens after which an expression starts: a ``<`` there opens a HogQLX tag, never a comparison.
_OPERAND_START = {TokenType.SELECT, TokenType.COMMA, TokenType.L_PAREN, TokenType.THEN, TokenType.ELSE}


def _refuse_posthog_only_syntax(tokens: list[Token]) -> None:
    """PostHog-only syntax hoglab does not run, refused with a clear message instead of a parse error."""
    for prev, tok, nxt in zip([None, *tokens], tokens, [*tokens[1:], None], strict=False):
        if nxt is None:
            break
        adjacent = nxt.start == tok.end + 1
        # f'...' is PostHog's template string; ClickHouse has no such literal.
        is_f = tok.token_type == TokenType.VAR and tok.text in ("f", "F")
        if is_f and nxt.token_type == TokenType.STRING and adjacent:
            raise HogQLError(
                "f-strings (f'...') are not supported by hoglab: build the text with concat(...)",
                start=tok.start,
                end=nxt.end + 1,
            )
        if (
            tok.token_type == TokenType.LT
            and adjacent
            and _WORD.match(nxt.text)
            and (prev is None or prev.token_type in _OPERAND_START)
        ):
            raise HogQLError(
                f"HogQLX tags (<{nxt.text} ... />) are not supported by hoglab: they render in PostHog's app only",
                start=tok.start,
                end=nxt.end + 1,
            )


def _parse_error(err: ParseError, tokens: list[Token], text: str) -> HogQLError:
    info = err.errors[0] if err.errors else {}
    description = str(info.get("description") or _first_line(str(err)))
    if "sqlglot" in description or "Required keyword" in description:  # sqlglot's own words mean nothing here
        near = str(info.get("highlight") or "").strip()
        description = f"unexpected {near!r}" if near else "the query does not parse here"
    line, col = info.get("line"), info.get("col")
    start: int | None = None
    if isinstance(line, int) and isinstance(col, int):
        # sqlglot reports the line and the column where the offending token ends; find that token.
        for tok in tokens:
            if tok.line == line and tok.col == col:
                start = tok.start
                break
    return HogQLError(f"Syntax error: {description}", start=start, query=text)


# Tokens after which an IN starts an operand: ``in(a, b)`` there is PostHog's function form of ``a IN b`` (not NOT:
# ``x NOT IN (..)`` is the operator).
_CALL_START = {
    *_OPERAND_START, TokenType.WHERE, TokenType.HAVING, TokenType.WHEN, TokenType.AND, TokenType.OR,
    TokenType.ON, TokenType.PREWHERE, TokenType.QUALIFY, TokenType.EQ, TokenType.NEQ, TokenType.GT, TokenType.GTE,
    TokenType.LT, TokenType.LTE, TokenType.PLUS, TokenType.DASH, TokenType.STAR, TokenType.SLASH, TokenType.ALIAS,
}  # fmt: skip


def _in_calls_as_functions(tokens: list[Token]) -> None:
    """``in(1, (1, 2))`` where an operand starts is a call named ``in`` (posthog_names.py writes it as IN)."""
    for prev, tok, nxt in zip([None, *tokens], tokens, [*tokens[1:], None], strict=False):
        opens = nxt is not None and nxt.token_type == TokenType.L_PAREN
        if tok.token_type == TokenType.IN and opens and (prev is None or prev.token_type in _CALL_START):
            tok.token_type = TokenType.VAR


_DOTTED_NUMBER = re.compile(r"\d+(\.[A-Za-z0-9_$]+)+\Z")


def _split_dotted_numbers(tokens: list[Token]) -> list[Token]:
    """``a.1.id`` tokenizes as ``a`` ``.`` ``1.id``: split the last into ``1`` ``.`` ``id`` (a number is an element,
    never part of a name)."""
    out: list[Token] = []
    for tok in tokens:
        dotted = tok.token_type in (TokenType.VAR, TokenType.NUMBER) and _DOTTED_NUMBER.match(tok.text)
        if not (out and out[-1].token_type == TokenType.DOT and dotted):
            out.append(tok)
            continue
        start = tok.start
        for i, piece in enumerate(tok.text.split(".")):
            if i:
                out.append(Token(TokenType.DOT, ".", tok.line, tok.col, start - 1, start - 1))
            kind = TokenType.NUMBER if piece.isdigit() else TokenType.VAR
            out.append(Token(kind, piece, tok.line, tok.col, start, start + len(piece) - 1))
            start += len(piece) + 1
    return out


def _parse(text: str) -> exp.Expr:
    if len(text) > MAX_QUERY_LENGTH:
        raise HogQLError(f"The query is longer than {MAX_QUERY_LENGTH} characters")
    tokens = _split_dotted_numbers(_tokenize(text))
    _check_tokens(tokens)
    _refuse_posthog_only_syntax(tokens)
    _in_calls_as_functions(tokens)
    dialect = HogQLDialect()
    try:
        trees = dialect.parser(error_level=ErrorLevel.IMMEDIATE).parse(tokens, text)
    except ParseError as e:
        raise _parse_error(e, tokens, text) from None
    # a comment after the final ';' is kept by sqlglot as an empty statement holding it
    statements = [t for t in trees if t is not None and not isinstance(t, exp.Semicolon)]
    if len(statements) != 1:
        raise HogQLError("Only one statement is allowed")
    return statements[0]


def parse_hogql(text: str) -> exp.Query:
    """Parse HogQL into one ``Select`` or set operation, with ClickHouse's placement of trailing clauses.

    ClickHouse reads ``SELECT .. UNION ALL SELECT .. ORDER BY x LIMIT 5`` as ORDER BY/LIMIT of the *last*
    SELECT, where sqlglot hangs them on the union; they are moved so every later step sees ClickHouse's tree.
    """
    try:
        tree = _parse(text)
        while isinstance(tree, exp.Subquery) and not _modifiers(tree) and not tree.alias:
            tree = tree.this
        if isinstance(tree, exp.Subquery):
            raise HogQLError("Clauses after a parenthesised query are not valid ClickHouse: move them inside")
        if not isinstance(tree, (exp.Select, exp.SetOperation)):
            raise HogQLError("Only SELECT queries are allowed", start=None)
        _normalize_set_operations(tree)
        return _spell_operators_as_calls(tree)
    except HogQLError as e:
        raise e.locate(text) from None
    except RecursionError:
        raise HogQLError("The query is nested too deeply") from None


def parse_hogql_expr(text: str) -> exp.Expr:
    """Parse a single HogQL expression (a ``hogql`` property filter, a runner's snippet).

    >>> parse_hogql_expr("properties.$browser = 'Chrome'").sql()
    "properties.$browser = 'Chrome'"
    >>> parse_hogql_expr("1 from events")
    Traceback (most recent call last):
    ...
    hoglab.translate.errors.HogQLError: Not a single expression: '1 from events'
    """
    select = parse_hogql(f"SELECT {text}")
    extra = [k for k, v in select.args.items() if v and k != "expressions"]
    if not isinstance(select, exp.Select) or len(select.expressions) != 1 or extra:
        raise HogQLError(f"Not a single expression: {text[:80]!r}")
    node: exp.Expr = select.expressions[0]
    return node


_MODIFIER_KEYS = ("order", "limit", "offset", "limit_by")


def _modifiers(node: exp.Expr) -> list[str]:
    return [k for k in _MODIFIER_KEYS if node.args.get(k)]


def _normalize_set_operations(tree: exp.Expr) -> None:
    for node in list(tree.walk()):
        if not isinstance(node, exp.SetOperation) or not _modifiers(node):
            continue
        last = node.expression
        if not isinstance(last, exp.Select):
            raise HogQLError(
                "ORDER BY/LIMIT after a parenthesised branch of a set operation is not valid ClickHouse: "
                "put it inside the parentheses, or wrap the whole query in a subquery"
            )
        for key in _modifiers(node):
            value = node.args[key]
            node.set(key, None)
            if last.args.get(key):
                raise HogQLError(f"Two {key.upper()} clauses for one SELECT")
            last.set(key, value)


def _spell_operators_as_calls(tree: exp.Query) -> exp.Query:
    """PostHog's operators that are ClickHouse functions: ``a ?? b`` is ``coalesce(a, b)`` and ``a || b`` is
    ``concat(a, b)`` (so concat's NULL rule, nullsafe.py, applies to both spellings)."""
    for node in list(tree.find_all(exp.Coalesce, exp.DPipe)):
        if isinstance(node, exp.Coalesce):
            call = exp.Anonymous(this="coalesce", expressions=[node.this, *node.expressions])
        else:
            call = exp.Anonymous(this="concat", expressions=[node.this, node.expression])
        node.replace(call)
    return tree
