"""The HTTP client: :class:`Client`, its experiments resource (with its holdouts and saved metrics), async query
jobs and experiment results.

Works unchanged against a hoglab service and against PostHog (same paths, same shapes). The usual entry points
are re-exported from :mod:`hoglab` itself.
"""

from ._actions import Actions
from ._client import Client
from ._default import connect, default_client, read_hogql
from ._experiment_objects import Holdouts, SavedMetrics
from ._experiments import Experiments
from ._history import HISTORY_COLUMNS
from ._jobs import QueryJob
from ._legacy_results import SIGNIFICANCE_EXPLAINED, ExperimentResult
from ._metric_results import MetricAnswer, MetricExperimentResult
from ._retry import Clock, RetryPolicy, SystemClock
from ._variant import by_variant

__all__ = [
    "HISTORY_COLUMNS",
    "SIGNIFICANCE_EXPLAINED",
    "Actions",
    "Client",
    "Clock",
    "ExperimentResult",
    "Experiments",
    "Holdouts",
    "MetricAnswer",
    "MetricExperimentResult",
    "QueryJob",
    "RetryPolicy",
    "SavedMetrics",
    "SystemClock",
    "by_variant",
    "connect",
    "default_client",
    "read_hogql",
]
