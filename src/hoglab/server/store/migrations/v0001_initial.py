"""Users, projects, personal API keys, feature flags, cohorts and experiments.

JSON values (filters, parameters, scopes...) are TEXT holding JSON. Times are UTC ISO 8601 text of fixed width
(see ``db.to_db_time``) so they sort chronologically.
"""

STATEMENTS = (
    """
    CREATE TABLE users (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        uuid TEXT NOT NULL UNIQUE,
        distinct_id TEXT NOT NULL UNIQUE,
        first_name TEXT NOT NULL DEFAULT '',
        last_name TEXT NOT NULL DEFAULT '',
        email TEXT NOT NULL UNIQUE,
        is_email_verified INTEGER NOT NULL DEFAULT 0,
        hedgehog_config TEXT,
        created_at TEXT NOT NULL
    )
    """,
    """
    CREATE TABLE projects (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        uuid TEXT NOT NULL UNIQUE,
        name TEXT NOT NULL,
        api_token TEXT NOT NULL UNIQUE,
        timezone TEXT NOT NULL DEFAULT 'UTC',
        created_at TEXT NOT NULL
    )
    """,
    # Only the sha256 of a key is kept; mask_value ("phx_...abcd") lets a person tell their keys apart.
    # project_ids is NULL for a key that reaches every project, else a JSON list (PostHog's scoped_teams).
    """
    CREATE TABLE personal_api_keys (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        user_id INTEGER NOT NULL REFERENCES users(id) ON DELETE CASCADE,
        label TEXT NOT NULL DEFAULT '',
        secure_value TEXT NOT NULL UNIQUE,
        mask_value TEXT NOT NULL,
        scopes TEXT NOT NULL,
        project_ids TEXT,
        created_at TEXT NOT NULL,
        last_used_at TEXT
    )
    """,
    """
    CREATE TABLE feature_flags (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        key TEXT NOT NULL,
        name TEXT NOT NULL DEFAULT '',
        filters TEXT NOT NULL,
        active INTEGER NOT NULL DEFAULT 1,
        deleted INTEGER NOT NULL DEFAULT 0,
        ensure_experience_continuity INTEGER NOT NULL DEFAULT 0,
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    # A key is unique among a project's live flags; a deleted flag frees its key (as PostHog).
    "CREATE UNIQUE INDEX feature_flags_live_key ON feature_flags (team_id, key) WHERE deleted = 0",
    """
    CREATE TABLE cohorts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        filters TEXT NOT NULL,
        is_static INTEGER NOT NULL DEFAULT 0,
        is_calculating INTEGER NOT NULL DEFAULT 0,
        count INTEGER,
        deleted INTEGER NOT NULL DEFAULT 0,
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        last_calculation TEXT
    )
    """,
    "CREATE INDEX cohorts_team ON cohorts (team_id)",
    """
    CREATE TABLE experiments (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT NOT NULL DEFAULT '',
        feature_flag_id INTEGER NOT NULL REFERENCES feature_flags(id) ON DELETE RESTRICT,
        exposure_cohort_id INTEGER REFERENCES cohorts(id) ON DELETE SET NULL,
        parameters TEXT,
        secondary_metrics TEXT,
        filters TEXT,
        start_date TEXT,
        end_date TEXT,
        archived INTEGER NOT NULL DEFAULT 0,
        type TEXT NOT NULL DEFAULT 'product',
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX experiments_team_list ON experiments (team_id, archived, created_at DESC, id DESC)",
)
