"""The demo's history of experiments: 40 past experiments with planted true effects, in a project of their own.

A product team's year of experiments on one metric, checkout conversion (did the exposed person purchase after
being exposed: a one-step funnel metric): each ran two weeks, one after another, on 800 to 4,000 people per arm;
its true relative lift was drawn from N(+1%, 4%²) (a few arms of three-way experiments too), and the exposed
people converted at the experiment's base rate times (1 + that lift). Each was then concluded from its own data as
a team would (a two-proportion z-test at 5%): a significant gain *won* and was shipped (PostHog's
``ship_variant``: the flag serves that variant to everyone), a significant loss *lost*, the rest *inconclusive*.

They live in their own project, :data:`HISTORY_PROJECT`, so the demo project (and every tour's checked output)
is the same with or without them; notebook 07 reads both. Dates are relative to the demo's end (today, 00:00 UTC),
the rest comes from :data:`HISTORY_SEED`: the same history, to the count, on any day.

>>> len(PAST_EXPERIMENTS), PAST_EXPERIMENTS[0].name, PAST_EXPERIMENTS[0].arms[0]
(40, 'One-page checkout', 'control')
>>> round(float(np.mean([lift for e in PAST_EXPERIMENTS for lift in e.true_lifts[1:]])), 4)
0.0033
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

import numpy as np
import pyarrow as pa

from .events import _uuids
from .experiment import end_of

__all__ = [
    "HISTORY_METRIC",
    "HISTORY_PROJECT",
    "HISTORY_SEED",
    "PAST_EXPERIMENTS",
    "PastExperiment",
    "history_events",
    "history_experiments",
]

HISTORY_PROJECT = "Demo experiment history"
HISTORY_SEED = 20260037
HISTORY_METRIC = "Checkout conversion"
TRUE_MEAN, TRUE_SD = 0.01, 0.04  # the distribution the true lifts are drawn from
DAYS_RUNNING, SPACING = 14, 9  # each experiment runs 14 days; one starts every 9 days
FIRST_START = 40 * SPACING + 30  # days before the demo's end when the first one started
_POOL = 10_000  # people in each of the two pools (consecutive experiments overlap in time: they use different pools)

_NAMES = [
    "One-page checkout", "Free-shipping banner", "Guest checkout first", "Trust badges at payment",
    "Bigger add-to-cart button", "Sticky order summary", "Apple Pay on top", "Express delivery upsell",
    "Coupon field collapsed", "Progress bar in checkout", "Saved cards by default", "Delivery date estimate",
    "Reviews under the price", "Shorter address form", "Gift wrap option", "Cart reminder e-mail",
    "Price anchoring", "Low-stock warning", "Bundle discount", "Checkout in a drawer",
    "Postcode lookup", "Payment icons in header", "Returns policy link", "Sign-in with Google",
    "Cross-sell carousel", "Order notes field", "Currency auto-detect", "Dark-pattern-free opt-in",
    "Single CTA colour", "Loyalty points preview", "Instalments with Klarna", "Shipping cost upfront",
    "Autofill phone number", "Recently viewed in cart", "Minimal footer", "Live chat in checkout",
    "Larger product photos", "Wishlist nudge", "Countdown for free shipping", "Company invoice option",
]  # fmt: skip


@dataclass(frozen=True)
class PastExperiment:
    """One past experiment: its planted truth (``true_lifts``: each arm's true relative lift, the control's 0)."""

    name: str
    flag: str
    start_days_before_end: int
    arms: tuple[str, ...]
    units: int  # per arm
    base_rate: float
    true_lifts: tuple[float, ...]

    def start(self, end: datetime | date | None) -> datetime:
        return end_of(end) - timedelta(days=self.start_days_before_end)

    def finish(self, end: datetime | date | None) -> datetime:
        return self.start(end) + timedelta(days=DAYS_RUNNING)


def _plan() -> list[PastExperiment]:
    rng = np.random.default_rng([HISTORY_SEED, 1])
    out = []
    for i, name in enumerate(_NAMES):
        arms = ("control", "a", "b") if i % 9 == 4 else ("control", "test")
        lifts = (0.0, *(float(rng.normal(TRUE_MEAN, TRUE_SD)) for _ in arms[1:]))
        units = int(rng.integers(800, 4001))
        if len(arms) == 3:
            units = min(units, _POOL // 3)
        slug = "-".join(name.lower().replace("-", " ").split())
        out.append(PastExperiment(name, f"past-{slug}", FIRST_START - SPACING * i, arms, units,
                                  round(float(rng.uniform(0.18, 0.32)), 3), lifts))  # fmt: skip
    return out


PAST_EXPERIMENTS: tuple[PastExperiment, ...] = tuple(_plan())
"""The 40 past experiments, oldest first."""


@dataclass(frozen=True)
class _Units:
    """One experiment's exposed people: ``person``, ``arm`` (index into the arms), ``seen`` (seconds after the
    start) and ``bought`` (seconds after the start; NaN for those who did not convert)."""

    person: np.ndarray
    arm: np.ndarray
    seen: np.ndarray
    bought: np.ndarray


def _draw(seed: int) -> list[tuple[PastExperiment, _Units]]:
    """Each experiment's units, from its own stream of the seed (vectorised: no per-unit Python)."""
    drawn = []
    for i, past in enumerate(PAST_EXPERIMENTS):
        rng = np.random.default_rng([seed, 2, i])
        n = past.units * len(past.arms)
        person = rng.choice(_POOL, size=n, replace=False) + (i % 2) * _POOL
        arm = np.repeat(np.arange(len(past.arms)), past.units)
        seen = rng.uniform(0, 10 * 86400, size=n)
        rate = past.base_rate * (1 + np.asarray(past.true_lifts))[arm]
        bought = np.where(rng.random(n) < rate, seen + rng.uniform(3600, 3 * 86400, size=n), np.nan)
        drawn.append((past, _Units(person, arm, seen, bought)))
    return drawn


def _conclusion(past: PastExperiment, units: _Units) -> tuple[str, str | None]:
    """A team's call on its own data: the best arm against control by a two-proportion z-test at 5%."""
    n = np.bincount(units.arm, minlength=len(past.arms)).astype(float)
    x = np.bincount(units.arm, weights=~np.isnan(units.bought), minlength=len(past.arms))
    best, best_z = None, 0.0
    for j in range(1, len(past.arms)):
        pooled = (x[0] + x[j]) / (n[0] + n[j])
        z = (x[j] / n[j] - x[0] / n[0]) / math.sqrt(pooled * (1 - pooled) * (1 / n[0] + 1 / n[j]))
        if abs(z) > abs(best_z):
            best, best_z = past.arms[j], float(z)
    if best_z > 1.959964:
        return "won", best
    return ("lost" if best_z < -1.959964 else "inconclusive"), None


def history_events(seed: int = HISTORY_SEED, end: datetime | date | None = None) -> pa.Table:
    """The history's events in PostHog's export shape: an exposure (``$feature_flag_called``) per unit and a
    ``purchase`` for those who converted, within each experiment's two weeks."""
    rng = np.random.default_rng([seed, 3])
    events, people, times, props = [], [], [], []
    for past, units in _draw(seed):
        start_us = int(past.start(end).timestamp() * 1_000_000)
        arms = np.array([json.dumps({"$feature_flag": past.flag, "$feature_flag_response": a}) for a in past.arms])
        done = ~np.isnan(units.bought)
        events += [np.full(len(units.person), "$feature_flag_called"), np.full(int(done.sum()), "purchase")]
        people += [units.person, units.person[done]]
        seen_us, bought_us = (units.seen * 1e6).astype(np.int64), (units.bought[done] * 1e6).astype(np.int64)
        times += [start_us + seen_us, start_us + bought_us]
        prices = np.round(rng.gamma(2.0, 30.0, size=int(done.sum())), 2)
        props += [arms[units.arm], np.char.add(np.char.add('{"price":', prices.astype(str)), "}")]
    person = np.concatenate(people)
    n = len(person)
    return pa.table({
        "uuid": _uuids(rng, n),
        "event": pa.array(np.concatenate(events).astype(str)),
        "distinct_id": pa.array(np.char.add("shopper-", person.astype(str))),
        "timestamp": pa.array(np.concatenate(times), pa.timestamp("us", tz="UTC")),
        "properties": pa.array(np.concatenate(props).astype(str)),
        "elements_chain": pa.array(np.full(n, "")),
    })  # fmt: skip


def history_experiments(seed: int = HISTORY_SEED, end: datetime | date | None = None) -> list[dict[str, Any]]:
    """The create bodies of the 40 experiments (ended, concluded), each with ``"ship"``: the variant to ship or
    ``None``."""
    bodies = []
    for past, units in _draw(seed):
        conclusion, ship = _conclusion(past, units)
        share = 100 // len(past.arms)
        variants = [{"key": arm, "rollout_percentage": share + (100 - share * len(past.arms) if k == 0 else 0)}
                    for k, arm in enumerate(past.arms)]  # fmt: skip
        bodies.append({
            "name": past.name,
            "feature_flag_key": past.flag,
            "description": f"Planted true lifts: {', '.join(f'{a} {x:+.2%}' for a, x in zip(past.arms[1:], past.true_lifts[1:], strict=True))}.",  # noqa: E501
            "start_date": past.start(end).isoformat(),
            "end_date": past.finish(end).isoformat(),
            "parameters": {"feature_flag_variants": variants},
            "metrics": [{"kind": "ExperimentMetric", "metric_type": "funnel", "name": HISTORY_METRIC,
                         "uuid": f"checkout-conversion-{past.flag}",
                         "series": [{"kind": "EventsNode", "event": "purchase", "name": "purchase"}]}],
            "stats_config": {"method": "frequentist"},
            "conclusion": conclusion,
            "ship": ship,
        })  # fmt: skip
    return bodies
