"""A/A calibration of hoglab's verdict on CUPED metric experiments, beside PostHog's formula (issue 34).

    python bench/bench_verdict_aa.py [--experiments 4000] [--looks 14] [--seed 34]

Each experiment: two arms of n ~ U(1,000, 4,000) units, revenue with mean 40 and its own value before exposure as
CUPED's covariate (correlation ρ ~ U(0.3, 0.95)), no effect. Through the statistics every view reads
(:func:`hoglab.stats.posthog.calibrated_results`: the frame's ``significant`` column, the picker, the report,
``summary()``) and the recommendation (:func:`hoglab.stats.posthog.metric_recommendation`), it prints the share of
experiments called significant at α = 0.05:

* at the end (one look), fixed-horizon and with sequential testing on;
* peeked at daily (``--looks`` looks, units arriving evenly): significant at any look;
* the recommendation's SHIP or STOP-for-harm at the end (sequential testing on, MDE +5%, 14 days run);

for hoglab's verdict (the delta-method variance) and PostHog's formula, each with its 95% binomial band, and the
time per experiment.
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from hoglab.stats.posthog import ExperimentStats, calibrated_results, metric_recommendation

FIXED = {"method": "frequentist"}
SEQUENTIAL = {"method": "frequentist", "frequentist": {"sequential_testing_enabled": True}}


def _arm(key: str, y: np.ndarray, x: np.ndarray) -> ExperimentStats:
    return ExperimentStats(key, y.size, float(y.sum()), float(y @ y), covariate_sum=float(x.sum()),
                           covariate_sum_squares=float(x @ x), covariate_sum_product=float(x @ y))  # fmt: skip


def _draw(rng: np.random.Generator, n: int, rho: float) -> tuple[np.ndarray, np.ndarray]:
    x = rng.gamma(2.0, 20.0, n)
    return 40.0 + rho * (x - 40.0) + math.sqrt(1.0 - rho * rho) * 28.28 * rng.standard_normal(n), x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--experiments", type=int, default=4000)
    parser.add_argument("--looks", type=int, default=14)
    parser.add_argument("--seed", type=int, default=34)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    keys = ("fixed, one look", "sequential, one look", "fixed, any daily look", "sequential, any daily look")
    hits = {(who, k): 0 for who in ("hoglab", "posthog") for k in keys}
    shipped = 0
    started = time.perf_counter()
    for _ in range(args.experiments):
        rho, n = rng.uniform(0.3, 0.95), int(rng.integers(1000, 4001))
        (y_c, x_c), (y_t, x_t) = _draw(rng, n, rho), _draw(rng, n, rho)
        ever = {(who, k): False for who in ("hoglab", "posthog") for k in keys[2:]}
        for look in range(1, args.looks + 1):
            m = max(n * look // args.looks, 10)
            control, test = _arm("control", y_c[:m], x_c[:m]), _arm("test", y_t[:m], x_t[:m])
            for name, config in (("fixed", FIXED), ("sequential", SEQUENTIAL)):
                [ours], [theirs] = calibrated_results("mean", control, [test], stats_config=config, cuped=True)
                for who, result in (("hoglab", ours), ("posthog", theirs)):
                    if result.significant:
                        ever[(who, f"{name}, any daily look")] = True
                    if look == args.looks:
                        hits[(who, f"{name}, one look")] += bool(result.significant)
        for key, value in ever.items():
            hits[key] += value
        r = metric_recommendation("mean", control, [test], stats_config=SEQUENTIAL, cuped=True, mde=0.05,
                                  days_running=14)  # fmt: skip
        shipped += r.significant
    elapsed = time.perf_counter() - started
    n = args.experiments
    band = 1.96 * math.sqrt(0.05 * 0.95 / n)
    print(f"A/A experiments: {n:,}, CUPED ρ ~ U(0.3, 0.95), α = 0.05; 95% binomial band of 5%: "
          f"[{0.05 - band:.2%}, {0.05 + band:.2%}]\n")  # fmt: skip
    print("| significant | hoglab (delta-method variance) | PostHog's formula |")
    print("|---|---:|---:|")
    for k in keys:
        print(f"| {k} | {hits[('hoglab', k)] / n:.2%} | {hits[('posthog', k)] / n:.2%} |")
    print(f"| recommendation: ship or stop for harm (sequential) | {shipped / n:.2%} | – |")
    print(f"\n{elapsed / n * 1000:.1f} ms per experiment ({args.looks} looks × 2 settings × 2 formulas)")


if __name__ == "__main__":
    main()
