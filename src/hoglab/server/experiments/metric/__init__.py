"""Metric experiments: PostHog's ``ExperimentQuery`` and ``ExperimentExposureQuery``, two query kinds.

Both name a stored experiment by id and run through the one query service (cache, async jobs, fairness, limits):

* :mod:`.resolve`: reads the stored experiment (flag, variants, dates, exposure criteria, stats method) into the
  query before the cache lookup (a resolver registered with ``query/runners/base.py`` ``register_resolver``);
* the HogQL of the exposures and of a metric's per-variant sufficient statistics is ``hoglab.translate.metric``'s
  (the toolkit writes the same for PostHog);
* :mod:`.runner`: the ``ExperimentQuery`` runner: the sums → ``hoglab.stats.posthog``'s verdict per variant;
* :mod:`.exposures`: the ``ExperimentExposureQuery`` runner: exposed persons per variant, day by day.

The runners register themselves when ``query/runners`` ``load_runners`` imports them (``RUNNER_MODULES``), so
nothing is imported here.
"""
