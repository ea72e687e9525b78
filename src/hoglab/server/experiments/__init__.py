"""Experiments: PostHog's rules for experiments and their flags, and their results in two generations.

* :mod:`.rules`: what both generations share: creating an experiment with its flag, updates, metric fields,
  launch and end dates (the HTTP views of ``http/experiments.py`` call it);
* :mod:`.event_samples`: recent event properties for ``requires_flag_implementation``;
* :mod:`.legacy`: the results of a metric stored as a legacy insight filter (the ``results`` and
  ``secondary_results`` endpoints, ``ServiceState.experiment_results``);
* :mod:`.metric`: PostHog's current generation, ``ExperimentQuery`` and ``ExperimentExposureQuery``: query kinds
  of the one query service (their runners are listed in ``query/runners`` ``RUNNER_MODULES``).

Nothing is imported here, so reading the shared rules does not load either generation.
"""
