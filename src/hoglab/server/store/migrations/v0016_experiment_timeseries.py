"""An experiment metric's results day by day (PostHog's ``ExperimentMetricResult`` and
``ExperimentTimeseriesRecalculation``): one row per (experiment, metric uuid, fingerprint, day) holding the
cumulative ``ExperimentQuery`` answer up to that day's end, and the recalculation requests that fill them."""

STATEMENTS = (
    """
    CREATE TABLE experiment_timeseries_requests (
        id TEXT PRIMARY KEY,
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        metric_uuid TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        metric TEXT NOT NULL,
        status TEXT NOT NULL,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
    )
    """,
    "CREATE INDEX experiment_timeseries_requests_by_metric ON experiment_timeseries_requests "
    "(experiment_id, fingerprint, created_at DESC)",
    """
    CREATE TABLE experiment_metric_results (
        team_id INTEGER NOT NULL REFERENCES projects(id) ON DELETE CASCADE,
        experiment_id INTEGER NOT NULL REFERENCES experiments(id) ON DELETE CASCADE,
        metric_uuid TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        day TEXT NOT NULL,
        query_to TEXT NOT NULL,
        status TEXT NOT NULL,
        result TEXT,
        error TEXT,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (experiment_id, metric_uuid, fingerprint, day)
    )
    """,
)
