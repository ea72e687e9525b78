"""Asynchronous queries of the Query API: one status row per (project, query id), with the finished answer.

``status`` is the JSON of PostHog's ``QueryStatus`` without ``results``; ``results`` is the complete response
body (the same bytes a synchronous request gets), zstd-compressed, and ``results_size`` its uncompressed
length. ``owner_pid`` is the process that runs the query: a row left incomplete by another process is an
orphan (that process died) and is marked failed on start. Rows are dropped after ``expires_at``.
"""

STATEMENTS = (
    """
    CREATE TABLE async_queries (
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        id TEXT NOT NULL,
        status TEXT NOT NULL,
        complete INTEGER NOT NULL DEFAULT 0,
        results BLOB,
        results_size INTEGER,
        owner_pid INTEGER NOT NULL,
        expires_at TEXT NOT NULL,
        PRIMARY KEY (team_id, id)
    )
    """,
    "CREATE INDEX async_queries_expiry ON async_queries (expires_at)",
)
