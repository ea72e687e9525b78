"""The last line of defence: prove every physical table read in the printed tree is filtered by team.

Resolution replaces each HogQL table with a view whose WHERE starts with ``equals(<raw>.team_id, <team>)``.
This module does not trust that: it walks the final tree and checks that every table reference is either

* a physical table in the configured database, directly in the FROM of a view SELECT whose WHERE has the
  guard for that very alias as one of its AND-ed conditions, or
* a renamed CTE (``__hq_cte_<n>``), or ``numbers(...)``.

Anything else means a compiler bug, and the query is refused rather than run.

>>> import re

from sqlglot import exp
>>> verify_guards(exp.select("1").from_("hoglab.events"), team_id=1, database="hoglab")
Traceback (most recent call last):
...
hoglab.translate.errors.HogQLError: Internal error: unguarded reference to hoglab.events
"""

from __future__ import annotations

import re

from sqlglot import exp

from hoglab.translate.errors import HogQLError

from .tables import GUARD_META, PERSON_OVERRIDES_TABLE, TABLES, guard

__all__ = ["verify_guards", "verify_lexing"]

# query_log is made of literal rows (query_log.py): no physical table of that name is ever read.
_PHYSICAL = {*TABLES, PERSON_OVERRIDES_TABLE} - {"query_log"}


def _conjuncts(node: exp.Expr | None) -> list[exp.Expr]:
    if node is None:
        return []
    if isinstance(node, exp.Where):
        return _conjuncts(node.this)
    if isinstance(node, exp.Paren):
        return _conjuncts(node.this)
    if isinstance(node, exp.And):
        return [*_conjuncts(node.this), *_conjuncts(node.expression)]
    return [node]


def _internal(message: str) -> HogQLError:
    return HogQLError(f"Internal error: {message}", internal=True)


def _check_physical(table: exp.Table, team_id: int) -> None:
    alias = table.alias
    from_ = table.parent
    select = from_.parent if isinstance(from_, exp.From) else None
    if not isinstance(select, exp.Select) or select.meta.get(GUARD_META) != alias or not alias:
        raise _internal(f"unguarded reference to {table.sql()}")
    expected = guard(alias, team_id)
    if not any(c == expected for c in _conjuncts(select.args.get("where"))):
        raise _internal(f"missing team guard on {table.sql()}")


def verify_guards(tree: exp.Expr, *, team_id: int, database: str) -> int:
    """Raise (as an internal HogQLError) unless every table reference is guarded; return how many were checked."""
    checked = 0
    for table in tree.find_all(exp.Table):
        if table.args.get("catalog") is not None:
            raise _internal(f"catalog-qualified table {table.sql()}")
        if isinstance(table.this, exp.Anonymous):
            if table.this.name.lower() != "numbers":
                raise _internal(f"table function {table.this.name}")
            continue
        db = table.args.get("db")
        if db is None:
            if not table.name.startswith("__hq_cte_"):
                raise _internal(f"unresolved table {table.sql()}")
            continue
        if db.name != database or table.name not in _PHYSICAL:
            raise _internal(f"unexpected table {table.sql()}")
        _check_physical(table, team_id)
        checked += 1
    return checked


# ClickHouse's quoting: in '...' and `...` a backslash escapes the next character and a doubled quote is one quote.
_QUOTED = re.compile(r"'(?:[^'\\]|\\.|'')*'|`(?:[^`\\]|\\.|``)*`", re.DOTALL)
_UNQUOTED_OK = re.compile(r"[A-Za-z0-9_ .,()\[\]=<>!+\-*/%|?:]*\Z")


def verify_lexing(sql: str) -> None:
    """Raise (internal) unless the printed SQL, outside its quoted strings and names, is plain ASCII with no
    comment, heredoc, brace, semicolon or stray quote: then ClickHouse's lexer can only read it as printed.

    >>> verify_lexing("SELECT 'a''b -- c', `x$` FROM t")
    >>> verify_lexing("SELECT 1 AS $$, 'x$$' FROM t")
    Traceback (most recent call last):
    ...
    hoglab.translate.errors.HogQLError: Internal error: unexpected characters in the printed SQL: '$'
    """
    rest = _QUOTED.sub(" ", sql)
    if not _UNQUOTED_OK.match(rest) or "--" in rest or "/*" in rest or "*/" in rest:
        bad = "".join(sorted(set(re.sub(r"[A-Za-z0-9_ .,()\[\]=<>!+*/%|?:-]", "", rest)))) or "comment"
        raise _internal(f"unexpected characters in the printed SQL: {bad!r}")
