"""The demo project's events: deterministic (seeded), ~60 days, tens of thousands of users, one experiment.

Users arrive uniformly over the window and come back for a few sessions of ``$pageview``s. About 45% sign up in
their first session (``signup`` and ``$identify`` from their anonymous id to their email, with ``$set`` of
``email``/``plan``); 3% of those also used a second device before signing in on it, which merges two persons
(an override). A user's device is consistent: the browser follows the operating system (Safari only on
Mac OS X and iOS, Edge not on iOS or Linux), and ``$device_type`` is what PostHog's SDKs send (``Desktop``
on Windows, Mac OS X and Linux; ``Mobile``, or ``Tablet`` for about a fifth of iOS and a tenth of Android users).
Every event carries ``$browser``/``$os``/``$device_type``; a user's first pageview ``$set``s them and
``$set_once``s ``$initial_country``/``$initial_browser``. Signed-up users visit ``/checkout`` in 45% of their later
sessions and may ``purchase`` (with a ``price``). About 220,000 events at the default size (20,000 users).

Companies (PostHog's group analytics, group type ``company``): 300 at the default size (one per ~67 users), each
with a ``plan`` (free/pro/enterprise), an ``industry``, a headcount (``employees``) and a ``name``; sizes are
skewed (a few big customers, many small ones). A signed-up user works at a company on their own plan. When a
company's first member signs up, a ``$groupidentify`` (right after their ``$identify``) sets its properties; every
later event of a signed-up user carries ``$groups`` (and ``$group_0``, as PostHog's exports do). Companies come
from a side stream of the random seed, so every other event and figure is what it was without them.

The experiment (:data:`DEMO_EXPERIMENT`, flag ``new-checkout``, control/test 50/50) runs for the last 30 days.
A signed-up user's first checkout visit in that window is their exposure: ``$feature_flag_called`` with the
variant PostHog's hashing gives their distinct id (``flags.hashing.variant_for``), and their later events carry
``$feature/new-checkout``. Exactly 30% of control's and 34.5% of test's exposed users then ``purchase`` (+15%
relative, whatever the random seed; about 1,700 exposures per variant at the default size), which is significant. The
effect differs by segment: on mobile (``$device_type`` Mobile or Tablet: iOS, Android) test converts 43.5% against
control's 30% (+45%), on desktop about 29.6% (none), the heterogeneity the deep dive (notebook 06) finds; plan,
country, browser and OS are there to slice by too.

Same ``seed`` and ``end`` → the same events, byte for byte.

>>> from datetime import datetime, UTC
>>> t = generate_events(seed=1, end=datetime(2026, 1, 1, tzinfo=UTC), users=200)
>>> t.equals(generate_events(seed=1, end=datetime(2026, 1, 1, tzinfo=UTC), users=200))
True
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

import numpy as np

from ..flags.hashing import variant_for
from .experiment import CONVERSION, DEMO_EXPERIMENT, FLAG_KEY, MOBILE_CONVERSION, end_of

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["DEMO_COMPANIES", "DEMO_DAYS", "DEMO_SEED", "DEMO_USERS", "generate_events"]

DEMO_SEED = 20260101
DEMO_USERS = 20_000
DEMO_DAYS = 60
DEMO_COMPANIES = 300
"""Companies at the default size; a demo of another size keeps one company per ~67 users (at least 3)."""

_OS = np.array(["Windows", "Mac OS X", "iOS", "Android", "Linux"])
_OS_P = [0.38, 0.22, 0.18, 0.17, 0.05]
_BROWSERS = np.array(["Chrome", "Safari", "Firefox", "Edge"])
# The browser given the operating system (rows follow _OS, columns _BROWSERS): Safari only where Apple ships it.
_BROWSER_GIVEN_OS = np.array([
    [0.72, 0.00, 0.12, 0.16],  # Windows
    [0.45, 0.45, 0.08, 0.02],  # Mac OS X
    [0.20, 0.80, 0.00, 0.00],  # iOS
    [0.88, 0.00, 0.08, 0.04],  # Android
    [0.70, 0.00, 0.30, 0.00],  # Linux
])  # fmt: skip
_DEVICE_TYPES = np.array(["Desktop", "Mobile", "Tablet"])
# The share of each operating system's users on a tablet (iPads report iOS, Android tablets Android).
_TABLET_P = np.array([0.0, 0.0, 0.2, 0.1, 0.0])
_MOBILE_OS = np.array([False, False, True, True, False])
_COUNTRIES = np.array(["US", "GB", "DE", "FR", "IN", "BR", "CA", "NL"])
_COUNTRY_P = [0.36, 0.12, 0.1, 0.08, 0.12, 0.08, 0.08, 0.06]
_PLANS = np.array(["free", "pro", "enterprise"])
_PLAN_P = [0.7, 0.25, 0.05]
_COMPANY_PLAN_P = [0.5, 0.35, 0.15]  # of companies; a company's members share its plan
_INDUSTRIES = np.array(["Software", "Finance", "Retail", "Healthcare", "Education", "Media"])
_INDUSTRY_P = [0.35, 0.15, 0.15, 0.12, 0.13, 0.1]
# Company names: first x last words (360 pairs, shuffled); a bigger demo numbers the repeats.
_NAME_FIRST = np.array([
    "Acme", "Blue", "North", "Bright", "Swift", "Iron", "Silver", "Green", "Red", "Cloud", "Stone", "River", "Peak",
    "Star", "Maple", "Oak", "Pine", "Cedar", "Harbor", "Summit", "Atlas", "Nova", "Orbit", "Pixel", "Vector",
    "Quantum", "Lumen", "Terra", "Delta", "Echo",
])  # fmt: skip
_NAME_LAST = np.array([
    "Labs", "Systems", "Works", "Analytics", "Logistics", "Health", "Media", "Foods", "Bank", "Studio", "Robotics",
    "Energy",
])  # fmt: skip
_PAGES = np.array(["/", "/pricing", "/docs", "/blog", "/features", "/about"])
_SITE = "https://hoglab.example"


def _uuids(rng: np.random.Generator, n: int) -> pa.Array:
    """``n`` random version-4 UUID strings, vectorised (no per-row Python)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    raw = rng.integers(0, 256, size=(n, 16), dtype=np.uint8)
    raw[:, 6] = (raw[:, 6] & 0x0F) | 0x40
    raw[:, 8] = (raw[:, 8] & 0x3F) | 0x80
    hexed = pa.array(np.frombuffer(raw.tobytes().hex().encode(), dtype="S32")).cast(pa.string())
    parts = [pc.utf8_slice_codeunits(hexed, a, b) for a, b in ((0, 8), (8, 12), (12, 16), (16, 20), (20, 32))]
    return pc.binary_join_element_wise(*parts, "-")


def _concat(*parts: Any) -> pa.Array:
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*parts, "")


def _where(mask: np.ndarray, values: Any, n: int) -> pa.Array:
    """``values`` where ``mask``, else '' (a JSON fragment that is present on some rows only)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    values = values if isinstance(values, pa.Array) else pa.array(np.broadcast_to(values, n))
    return pc.if_else(pa.array(mask), values, "")


def _text(values: np.ndarray) -> pa.Array:
    import pyarrow as pa

    return pa.array(values.astype(str))


def _pick(names: np.ndarray, index: np.ndarray) -> pa.Array:
    """``names[index]`` as Arrow strings, taken from the few names: no string per row is made in numpy (faster)."""
    import pyarrow as pa

    return pa.array(names.astype(str)).take(pa.array(index))


@dataclass
class _Rows:
    """Event rows as columns, appended in blocks (numpy), then sorted by time."""

    ts: list[np.ndarray] = field(default_factory=list)
    user: list[np.ndarray] = field(default_factory=list)
    kind: list[np.ndarray] = field(default_factory=list)
    session: list[np.ndarray] = field(default_factory=list)
    page: list[np.ndarray] = field(default_factory=list)
    identified: list[np.ndarray] = field(default_factory=list)
    device2: list[np.ndarray] = field(default_factory=list)
    variant: list[np.ndarray] = field(default_factory=list)

    def add(self, ts: np.ndarray, user: np.ndarray, kind: int, session: np.ndarray, *, page: Any = -1,
            identified: Any = True, device2: Any = False, variant: Any = 0) -> None:  # fmt: skip
        n = len(ts)
        self.ts.append(ts.astype(np.int64))
        self.user.append(user.astype(np.int64))
        self.kind.append(np.full(n, kind, np.int8))
        self.session.append(session.astype(np.int64))
        self.page.append(np.broadcast_to(np.asarray(page, np.int64), n).copy())
        self.identified.append(np.broadcast_to(np.asarray(identified, bool), n).copy())
        self.device2.append(np.broadcast_to(np.asarray(device2, bool), n).copy())
        self.variant.append(np.broadcast_to(np.asarray(variant, np.int8), n).copy())

    def columns(self) -> dict[str, np.ndarray]:
        cols = {name: np.concatenate(getattr(self, name)) for name in self.__dataclass_fields__}
        order = np.lexsort((cols["kind"], cols["user"], cols["ts"]))
        return {name: col[order] for name, col in cols.items()}


@dataclass(frozen=True)
class _Companies:
    """The demo's companies (group type ``company``, index 0) and the company each user works at.

    Drawn from a side stream of the random seed (``[seed, 25]``), so the main stream, and with it every other event,
    is the same with or without them.
    """

    keys: list[str]
    names: list[str]
    plans: np.ndarray  # index into _PLANS
    industries: np.ndarray  # index into _INDUSTRIES
    employees: np.ndarray
    of_user: np.ndarray  # company index per user

    @classmethod
    def draw(cls, seed: int, plan: np.ndarray) -> _Companies:
        side = np.random.default_rng([seed, 25])
        n = max(3, round(DEMO_COMPANIES * len(plan) / DEMO_USERS))
        plans = side.choice(len(_PLANS), size=n, p=_COMPANY_PLAN_P)
        plans[: len(_PLANS)] = np.arange(len(_PLANS))  # every plan has a company, whatever the size
        industries = side.choice(len(_INDUSTRIES), size=n, p=_INDUSTRY_P)
        # Headcount by plan (log-normal around 12, 80 and 1,500 people), and how many of the users work there:
        # skewed, bigger companies bringing more users.
        centre = np.array([12.0, 80.0, 1500.0])[plans]
        employees = np.maximum(2, np.round(centre * side.lognormal(0.0, 0.8, size=n))).astype(np.int64)
        weight = np.sqrt(employees) * side.lognormal(0.0, 0.6, size=n)
        of_user = np.zeros(len(plan), np.int64)
        for code in range(len(_PLANS)):
            members, pool = np.flatnonzero(plan == code), np.flatnonzero(plans == code)
            of_user[members] = side.choice(pool, size=len(members), p=weight[pool] / weight[pool].sum())
        combos = len(_NAME_FIRST) * len(_NAME_LAST)
        picks = side.permutation(combos)
        names = []
        for i in range(n):
            j = int(picks[i % combos])
            name = f"{_NAME_FIRST[j // len(_NAME_LAST)]} {_NAME_LAST[j % len(_NAME_LAST)]}"
            names.append(name if i < combos else f"{name} {i // combos + 1}")
        keys = [name.lower().replace(" ", "-") for name in names]
        return cls(keys, names, plans, industries, employees, of_user)

    def key_of(self, user: np.ndarray) -> pa.Array:
        """The group key of each user's company."""
        import pyarrow as pa

        return pa.array(self.keys).take(pa.array(self.of_user[user]))

    def identify_events(self, seed: int, events: pa.Table, signup_user: np.ndarray, signup_ts: np.ndarray,
                        devices: tuple[np.ndarray, np.ndarray, np.ndarray]) -> pa.Table:  # fmt: skip
        """``events`` with one ``$groupidentify`` per company that has members, half a second after its first
        member's ``$identify`` (their signup), sent by that member from their device (``devices``: each user's
        ``$browser``, ``$os``, ``$device_type``); sorted by time again."""
        import pyarrow as pa
        import pyarrow.compute as pc

        order = np.argsort(signup_ts, kind="stable")
        company = self.of_user[signup_user[order]]
        found, first = np.unique(company, return_index=True)
        user, ts = signup_user[order][first], signup_ts[order][first] + _US // 2
        properties = [
            json.dumps({
                "$group_type": "company", "$group_key": self.keys[c],
                "$group_set": {"name": self.names[c], "plan": str(_PLANS[self.plans[c]]),
                               "industry": str(_INDUSTRIES[self.industries[c]]), "employees": int(self.employees[c])},
                "$browser": str(devices[0][u]), "$os": str(devices[1][u]), "$device_type": str(devices[2][u]),
                "$lib": "web",
            }, separators=(",", ":"))
            for c, u in zip(found.tolist(), user.tolist(), strict=True)
        ]  # fmt: skip
        extra = pa.table({
            "uuid": _uuids(np.random.default_rng([seed, 25, 1]), len(found)),
            "event": pa.array(["$groupidentify"] * len(found)),
            "distinct_id": pa.array([_email(int(u)) for u in user]),
            "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC")),
            "properties": pa.array(properties),
            "elements_chain": pa.array([""] * len(found)),
        })  # fmt: skip
        merged = pa.concat_tables([events, extra.cast(events.schema)])
        return merged.take(pc.sort_indices(merged, sort_keys=[("timestamp", "ascending")]))


PAGEVIEW, SIGNUP, IDENTIFY, CHECKOUT, EXPOSURE, PURCHASE = range(6)
_EVENT_NAMES = np.array(["$pageview", "signup", "$identify", "$pageview", "$feature_flag_called", "purchase"])
_US = 1_000_000
_DAY = 86_400 * _US


def generate_events(
    seed: int = DEMO_SEED, end: datetime | date | None = None, users: int = DEMO_USERS, days: int = DEMO_DAYS
) -> pa.Table:
    """The demo's events in PostHog's export shape: ``uuid, event, distinct_id, timestamp, properties,
    elements_chain`` (``timestamp`` a UTC timestamp, ``properties`` JSON text), sorted by time."""
    rng = np.random.default_rng(seed)
    end_us = int(end_of(end).timestamp() * _US)
    start_us = end_us - days * _DAY
    exp_start_us = int(DEMO_EXPERIMENT.start_for(end).timestamp() * _US)

    # Users: arrival, attributes, whether and how they sign up.
    first_seen = rng.integers(start_us, end_us - 3600 * _US, size=users)
    browser_draw = rng.random(users)  # read once the OS is known (below)
    os_ = rng.choice(len(_OS), size=users, p=_OS_P)
    browser, device = _devices(seed, os_, browser_draw)
    country = rng.choice(len(_COUNTRIES), size=users, p=_COUNTRY_P)
    plan = rng.choice(len(_PLANS), size=users, p=_PLAN_P)
    signs_up = rng.random(users) < 0.45
    companies = _Companies.draw(seed, plan)
    second_device = signs_up & (rng.random(users) < 0.03)

    # Sessions: 1 + Poisson(2.5) per user, a few days apart, inside the window.
    n_sessions = 1 + rng.poisson(2.5, size=users)
    s_user = np.repeat(np.arange(users), n_sessions)
    s_index = np.arange(len(s_user)) - np.repeat(np.cumsum(n_sessions) - n_sessions, n_sessions)
    gaps = np.where(s_index == 0, 0, rng.exponential(4 * _DAY, size=len(s_user))).astype(np.int64)
    s_start = first_seen[s_user] + _cumsum_by_group(gaps, n_sessions)
    keep = s_start < end_us - 600 * _US
    s_user, s_index, s_start = s_user[keep], s_index[keep], s_start[keep]
    s_id = np.arange(len(s_user))
    rows = _Rows()

    # Pageviews: 1 + Poisson(2) per session, a minute or so apart. Before signing up a user is anonymous.
    n_views = 1 + rng.poisson(2.0, size=len(s_user))
    v_session = np.repeat(s_id, n_views)
    v_index = np.arange(len(v_session)) - np.repeat(np.cumsum(n_views) - n_views, n_views)
    v_ts = s_start[v_session] + v_index * rng.integers(20 * _US, 120 * _US, size=len(v_session))
    v_user = s_user[v_session]
    first_session = s_index[v_session] == 0
    anonymous = ~signs_up[v_user] | (first_session & (v_index == 0))
    rows.add(v_ts, v_user, PAGEVIEW, v_session, page=rng.integers(0, len(_PAGES), size=len(v_session)),
             identified=~anonymous)  # fmt: skip

    # Sign-up in the first session, right after the first pageview: $identify (anonymous -> email), then signup.
    su_session = s_id[(s_index == 0) & signs_up[s_user]]
    su_ts = s_start[su_session] + 10 * _US
    rows.add(su_ts, s_user[su_session], IDENTIFY, su_session)
    rows.add(su_ts + _US, s_user[su_session], SIGNUP, su_session)

    # Second device: an anonymous pageview on another id in the user's last session, then $identify on it.
    d2_session = s_id[second_device[s_user] & (s_index == np.maximum(n_sessions[s_user] - 1, 1)) & (s_index > 0)]
    rows.add(s_start[d2_session] - 30 * _US, s_user[d2_session], PAGEVIEW, d2_session, page=0, identified=False,
             device2=True)  # fmt: skip
    rows.add(s_start[d2_session] - 20 * _US, s_user[d2_session], IDENTIFY, d2_session, device2=True)

    # Checkout: signed-up users visit it in 35% of their later sessions.
    checkout = signs_up[s_user] & (s_index > 0) & (rng.random(len(s_user)) < 0.45)
    c_session = s_id[checkout]
    c_ts = s_start[c_session] + 5 * 60 * _US
    c_user = s_user[c_session]
    in_experiment = c_ts >= exp_start_us
    # A user's first checkout in the experiment window is their exposure.
    exposed_first = np.zeros(len(c_session), bool)
    candidates = np.flatnonzero(in_experiment)
    _, first = np.unique(c_user[candidates], return_index=True)
    exposed_first[candidates[first]] = True
    variants = list(DEMO_EXPERIMENT.variants)
    user_variant = np.zeros(users, np.int8)
    for u in np.unique(c_user[exposed_first]):
        key = variant_for(FLAG_KEY, _email(int(u)), variants)
        user_variant[u] = 1 if key == "control" else 2
    c_variant = np.where(in_experiment, user_variant[c_user], 0)
    rows.add(c_ts[exposed_first] - _US, c_user[exposed_first], EXPOSURE, c_session[exposed_first],
             variant=c_variant[exposed_first])  # fmt: skip
    rows.add(c_ts, c_user, CHECKOUT, c_session, variant=c_variant)

    # Purchases. Before the experiment a checkout converts at control's rate, at random. An exposed checkout
    # converts at its variant's rate exactly: round(n * rate) of each variant's exposed users, picked at random,
    # so the effect is the same, +15%, whatever the random seed. Within a variant, exactly MOBILE_CONVERSION of its
    # mobile users (iOS, Android) convert and its desktop users get the rest: test helps mobile most.
    buys = ~in_experiment & (rng.random(len(c_session)) < CONVERSION["control"])
    on_mobile = _MOBILE_OS[os_[c_user]]  # $device_type Mobile or Tablet
    for code, key in ((1, "control"), (2, "test")):
        pool = exposed_first & (c_variant == code)
        total = round(int(pool.sum()) * CONVERSION[key])
        mobile_buys = min(round(int((pool & on_mobile).sum()) * MOBILE_CONVERSION[key]), total)
        for part, size in ((pool & on_mobile, mobile_buys), (pool & ~on_mobile, total - mobile_buys)):
            # Spread over the plans in proportion, so no plan shows an effect that was never planted.
            for members, count in _spread(np.flatnonzero(part), plan[c_user[part]], size):
                buys[rng.choice(members, size=count, replace=False)] = True
    b_ts = np.minimum(c_ts[buys] + rng.integers(60 * _US, 3 * 3600 * _US, size=int(buys.sum())), end_us - 1)
    rows.add(b_ts, c_user[buys], PURCHASE, c_session[buys], variant=c_variant[buys])

    cols = rows.columns()
    events = _table(cols, rng, browser, os_, device, country, plan, companies)
    devices = (_BROWSERS[browser], _OS[os_], _DEVICE_TYPES[device])
    return companies.identify_events(seed, events, s_user[su_session], su_ts, devices)


def _devices(seed: int, os_: np.ndarray, browser_draw: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each user's browser (from their OS's row of :data:`_BROWSER_GIVEN_OS`) and device type.

    ``browser_draw`` is one uniform number per user, drawn where the main stream always drew the browser, so
    every later draw (and every figure that does not break down by browser) is what it was. Tablets come from a
    side stream of the same seed for the same reason.

    >>> os_ = np.array([0, 2, 2, 4])
    >>> b, d = _devices(1, os_, np.array([0.1, 0.1, 0.9, 0.9]))
    >>> _BROWSERS[b].tolist(), _DEVICE_TYPES[d][[0, 3]].tolist()
    (['Chrome', 'Chrome', 'Safari', 'Firefox'], ['Desktop', 'Desktop'])
    """
    cdf = np.cumsum(_BROWSER_GIVEN_OS, axis=1)[os_]
    cdf[:, -1] = 1.0  # rounding never leaves a draw past the last browser
    browser = (browser_draw[:, None] >= cdf).sum(axis=1)
    tablet = np.random.default_rng((seed, 1)).random(len(os_)) < _TABLET_P[os_]
    device = np.where(tablet, 2, np.where(_MOBILE_OS[os_], 1, 0))
    return browser, device


def _spread(members: np.ndarray, strata: np.ndarray, size: int) -> list[tuple[np.ndarray, int]]:
    """``size`` picks among ``members`` split over their ``strata`` in proportion (largest remainders), so each
    stratum converts at the same rate to within one pick.

    >>> [(m.tolist(), k) for m, k in _spread(np.arange(5), np.array([0, 0, 0, 1, 1]), 3)]
    [([0, 1, 2], 2), ([3, 4], 1)]
    """
    size = min(size, len(members))
    values, counts = np.unique(strata, return_counts=True)
    exact = counts * size / max(len(members), 1)
    picks = np.floor(exact).astype(int)
    for i in np.argsort(-(exact - picks), kind="stable")[: size - int(picks.sum())]:
        picks[i] += 1
    return [(members[strata == v], int(k)) for v, k in zip(values, picks, strict=True)]


def _cumsum_by_group(values: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Running sums that restart at each group (groups are consecutive, ``sizes`` long)."""
    total = np.cumsum(values)
    starts = np.cumsum(sizes) - sizes
    offsets = np.repeat(total[starts] - values[starts], sizes)
    result: np.ndarray = total - offsets
    return result


def _email(user: int) -> str:
    return f"user{user:06d}@example.com"


def _anon(user: int, second: bool = False) -> str:
    return f"{'d2' if second else 'anon'}-{user:06d}"


def _table(cols: dict[str, np.ndarray], rng: np.random.Generator, browser: np.ndarray, os_: np.ndarray,
           device: np.ndarray, country: np.ndarray, plan: np.ndarray, companies: _Companies) -> pa.Table:  # fmt: skip
    import pyarrow as pa
    import pyarrow.compute as pc

    n = len(cols["ts"])
    user, kind, variant = cols["user"], cols["kind"], cols["variant"]
    users = len(browser)
    emails = pa.array([_email(u) for u in range(users)])
    anons = pa.array([_anon(u) for u in range(users)])
    d2 = pa.array([_anon(u, True) for u in range(users)])
    user_idx = pa.array(user)
    distinct_id = pc.if_else(
        pa.array(cols["device2"] & (kind == PAGEVIEW)),
        d2.take(user_idx),
        pc.if_else(pa.array(cols["identified"]), emails.take(user_idx), anons.take(user_idx)),
    )
    b = _pick(_BROWSERS, browser[user])
    o = _pick(_OS, os_[user])
    dt = _pick(_DEVICE_TYPES, device[user])
    checkout, signup = len(_PAGES), len(_PAGES) + 1  # the pages some events are on, after the viewed ones
    page = np.where(kind == CHECKOUT, checkout, np.maximum(cols["page"], 0))
    page = np.where(np.isin(kind, (SIGNUP, IDENTIFY)), signup, page)
    page = np.where(np.isin(kind, (EXPOSURE, PURCHASE)), checkout, page)
    url = _concat(_SITE, _pick(np.append(_PAGES, ["/checkout", "/signup"]), page))
    variant_name = _pick(np.array(["", "control", "test"]), variant)
    first_view = np.zeros(n, bool)
    pv = np.flatnonzero((kind == PAGEVIEW) & ~cols["device2"])
    _, first = np.unique(user[pv], return_index=True)
    first_view[pv[first]] = True
    # The second device's first pageview sets properties too, so it has a person of its own until $identify
    # merges it into the user's (the demo's person merges, with their overrides).
    first_view |= cols["device2"] & (kind == PAGEVIEW)
    # Prices as text for the purchases only (every row draws one, so the generator's stream stays as it was);
    # other rows take any of them, which _where blanks.
    bought = kind == PURCHASE
    prices = _text(np.round(rng.gamma(4.0, 12.5, size=n), 2)[bought] if bought.any() else np.zeros(1))
    price = prices.take(pa.array(np.maximum(np.cumsum(bought) - 1, 0)))
    # A signed-up user's events after their $identify carry their company (posthog-js's group() registers it).
    company = companies.key_of(user)
    grouped = cols["identified"] & (kind != IDENTIFY)
    identify_anon = pc.if_else(pa.array(cols["device2"]), d2.take(user_idx), anons.take(user_idx))
    props = _concat(
        '{"$browser":"', b, '","$os":"', o, '","$device_type":"', dt, '","$current_url":"', url, '","$session_id":"',
        pc.cast(pa.array(cols["session"]), pa.string()), '","$lib":"web"',
        _where(grouped, _concat(',"$groups":{"company":"', company, '"},"$group_0":"', company, '"'), n),
        _where(variant > 0, _concat(',"$feature/new-checkout":"', variant_name, '"'), n),
        _where(kind == EXPOSURE, _concat(',"$feature_flag":"new-checkout","$feature_flag_response":"',
                                         variant_name, '"'), n),
        _where(kind == PURCHASE, _concat(',"price":', price), n),
        _where(first_view, _concat(',"$set":{"$browser":"', b, '","$os":"', o, '","$device_type":"', dt,
                                   '"},"$set_once":{"$initial_country":"', _pick(_COUNTRIES, country[user]),
                                   '","$initial_browser":"', b, '"}'), n),
        _where(kind == IDENTIFY, _concat(',"$anon_distinct_id":"', identify_anon, '","$set":{"email":"',
                                         emails.take(user_idx), '","plan":"', _pick(_PLANS, plan[user]), '"}'), n),
        "}",
    )  # fmt: skip
    return pa.table({
        "uuid": _uuids(rng, n),
        "event": _pick(_EVENT_NAMES, kind),
        "distinct_id": distinct_id,
        "timestamp": pa.array(cols["ts"], pa.timestamp("us", tz="UTC")),
        "properties": props,
        "elements_chain": pa.array(np.full(n, ""), pa.string()),
    })  # fmt: skip
