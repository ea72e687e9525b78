"""PostHog's objects translated into HogQL: the one writer of the HogQL that both halves send.

The service's runners and the toolkit (``client.experiments.units`` and ``hoglab.by_variant`` against PostHog)
call the same builders, so a unit's value, an exposure and a filter mean the same on hoglab and on PostHog by
construction. It imports only :mod:`hoglab.schema`, :mod:`hoglab.errors`, pydantic (what the schema is made of),
sqlglot and the standard library (a layer contract of ``make test``), so the toolkit writes HogQL without the
service's dependencies.

* the HogQL language: ``dialect.py`` and ``parse.py`` (sqlglot's ClickHouse narrowed to HogQL), ``values.py``
  (literals, names, ``{placeholders}``), ``errors.py`` (``HogQLError``, ``TranslationFailed``), ``budget.py`` (the
  compile budget the printer checks as it goes);
* PostHog's filters: ``params.py`` (values as placeholders), ``dates.py`` (date ranges in the project's zone),
  ``properties.py`` (property filters), ``actions.py`` (an action's steps), ``series.py`` (what a series counts),
  ``funnel_replay.py`` (a funnel replayed per person);
* ``metric/``: an experiment's exposures and metrics (PostHog's ``ExperimentQuery``): ``experiment.py`` (the
  experiment as the builders read it), ``query.py`` (mean, ratio and funnel metrics), ``retention.py``,
  ``units.py`` (one row per exposed unit).
"""
