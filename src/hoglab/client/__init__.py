"""The HTTP client: :class:`Client`, its experiments resource, async query jobs and experiment results.

Works unchanged against a hoglab service and against PostHog (same paths, same shapes). The usual entry points
are re-exported from :mod:`hoglab` itself.
"""

from ._actions import Actions
from ._client import Client
from ._default import connect, default_client, read_hogql
from ._experiments import Experiments
from ._jobs import QueryJob
from ._metric_results import MetricAnswer, MetricExperimentResult
from ._results import SIGNIFICANCE_EXPLAINED, ExperimentResult
from ._retry import Clock, RetryPolicy, SystemClock

__all__ = [
    "SIGNIFICANCE_EXPLAINED",
    "Actions",
    "Client",
    "Clock",
    "ExperimentResult",
    "Experiments",
    "MetricAnswer",
    "MetricExperimentResult",
    "QueryJob",
    "RetryPolicy",
    "SystemClock",
    "connect",
    "default_client",
    "read_hogql",
]
