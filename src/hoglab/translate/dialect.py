"""sqlglot's ClickHouse dialect, narrowed to HogQL.

Three kinds of change, all small:

* **Tokens**: ``$`` is an identifier character, so ``properties.$browser`` and ``$session_id`` tokenize (stock
  ClickHouse reads ``$`` as a heredoc string). Backticks come first among identifier quotes, so keys print as
  ``properties.`$feature/x```.
* **Parsing**: no function is given a typed sqlglot node; every call stays ``Anonymous`` (or one of the
  aggregate nodes) under the name the user wrote, so the printer emits exactly the ClickHouse function that
  was asked for and the allow-list checks that name. ``{name}`` is a HogQL placeholder; ClickHouse's own
  ``{name:Type}`` parameters, ``SETTINGS`` and ``FORMAT`` are refused where they are met, with their position.
  ``LIMIT n BY x`` may be followed by a plain ``LIMIT`` (stored as ``limit_by``), as ClickHouse allows.
* **Printing**: comments are never printed; set operations always spell ``ALL``/``DISTINCT`` (so
  ``intersect_default_mode`` and friends cannot change a statement's meaning); ``if(a, b, c)`` stays ``if``.

>>> import sqlglot
>>> sqlglot.parse_one("select properties.$browser from events", dialect=HogQLDialect).sql(dialect=HogQLDialect)
'SELECT properties.$browser FROM events'
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from sqlglot import exp
from sqlglot.dialects.clickhouse import ClickHouse
from sqlglot.generators.clickhouse import ClickHouseGenerator
from sqlglot.parsers.clickhouse import ClickHouseParser
from sqlglot.tokens import Token, TokenType

from .budget import checkpoint
from .errors import HogQLError

__all__ = ["HOGQL_PLACEHOLDER", "SAMPLE_OFFSET_META", "HogQLDialect", "HogQLGenerator"]

HOGQL_PLACEHOLDER = "hogql"
SAMPLE_OFFSET_META = "hq_sample_offset"
"""Where a ``SAMPLE k OFFSET m`` keeps its offset ``m`` (a TableSample has no argument for it)."""
"""``Placeholder.kind`` of a HogQL ``{name}`` placeholder (ClickHouse's ``{name:Type}`` is refused)."""

# Special syntax that needs a parser of its own (CAST(x AS T), EXTRACT(DAY FROM x), TRIM(BOTH ..), quantile's
# parameters, tuple(), arrayJoin). Everything else is an ordinary call and keeps its name. VIEW and COLUMNS are
# kept only so that check.py can refuse them with a clear message.
_KEPT_FUNCTION_PARSERS = {
    "AND",
    "ARRAYJOIN",
    "CAST",
    "COLUMNS",
    "EXTRACT",
    "OR",
    "POSITION",
    "QUANTILE",
    "SUBSTRING",
    "TRIM",
    "TUPLE",
    "VIEW",
    "XOR",
}


_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


def _refuse(message: str, token: Token | None) -> HogQLError:
    if token is None:
        return HogQLError(message)
    return HogQLError(message, start=token.start, end=token.end + 1)


class HogQLParser(ClickHouseParser):  # type: ignore[misc]  # sqlglot is untyped for mypy here
    FUNCTIONS: ClassVar[dict[str, Any]] = {}
    FUNCTION_PARSERS: ClassVar[dict[str, Any]] = {
        k: v for k, v in ClickHouseParser.FUNCTION_PARSERS.items() if k in _KEPT_FUNCTION_PARSERS
    }
    # CURRENT_USER and friends would otherwise become typed nodes that print as server functions.
    NO_PAREN_FUNCTIONS: ClassVar[dict[Any, Any]] = {}

    QUERY_MODIFIER_PARSERS: ClassVar[dict[Any, Any]] = {
        **ClickHouseParser.QUERY_MODIFIER_PARSERS,
        TokenType.LIMIT: lambda self: self._parse_limit_or_limit_by(),
        TokenType.SETTINGS: lambda self: self._refuse_modifier("SETTINGS"),
        TokenType.FORMAT: lambda self: self._refuse_modifier("FORMAT"),
        TokenType.FETCH: lambda self: self._refuse_modifier("FETCH"),
        TokenType.FOR: lambda self: self._refuse_modifier("FOR"),
        TokenType.LOCK: lambda self: self._refuse_modifier("LOCK"),
    }

    def _refuse_modifier(self, keyword: str) -> tuple[str, None]:
        raise _refuse(f"{keyword} is not allowed in HogQL", self._curr)

    def _parse_limit_or_limit_by(self) -> tuple[str, exp.Expr | None]:
        token = self._curr
        limit = self._parse_limit()
        if isinstance(limit, exp.Limit) and limit.expressions:
            return "limit_by", limit
        # ClickHouse's ``LIMIT n OFFSET m BY x``: the BY belongs to this LIMIT, not to the query's OFFSET.
        if isinstance(limit, exp.Limit) and self._curr and self._curr.token_type == TokenType.OFFSET:
            index = self._index
            self._advance()
            offset = self._parse_term()
            by = self._parse_limit_by()
            if by:
                limit.set("offset", offset)
                limit.set("expressions", by)
                return "limit_by", limit
            self._retreat(index)
        if isinstance(limit, exp.Limit):
            limit.meta["hq_token_start"] = token.start if token else None
        return "limit", limit

    def _parse_query_parameter(self) -> exp.Expr | None:
        start = self._prev
        curr, nxt = self._curr, self._next
        if (
            curr is not None
            and nxt is not None
            # any word, keywords included: {event}, {end} and {filters} are all placeholders
            and (curr.token_type == TokenType.IDENTIFIER or _WORD.match(curr.text) is not None)
            and curr.token_type not in (TokenType.STRING, TokenType.NUMBER)
            and nxt.token_type == TokenType.R_BRACE
        ):
            self._advance(2)
            node = exp.Placeholder(this=curr.text, kind=HOGQL_PLACEHOLDER)
            node.update_positions(start=start.start, end=self._prev.end, line=start.line, col=start.col)
            return node
        variable = self._parse_variable(start)
        if variable is not None:
            return variable
        index = self._index
        parsed = super()._parse_query_parameter()
        if parsed is not None:
            raise HogQLError(
                "ClickHouse query parameters ({name:Type}) are not supported: write {name} and pass 'values'",
                start=start.start,
                end=self._prev.end + 1,
            )
        self._retreat(index)
        return None

    def _parse_variable(self, start: Token) -> exp.Expr | None:
        # PostHog's insight variables: ``{variables.code_name}``, a placeholder named "variables.code_name".
        tokens = [self._curr, self._next, *(self._tokens[self._index + 2 : self._index + 4])]
        if len(tokens) < 4 or any(t is None for t in tokens) or tokens[0].text != "variables":
            return None
        dot, name, close = tokens[1], tokens[2], tokens[3]
        if dot.token_type != TokenType.DOT or close.token_type != TokenType.R_BRACE or not _WORD.match(name.text):
            return None
        self._advance(4)
        node = exp.Placeholder(this=f"variables.{name.text}", kind=HOGQL_PLACEHOLDER)
        node.update_positions(start=start.start, end=self._prev.end, line=start.line, col=start.col)
        return node

    RANGE_PARSERS: ClassVar[dict[Any, Any]] = {
        **ClickHouseParser.RANGE_PARSERS,
        TokenType.RLIKE: lambda self, this: self._parse_regex(this, exp.RegexpLike),
        TokenType.IRLIKE: lambda self, this: self._parse_regex(this, exp.RegexpILike),
    }

    def _parse_regex(self, this: exp.Expr | None, kind: type[exp.Expr]) -> exp.Expr:
        # HogQL's regex operators: ``~`` and ``=~`` match, ``~*`` and ``=~*`` match ignoring case, ``!~`` and ``!~*``
        # their negations (PostHog's Regex, IRegex, NotRegex and NotIRegex).
        negate = self._prev.text.startswith("!")
        node = kind(this=this, expression=self._parse_bitwise())
        return exp.Not(this=node) if negate else node

    def _parse_table_sample(self, as_modifier: bool = False) -> exp.TableSample | None:
        token = self._curr
        sample = super()._parse_table_sample(as_modifier=as_modifier)
        if sample is not None:
            if as_modifier:
                raise _refuse("SAMPLE must directly follow its table", token)
            if self._match(TokenType.OFFSET):
                # SAMPLE k OFFSET m: the part of the sampling key's range from m to m + k (kept for the view)
                sample.meta[SAMPLE_OFFSET_META] = self._parse_bitwise()
            sample.update_positions(token)
        return sample

    def _parse_join(
        self,
        skip_join_token: bool = False,
        parse_bracket: bool = False,
        alias_tokens: Any = None,
    ) -> exp.Join | None:
        # INNER ARRAY JOIN is ClickHouse's (and PostHog's) long name for ARRAY JOIN
        curr, nxt = self._curr, self._next
        if curr and curr.token_type == TokenType.INNER and nxt and nxt.text.upper() == "ARRAY":
            self._advance()
        join: exp.Join | None = super()._parse_join(
            skip_join_token=skip_join_token, parse_bracket=parse_bracket, alias_tokens=alias_tokens
        )
        return join


class HogQLGenerator(ClickHouseGenerator):  # type: ignore[misc]
    def select_sql(self, expression: exp.Select) -> str:
        checkpoint()  # the compile budget (budget.py): printing a thousand subqueries takes seconds too
        return str(super().select_sql(expression))

    def offset_limit_modifiers(
        self, expression: exp.Expr, fetch: bool, limit: exp.Fetch | exp.Limit | None
    ) -> list[str]:
        limit_by = expression.args.get("limit_by")
        return [self.sql(limit_by) if limit_by else "", *super().offset_limit_modifiers(expression, fetch, limit)]

    def set_operation(self, expression: exp.SetOperation) -> str:
        op = type(expression).key.upper()
        distinct = expression.args.get("distinct")
        return f"{op} {'DISTINCT' if distinct else 'ALL'}"

    def if_sql(self, expression: exp.If) -> str:
        if isinstance(expression.parent, exp.Case):
            return str(super().if_sql(expression))
        false = expression.args.get("false")
        return str(
            self.func("if", expression.this, expression.args.get("true"), false if false is not None else exp.null())
        )


class HogQLDialect(ClickHouse):  # type: ignore[misc]
    """sqlglot dialect for HogQL text and for the ClickHouse SQL printed from it."""

    class Tokenizer(ClickHouse.Tokenizer):  # type: ignore[misc]
        SINGLE_TOKENS: ClassVar[dict[str, TokenType]] = {
            **{k: v for k, v in ClickHouse.Tokenizer.SINGLE_TOKENS.items() if k != "$"},
            "~": TokenType.RLIKE,  # HogQL has no bitwise ~ (that is bitNot); ~ is a regex match
        }
        KEYWORDS: ClassVar[dict[str, TokenType]] = {
            **ClickHouse.Tokenizer.KEYWORDS,
            "=~": TokenType.RLIKE,
            "!~": TokenType.RLIKE,
            "~*": TokenType.IRLIKE,
            "=~*": TokenType.IRLIKE,
            "!~*": TokenType.IRLIKE,
        }
        VAR_SINGLE_TOKENS: ClassVar[set[str]] = {"$"}
        HEREDOC_STRINGS: ClassVar[list[str | tuple[str, str]]] = []
        IDENTIFIERS: ClassVar[list[str | tuple[str, str]]] = ["`", '"']

    Parser = HogQLParser
    Generator = HogQLGenerator
