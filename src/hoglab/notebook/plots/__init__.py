"""Matplotlib plots of hoglab's frames and results; each returns the Axes it drew into.

Every function takes ``ax=`` to draw into an existing Axes (a new figure otherwise) and never calls
``plt.show()``. Colours are Okabe-Ito (safe with colour-vision deficiencies), the control is grey, dates are
ticked and labelled in the data's own time zone, rates are on percent axes.

================================  ==================================================================================
:func:`plot_trends`               trends frame: lines per series/breakdown over dates; totals as bars; compare dashed
:func:`plot_funnel`               funnel frame: a bar per step with conversion labels, drop-off stacked and hatched
:func:`plot_funnel_correlation`   correlation frame: a bar per event or property value, odds ratio on a log scale
:func:`plot_experiment`           Comparison or ExperimentResult: forest plot of effects, or posterior densities
:func:`plot_cumulative_effect`    daily sufficient statistics: cumulative effect with always-valid bounds
:func:`plot_srm`                  SRM check: observed against expected share per variant, p-value in the title
:func:`plot_metric_effects`       MetricExperimentResult: each metric's lift with the server's interval (forest plot)
:func:`plot_exposures`            MetricExperimentResult: exposed units per variant so far, day by day
:func:`plot_novelty`              stats.Novelty: the effect by days since first exposure, with its fitted trend
:func:`plot_retention`            retention frame: the cohort triangle, each cell coloured and labelled by its rate
:func:`plot_retention_curve`      retention frame: the share back per period, cohorts pooled by size
:func:`plot_lifecycle`            lifecycle frame: new/returning/resurrecting stacked above zero, dormant below
:func:`plot_stickiness`           stickiness frame: people by number of active intervals, bars per series
:func:`plot_paths`                paths frame: a Sankey diagram, a column per step, a ribbon per edge
:func:`cumulative_effect`         the numbers behind :func:`plot_cumulative_effect`, as a DataFrame
================================  ==================================================================================

>>> import hoglab.stats as hs
>>> ax = plot_experiment(hs.compare({"control": (5000, 500), "test": (5000, 560)}))
>>> ax.get_xlabel()
'lift against control (variant / control − 1)'
"""

from __future__ import annotations

from .correlation import plot_funnel_correlation
from .funnels import plot_funnel
from .legacy import plot_experiment
from .lifecycle import plot_lifecycle
from .metric import plot_exposures, plot_metric_effects
from .novelty import plot_novelty
from .paths import plot_paths
from .retention import plot_retention, plot_retention_curve
from .sequential import cumulative_effect, plot_cumulative_effect
from .srm import plot_srm
from .stickiness import plot_stickiness
from .trends import plot_trends

__all__ = [
    "cumulative_effect",
    "plot_cumulative_effect",
    "plot_experiment",
    "plot_exposures",
    "plot_funnel",
    "plot_funnel_correlation",
    "plot_lifecycle",
    "plot_metric_effects",
    "plot_novelty",
    "plot_paths",
    "plot_retention",
    "plot_retention_curve",
    "plot_srm",
    "plot_stickiness",
    "plot_trends",
]
