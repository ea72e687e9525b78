"""What one capture request may cost: a bound on its events, and its memory charged to the memory budget.

A capture request needs only a project's public token, so what it makes the process hold is bounded like a
query's answer, in the same budget (``engine/memory.py``): the memory a request needs is reserved on the
engine's :class:`~hoglab.server.engine.memory.AnswerMemory` before the work that takes it, and given back once
its events are written.

* **reading the body**: before the JSON is parsed, what parsing it will take (:func:`parse_cost`, an upper bound
  from the decoded bytes, the objects, lists and values in them) is reserved for the requests whose key is not
  read yet, all together (:data:`UNREAD`, which has a project's share); once the key names the project, the
  reservation moves to that project's share;
* **its events**: at most ``max_events`` a request (``HOGLAB_CAPTURE_MAX_EVENTS``, 200,000; PostHog's SDKs send
  at most a few hundred), and what the events kept cost until they are written (:func:`events_cost`).

A request that alone needs more than a project's share is a 413 naming the bound; one that would pass the share
while the project's (or the unread) other requests hold it, a 429 with ``Retry-After`` (the SDKs retry).

>>> from hoglab.server.engine.memory import AnswerMemory
>>> memory = AnswerMemory(limit=10_000_000, project_limit=5_000_000)
>>> charge = CaptureCharge(memory)
>>> charge.parse(b'{"api_key": "phc", "batch": [{"event": "a", "distinct_id": "u"}]}')
>>> charge.to_project(7); memory.held(7) == charge.held > 0, memory.held(UNREAD)
(True, 0)
>>> charge.release(); memory.held()
0
"""

from __future__ import annotations

from dataclasses import dataclass

from ..engine.memory import AnswerMemory, AnswerMemoryExceeded
from .errors import IngestError

__all__ = ["DEFAULT_MAX_EVENTS", "EVENT_COST", "UNREAD", "CaptureCharge", "check_event_count", "events_cost",
           "parse_cost"]  # fmt: skip

DEFAULT_MAX_EVENTS = 200_000
"""Events one capture request may carry (``HOGLAB_CAPTURE_MAX_EVENTS``)."""
UNREAD = -1
"""The account of capture bodies whose project key is not read yet: all such requests share one project's share."""
EVENT_COST = 1_000
"""Bytes a kept event holds until it is written, besides its share of the body (its row, uuid, time, objects)."""
_VALUE_COST = 100  # an object, list or value parsed: Python's object and the pointer to it, rounded up


def parse_cost(data: bytes) -> int:
    """An upper bound of the memory parsing ``data`` takes: two bytes a byte (text, copied), and ``_VALUE_COST``
    for each object, list and value (counted by their brackets and commas, scanned in C at GB/s).

    >>> parse_cost(b"[{},{},{}]")
    620
    """
    values = data.count(b"{") + data.count(b"[") + data.count(b",")
    return 2 * len(data) + _VALUE_COST * values


def events_cost(kept: int, body_bytes: int) -> int:
    """What ``kept`` validated events hold until they are written: :data:`EVENT_COST` each, and their properties
    and JSON again (as much as the body)."""
    return EVENT_COST * kept + body_bytes


def check_event_count(count: int, max_events: int, attr: str | None) -> None:
    """A 413 naming the bound for a request of more than ``max_events`` events."""
    if count > max_events:
        raise IngestError(
            f"Request has {count} events, more than the {max_events} a capture request may carry "
            "(HOGLAB_CAPTURE_MAX_EVENTS): send them in smaller batches.",
            code="payload_too_large",
            attr=attr,
        )


@dataclass(eq=False)
class CaptureCharge:
    """One request's reservation on the memory budget's answer part; :meth:`release` gives it back."""

    memory: AnswerMemory | None
    account: int = UNREAD
    held: int = 0

    def _reserve(self, nbytes: int, what: str) -> None:
        if self.memory is None or nbytes <= 0:
            return
        try:
            self.memory.reserve(self.account, nbytes)
        except AnswerMemoryExceeded as exc:
            whose = "capture requests whose key is not read yet" if self.account == UNREAD else "this project"
            if self.held + nbytes > self.memory.project_limit:
                raise IngestError(
                    f"This request needs about {(self.held + nbytes) >> 20} MiB of memory for {what}, more than "
                    f"the share of the service's memory budget for {whose} ({self.memory.project_limit >> 20} "
                    "MiB; HOGLAB_MEMORY_BUDGET): send smaller batches.",
                    code="payload_too_large",
                ) from None
            raise IngestError(
                f"The capture requests of {whose} being read at once hold their share of the service's memory "
                f"budget ({exc.limit >> 20} MiB): retry shortly.",
                code="throttled",
            ) from None
        self.held += nbytes

    def parse(self, data: bytes) -> None:
        """Reserve what parsing the decoded body takes, before it is parsed."""
        self._reserve(parse_cost(data), "reading its body")

    def to_project(self, project_id: int) -> None:
        """Move the reservation to the project the key named (its share, as its queries' answers)."""
        held, account = self.held, self.account
        if self.memory is None or account == project_id:
            self.account = project_id
            return
        self.account, self.held = project_id, 0
        try:
            self._reserve(held, "reading its body")
        finally:
            self.memory.release(account, held)

    def add(self, nbytes: int) -> None:
        """Reserve ``nbytes`` more (the events kept) on the current account."""
        self._reserve(nbytes, "its events")

    def release(self) -> None:
        held, self.held = self.held, 0
        if held and self.memory is not None:
            self.memory.release(self.account, held)
