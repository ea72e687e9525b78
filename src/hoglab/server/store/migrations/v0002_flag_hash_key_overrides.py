"""Hash key overrides of feature flags with experience continuity (PostHog's ``FeatureFlagHashKeyOverride``).

When a ``/flags`` request carries ``$anon_distinct_id``, each flag with ``ensure_experience_continuity`` keeps
hashing the person on that anonymous id, so identifying does not change their variant. One row per person and
flag key; the first hash key written wins (``INSERT OR IGNORE``), as in PostHog.
"""

STATEMENTS = (
    """
    CREATE TABLE flag_hash_key_overrides (
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        person_id TEXT NOT NULL,
        feature_flag_key TEXT NOT NULL,
        hash_key TEXT NOT NULL,
        created_at TEXT NOT NULL,
        PRIMARY KEY (team_id, person_id, feature_flag_key)
    )
    """,
)
