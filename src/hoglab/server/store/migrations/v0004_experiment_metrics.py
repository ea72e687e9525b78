"""PostHog's current experiment fields: metrics on the experiment, how exposure is read, the stats method, the
conclusion. JSON columns hold what the API validated (``metrics``: a list of ``ExperimentMetric`` bodies)."""

STATEMENTS = (
    "ALTER TABLE experiments ADD COLUMN metrics TEXT",
    "ALTER TABLE experiments ADD COLUMN metrics_secondary TEXT",
    "ALTER TABLE experiments ADD COLUMN exposure_criteria TEXT",
    "ALTER TABLE experiments ADD COLUMN stats_config TEXT",
    "ALTER TABLE experiments ADD COLUMN conclusion TEXT",
    "ALTER TABLE experiments ADD COLUMN conclusion_comment TEXT",
    "ALTER TABLE experiments ADD COLUMN primary_metrics_ordered_uuids TEXT",
    "ALTER TABLE experiments ADD COLUMN secondary_metrics_ordered_uuids TEXT",
)
