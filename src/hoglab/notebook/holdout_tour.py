"""The holdout experiment the metric tour (``notebooks/04-metric-experiments.ipynb``) feeds.

An experiment with a holdout and a saved metric, fed a week of visits by the official ``posthog`` SDK.

:func:`feed_holdout_experiment` creates a holdout (20% of persons by default), a saved metric (revenue per
person) and an experiment using both (plus an inline checkout → purchase funnel), launches it a week back and plays
one visit per simulated user. Each user's flag value is asked twice: from ``/flags`` (remote evaluation) and from
the flag definitions the SDK polls with a personal API key (local evaluation); the remote value is the one the
visit uses and captures as ``$feature_flag_called``. Persons in the holdout get ``holdout-<id>`` from both. Run
twice, it reuses the experiment the first run made (:func:`~hoglab.notebook.tours.fed_before`).

Behaviour (seeded; the arm is the server's): half the users reach ``checkout``; of those, 22% buy in the holdout
(which sees none of the quarter's shipped changes), 30% in ``control`` and 42% in ``test``, at a log-normal price
of median ~33.

>>> sorted(PURCHASE_RATE)
['control', 'holdout', 'test']
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import numpy as np

from ..queries import funnel_metric, mean_metric
from .tours import FedBefore, _project_token, _sdk, check_tour_target, fed_before, feed_visits, flag_value

if TYPE_CHECKING:
    from ..client import Client
    from ..schema import Experiment, ExperimentHoldout, ExperimentSavedMetric

__all__ = ["HOLDOUT_FLAG_KEY", "HoldoutDemo", "feed_holdout_experiment"]

HOLDOUT_FLAG_KEY = "checkout-holdout"
HOLDOUT_SEED = 20260212
PURCHASE_RATE = {"holdout": 0.22, "control": 0.30, "test": 0.42}
CHECKOUT_RATE = 0.5


@dataclass(frozen=True)
class HoldoutDemo:
    """What :func:`feed_holdout_experiment` made.

    The experiment, its holdout and saved metric, each user's flag value from ``/flags`` (``assigned``) and from
    local evaluation (``local``), and the events sent.
    """

    experiment: Experiment
    holdout: ExperimentHoldout
    saved_metric: ExperimentSavedMetric
    assigned: dict[str, str]
    local: dict[str, Any]
    events: int
    start: datetime
    end: datetime

    @property
    def disagreements(self) -> dict[str, tuple[Any, Any]]:
        """Users whose local evaluation differs from ``/flags``: user -> (remote, local). Empty when they agree."""
        return {u: (v, self.local.get(u)) for u, v in self.assigned.items() if self.local.get(u) != v}


def _local_sdk(token: str, host: str, personal_api_key: str) -> Any:
    import posthog

    # Local evaluation: the SDK polls /flags/definitions once (a long poll interval) and never asks /flags.
    return posthog.Posthog(token, host=host, secret_key=personal_api_key, send=False, poll_interval=3600,
                           feature_flags_request_max_retries=0, feature_flags_request_timeout_seconds=30)  # fmt: skip


def feed_holdout_experiment(
    client: Client,
    personal_api_key: str,
    *,
    users: int = 600,
    days: int = 7,
    seed: int = HOLDOUT_SEED,
    flag_key: str = HOLDOUT_FLAG_KEY,
    holdout_share: float = 20,
    stats_method: str = "frequentist",
    end: datetime | None = None,
    allow_foreign: bool = False,
) -> HoldoutDemo:
    """Create a holdout, a saved metric and an experiment using both, and feed it visits through the SDK.

    The experiment is made on ``client``'s project and launched ``days`` back; one visit per user goes through the
    ``posthog`` SDK, and ``personal_api_key`` (with ``feature_flag:read``) lets the SDK evaluate the flag locally
    too. Before writing anything it checks the target with
    :func:`~hoglab.notebook.tours.check_tour_target` (``allow_foreign`` is passed on). When the project already has
    the experiment of ``flag_key`` (an earlier run), nothing is written: it is returned with what that run fed, and
    each of its users evaluated locally again.

    >>> demo = feed_holdout_experiment(client, key, users=300)  # doctest: +SKIP
    >>> client.experiments.results(demo.experiment.id).holdout_frame()  # doctest: +SKIP
    """
    check_tour_target(client, allow_foreign=allow_foreign)
    earlier = fed_before(client, flag_key, f"holdout-user-{seed}-")
    if earlier is not None:
        return _reused(client, earlier, personal_api_key, flag_key, days)
    rng = np.random.default_rng(seed)
    end = (end or datetime.now(UTC)).astimezone(UTC).replace(microsecond=0)
    start = end - timedelta(days=days)
    holdout = client.experiments.holdouts.create(f"Quarter holdout ({flag_key})", exclusion_percentage=holdout_share,
                                                 description="Held out of every checkout experiment this quarter.")
    revenue = client.experiments.saved_metrics.create(
        f"revenue per person ({flag_key})", mean_metric("purchase", math="sum", math_property="price"),
        description="Sum of purchase prices per exposed person.",
    )  # fmt: skip
    experiment = client.experiments.create(
        "Checkout copy (holdout)", flag_key, variants=["control", "test"], start=start - timedelta(hours=1),
        metrics=[funnel_metric(["checkout", "purchase"], name="checkout → purchase")], saved_metrics=[revenue],
        holdout=holdout, stats_config=stats_method,
        description="The new checkout copy, with a fifth of persons held out of the quarter's changes.",
    )  # fmt: skip
    token = _project_token(client)
    sdk, local = _sdk(token, client.host), _local_sdk(token, client.host, personal_api_key)
    evaluated: dict[str, Any] = {}
    offsets = np.sort(rng.uniform(0, days * 86400 - 3600, size=users))
    arrivals = ((f"holdout-user-{seed}-{i:05d}", start + timedelta(seconds=float(o))) for i, o in enumerate(offsets))

    def evaluate_locally(user: str) -> None:
        evaluated[user] = flag_value(local, flag_key, user, only_evaluate_locally=True)

    try:
        local.load_feature_flags()
        assigned, sent = feed_visits(sdk, flag_key, arrivals, lambda at, value: _visit(rng, at, value, flag_key),
                                     also=evaluate_locally)  # fmt: skip
    finally:
        sdk.flush()
        sdk.shutdown()
        local.shutdown()
    return HoldoutDemo(experiment, holdout, revenue, assigned, evaluated, sent, start, end)


def _reused(client: Client, earlier: FedBefore, personal_api_key: str, flag_key: str, days: int) -> HoldoutDemo:
    """What an earlier run made, its users evaluated locally again (that writes nothing)."""
    made, linked = earlier.experiment, earlier.saved_metric(client)
    assert made.holdout is not None and linked is not None, "the holdout tour's experiment has both"
    local = _local_sdk(_project_token(client), client.host, personal_api_key)
    try:
        local.load_feature_flags()
        evaluated = {u: flag_value(local, flag_key, u, only_evaluate_locally=True) for u in earlier.assigned}
    finally:
        local.shutdown()
    start = earlier.launched + timedelta(hours=1)
    return HoldoutDemo(made, made.holdout, linked, earlier.assigned, evaluated, earlier.events, start,
                       start + timedelta(days=days))  # fmt: skip


def _visit(rng: np.random.Generator, at: datetime, value: str, flag_key: str
           ) -> list[tuple[str, datetime, dict[str, Any]]]:  # fmt: skip
    arm = "holdout" if value.startswith("holdout-") else value
    flag = {f"$feature/{flag_key}": value}
    events: list[tuple[str, datetime, dict[str, Any]]] = [
        ("$feature_flag_called", at, {"$feature_flag": flag_key, "$feature_flag_response": value, **flag}),
        ("$pageview", at + timedelta(seconds=5), {"$current_url": "https://hoglab.example/pricing", **flag}),
    ]
    clock = at + timedelta(seconds=5)
    if rng.random() < CHECKOUT_RATE:
        clock += timedelta(seconds=int(rng.integers(5, 120)))
        events.append(("checkout", clock, dict(flag)))
        if rng.random() < PURCHASE_RATE[arm]:
            clock += timedelta(seconds=int(rng.integers(5, 300)))
            events.append(("purchase", clock, {"price": round(float(rng.lognormal(3.5, 0.5)), 2), **flag}))
    return events
