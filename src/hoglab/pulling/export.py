"""Reading PostHog batch exports from a folder into a mirror: the same write path as pages of the Query API.

PostHog's batch exports to object storage write files under date-shaped prefixes (``2026/01/02/...``), Parquet or
JSON lines (optionally gzipped), one row per event with at least ``uuid, event, properties, distinct_id,
timestamp`` and usually ``person_id, created_at, elements_chain``. Every such file below the folder is read once
(the mirror remembers which), in name order; events already held are skipped by uuid. An event without
``person_id`` gets the person hoglab would give its distinct id (docs/pull.md says what that means). Each row is
checked as an event of the Query API is (:data:`hoglab.pulling.answers.EVENT`): a bad row stops the pull with the
file and row named, before its chunk is stored.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import InvalidArgument, RemoteAnswerError
from .answers import EVENT

if TYPE_CHECKING:
    from ..server.mirror import Mirror
    from .report import PullReport

__all__ = ["export_files", "read_export"]

_SUFFIXES = (".parquet", ".jsonl", ".jsonl.gz", ".json", ".json.gz", ".ndjson", ".ndjson.gz")
_CHUNK = 10_000


def export_files(root: Path) -> list[Path]:
    """The export files below ``root``, in name order (date-shaped prefixes sort by time)."""
    if not root.is_dir():
        raise InvalidArgument(f"from_export: {root} is not a folder")
    return sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(_SUFFIXES))


def _json_lines(path: Path) -> Iterator[dict[str, Any]]:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise InvalidArgument(f"{path}:{number}: not JSON ({exc.msg})") from None


def _parquet_rows(path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        for batch in pq.ParquetFile(path).iter_batches(batch_size=_CHUNK):
            yield from batch.to_pylist()
    except pa.ArrowException as exc:  # a file cut short or not Parquet at all
        raise InvalidArgument(f"{path}: not a readable Parquet file ({exc})") from None


def _rows(path: Path) -> Iterator[dict[str, Any]]:
    return _parquet_rows(path) if path.name.endswith(".parquet") else _json_lines(path)


def _event(row: Any, project_id: int) -> Any:
    from ..server.ingest import person_uuid

    if not isinstance(row, dict):
        return row  # EVENT.read says what it is
    uuid = row.get("uuid")
    if isinstance(uuid, bytes) and len(uuid) == 16:  # Parquet's arrow.uuid arrives as 16 bytes
        uuid = str(__import__("uuid").UUID(bytes=uuid))
    distinct_id = str(row.get("distinct_id") or "")
    return {
        "uuid": str(uuid or ""),
        "event": row.get("event"),
        "distinct_id": distinct_id,
        "person_id": str(row.get("person_id") or person_uuid(project_id, distinct_id)),
        "timestamp": row.get("timestamp"),
        "properties": row.get("properties"),
        "elements_chain": row.get("elements_chain") or "",
        "created_at": row.get("created_at") or row.get("inserted_at") or row.get("timestamp"),
    }


def read_export(
    root: Path,
    mirror: Mirror,
    report: PullReport,
    *,
    since: datetime,
    progress: bool,
    say: Callable[[str], None],
) -> None:
    """Read every export file below ``root`` the mirror has not read yet."""
    from tqdm.auto import tqdm

    done = set(mirror.refresh().files_done)
    files = [p for p in export_files(root) if str(p.relative_to(root)) not in done]
    say(f"{len(files)} export files to read ({len(done)} read before)")
    latest: tuple[datetime, str] | None = None
    for path in tqdm(files, unit="files", desc="export", disable=not progress, delay=0.5):
        copied = 0
        chunk: list[dict[str, Any]] = []
        for number, row in enumerate(_rows(path), 1):
            try:
                event = EVENT.read(_event(row, mirror.project.id), f"row {number}")
            except RemoteAnswerError as exc:
                raise exc.located(f"export file {path}") from None
            moment = event["timestamp"]
            if moment < since:
                continue
            chunk.append(event)
            latest = max(latest or (moment, event["uuid"]), (moment, event["uuid"]))
            if len(chunk) == _CHUNK:
                copied += mirror.write_events(chunk)
                chunk = []
        copied += mirror.write_events(chunk)
        mirror.file_done(str(path.relative_to(root)), copied)
        report.files_read += 1
        report.events_copied += copied
    source = mirror.refresh()
    if latest is not None and (source.events_after_timestamp is None or latest[0] > source.events_after_timestamp):
        # The API top-up continues after what the export held (less its look-back window).
        mirror.advance(latest[0], latest[1], 0)
