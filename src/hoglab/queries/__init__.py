"""Query builders: short Python calls that return the :mod:`hoglab.schema` models PostHog's ``/query`` takes.

Every argument is checked here, so a mistake is an :class:`~hoglab.errors.InvalidArgument` (a ``ValueError``)
naming the argument, before any request. The models go to :meth:`hoglab.Client.query`, or serialise with
``.to_json_dict()`` for any other PostHog client.

One private module per insight kind (``_trends``, ``_funnels``, ``_correlation``, ``_retention``, ``_lifecycle``,
``_stickiness``, ``_paths``), the tables (``_events``, ``_actors``), experiment metrics and queries
(``_metrics``) and their statistics settings (``_settings``); what they share is in ``_args`` (argument checks,
the ``where=`` grammar) and ``_series`` (series, date range, breakdown, comparison).
The modules are private because their names would shadow the builders (``hoglab.queries.trends`` is the function).

>>> q = trends("$pageview", math="dau", interval="week", date_from="-30d", breakdown="$browser",
...            where={"$browser": "Chrome"})
>>> q.series[0].math, q.interval, q.breakdownFilter.breakdown, q.properties[0].value
('dau', 'week', '$browser', 'Chrome')
>>> funnel(["$pageview", "signup", "purchase"], window="14d", order="strict").funnelsFilter.funnelOrderType
'strict'
>>> mean_metric("purchase", math="sum", math_property="price", upper_bound_percentile=0.99).metric_type
'mean'
>>> retention("signup", returning="$pageview", period="week").retentionFilter.period
'Week'
>>> [q.kind for q in (lifecycle("$pageview"), stickiness("$pageview"), paths(start="/home"))]
['LifecycleQuery', 'StickinessQuery', 'PathsQuery']
>>> trends("$pageview", interval="fortnight")
Traceback (most recent call last):
hoglab.errors.InvalidArgument: interval: 'fortnight' is not one of 'minute', 'hour', 'day', 'week', 'month'.
"""

from __future__ import annotations

from ._actors import actors
from ._correlation import funnel_correlation
from ._events import events
from ._funnels import funnel
from ._groups import groups
from ._lifecycle import lifecycle
from ._metrics import experiment_query, exposure_query, funnel_metric, mean_metric, ratio_metric, retention_metric
from ._paths import paths
from ._retention import retention
from ._series import series
from ._settings import stats_config
from ._stickiness import stickiness
from ._trends import trends

__all__ = [
    "actors",
    "events",
    "experiment_query",
    "exposure_query",
    "funnel",
    "funnel_correlation",
    "funnel_metric",
    "groups",
    "lifecycle",
    "mean_metric",
    "paths",
    "ratio_metric",
    "retention",
    "retention_metric",
    "series",
    "stats_config",
    "stickiness",
    "trends",
]
