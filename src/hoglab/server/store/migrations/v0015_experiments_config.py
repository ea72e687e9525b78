"""A project's experiment defaults (PostHog's ``TeamExperimentsConfig``, ``/experiments_config/``): one JSON object
per project of the fields the API accepts, read at query time (CUPED and sequential defaults, the matured-users
switch)."""

STATEMENTS = (
    """
    CREATE TABLE experiments_config (
        team_id INTEGER PRIMARY KEY REFERENCES projects(id) ON DELETE CASCADE,
        config TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
)
