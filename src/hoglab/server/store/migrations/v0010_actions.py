"""Actions: PostHog's named event definitions, their steps kept as one JSON list (PostHog's ``steps_json``).

An action is never removed, only marked ``deleted`` (PostHog forbids hard deletes); its name is unique among the
project's live actions (the partial index backs the service's own check, which names the other action).
``bytecode_error`` holds why an action cannot be compiled (a copied step hoglab refuses), as PostHog's column does.
``revision`` grows with every write to the project's actions (the highest is the project's actions version: the
query service reads it on every request and reloads the actions only when it moved).
"""

STATEMENTS = (
    """
    CREATE TABLE actions (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT,
        description TEXT NOT NULL DEFAULT '',
        tags TEXT NOT NULL DEFAULT '[]',
        post_to_slack INTEGER NOT NULL DEFAULT 0,
        slack_message_format TEXT NOT NULL DEFAULT '',
        steps TEXT NOT NULL DEFAULT '[]',
        deleted INTEGER NOT NULL DEFAULT 0,
        bytecode_error TEXT,
        pinned_at TEXT,
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        last_calculated_at TEXT NOT NULL,
        revision INTEGER NOT NULL DEFAULT 0
    )
    """,
    "CREATE INDEX actions_team ON actions (team_id, revision)",
    "CREATE UNIQUE INDEX actions_live_name ON actions (team_id, name) WHERE deleted = 0 AND name IS NOT NULL",
)
