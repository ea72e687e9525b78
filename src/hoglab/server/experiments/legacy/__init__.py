"""Experiment results from events, with PostHog's legacy engine semantics (docs/api.md, "Experiment results").

``experiment_results`` is the app's ``ServiceState.experiment_results``: the ``results`` and
``secondary_results`` endpoints call it. The work is split in five steps, one module each:

* :mod:`.filters`: the stored legacy insight filter → the shared schema's nodes (400s name the legacy field);
* :mod:`.queries`: the TrendsQuery / FunnelsQuery of the metric and its exposures, over the experiment's window;
* :mod:`.runs`: those queries through the insight runners (no second trend or funnel engine);
* :mod:`.verdicts`: per-variant numbers and ``hoglab.stats.posthog``'s deterministic verdict;
* :mod:`.service`: the cache, ``?refresh``, drafts, and the ``{result, last_refresh, is_cached}`` wrapper.
"""

from .filters import PER_USER_MATH, CustomExposure, LegacyMetric, read_custom_exposure, read_metric
from .queries import Arms
from .service import Plan, compute, experiment_results, plan_for
from .verdicts import NO_RESULTS_FLAGS, check_variants

__all__ = [
    "NO_RESULTS_FLAGS",
    "PER_USER_MATH",
    "Arms",
    "CustomExposure",
    "LegacyMetric",
    "Plan",
    "check_variants",
    "compute",
    "experiment_results",
    "plan_for",
    "read_custom_exposure",
    "read_metric",
]
