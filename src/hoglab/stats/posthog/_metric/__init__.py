"""PostHog's current engine, behind ``ExperimentQuery`` (metric experiments), split as PostHog's
``products/experiments/stats/`` is.

* ``statistics``: the statistic per metric type and the effect between two arms;
* ``cuped``: CUPED as PostHog computes it; ``ratio_cuped``: hoglab's CUPED for ratio metrics, which PostHog lacks;
* ``frequentist``, ``bayesian``: the two tests;
* ``config``: ``stats_config`` and the team's defaults resolved into settings;
* ``engine``: ``experiment_results``, which ties them together for one metric (and per breakdown value).
"""
