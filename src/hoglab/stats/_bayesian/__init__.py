"""hoglab's Bayesian quantities, computed deterministically.

* ``posteriors``: the posterior families (Beta, Gamma, Normal, Student-t), one entry per arm;
* ``quadrature``: the chance to beat the control and to be best, the expected loss and the intervals, as
  one-dimensional integrals over the posteriors.
"""
