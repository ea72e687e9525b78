"""What the tour notebooks feed (``notebooks/04-metric-experiments.ipynb``): a metric experiment fed by the
official ``posthog`` SDK, a week of seeded visits, flags and captured events.

:func:`feed_metric_experiment` creates an experiment with PostHog's current metrics (a funnel, a mean and a ratio
metric, plus a secondary count), launches it a week back and plays one visit per simulated user through the
``posthog`` Python SDK, as an application would: ``get_feature_flag`` asks ``/flags`` for the user's variant, the
exposure is captured as ``$feature_flag_called``, then the visit's ``$pageview``, ``checkout`` and ``purchase``
events (with ``$feature/<flag>``). It only uses public APIs, so it would work against PostHog too, but a tour
never writes into a project it did not make: :func:`check_tour_target` lets it write only into hoglab's demo
project or an empty project on this machine, and refuses anything else (a PostHog host, a project holding
someone's events) unless told explicitly (``allow_foreign=True`` or ``HOGLAB_TOURS_WRITE_ANYWHERE=1``).

Behaviour (seeded; the variant is the server's): one pageview *before* the exposure (no metric counts it), then
1 + Poisson(2) pageviews (Poisson(2.4) in ``test``); half the users reach ``checkout``, of whom 30% buy in
``control`` and 42% in ``test``, at a log-normal price of median ~33.

>>> primary, secondary = metric_experiment_metrics()
>>> [m.metric_type for m in primary], [m.name for m in secondary]
(['funnel', 'mean', 'ratio'], ['pageviews'])
"""

from __future__ import annotations

import ipaddress
import os
import warnings
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from ..errors import ConfigurationError
from ..queries import funnel_metric, mean_metric, ratio_metric, series

if TYPE_CHECKING:
    from ..client import Client
    from ..schema import Experiment, Project

__all__ = [
    "DEMO_PROJECT_NAME", "METRIC_FLAG_KEY", "WRITE_ANYWHERE_ENV", "MetricDemo", "check_tour_target",
    "feed_metric_experiment", "metric_experiment_metrics",
]  # fmt: skip

# The name hoglab's demo gives its project (hoglab.server.store.bootstrap.DEMO_PROJECT_NAME; a test keeps the two
# equal: this module never imports the service).
DEMO_PROJECT_NAME = "Demo project"
WRITE_ANYWHERE_ENV = "HOGLAB_TOURS_WRITE_ANYWHERE"

METRIC_FLAG_KEY = "checkout-metrics"
METRIC_SEED = 20260107
PURCHASE_RATE = {"control": 0.30, "test": 0.42}
PAGEVIEWS = {"control": 2.0, "test": 2.4}
CHECKOUT_RATE = 0.5


@dataclass(frozen=True)
class MetricDemo:
    """What :func:`feed_metric_experiment` made: the experiment, each user's variant and the events sent."""

    experiment: Experiment
    assigned: dict[str, str]
    events: int
    start: datetime
    end: datetime


def metric_experiment_metrics() -> tuple[list[Any], list[Any]]:
    """The demo's metrics: primary (checkout → purchase funnel, revenue per person, revenue per pageview) and
    secondary (pageviews per person)."""
    primary = [
        funnel_metric(["checkout", "purchase"], name="checkout → purchase"),
        mean_metric("purchase", math="sum", math_property="price", name="revenue per person"),
        ratio_metric(series("purchase", math="sum", math_property="price"), "$pageview", name="revenue per pageview"),
    ]
    secondary = [mean_metric("$pageview", name="pageviews")]
    return primary, secondary


def _is_loopback(host: str) -> bool:
    name = urlsplit(host).hostname or ""
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _project(client: Client) -> Project:
    for project in client.projects():
        if project.id == client.project_id:
            return project
    raise ConfigurationError(f"project {client.project_id} is not among the projects this key reaches.")


def check_tour_target(client: Client, *, allow_foreign: bool = False) -> None:
    """Refuse (:class:`~hoglab.errors.ConfigurationError`) unless ``client`` points at a project a tour may write
    into: hoglab's demo project, or a project without a single event, on this machine (a loopback host).

    A PostHog host, another machine, or a local project holding events is refused, with what to do instead,
    unless ``allow_foreign=True`` or ``$HOGLAB_TOURS_WRITE_ANYWHERE`` is ``1``: the tours create experiments and
    send thousands of synthetic events, which nobody wants in a real project.

    >>> check_tour_target(hoglab.connect("https://eu.posthog.com", "phx_...", 12345))  # doctest: +SKIP
    Traceback (most recent call last):
    hoglab.errors.ConfigurationError: This tour writes an experiment and synthetic events; ...
    """
    if allow_foreign or os.environ.get(WRITE_ANYWHERE_ENV, "").strip() == "1":
        return
    what = (
        "This tour writes an experiment and synthetic events; it writes only into hoglab's demo project or an "
        "empty project on this machine"
    )
    instead = (
        "Run it against the demo (`make lab`, or hoglab.local.start_local_service(demo=True)), or, if you really "
        f"mean to write there, pass allow_foreign=True (or set {WRITE_ANYWHERE_ENV}=1)."
    )
    if not _is_loopback(client.host):
        raise ConfigurationError(f"{what}, and {client.host} is not this machine. {instead}")
    project = _project(client)
    if project.name == DEMO_PROJECT_NAME:
        return
    events = int(client.hogql("select count() as n from events")["n"].iloc[0])
    if events:
        raise ConfigurationError(
            f"{what}, and project {project.id} ({project.name!r}) at {client.host} is not the demo and holds "
            f"{events:,} events. {instead}"
        )


def _project_token(client: Client) -> str:
    project = _project(client)
    if project.api_token:
        return project.api_token
    raise ConfigurationError(f"project {client.project_id} has no api_token this key can read (the SDK needs it).")


def _sdk(token: str, host: str) -> Any:
    try:
        import posthog
    except ImportError as exc:  # pragma: no cover - the notebook extra installs it
        raise ConfigurationError("the posthog SDK is needed: pip install 'hoglab[notebook]'") from exc
    # No retries: every run sends the same requests; a generous flags timeout for a loaded machine.
    return posthog.Posthog(token, host=host, capture_mode="v0", max_retries=0, feature_flags_request_max_retries=0,
                           feature_flags_request_timeout_seconds=30, flush_at=500)  # fmt: skip


def feed_metric_experiment(
    client: Client,
    *,
    users: int = 400,
    days: int = 7,
    seed: int = METRIC_SEED,
    flag_key: str = METRIC_FLAG_KEY,
    stats_method: str = "bayesian",
    end: datetime | None = None,
    name: str = "Checkout copy (metrics)",
    allow_foreign: bool = False,
) -> MetricDemo:
    """Create and launch a metric experiment on ``client``'s project, then feed ``days`` of ``users`` visits
    through the ``posthog`` SDK (flags from ``/flags``, events to ``/batch``), ending at ``end`` (now).

    The experiment starts ``days`` + 1 hours before the first visit; each user's visit is at a seeded moment of
    the window. Returns the experiment, the variant the server gave each user and the number of events sent.
    Before writing anything it checks the target with :func:`check_tour_target` (``allow_foreign`` is passed on).

    >>> demo = feed_metric_experiment(client, users=120)  # doctest: +SKIP
    >>> client.experiments.results(demo.experiment.id).to_frame()  # doctest: +SKIP
    """
    check_tour_target(client, allow_foreign=allow_foreign)
    rng = np.random.default_rng(seed)
    end = (end or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    start = end - timedelta(days=days)
    primary, secondary = metric_experiment_metrics()
    experiment = client.experiments.create(
        name, flag_key, variants=["control", "test"], start=start - timedelta(hours=1), metrics=primary,
        metrics_secondary=secondary, stats_config=stats_method,
        description="Does the new checkout copy turn more checkouts into purchases? Fed by the posthog SDK.",
    )  # fmt: skip
    sdk = _sdk(_project_token(client), client.host)
    assigned: dict[str, str] = {}
    sent = 0
    offsets = np.sort(rng.uniform(0, days * 86400 - 3600, size=users))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # get_feature_flag: what applications call today
        try:
            for i, offset in enumerate(offsets):
                user = f"metric-user-{seed}-{i:05d}"
                variant = sdk.get_feature_flag(flag_key, user, send_feature_flag_events=False)
                if not isinstance(variant, str):
                    continue  # not in the experiment (a flag off or a rollout below 100%)
                assigned[user] = variant
                for event, at, properties in _visit(rng, start + timedelta(seconds=float(offset)), variant, flag_key):
                    sdk.capture(event, distinct_id=user, timestamp=at, properties=properties)
                    sent += 1
        finally:
            sdk.flush()
            sdk.shutdown()
    return MetricDemo(experiment, assigned, sent, start, end)


def _visit(
    rng: np.random.Generator, at: datetime, variant: str, flag_key: str
) -> list[tuple[str, datetime, dict[str, Any]]]:
    flag = {f"$feature/{flag_key}": variant}
    events: list[tuple[str, datetime, dict[str, Any]]] = [
        ("$pageview", at - timedelta(minutes=10), {"$current_url": "https://hoglab.example/"}),
        ("$feature_flag_called", at, {"$feature_flag": flag_key, "$feature_flag_response": variant, **flag}),
    ]
    clock = at
    for _ in range(1 + int(rng.poisson(PAGEVIEWS[variant]))):
        clock += timedelta(seconds=int(rng.integers(5, 120)))
        events.append(("$pageview", clock, {"$current_url": "https://hoglab.example/pricing", **flag}))
    if rng.random() < CHECKOUT_RATE:
        clock += timedelta(seconds=int(rng.integers(5, 120)))
        events.append(("checkout", clock, dict(flag)))
        if rng.random() < PURCHASE_RATE[variant]:
            clock += timedelta(seconds=int(rng.integers(5, 300)))
            price = round(float(rng.lognormal(3.5, 0.5)), 2)
            events.append(("purchase", clock, {"price": price, **flag}))
    return events
