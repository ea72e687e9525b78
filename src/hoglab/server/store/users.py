"""Users: who created an experiment and owns a key. A local install has one user, made on first use."""

from __future__ import annotations

import sqlite3
import uuid
from typing import Any

from .db import Database, to_db_time, utcnow
from .records import UserRecord, dump_json

__all__ = ["DEFAULT_USER_EMAIL", "UserRepository"]

# A reserved documentation domain: a valid address that can never reach anyone.
DEFAULT_USER_EMAIL = "local@example.com"


class UserRepository:
    def __init__(self, db: Database) -> None:
        self._db = db

    def create(
        self,
        email: str,
        *,
        first_name: str = "",
        last_name: str = "",
        distinct_id: str | None = None,
        hedgehog_config: dict[str, Any] | None = None,
    ) -> UserRecord:
        user_uuid = str(uuid.uuid4())
        with self._db.write() as conn:
            cursor = conn.execute(
                "INSERT INTO users (uuid, distinct_id, first_name, last_name, email, is_email_verified,"
                " hedgehog_config, created_at) VALUES (?, ?, ?, ?, ?, 0, ?, ?)",
                (
                    user_uuid,
                    distinct_id or user_uuid,
                    first_name,
                    last_name,
                    email,
                    dump_json(hedgehog_config),
                    to_db_time(utcnow()),
                ),
            )
            row = conn.execute("SELECT * FROM users WHERE id = ?", (cursor.lastrowid,)).fetchone()
        return UserRecord.from_row(row)

    def get(self, user_id: int) -> UserRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM users WHERE id = ?", (user_id,)).fetchone()
        return None if row is None else UserRecord.from_row(row)

    def get_by_email(self, email: str) -> UserRecord | None:
        with self._db.read() as conn:
            row = conn.execute("SELECT * FROM users WHERE email = ?", (email,)).fetchone()
        return None if row is None else UserRecord.from_row(row)

    def default(self) -> UserRecord:
        """The local user (``local@example.com``), created the first time it is asked for.

        >>> store.users.default().email  # doctest: +SKIP
        'local@example.com'
        """
        existing = self.get_by_email(DEFAULT_USER_EMAIL)
        if existing is not None:
            return existing
        try:
            return self.create(DEFAULT_USER_EMAIL, first_name="Local", last_name="User", hedgehog_config={})
        except sqlite3.IntegrityError:
            # Another thread or process made it between our read and our write.
            user = self.get_by_email(DEFAULT_USER_EMAIL)
            assert user is not None
            return user
