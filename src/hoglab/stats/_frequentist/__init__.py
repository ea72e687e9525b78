"""hoglab's frequentist tests from sufficient statistics, one module per metric kind.

* ``proportions``: conversions (two-proportion z-test, chi-square test, Wilson and Newcombe intervals);
* ``counts``: events over an exposure (the exact conditional Poisson test);
* ``means``: means and ratios (Welch's t-test, the delta method);
* ``corrections``: multiple comparisons (Holm, Benjamini–Hochberg, Bonferroni);
* ``sequential``: always-valid confidence sequences and p-values, for looking at results every day.
"""
