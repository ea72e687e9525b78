"""The service's side of PostHog's filters; their translation into HogQL is ``hoglab.translate``'s.

* :mod:`.hogql_filters`: ``{filters}`` in a HogQL statement, the translator's condition handed to the compiler.
* :mod:`.actions`: an action's steps checked before they are stored (each compiled through the whole compiler), and
  an action as a bound tree for ``matchesAction()``.
* :mod:`.patterns`: the ``regex``/``not_regex`` operators' patterns, matched by RE2 in linear time (flags and
  cohorts match in Python with it); ``invalid_patterns`` is the one check of stored definitions' patterns.
"""
