"""PostHog's rules for the results of legacy (filters-based) experiments: "v1" and "v2".

* ``vocabulary``: PostHog's constants, significance codes, and variant and verdict shapes;
* ``v1``: the v1 verdicts (``funnel_verdict``, ``trend_verdict``), computed deterministically;
* ``v1_monte_carlo``: PostHog's v1 sampling, seeded: the reference the tests and the benchmark use;
* ``v2``: the v2 Bayesian verdicts; ``v2_loss``: their expected loss against the best of the other arms.
"""
