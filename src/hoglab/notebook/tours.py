"""What the tour notebooks feed (``notebooks/04-metric-experiments.ipynb``): a metric experiment fed by the
official ``posthog`` SDK, a week of seeded visits, flags and captured events.

:func:`feed_metric_experiment` creates an experiment with PostHog's current metrics (a funnel, a mean and a ratio
metric, plus a secondary count), launches it a week back and plays one visit per simulated user through the
``posthog`` Python SDK, as an application would: ``evaluate_flags`` asks ``/flags`` for the user's variant, the
exposure is captured as ``$feature_flag_called``, then the visit's ``$pageview``, ``checkout`` and ``purchase``
events (with ``$feature/<flag>``). It only uses public APIs, so it would work against PostHog too, but a tour
never writes into a project it did not make: :func:`check_tour_target` lets it write only into hoglab's demo
project or an empty project on this machine, and refuses anything else (a PostHog host, a project holding
someone's events) unless told explicitly (``allow_foreign=True`` or ``HOGLAB_TOURS_WRITE_ANYWHERE=1``).

A tour run twice leaves the project as one run does: a feed whose experiment (its flag key) is already in the
project reuses it, and what it answers (the variants, the events, the window) is read back from the project.

Behaviour (seeded; the variant is the server's): one pageview *before* the exposure (no metric counts it), then
1 + Poisson(2) pageviews (Poisson(2.4) in ``test``); half the users reach ``checkout``, of whom 30% buy in
``control`` and 42% in ``test``, at a log-normal price of median ~33.

:func:`feed_cuped_experiment` feeds PostHog's 2026 features the same way, in one experiment: a mean metric
analysed with CUPED (each user's purchases in the fortnight before the exposure predict their purchases after it),
broken down by the browser of the exposure, a retention metric (back on days 1-7 after the exposure), a saved
(shared) metric linked to it (purchases per person, CUPED too), a holdout keeping a fifth of the users out of both
variants, and sequential testing.

>>> primary, secondary = metric_experiment_metrics()
>>> [m.metric_type for m in primary], [m.name for m in secondary]
(['funnel', 'mean', 'ratio'], ['pageviews'])
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import numpy as np

from ..errors import ConfigurationError
from ..queries import funnel_metric, mean_metric, ratio_metric, retention_metric, series, stats_config

if TYPE_CHECKING:
    from ..client import Client
    from ..schema import Experiment, ExperimentHoldout, ExperimentSavedMetric, Project

__all__ = [
    "CUPED_FLAG_KEY", "CUPED_HOLDOUT_SHARE", "DEMO_PROJECT_NAME", "METRIC_FLAG_KEY", "WRITE_ANYWHERE_ENV", "FedBefore",
    "MetricDemo", "Visit", "check_tour_target", "cuped_experiment_metrics", "fed_before", "feed_cuped_experiment",
    "feed_metric_experiment", "feed_visits", "flag_value", "metric_experiment_metrics",
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
CUPED_FLAG_KEY = "loyalty-banner"
CUPED_SEED = 20260224
CUPED_LOOKBACK_DAYS = 14
CUPED_HOLDOUT_SHARE = 20.0
BROWSERS = ("Chrome", "Safari", "Firefox")
BROWSER_SHARES = (0.55, 0.3, 0.15)
SPEND_LIFT = {"control": 1.0, "test": 1.08}  # the holdout's users behave as control's: neither sees the banner
RETURN_RATE = {"control": 0.35, "test": 0.45}


@dataclass(frozen=True)
class MetricDemo:
    """What :func:`feed_metric_experiment` (or :func:`feed_cuped_experiment`) made.

    The experiment, each user's flag value and the events sent; the holdout and the saved metric when the feed
    made them.
    """

    experiment: Experiment
    assigned: dict[str, str]
    events: int
    start: datetime
    end: datetime
    holdout: ExperimentHoldout | None = None
    saved_metric: ExperimentSavedMetric | None = None


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
    """Refuse (:class:`~hoglab.errors.ConfigurationError`) a project a tour may not write into.

    A tour may write into hoglab's demo project, or a project without a single event, on this machine (a loopback
    host).

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
    # Capture retries a failed batch (a keep-alive connection the server closed is reset on a loaded machine, and
    # without a retry the batch is lost): the service drops events it already stored (same uuid), so a batch sent
    # twice counts once. No retries of /flags (a user whose flag fails is skipped); a generous flags timeout.
    return posthog.Posthog(token, host=host, capture_mode="v0", max_retries=3, feature_flags_request_max_retries=0,
                           feature_flags_request_timeout_seconds=30, flush_at=500)  # fmt: skip


Visit = list[tuple[str, datetime, dict[str, Any]]]
"""A user's events after the flag answered: (event, timestamp, properties)."""


def feed_visits(
    sdk: Any,
    flag_key: str,
    arrivals: Iterable[tuple[str, datetime]],
    visit: Callable[[datetime, str], Visit],
    *,
    also: Callable[[str], None] | None = None,
) -> tuple[dict[str, str], int]:
    """Ask the SDK each arriving user's value of ``flag_key`` and capture the visit that value gives.

    Users without a variant (the flag off for them, a rollout below 100%) send nothing. ``also`` is called with each
    user after the SDK answered (e.g. to evaluate the flag another way). Returns (user -> variant, events sent).
    """
    assigned: dict[str, str] = {}
    sent = 0
    for user, at in arrivals:
        variant = flag_value(sdk, flag_key, user)
        if also is not None:
            also(user)
        if not isinstance(variant, str):
            continue
        assigned[user] = variant
        for event, when, properties in visit(at, variant):
            sdk.capture(event, distinct_id=user, timestamp=when, properties=properties)
            sent += 1
    return assigned, sent


def flag_value(sdk: Any, flag_key: str, user: str, *, only_evaluate_locally: bool = False) -> Any:
    """``user``'s value of ``flag_key`` by the SDK's current call (``evaluate_flags``, then ``get_flag``).

    No ``$feature_flag_called`` is sent: the tours capture the exposure themselves, at the visit's (past) moment.
    """
    flags = sdk.evaluate_flags(user, flag_keys=[flag_key], only_evaluate_locally=only_evaluate_locally)
    return flags.get_flag(flag_key, send_feature_flag_events=False)


@dataclass(frozen=True)
class FedBefore:
    """What an earlier run of a feed left in the project: its experiment (and its launch), the variants given, its
    users' events."""

    experiment: Experiment
    launched: datetime
    assigned: dict[str, str]
    events: int

    def saved_metric(self, client: Client) -> ExperimentSavedMetric | None:
        """The saved metric the experiment links first (the feeds link at most one), or ``None``."""
        links = self.experiment.saved_metrics
        return client.experiments.saved_metrics.get(links[0].saved_metric) if links else None


def fed_before(client: Client, flag_key: str, users_prefix: str) -> FedBefore | None:
    """The launched experiment an earlier run made with ``flag_key``, with what it fed (read back), or ``None``.

    ``assigned`` is each user's first exposure (``$feature_flag_called`` of the flag), ``events`` the number of
    events of the users whose distinct id starts with ``users_prefix`` (the feed's users).
    """
    listing = client.experiments.list(archived=None)
    if listing.empty or "feature_flag_key" not in listing:
        return None
    made = listing[listing["feature_flag_key"] == flag_key]
    if made.empty:
        return None
    experiment = client.experiments.get(int(made["id"].iloc[0]))
    if experiment.start_date is None:
        return None
    exposures = client.hogql(
        "select distinct_id, argMin(properties.$feature_flag_response, timestamp) as variant from events "
        "where event = '$feature_flag_called' and properties.$feature_flag = {flag} group by distinct_id",
        {"flag": flag_key}, all_rows=True,
    )  # fmt: skip
    events = client.hogql("select count() as n from events where startsWith(distinct_id, {prefix})",
                          {"prefix": users_prefix})  # fmt: skip
    assigned = dict(zip(exposures["distinct_id"].astype(str), exposures["variant"].astype(str), strict=True))
    return FedBefore(experiment, experiment.start_date, assigned, int(events["n"].iloc[0]))


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
    """Create and launch a metric experiment, then feed it visits through the ``posthog`` SDK.

    The experiment is made on ``client``'s project; ``days`` of ``users`` visits go through the SDK (flags from
    ``/flags``, events to ``/batch``), ending at ``end`` (now).

    The experiment starts ``days`` + 1 hours before the first visit; each user's visit is at a seeded moment of
    the window. Returns the experiment, the variant the server gave each user and the number of events sent.
    Before writing anything it checks the target with :func:`check_tour_target` (``allow_foreign`` is passed on).
    When the project already has the experiment of ``flag_key`` (an earlier run), nothing is written: it is
    returned with what that run fed (:func:`fed_before`).

    >>> demo = feed_metric_experiment(client, users=120)  # doctest: +SKIP
    >>> client.experiments.results(demo.experiment.id).to_frame()  # doctest: +SKIP
    """
    check_tour_target(client, allow_foreign=allow_foreign)
    earlier = fed_before(client, flag_key, f"metric-user-{seed}-")
    if earlier is not None:
        start = earlier.launched + timedelta(hours=1)
        return MetricDemo(earlier.experiment, earlier.assigned, earlier.events, start, start + timedelta(days=days))
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
    offsets = np.sort(rng.uniform(0, days * 86400 - 3600, size=users))
    arrivals = ((f"metric-user-{seed}-{i:05d}", start + timedelta(seconds=float(o))) for i, o in enumerate(offsets))
    try:
        assigned, sent = feed_visits(sdk, flag_key, arrivals, lambda at, variant: _visit(rng, at, variant, flag_key))
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


def cuped_experiment_metrics() -> tuple[list[Any], list[Any]]:
    """The CUPED tour's own metrics: primary revenue per person (by browser), secondary the 1-7-day return (the
    saved metric, purchases per person, is linked besides: :func:`feed_cuped_experiment`)."""
    primary = [mean_metric("purchase", math="sum", math_property="price", name="revenue per person",
                           breakdowns=["$browser"])]  # fmt: skip
    secondary = [retention_metric(None, "$pageview", window=(1, 7), name="back within a week")]
    return primary, secondary


def feed_cuped_experiment(
    client: Client,
    *,
    users: int = 600,
    seed: int = CUPED_SEED,
    flag_key: str = CUPED_FLAG_KEY,
    sequential: bool = True,
    end: datetime | None = None,
    name: str = "Loyalty banner (CUPED)",
    holdout_share: float | None = CUPED_HOLDOUT_SHARE,
    saved_metric: bool = True,
    allow_foreign: bool = False,
) -> MetricDemo:
    """Create and launch an experiment with CUPED, then feed it through the ``posthog`` SDK.

    CUPED looks back 14 days; sequential testing is on by default. The feed sends each user's history (purchases in
    the fortnight before), the exposure (``/flags`` picks the flag value, ``$browser`` on the exposure), the week
    after and a possible return visit.

    Unless ``holdout_share`` is ``None`` a new holdout keeps that share of users out of both variants (their flag
    answers ``holdout-<id>``; they behave as control's users), and unless ``saved_metric`` is false a new saved
    metric, purchases per person, is linked as a primary metric. Before writing anything it checks the target with
    :func:`check_tour_target` (``allow_foreign`` is passed on).

    Each user has a spending habit h ~ Gamma(2, 1): Poisson(h) purchases before the exposure and Poisson(h × lift)
    after it (lift 1.08 in ``test``), at a price of median ~25, so the pre-exposure revenue predicts the metric and
    CUPED narrows its interval. 35% of ``control`` users and 45% of ``test`` come back 1-7 days after. Visits fall
    in the first week of a fortnight ending at ``end`` (now), so every return is in the past. When the project
    already has the experiment of ``flag_key`` (an earlier run), nothing is written: it is returned, with its
    holdout and saved metric, and what that run fed (:func:`fed_before`).
    """
    check_tour_target(client, allow_foreign=allow_foreign)
    earlier = fed_before(client, flag_key, f"shopper-{seed}-")
    if earlier is not None:
        start = earlier.launched
        return MetricDemo(earlier.experiment, earlier.assigned, earlier.events, start, start + timedelta(days=14),
                          holdout=earlier.experiment.holdout, saved_metric=earlier.saved_metric(client))  # fmt: skip
    rng = np.random.default_rng(seed)
    end = (end or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    start = end - timedelta(days=14)
    primary, secondary = cuped_experiment_metrics()
    settings = stats_config("frequentist", cuped=CUPED_LOOKBACK_DAYS, sequential=True if sequential else None)
    holdout = None if holdout_share is None else client.experiments.holdouts.create(
        f"Loyalty holdout ({flag_key})", exclusion_percentage=holdout_share,
        description="Kept out of every loyalty experiment, to measure them all together.",
    )  # fmt: skip
    shared = client.experiments.saved_metrics.create(
        f"purchases per person ({flag_key})", mean_metric("purchase"), description="Purchases per exposed person.",
    ) if saved_metric else None  # fmt: skip
    experiment = client.experiments.create(
        name, flag_key, variants=["control", "test"], start=start, metrics=primary, metrics_secondary=secondary,
        stats_config=settings, holdout=holdout, saved_metrics=[shared] if shared is not None else None,
        description="Does a loyalty banner make shoppers spend more? CUPED reads each shopper's spending before.",
    )  # fmt: skip
    sdk = _sdk(_project_token(client), client.host)
    offsets = np.sort(rng.uniform(3600, 7 * 86400, size=users))
    arrivals = ((f"shopper-{seed}-{i:05d}", start + timedelta(seconds=float(o))) for i, o in enumerate(offsets))
    try:
        assigned, sent = feed_visits(sdk, flag_key, arrivals, lambda at, variant: _shopper(rng, at, variant, flag_key))
    finally:
        sdk.flush()
        sdk.shutdown()
    return MetricDemo(experiment, assigned, sent, start, end, holdout=holdout, saved_metric=shared)


def _shopper(
    rng: np.random.Generator, seen: datetime, variant: str, flag_key: str
) -> list[tuple[str, datetime, dict[str, Any]]]:
    arm = "control" if variant.startswith("holdout-") else variant  # the holdout sees no banner either
    habit = float(rng.gamma(2.0, 1.0))
    browser = str(rng.choice(BROWSERS, p=BROWSER_SHARES))
    flag = {f"$feature/{flag_key}": variant}
    events: list[tuple[str, datetime, dict[str, Any]]] = []
    for _ in range(int(rng.poisson(habit))):  # the fortnight before: what CUPED reads
        at = seen - timedelta(seconds=float(rng.uniform(3600, (CUPED_LOOKBACK_DAYS - 1) * 86400)))
        events.append(("purchase", at, {"price": round(float(rng.lognormal(3.2, 0.4)), 2), "$browser": browser}))
    events.append(("$feature_flag_called", seen, {"$feature_flag": flag_key, "$feature_flag_response": variant,
                                                  "$browser": browser, **flag}))  # fmt: skip
    events.append(("$pageview", seen + timedelta(seconds=5), {"$browser": browser, **flag}))
    for _ in range(int(rng.poisson(habit * SPEND_LIFT[arm]))):  # the week after
        at = seen + timedelta(seconds=float(rng.uniform(60, 6 * 86400)))
        events.append(("purchase", at, {"price": round(float(rng.lognormal(3.2, 0.4)), 2), "$browser": browser,
                                        **flag}))  # fmt: skip
    if rng.random() < RETURN_RATE[arm]:
        back = seen + timedelta(days=int(rng.integers(1, 8)), seconds=float(rng.uniform(0, 3600)))
        events.append(("$pageview", back, {"$browser": browser, **flag}))
    return sorted(events, key=lambda item: item[1])
