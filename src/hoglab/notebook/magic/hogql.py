"""The ``%%hogql`` cell magic and ``%hogql`` line magic: HogQL in a notebook cell, a DataFrame out.

Thin on purpose: IPython's ``magic_arguments`` parses the options, :meth:`hoglab.Client.hogql` runs the
statement (values, limit, async job with its progress bar and Ctrl-C cancel), and this module only finds the
``{name}`` variables to bind and turns a user's mistake into one short message without a traceback.

::

    %load_ext hoglab
    %%hogql -o daily --limit 30
    select toDate(timestamp) as day, count() as events
    from events where event = {event} group by day order by day
"""

from __future__ import annotations

import re
from argparse import Namespace
from typing import TYPE_CHECKING, Any, TypeVar, cast

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, needs_local_scope, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .placeholders import UndefinedName, bind_names, line_column

if TYPE_CHECKING:
    from ...client import Client
    from ...errors import HoglabError

__all__ = ["HogQLMagics", "describe_error", "load_ipython_extension", "split_options", "unload_ipython_extension"]

_F = TypeVar("_F")
# A leading option token: "-o", "--limit", "--limit=5". "--" followed by a space is a SQL comment, not an option.
_OPTION = re.compile(r"\s*(--?[A-Za-z][\w-]*)(=\S*)?(?=\s|$)")
_VALUE = re.compile(r"\s+(\S+)")
# The server appends the position to its message; the magic replaces it with the position in the cell.
_POSITION_SUFFIX = re.compile(r"\s*\(line (\d+), column (\d+)\)\s*$")
_WORD_AT = re.compile(r"[\w$]+")


def split_options(line: str, takes_value: set[str]) -> tuple[str, str]:
    """Split a magic line into its leading options and the HogQL after them.

    Options never contain spaces or quotes, so they are read off the front of the line and only they go to
    argparse (whose shell-style splitting would mangle the SQL's quotes).

    >>> split_options("-o df --limit 5 select '-o' from events", {"-o", "--limit"})
    ('-o df --limit 5', "select '-o' from events")
    >>> split_options("--async -- a comment", set())
    ('--async', '-- a comment')
    """
    i = 0
    while (option := _OPTION.match(line, i)) is not None:
        i = option.end()
        if option.group(2) is None and option.group(1) in takes_value and (value := _VALUE.match(line, i)):
            i = value.end()
    return line[:i].strip(), line[i:].strip()


def _offset_of(text: str, line: int, column: int) -> int:
    lines = text.split("\n")
    if not 1 <= line <= len(lines):
        return -1
    return sum(len(x) + 1 for x in lines[: line - 1]) + column - 1


def _server_span(exc: HoglabError, sent: str) -> tuple[int, int | None] | None:
    """Where in the text sent the server located the error: start, and end when known.

    Read from ``start``/``end`` of hoglab's error body, else its ``line``/``column``, else the "(line L, column C)"
    an async query's message ends with.
    """
    body = getattr(exc, "body", None)
    body = body if isinstance(body, dict) else {}
    start, end = body.get("start"), body.get("end")
    if isinstance(start, int):
        return start, end if isinstance(end, int) and end > start else None
    line, column = body.get("line"), body.get("column")
    if not (isinstance(line, int) and isinstance(column, int)):
        found = _POSITION_SUFFIX.search(str(getattr(exc, "detail", "") or ""))
        if found is None:
            return None
        line, column = int(found.group(1)), int(found.group(2))
    offset = _offset_of(sent, line, column)
    return (offset, None) if offset >= 0 else None


def describe_error(exc: HoglabError, sql: str, limit: int | None = None) -> str:
    """A short message for a failed statement, a HogQL mistake shown where it is.

    A HogQL mistake gets its position in ``sql`` (the cell's text) and the offending line with carets under it.

    ``limit`` is the ``--limit`` the statement was sent with: the client may have wrapped the statement
    (``SELECT * FROM (...) LIMIT n``), and the server's positions are in the text it received.
    """
    from ...client._query import _strip, _with_limit
    from ...errors import QueryError

    if not isinstance(exc, QueryError):
        return str(exc)
    detail = _POSITION_SUFFIX.sub("", str(exc.detail))
    stripped = _strip(sql)
    sent = _with_limit(stripped, limit)
    span = _server_span(exc, sent)
    shift = sent.find(stripped)
    if span is None or shift < 0 or span[0] < shift:
        return f"HogQL error: {detail}"
    # Past the statement's end is the client's LIMIT wrapper: the statement ended before it was complete.
    start = min(span[0] - shift, len(stripped))
    lead = len(sql) - len(sql.lstrip())
    line, column = line_column(sql, start + lead)
    text_line = sql.split("\n")[line - 1]
    if span[1] is not None:
        width = span[1] - span[0]
    else:  # no end given: underline the word there
        word = _WORD_AT.match(text_line, column - 1)
        width = word.end() - word.start() if word else 1
    width = max(1, min(width, len(text_line) - column + 1))
    return f"HogQL error at line {line}, column {column}: {detail}\n  {text_line}\n  {' ' * (column - 1)}{'^' * width}"


_ARGUMENTS = (
    argument("-o", "--output", metavar="NAME", help="also store the DataFrame in the variable NAME"),
    argument("--limit", type=int, metavar="N", help="return at most N rows (LIMIT added to the statement)"),
    argument(
        "--async",
        dest="run_async",
        action="store_true",
        help="run as an async query job: progress bar while waiting, Ctrl-C cancels it on the server",
    ),
    argument("--project", type=int, metavar="ID", help="run in project ID (same host and key)"),
    argument("--client", metavar="NAME", help="use the hoglab.Client in variable NAME (default: the default client)"),
)


def _as_magic(func: _F) -> _F:
    """IPython's magic decorators, stacked as usual.

    The options, then: no ``{var}`` expansion of the line, the caller's local namespace. They are untyped, and
    each returns ``func`` itself with attributes added.
    """
    decorated: Any = line_cell_magic(func)
    for option in reversed(_ARGUMENTS):
        decorated = option(decorated)
    decorated = no_var_expand(needs_local_scope(magic_arguments()(decorated)))
    return cast(_F, decorated)


@magics_class
class HogQLMagics(Magics):  # type: ignore[misc]  # IPython is untyped for mypy here
    """``%hogql`` / ``%%hogql``: registered by ``%load_ext hoglab``."""

    def hogql(self, line: str, cell: str | None = None, local_ns: dict[str, Any] | None = None) -> Any:
        """Run HogQL and return a DataFrame: ``%hogql <statement>`` or a ``%%hogql`` cell.

        ``{name}`` in the statement is the notebook variable ``name``, sent as a HogQL value and bound by the
        server as a literal (never pasted into the SQL). ``{filters}`` is left to the server.
        """
        parser = self.hogql.parser  # type: ignore[attr-defined]  # set by magic_arguments
        takes_value = {s for a in parser._actions for s in a.option_strings if a.nargs != 0}
        options, rest = split_options(line, takes_value)
        args = parse_argstring(self.hogql, options)
        if cell is None:
            sql = rest
        elif rest:
            raise UsageError(f"%%hogql takes options on its line and the statement in the cell, not {rest!r}")
        else:
            sql = cell
        if not sql.strip():
            raise UsageError("%hogql needs a HogQL statement: %hogql select count() from events")
        if args.output is not None and not args.output.isidentifier():
            raise UsageError(f"-o {args.output}: not a valid variable name")
        namespaces = [ns for ns in (local_ns, self.shell.user_ns) if ns is not None]
        try:
            values = bind_names(sql, *namespaces)
        except UndefinedName as exc:
            raise UsageError(str(exc)) from None
        frame = self._run(args, sql, values, namespaces)
        if args.output is not None:
            self.shell.user_ns[args.output] = frame
        return frame

    hogql = _as_magic(hogql)

    def _client(self, args: Namespace, namespaces: list[dict[str, Any]]) -> Client:
        from ...client import Client, default_client

        if args.client is None:
            client = default_client()
        else:
            found = next((ns[args.client] for ns in namespaces if args.client in ns), None)
            if not isinstance(found, Client):
                what = "not defined" if found is None else f"a {type(found).__name__}"
                raise UsageError(f"--client {args.client}: expected a hoglab.Client, but it is {what}")
            client = found
        return client if args.project is None else client.for_project(args.project)

    def _run(self, args: Namespace, sql: str, values: dict[str, Any], namespaces: list[dict[str, Any]]) -> Any:
        from ...errors import HoglabError

        try:
            client = self._client(args, namespaces)
            if args.run_async:
                return client.hogql(sql, values or None, limit=args.limit, run_async=True).result()
            return client.hogql(sql, values or None, limit=args.limit)
        except HoglabError as exc:
            raise UsageError(describe_error(exc, sql, args.limit)) from None


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext hoglab``: register ``%hogql`` and ``%%hogql`` (nothing heavy is imported until a query runs)."""
    ipython.register_magics(HogQLMagics)


def unload_ipython_extension(ipython: Any) -> None:
    """``%unload_ext hoglab``: remove the magics again."""
    manager = ipython.magics_manager
    for kind in ("line", "cell"):
        manager.magics[kind].pop("hogql", None)
    manager.registry.pop(HogQLMagics.__name__, None)
