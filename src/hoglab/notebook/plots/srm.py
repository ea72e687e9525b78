"""The sample-ratio-mismatch plot: observed against expected share of units per variant."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.axes import Axes

from ...stats import Comparison, Proportion, SRMResult, srm
from ..analysis import variant_statistics
from .common import LOWER_COLOUR, new_axes, percent_axis, plain, variant_colours
from .legacy import experiment_result_of

__all__ = ["plot_srm", "srm_result_of"]


def plot_srm(
    data: Any,
    *,
    ax: Axes | None = None,
    expected_shares: Mapping[str, float] | Sequence[float] | None = None,
    metric: str | None = None,
    threshold: float | None = None,
    title: str | None = None,
    figsize: tuple[float, float] | None = None,
) -> Axes:
    """Plot the sample-ratio-mismatch check: observed against expected share of units per variant.

    ``data`` is a :class:`hoglab.stats.SRMResult` (from ``hoglab.stats.srm``); units per variant (a mapping, a
    pandas Series indexed by variant, or a list) to test against ``expected_shares`` (equal by default); a
    :class:`hoglab.stats.Comparison` (its check on ``metric``, by default the first); or a client
    :class:`hoglab.ExperimentResult` (its exposures). Filled bars are the observed shares (labelled with the
    share and the count), dashed outlines the expected ones (the axis label says which is which: no legend over
    the bars). The title gives the chi-square p-value, in vermillion when it is below the threshold (0.001 unless
    ``threshold`` says otherwise): a mismatch; the statistic goes on a second line, so the panel stays narrow.

    >>> ax = plot_srm({"control": 5050, "test": 4950})
    >>> [round(float(p.get_height()), 3) for p in ax.containers[0]], ax.get_title()
    ([0.505, 0.495], 'Traffic split as designed: p = 0.32\\n(χ² = 1, 1 dof)')
    """
    result = srm_result_of(data, expected_shares=expected_shares, metric=metric, threshold=threshold)
    ax = new_axes(ax, figsize)
    frame = result.to_frame()
    variants = [str(v) for v in frame["variant"]]
    control = "control" if "control" in variants else None
    colours = variant_colours(variants, control)
    x = np.arange(len(variants))
    width = 0.38
    observed = ax.bar(
        x - width / 2,
        frame["observed_share"],
        width,
        color=[colours[v] for v in variants],
        label="observed share",
    )
    expected = ax.bar(
        x + width / 2,
        frame["expected_share"],
        width,
        facecolor="none",
        edgecolor="#333333",
        linestyle="--",
        linewidth=1.2,
        label="expected share",
    )
    for a, b in zip(observed.patches, expected.patches, strict=True):
        a.set_gid("observed")
        b.set_gid("expected")
    ax.bar_label(
        observed,
        labels=[f"{s:.1%}\n{n:,.0f}" for s, n in zip(frame["observed_share"], frame["observed"], strict=True)],
        padding=2,
        fontsize="small",
    )
    ax.bar_label(expected, labels=[f"{s:.1%}" for s in frame["expected_share"]], padding=2, fontsize="small")
    ax.set_xticks(x, [plain(v) for v in variants])
    percent_axis(ax)
    ax.set_ylabel("share of units")
    # Room above the tallest bar for its two-line label; the key is the axis label, not a legend over the bars.
    top = float(max(frame["observed_share"].max(), frame["expected_share"].max()))
    ax.set_ylim(0, min(1.0, top * 1.3) if top > 0 else 1.0)
    ax.set_xlabel("filled: observed · dashed: expected", fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    # The statistic on a line of its own: beside other panels the one-line title was wider than its axes.
    headline = result.summary("title").replace(" (", "\n(", 1) if title is None else title
    ax.set_title(headline, color=LOWER_COLOUR if result.mismatch else "black")
    return ax


def srm_result_of(
    data: Any,
    *,
    expected_shares: Mapping[str, float] | Sequence[float] | None = None,
    metric: str | None = None,
    threshold: float | None = None,
) -> SRMResult:
    """The :class:`SRMResult` behind ``data`` (see :func:`plot_srm`)."""
    if isinstance(data, SRMResult | Comparison):
        if expected_shares is not None or threshold is not None:
            raise ValueError("expected_shares and threshold apply to counts; this check is already computed")
        if isinstance(data, SRMResult):
            return data
        if not data.srm:
            raise ValueError(
                "this Comparison has no SRM check (check_srm=False, or exposures that are not head counts)"
            )
        if metric is None:
            return next(iter(data.srm.values()))
        if metric not in data.srm:
            raise ValueError(f"no SRM check for metric {metric!r}; there are {list(data.srm)}")
        return data.srm[metric]
    found = experiment_result_of(data)
    counts: Mapping[str, float] | Sequence[float]
    if found is not None:
        statistics, _ = variant_statistics(found)
        counts = {k: (s.n if isinstance(s, Proportion) else s.exposure) for k, s in statistics.items()}
    elif isinstance(data, pd.Series | Mapping):
        counts = {str(k): float(v) for k, v in data.items()}
    elif isinstance(data, Sequence) and not isinstance(data, str):
        counts = [float(v) for v in data]
    else:
        raise TypeError(
            "plot_srm takes an SRMResult, a Comparison, an ExperimentResult, or units per variant "
            f"(a mapping, Series or list); got {type(data).__name__}"
        )
    if threshold is None:
        return srm(counts, expected_shares)
    return srm(counts, expected_shares, threshold=threshold)
