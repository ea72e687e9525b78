"""Personal API keys: ``phx_`` + 43 url-safe characters, shown once; only their sha256 is stored."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Iterable
from datetime import datetime, timedelta

from .db import Database, to_db_time, utcnow
from .records import KeyRecord, dump_json

__all__ = ["KEY_PREFIX", "SCOPE_OBJECTS", "VALID_SCOPES", "KeyRepository", "hash_key", "validate_scopes"]

KEY_PREFIX = "phx_"
SCOPE_OBJECTS = ("experiment", "query", "feature_flag", "project", "cohort", "action", "group")
VALID_SCOPES = frozenset({"*"} | {f"{obj}:{level}" for obj in SCOPE_OBJECTS for level in ("read", "write")})
# Writing last_used_at on every request would turn each read into a write; PostHog also refreshes it hourly.
_LAST_USED_RESOLUTION = timedelta(hours=1)


def hash_key(plaintext: str) -> str:
    """The stored form of a key: hex sha256 (PostHog's ``sha256$`` mode, without the prefix)."""
    return hashlib.sha256(plaintext.encode("utf-8", "surrogatepass")).hexdigest()


def validate_scopes(scopes: Iterable[str]) -> tuple[str, ...]:
    """The scopes, stripped, de-duplicated and checked; ``ValueError`` names the first unknown one.

    >>> validate_scopes(["experiment:read", " query:read", "experiment:read"])
    ('experiment:read', 'query:read')
    >>> validate_scopes(["experiments:read"])
    Traceback (most recent call last):
    ...
    ValueError: unknown scope 'experiments:read'; valid scopes: *, cohort:read, cohort:write, experiment:read, ...
    """
    cleaned: list[str] = []
    for scope in scopes:
        scope = scope.strip()
        if scope not in VALID_SCOPES:
            raise ValueError(f"unknown scope {scope!r}; valid scopes: {', '.join(sorted(VALID_SCOPES))}")
        if scope not in cleaned:
            cleaned.append(scope)
    if not cleaned:
        raise ValueError("a key needs at least one scope")
    return tuple(cleaned)


class KeyRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        user_id: int,
        scopes: Iterable[str],
        project_ids: Iterable[int] | None = None,
        label: str = "",
        expires_at: datetime | None = None,
    ) -> tuple[KeyRecord, str]:
        """A new key and its plaintext, which is not kept anywhere: hand it to the person now.

        ``project_ids=None`` reaches every project, present and future; ``expires_at`` (aware) ends it.

        >>> record, plaintext = store.keys.create(user.id, ["experiment:read"], [project.id])  # doctest: +SKIP
        >>> plaintext.startswith("phx_") and len(plaintext) == 47  # doctest: +SKIP
        True
        """
        checked = validate_scopes(scopes)
        projects = None if project_ids is None else sorted({int(p) for p in project_ids})
        plaintext = KEY_PREFIX + secrets.token_urlsafe(32)
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO personal_api_keys (user_id, label, secure_value, mask_value, scopes, project_ids,"
                " created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    user_id,
                    label,
                    hash_key(plaintext),
                    f"{plaintext[:4]}...{plaintext[-4:]}",
                    dump_json(list(checked)),
                    dump_json(projects),
                    to_db_time(utcnow()),
                    None if expires_at is None else to_db_time(expires_at),
                ),
            )
            row = conn.execute("SELECT * FROM personal_api_keys WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return KeyRecord.from_row(row), plaintext

    def find(self, plaintext: str) -> KeyRecord | None:
        """The key whose sha256 matches, whatever its status (revoked and expired ones too), or ``None``."""
        with self._db.read() as conn:
            row = conn.execute(
                "SELECT * FROM personal_api_keys WHERE secure_value = ?", (hash_key(plaintext),)
            ).fetchone()
        return None if row is None else KeyRecord.from_row(row)

    def authenticate(self, plaintext: str) -> KeyRecord | None:
        """The active key whose sha256 matches, or ``None`` (unknown, revoked or expired)."""
        record = self.find(plaintext)
        now = utcnow()
        if record is None or record.status(now) != "active":
            return None
        last_used = record.last_used_at
        if last_used is None or now - last_used > _LAST_USED_RESOLUTION:
            with self._db.write() as conn:
                conn.execute("UPDATE personal_api_keys SET last_used_at = ? WHERE id = ?", (to_db_time(now), record.id))
        return record

    def get(self, key_id: int) -> KeyRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM personal_api_keys WHERE id = ?", (key_id,)).fetchone()
        return None if row is None else KeyRecord.from_row(row)

    def list(self, user_id: int | None = None) -> list[KeyRecord]:
        with self._db.read() as conn:
            if user_id is None:
                rows = conn.execute("SELECT * FROM personal_api_keys ORDER BY id").fetchall()
            else:
                rows = conn.execute(
                    "SELECT * FROM personal_api_keys WHERE user_id = ? ORDER BY id", (user_id,)
                ).fetchall()
        return [KeyRecord.from_row(row) for row in rows]

    def revoke(self, key_id: int, user_id: int | None = None) -> KeyRecord | None:
        """Revoke a key for good (it answers 401 from now on); the revoked record, or ``None`` if there is no such
        key (of ``user_id``, when given). Revoking twice keeps the first time."""
        with self._db.write() as conn:
            owner = "" if user_id is None else " AND user_id = ?"
            params: tuple[object, ...] = (to_db_time(utcnow()), key_id) + (() if user_id is None else (user_id,))
            conn.execute(
                f"UPDATE personal_api_keys SET revoked_at = coalesce(revoked_at, ?) WHERE id = ?{owner}", params
            )
            row = conn.execute(
                f"SELECT * FROM personal_api_keys WHERE id = ?{owner}",
                (key_id,) + (() if user_id is None else (user_id,)),
            ).fetchone()
        return None if row is None else KeyRecord.from_row(row)

    def delete(self, key_id: int) -> bool:
        with self._db.write() as conn:
            return conn.execute("DELETE FROM personal_api_keys WHERE id = ?", (key_id,)).rowcount > 0
