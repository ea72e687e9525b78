"""Mirrors of remote projects (``hoglab pull``): where each local project's copy comes from and how far it got.

``pull_sources``: one row per (remote host, remote project, local project) with the events watermark, the
``(timestamp, uuid)`` of the last event copied in keyset order, and the export files already read.
``pull_objects``: the local id of every remote flag, cohort and experiment copied, so a second pull updates
them instead of adding copies.
"""

STATEMENTS = (
    """
    CREATE TABLE pull_sources (
        id INTEGER PRIMARY KEY,
        host TEXT NOT NULL,
        remote_project_id INTEGER NOT NULL,
        local_project_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        events_after_timestamp TEXT,
        events_after_uuid TEXT,
        events_copied INTEGER NOT NULL DEFAULT 0,
        files_done TEXT NOT NULL DEFAULT '[]',
        last_pull_at TEXT,
        created_at TEXT NOT NULL,
        UNIQUE (host, remote_project_id, local_project_id)
    )
    """,
    """
    CREATE TABLE pull_objects (
        source_id INTEGER NOT NULL REFERENCES pull_sources(id) ON DELETE CASCADE,
        kind TEXT NOT NULL,
        remote_id INTEGER NOT NULL,
        local_id INTEGER NOT NULL,
        PRIMARY KEY (source_id, kind, remote_id)
    )
    """,
)
