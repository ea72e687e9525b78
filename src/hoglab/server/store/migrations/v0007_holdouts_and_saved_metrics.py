"""PostHog's experiment holdouts and saved (shared) metrics, and the links of experiments to them.

``experiment_holdouts``: a group of persons held out of every experiment that uses it (``filters``: a list of
PostHog's ``{"properties", "rollout_percentage", "variant"}`` groups, the first one's rollout being the share held
out). ``experiments.holdout_id`` points at one; deleting the holdout clears it (PostHog's ``SET_NULL``).

``experiment_saved_metrics``: a metric (``query``, an ``ExperimentMetric`` body) kept once and linked to many
experiments by ``experiment_saved_metric_links`` (PostHog's ``ExperimentToSavedMetric``: ``metadata`` says primary
or secondary and holds per-experiment overrides). Deleting either side deletes the links; a saved metric's name is
unique in its project whatever its case.
"""

STATEMENTS = (
    """
    CREATE TABLE experiment_holdouts (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        filters TEXT NOT NULL DEFAULT '[]',
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX experiment_holdouts_team ON experiment_holdouts (team_id, created_at DESC, id DESC)",
    "ALTER TABLE experiments ADD COLUMN holdout_id INTEGER REFERENCES experiment_holdouts(id) ON DELETE SET NULL",
    """
    CREATE TABLE experiment_saved_metrics (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        name TEXT NOT NULL,
        description TEXT,
        query TEXT NOT NULL,
        tags TEXT NOT NULL DEFAULT '[]',
        created_by_id INTEGER REFERENCES users(id) ON DELETE SET NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    "CREATE UNIQUE INDEX experiment_saved_metrics_name ON experiment_saved_metrics (team_id, lower(name))",
    """
    CREATE TABLE experiment_saved_metric_links (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        saved_metric_id INTEGER NOT NULL REFERENCES experiment_saved_metrics(id) ON DELETE CASCADE,
        metadata TEXT,
        created_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX experiment_saved_metric_links_experiment ON experiment_saved_metric_links (experiment_id, id)",
    "CREATE INDEX experiment_saved_metric_links_metric ON experiment_saved_metric_links (saved_metric_id)",
)
