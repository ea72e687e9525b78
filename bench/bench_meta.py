"""Calibration of ``hoglab.stats.meta_analysis`` by simulation, over a grid of histories, and its speed.

    python bench/bench_meta.py [--histories 400] [--seed 2037]

Each history: ``k`` experiments with true lifts θ_i ~ N(+0.5%, τ²) and standard errors drawn uniformly from 0.5%
to 3% (median 1.75%), estimates y_i ~ N(θ_i, s_i²); the shipped experiments are the significant wins
(y_i/s_i > 1.96). For k in (10, 40, 100), τ in (0, 0.5%, 1%, 1.5%, 2%, 4%) and both shrinkage methods, over
``--histories`` histories per cell, it prints (a markdown table, the figures of docs/statistics.md §17):

* ``coverage``: the share of all experiments whose true lift is inside its 95% shrunken interval (± two standard
  errors from the spread between histories: experiments of one history share its fit);
* ``curse read`` and ``curse left``: how much the shipped experiments' read lifts overstate their true total, on
  average, and how much of that the expected total (the winner's curse correction) leaves; ``total covered``:
  the share of histories whose shipped true total is inside the expected total's 95% interval;
* ``win rate``: the average fitted share of true lifts above 0, Φ(μ̂/τ̂), against the truth Φ(μ/τ) and the naive
  share of significant wins.

Then the time of one fit of 40 experiments, hierarchical and empirical, against statsmodels'
``combine_effects`` (the random-effects fit without shrinkage) in the same run (medians of 200).
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import numpy as np
from scipy import stats
from statsmodels.stats.meta_analysis import combine_effects

from hoglab.stats import meta_analysis

MU, LOW, HIGH = 0.005, 0.005, 0.03


def cell(rng: np.random.Generator, k: int, tau: float, shrinkage: str, histories: int) -> dict[str, float]:
    covered, read, left, total_covered, win_rate, naive = [], [], [], [], [], []
    for _ in range(histories):
        truth = rng.normal(MU, tau, k)
        se = rng.uniform(LOW, HIGH, k)
        y = truth + rng.normal(0, se)
        shipped = y / se > stats.norm.ppf(0.975)
        fit = meta_analysis(y, standard_error=se, shipped=shipped, shrinkage=shrinkage)  # type: ignore[arg-type]
        frame = fit.to_frame()
        covered.append(float(((frame["shrunken_ci_low"] <= truth) & (truth <= frame["shrunken_ci_high"])).mean()))
        win_rate.append(fit.win_rate)
        naive.append(fit.naive_win_rate)
        curse = fit.winners_curse
        if curse is not None:
            true_total = float(truth[shipped].sum())
            read.append(curse.observed_total - true_total)
            left.append(curse.expected_total - true_total)
            total_covered.append(abs(curse.expected_total - true_total) <= 1.96 * curse.expected_total_se)
    cover = np.array(covered)
    return {
        "coverage": float(cover.mean()),
        "coverage_se": float(cover.std(ddof=1) / np.sqrt(cover.size)),
        "read": float(np.mean(read)) if read else np.nan,
        "left": float(np.mean(left)) if left else np.nan,
        "left_se": float(np.std(left, ddof=1) / np.sqrt(len(left))) if len(left) > 1 else np.nan,
        "total_covered": float(np.mean(total_covered)) if total_covered else np.nan,
        "win_rate": float(np.mean(win_rate)),
        "naive": float(np.mean(naive)),
    }


def timing(rng: np.random.Generator, runs: int = 200) -> dict[str, float]:
    histories = []
    for _ in range(runs):
        se = rng.uniform(LOW, HIGH, 40)
        histories.append((rng.normal(MU, 0.015, 40) + rng.normal(0, se), se))
    out: dict[str, list[float]] = {"statsmodels": [], "hierarchical": [], "empirical": []}
    for y, se in histories:  # alternate, so load on the machine hits all three alike
        for name in out:
            start = time.perf_counter()
            if name == "statsmodels":
                combine_effects(y, se * se, method_re="dl")
            else:
                meta_analysis(y, standard_error=se, shrinkage=name)  # type: ignore[arg-type]
            out[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) * 1e3 for name, values in out.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--histories", type=int, default=400)
    parser.add_argument("--seed", type=int, default=2037)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(args.seed)
    print(f"{args.histories} histories per cell; true lifts N(+0.5%, τ²), standard errors U(0.5%, 3%)\n")
    print("| k | τ | shrinkage | coverage | curse read | curse left | total covered | win rate (truth) | naive |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for k in (10, 40, 100):
        for tau in (0.0, 0.005, 0.01, 0.015, 0.02, 0.04):
            truth = stats.norm.sf(0, MU, tau) if tau > 0 else 1.0
            for shrinkage in ("hierarchical", "empirical"):
                r = cell(rng, k, tau, shrinkage, args.histories)
                print(f"| {k} | {tau:.1%} | {shrinkage} | {r['coverage']:.3f} ± {2 * r['coverage_se']:.3f} | "
                      f"{r['read']:+.2%} | {r['left']:+.2%} | {r['total_covered']:.3f} | {r['win_rate']:.2f} "
                      f"({truth:.2f}) | {r['naive']:.2f} |", flush=True)  # fmt: skip
    t = timing(rng)
    print(f"\nOne fit of 40 experiments (median of 200): statsmodels combine_effects {t['statsmodels']:.2f} ms, "
          f"hierarchical {t['hierarchical']:.2f} ms ({t['hierarchical'] / t['statsmodels']:.1f}×), "
          f"empirical {t['empirical']:.2f} ms ({t['empirical'] / t['statsmodels']:.1f}×)")  # fmt: skip


if __name__ == "__main__":
    main()
