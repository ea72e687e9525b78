"""Ingestion: events as PostHog's SDKs send them (``capture``), files in PostHog's export shape (``load_file``),
the persons both imply, and the ingestion warnings of the events capture drops or repairs (``warnings.py``).

For example (a sketch of a call and its answer, not run)::

    from hoglab.server.ingest import Ingestor, load_file
    Ingestor.for_engine(engine).capture_batch(1, [{"event": "signup", "distinct_id": "u1"}])
    load_file(engine, 1, "events.parquet").rows
"""

from __future__ import annotations

from .errors import EventDropped, IngestError, LoadError
from .events import CapturedEvent, Triage, normalize_batch, normalize_event, triage_batch
from .files import LoadReport, load_file
from .groups import GroupState, GroupStore
from .payload import Payload, decode_payload
from .person_store import PersonStore
from .persons import PersonState, person_uuid
from .writer import Ingestor

__all__ = [
    "CapturedEvent",
    "EventDropped",
    "GroupState",
    "GroupStore",
    "IngestError",
    "Ingestor",
    "LoadError",
    "LoadReport",
    "Payload",
    "PersonState",
    "PersonStore",
    "Triage",
    "decode_payload",
    "load_file",
    "normalize_batch",
    "normalize_event",
    "person_uuid",
    "triage_batch",
]
