"""Benchmark: the full comparison for 10 variants × 5 metrics, Bayesian quantities included.

Times ``hoglab.stats.compare_many(..., method="bayesian")`` (chance to beat the control,
chance to be best, expected loss, credible intervals of every arm, of the difference and of
the lift; plus the SRM check) against PostHog's definition of the same quantities: 100,000
posterior draws per arm (Beta for conversions, Gamma for counts, Normal for means and
ratios), fresh draws per target arm as PostHog does, vectorised with numpy (PostHog's own
code loops in Python and is slower still). Also times PostHog's funnel verdict both ways.

Run: ``.venv/bin/python bench/bench_stats.py`` (medians of several runs are printed).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np

from hoglab.stats import Count, Proportion, Ratio, SampleMean, compare_many
from hoglab.stats.posthog import (
    betabinomial_loss_against_best,
    funnel_verdict,
    funnel_verdict_v2,
    posthog_monte_carlo_funnel,
)

VARIANTS = 10
UNITS = 20_000  # per variant
DRAWS = 100_000
RUNS = 15
MC_RUNS = 3


def make_metrics(seed: int = 0) -> dict[str, dict[str, object]]:
    """Five metrics (two conversions, a count, a mean, a ratio) over ten variants."""
    rng = np.random.default_rng(seed)
    names = ["control", *[f"variant_{i}" for i in range(1, VARIANTS)]]
    lifts = 1.0 + rng.normal(0.0, 0.03, VARIANTS)
    metrics: dict[str, dict[str, object]] = {
        m: {} for m in ("signup", "purchase", "pageviews", "revenue", "aov")
    }
    for name, lift in zip(names, lifts, strict=True):
        metrics["signup"][name] = Proportion(UNITS, int(rng.binomial(UNITS, 0.12 * lift)))
        metrics["purchase"][name] = Proportion(UNITS, int(rng.binomial(UNITS, 0.03 * lift)))
        metrics["pageviews"][name] = Count(int(rng.poisson(4.2 * UNITS * lift)), UNITS)
        revenue = rng.gamma(0.5, 20.0 * lift, UNITS)
        metrics["revenue"][name] = SampleMean(UNITS, float(revenue.sum()), float(revenue @ revenue))
        orders = rng.poisson(1.5, UNITS) + 1.0
        value = orders * rng.gamma(2.0, 12.0 * lift, UNITS)
        metrics["aov"][name] = Ratio(
            SampleMean(UNITS, float(value.sum()), float(value @ value)),
            SampleMean(UNITS, float(orders.sum()), float(orders @ orders)),
            float(value @ orders),
        )
    return metrics


def posterior_draws(rng: np.random.Generator, arms: dict[str, object], draws: int) -> np.ndarray:
    """One fresh set of posterior draws per arm (rows), as in PostHog's simulations."""
    stats = list(arms.values())
    first = stats[0]
    if isinstance(first, Proportion):
        a = np.array([1.0 + s.successes for s in stats])  # type: ignore[attr-defined]
        b = np.array([1.0 + s.failures for s in stats])  # type: ignore[attr-defined]
        return rng.beta(a[:, None], b[:, None], size=(len(stats), draws))
    if isinstance(first, Count):
        k = np.array([1.0 + s.count for s in stats])  # type: ignore[attr-defined]
        e = np.array([s.exposure for s in stats])  # type: ignore[attr-defined]
        return rng.gamma(k[:, None], 1.0 / e[:, None], size=(len(stats), draws))
    if isinstance(first, SampleMean):
        loc = np.array([s.mean for s in stats])  # type: ignore[attr-defined]
        scale = np.array([np.sqrt(s.variance / s.n) for s in stats])  # type: ignore[attr-defined]
    else:
        loc = np.array([s.value for s in stats])  # type: ignore[attr-defined]
        scale = np.array([np.sqrt(s.variance / s.n) for s in stats])  # type: ignore[attr-defined]
    return rng.normal(loc[:, None], scale[:, None], size=(len(stats), draws))


def monte_carlo_comparison(
    metrics: dict[str, dict[str, object]], seed: int
) -> dict[str, dict[str, np.ndarray]]:
    """PostHog's Monte Carlo definitions of the same Bayesian quantities."""
    rng = np.random.default_rng(seed)
    out = {}
    for name, arms in metrics.items():
        k = len(arms)
        best = np.empty(k)
        for i in range(k):  # PostHog draws afresh for every target arm
            x = posterior_draws(rng, arms, DRAWS)
            best[i] = np.mean(x[i] > np.delete(x, i, axis=0).max(axis=0))
        x = posterior_draws(rng, arms, DRAWS)
        win = (x[1:] > x[0]).mean(axis=1)
        loss = np.maximum(0.0, x[0] - x[1:]).mean(axis=1)
        diff = np.quantile(x[1:] - x[0], [0.025, 0.975], axis=1).T
        lift = np.quantile(x[1:] / x[0] - 1.0, [0.025, 0.975], axis=1).T
        out[name] = {"best": best, "win": win, "loss": loss, "diff": diff, "lift": lift}
    return out


def timed(fn: Callable[[], object], runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def posthog_v2_funnel_monte_carlo(funnel: dict[str, tuple[int, int]], seed: int) -> tuple[list[float], float]:
    """PostHog's v2 funnel definitions, vectorised: 10,000 Beta draws per arm for the pairwise probabilities, then
    10,000 Beta-Binomial draws per arm for the loss of the best observed rate against the best of the others."""
    from scipy import stats as sps

    rng = np.random.default_rng(seed)
    s = np.array([v[0] for v in funnel.values()], dtype=float)
    f = np.array([v[1] for v in funnel.values()], dtype=float)
    draws = rng.beta(1 + s[:, None], 1 + f[:, None], size=(s.size, 10_000))
    probabilities = [float((draws[0] >= draws[1:].max(axis=0)).mean())]
    probabilities += [float((draws[i] > draws[0]).mean()) for i in range(1, s.size)]
    n = (s + f).astype(int)
    rates = np.array([sps.betabinom.rvs(n[i], 1 + s[i], 1 + f[i], size=10_000, random_state=rng) / n[i]
                      for i in range(s.size)])  # fmt: skip
    best = int(np.argmax(s / n))
    loss = float(np.maximum(0.0, np.delete(rates, best, axis=0).max(axis=0) - rates[best]).mean())
    return probabilities, loss


def main() -> None:
    metrics = make_metrics()
    compare_many(metrics, method="bayesian")  # warm-up: imports, first-call costs
    ours_time, ours = timed(lambda: compare_many(metrics, method="bayesian"), RUNS)
    mc_time, mc = timed(lambda: monte_carlo_comparison(metrics, seed=1), MC_RUNS)

    frame = ours.to_frame()  # type: ignore[attr-defined]
    arms = ours.arms_frame()  # type: ignore[attr-defined]
    worst_win = worst_best = worst_loss = 0.0
    for name, ref in mc.items():  # type: ignore[attr-defined]
        rows = frame[frame["metric"] == name]
        best = arms[arms["metric"] == name]["chance_to_be_best"].to_numpy()
        worst_win = max(worst_win, float(np.max(np.abs(rows["chance_to_win"].to_numpy() - ref["win"]))))
        worst_best = max(worst_best, float(np.max(np.abs(best - ref["best"]))))
        # Loss relative to the control's value, so metrics of any scale compare.
        scale = float(rows["control_estimate"].iloc[0]) or 1.0
        worst_loss = max(
            worst_loss, float(np.max(np.abs(rows["expected_loss"].to_numpy() - ref["loss"]))) / scale
        )
    freq_time, _ = timed(lambda: compare_many(metrics), RUNS)

    funnel = {k: (int(v.successes), int(v.failures)) for k, v in metrics["signup"].items()}  # type: ignore[attr-defined]
    funnel_verdict(funnel)
    verdict_time, _ = timed(lambda: funnel_verdict(funnel), RUNS)
    mc_verdict_time, _ = timed(lambda: posthog_monte_carlo_funnel(funnel, seed=2), MC_RUNS)

    funnel_verdict_v2(funnel)
    v2_time, v2 = timed(lambda: funnel_verdict_v2(funnel), RUNS)
    v2_mc_time, (v2_mc, v2_mc_loss) = timed(lambda: posthog_v2_funnel_monte_carlo(funnel, seed=3), MC_RUNS)
    successes = np.array([v[0] for v in funnel.values()], dtype=float)
    failures = np.array([v[1] for v in funnel.values()], dtype=float)
    best = int(np.argmax(successes / (successes + failures)))
    loss_time, loss = timed(lambda: betabinomial_loss_against_best(successes, failures, best), RUNS)
    v2_gap = max(abs(a - b) for a, b in zip(v2.probability.values(), v2_mc, strict=True))

    header = f"{VARIANTS} variants x {len(metrics)} metrics, {UNITS:,} units per variant"
    print(f"hoglab.stats benchmark: {header}")
    print(f"  compare_many(method='bayesian')      {ours_time * 1e3:8.1f} ms  (median of {RUNS})")
    print(f"  Monte Carlo, {DRAWS:,} draws per arm   {mc_time * 1e3:8.1f} ms  (median of {MC_RUNS})")
    print(f"  ratio                                {mc_time / ours_time:8.1f} x")
    print(f"  largest |chance to win - MC|         {worst_win:.4f}  (MC standard error ~0.0016)")
    print(f"  largest |chance to be best - MC|     {worst_best:.4f}")
    print(f"  largest |expected loss - MC|         {worst_loss:.2e}  (relative to the control's value)")
    print(f"  compare_many(method='frequentist')   {freq_time * 1e3:8.1f} ms")
    print(f"  funnel_verdict (deterministic)       {verdict_time * 1e3:8.1f} ms  (10 variants)")
    print(f"  posthog_monte_carlo_funnel           {mc_verdict_time * 1e3:8.1f} ms")
    print(f"  ratio                                {mc_verdict_time / verdict_time:8.1f} x")
    print(f"  funnel_verdict_v2 (deterministic)    {v2_time * 1e3:8.1f} ms  (10 variants, {v2.significance_code})")
    print(f"  PostHog's v2 Monte Carlo (10,000)    {v2_mc_time * 1e3:8.1f} ms")
    print(f"  largest |v2 probability - MC|        {v2_gap:.4f}  (MC standard error <= 0.005)")
    print(f"  Beta-Binomial loss, exact sums       {loss_time * 1e3:8.1f} ms  {loss:.3e} (MC {v2_mc_loss:.3e})")


if __name__ == "__main__":
    main()
