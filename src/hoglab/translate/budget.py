"""The compile budget: how much work compiling one statement may take, and how much SQL it may print.

Compiling is pure Python in the serving process, so a statement that takes seconds to compile takes them from
every other project too (the interpreter runs one thread at a time). A statement of a thousand subqueries is
short text (~60 KB) but compiles to megabytes of SQL. Two limits bound that work:

* ``seconds``: the CPU time of the compiling thread (``time.thread_time``, so a busy machine does not make a
  statement fail that would pass on an idle one). The compiler calls :func:`checkpoint` as it goes (each SELECT
  resolved, each column, each SELECT printed), which raises once the time is spent;
* ``max_sql_bytes``: the printed ClickHouse SQL; ClickHouse parses at most ``max_query_size`` bytes (262,144),
  so anything longer could never run anyway.

Either one is a :class:`CompileBudgetExceeded` (a :class:`HogQLError`), which the Query API answers with a 400
``query_too_complex`` naming the limit. Outside :meth:`CompileBudget.applied` the checkpoints cost a lookup and
do nothing.

>>> budget = CompileBudget(seconds=5, max_sql_bytes=100)
>>> with budget.applied():
...     checkpoint()
>>> budget.check_sql("SELECT 1")
>>> try:
...     budget.check_sql("SELECT " + "1 + " * 50 + "1")
... except CompileBudgetExceeded as exc:
...     print(exc.limit, exc.message[:49])
max_compiled_sql_bytes The query compiles to 208 bytes of SQL, more than
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from .errors import HogQLError

__all__ = [
    "DEFAULT_COMPILE_SECONDS",
    "DEFAULT_MAX_ACTION_FILTERS",
    "DEFAULT_MAX_SQL_BYTES",
    "CompileBudget",
    "CompileBudgetExceeded",
    "action_allowance",
    "checkpoint",
    "spend_action_filters",
]

DEFAULT_COMPILE_SECONDS = 3.0
"""CPU seconds for compiling one statement: twice the slowest statement hoglab's runners write (a 20-step ordered
funnel, 1.3 s)."""
DEFAULT_MAX_SQL_BYTES = 262_144
"""ClickHouse's own ``max_query_size``: the longest SQL the engine parses."""

# Checking the clock costs a system call; counting checkpoints costs almost nothing.
DEFAULT_MAX_ACTION_FILTERS = 1_000
"""Steps and property filters the actions one query names may expand to, all of its statements together (each
series, step, metric and ``matchesAction()`` that names an action expands its every step again)."""
_CHECK_EVERY = 16


class CompileBudgetExceeded(HogQLError):
    """Compiling passed the budget: ``limit`` names which one (``max_compile_seconds`` or
    ``max_compiled_sql_bytes``)."""

    def __init__(self, message: str, *, limit: str) -> None:
        super().__init__(message)
        self.limit = limit


class _Deadline:
    __slots__ = ("budget", "calls", "deadline")

    def __init__(self, budget: CompileBudget) -> None:
        self.budget = budget
        self.deadline = time.thread_time() + budget.seconds
        self.calls = 0

    def check(self) -> None:
        self.calls += 1
        if self.calls % _CHECK_EVERY == 0 and time.thread_time() > self.deadline:
            raise CompileBudgetExceeded(
                f"The query took more than max_compile_seconds ({self.budget.seconds:g} s of CPU) to compile. "
                "Use fewer subqueries, or simpler ones.",
                limit="max_compile_seconds",
            )


_CURRENT: ContextVar[_Deadline | None] = ContextVar("hoglab_compile_budget", default=None)
_EXPANDED: ContextVar[list[int] | None] = ContextVar("hoglab_action_allowance", default=None)


@contextmanager
def action_allowance(limit: int) -> Iterator[None]:
    """Let the actions named in this block expand to at most ``limit`` steps and property filters in all (the
    query service wraps each query's runner in it); nothing is counted outside such a block.

    >>> with action_allowance(10):
    ...     spend_action_filters(6)
    ...     try:
    ...         spend_action_filters(6)
    ...     except CompileBudgetExceeded as exc:
    ...         print(exc.limit)
    max_action_filters
    """
    token = _EXPANDED.set([int(limit), 0])
    try:
        yield
    finally:
        _EXPANDED.reset(token)


def spend_action_filters(count: int) -> None:
    """Count ``count`` steps and filters of an action being expanded; :class:`CompileBudgetExceeded` past the
    block's allowance, before the expansion's work is done."""
    allowance = _EXPANDED.get()
    if allowance is None:
        return
    allowance[1] += count
    if allowance[1] > allowance[0]:
        raise CompileBudgetExceeded(
            f"The actions this query names expand to more than max_action_filters ({allowance[0]}) steps and "
            "property filters (each series, step or matchesAction() naming an action counts its every step and "
            "filter). Name fewer actions, or smaller ones.",
            limit="max_action_filters",
        )


@dataclass(frozen=True)
class CompileBudget:
    """The limits of compiling one statement (see the module's docstring)."""

    seconds: float = DEFAULT_COMPILE_SECONDS
    max_sql_bytes: int = DEFAULT_MAX_SQL_BYTES
    max_action_filters: int = DEFAULT_MAX_ACTION_FILTERS

    @classmethod
    def from_config(cls, config: Any) -> CompileBudget:
        """The budget of a ``ServerConfig`` (``max_compile_seconds``, ``max_compiled_sql_bytes``,
        ``max_action_filters``)."""
        return cls(
            float(getattr(config, "max_compile_seconds", DEFAULT_COMPILE_SECONDS)),
            int(getattr(config, "max_compiled_sql_bytes", DEFAULT_MAX_SQL_BYTES)),
            int(getattr(config, "max_action_filters", DEFAULT_MAX_ACTION_FILTERS)),
        )

    @contextmanager
    def applied(self) -> Iterator[None]:
        """Compile in this block under the time limit (the clock starts now, on this thread)."""
        token = _CURRENT.set(_Deadline(self))
        try:
            yield
        finally:
            _CURRENT.reset(token)

    def check_sql(self, sql: str) -> None:
        """Refuse printed SQL longer than ``max_sql_bytes`` (bytes of UTF-8, as ClickHouse counts)."""
        if len(sql) <= self.max_sql_bytes // 4:
            return  # no text of this many characters can be longer in UTF-8 (4 bytes a character at most)
        size = len(sql.encode("utf-8", errors="surrogatepass"))
        if size > self.max_sql_bytes:
            raise CompileBudgetExceeded(
                f"The query compiles to {size} bytes of SQL, more than max_compiled_sql_bytes ({self.max_sql_bytes})."
                " Use fewer subqueries, or simpler ones.",
                limit="max_compiled_sql_bytes",
            )


def checkpoint() -> None:
    """Called by the compiler at each unit of work: raises :class:`CompileBudgetExceeded` once the statement's
    time is spent (nothing outside :meth:`CompileBudget.applied`)."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check()
