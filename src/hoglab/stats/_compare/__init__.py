"""``hoglab.stats.compare``: every variant against the control, for one metric or many.

* ``inputs``: what analysts have (dataclasses, tuples, dicts, DataFrames) turned into statistics;
* ``analysis``: one metric's tests, intervals and posteriors, by metric kind;
* ``compare``: ``compare`` and ``compare_many``, with the corrections and the traffic-split check;
* ``results``: the typed results, as tidy frames and HTML.
"""
