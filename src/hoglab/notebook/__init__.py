"""The notebook toolkit: matplotlib plots, the ``%%hogql`` magic, the experiment picker and the experiment report.

One folder per idea: ``magic/`` (``%%hogql``), ``picker/`` (the widget and its HTML views), ``report/``, ``plots/``
(one module per kind of frame or result; :mod:`hoglab.notebook.plots` lists them); ``analysis.py`` recomputes an
experiment result with :mod:`hoglab.stats` for all three; ``tours.py`` feeds the tour notebooks' metric experiment.

Needs the ``[notebook]`` extra. Names load on first use, so loading the IPython extension does not import
matplotlib (or pandas) until a plot is drawn or a query runs::

    %load_ext hoglab                      # %hogql / %%hogql
    from hoglab.notebook import plot_trends, plot_funnel, plot_experiment, ExperimentPicker
    plot_trends(client.query(hoglab.trends("$pageview", breakdown="$browser")))
    plot_experiment(client.experiments.results(7), kind="posteriors")
    ExperimentPicker(client)              # choose an experiment: summary, results, verdict, plot
    experiment_report(7).write("out/")    # the whole analysis as text, figures and one HTML page
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:  # THE list of exports: type checkers read it, and lazy_exports reads it at run time
    from .magic import (
        HogQLMagics as HogQLMagics,
        load_ipython_extension as load_ipython_extension,
        unload_ipython_extension as unload_ipython_extension,
    )
    from .picker import ExperimentPicker as ExperimentPicker, pick_experiment as pick_experiment
    from .plots import (
        cumulative_effect as cumulative_effect,
        plot_cumulative_effect as plot_cumulative_effect,
        plot_experiment as plot_experiment,
        plot_exposures as plot_exposures,
        plot_funnel as plot_funnel,
        plot_funnel_correlation as plot_funnel_correlation,
        plot_lifecycle as plot_lifecycle,
        plot_metric_effects as plot_metric_effects,
        plot_novelty as plot_novelty,
        plot_paths as plot_paths,
        plot_retention as plot_retention,
        plot_retention_curve as plot_retention_curve,
        plot_srm as plot_srm,
        plot_stickiness as plot_stickiness,
        plot_trends as plot_trends,
    )
    from .report import ExperimentReport as ExperimentReport, experiment_report as experiment_report

__getattr__, __dir__, __all__ = lazy_exports(__name__, __file__)
