"""PostHog's property filters and relative dates, read once for every part of the service that takes them.

* :mod:`.properties`: property filters (and groups of them) as HogQL text whose every value is a placeholder, for
  the insight runners, experiments and cohorts.
* :mod:`.dates`: date ranges and intervals resolved in the project's time zone (``-7d``, ``-1mStart``, ISO dates).
* :mod:`.patterns`: the ``regex``/``not_regex`` operators' patterns, matched by RE2 in linear time (flags and
  cohorts match in Python with it); ``invalid_patterns`` is the one check of stored definitions' patterns.
"""
