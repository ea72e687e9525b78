"""An experiment's exposures and metrics as HogQL (PostHog's ``ExperimentQuery``, its current generation): the
service's runners sum these statements per variant, the toolkit pages their per-unit rows from PostHog."""
