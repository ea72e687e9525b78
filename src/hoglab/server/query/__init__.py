"""The one query service: ``POST /query`` and everything that answers a query kind, from body to bytes.

* :mod:`.request`: a body validated into a ``Prepared`` query (kind, execution mode, id, cache key);
* :mod:`.service`: ``QueryService``: a fresh cached answer, a blocking run or an async job (:mod:`.jobs`);
  failures mapped to PostHog's errors (:mod:`.failures`); answers written as bytes (:mod:`.answers`);
* :mod:`.cache`: the result cache, keyed on the data version; :mod:`.bounds`, :mod:`.fairness`: one tenant
  cannot hurt another (compile work, engine sessions);
* :mod:`.runners`: one runner per query kind (the experiment kinds live in ``experiments/metric/``), each
  writing HogQL that the compiler guards;
* :mod:`.bulk` (Arrow rows), :mod:`.draft_sql`, :mod:`.property_types`, :mod:`.query_log`: the rest of the API.

Nothing is imported here: a module that needs the service imports :mod:`.service` itself.
"""
