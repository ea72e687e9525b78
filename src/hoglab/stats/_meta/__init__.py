"""Many experiments at once: the distribution of true effects behind a history of experiments.

* ``history``: a history of experiments (a frame or arrays of estimates and standard errors), checked once;
* ``tau``: the between-experiment variance τ² (DerSimonian–Laird, REML, Paule–Mandel) and its Q-profile interval;
* ``analysis``: :func:`meta_analysis`: the random-effects fit, each experiment's shrunken estimate, the win rate
  corrected for noise and the winner's curse of the shipped experiments;
* ``prior``: the fitted distribution as a prior for a new experiment (:func:`prior_from_history`) and for planning
  (:func:`plan_from_history`).
"""
