"""Experience continuity: hash key overrides, so a person keeps their variant when they identify.

PostHog's rule: when a flags request carries ``$anon_distinct_id`` (SDKs send it right after ``identify``), for
every flag with ``ensure_experience_continuity`` the persons of both distinct ids get an override ``hash key =
the anonymous id``, unless they already have one (the first one wins). Later requests for any distinct id of
that person hash on the override. Overrides are keyed by person id, so they follow a person's distinct ids; a
later merge of two persons does not move them (PostHog's ingestion moves them; hoglab's does not).

For example (a sketch of a call and its answer, not run)::

    keys = hash_keys(store, team_id=1, person_ids=["..."], flag_keys=["beta"])  ->  {"beta": "anon-1"}
"""

from __future__ import annotations

from collections.abc import Iterable

from ..store import Store
from ..store.db import to_db_time, utcnow

__all__ = ["hash_keys", "remember_hash_key"]


def remember_hash_key(
    store: Store, team_id: int, person_ids: Iterable[str], flag_keys: Iterable[str], hash_key: str
) -> None:
    """Write ``hash_key`` for every (person, flag) pair that has no override yet."""
    rows = [(team_id, person, key, hash_key, to_db_time(utcnow())) for person in set(person_ids) for key in flag_keys]
    if not rows:
        return
    with store.db.write() as conn:
        conn.executemany(
            "INSERT OR IGNORE INTO flag_hash_key_overrides (team_id, person_id, feature_flag_key, hash_key,"
            " created_at) VALUES (?, ?, ?, ?, ?)",
            rows,
        )


def hash_keys(store: Store, team_id: int, person_ids: Iterable[str], flag_keys: Iterable[str]) -> dict[str, str]:
    """Flag key -> hash key for the given persons (the first person listed wins when several have one)."""
    persons = list(dict.fromkeys(person_ids))
    keys = sorted(set(flag_keys))
    if not persons or not keys:
        return {}
    with store.db.read() as conn:
        rows = conn.execute(
            f"SELECT person_id, feature_flag_key, hash_key FROM flag_hash_key_overrides WHERE team_id = ?"
            f" AND person_id IN ({','.join('?' * len(persons))}) AND feature_flag_key IN ({','.join('?' * len(keys))})",
            (team_id, *persons, *keys),
        ).fetchall()
    rank = {person: index for index, person in enumerate(persons)}
    found: dict[str, tuple[int, str]] = {}
    for row in rows:
        current = found.get(row["feature_flag_key"])
        if current is None or rank[row["person_id"]] < current[0]:
            found[row["feature_flag_key"]] = (rank[row["person_id"]], row["hash_key"])
    return {key: value for key, (_, value) in found.items()}
