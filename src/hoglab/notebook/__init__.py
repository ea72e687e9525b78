"""The notebook toolkit: matplotlib plots, the ``%%hogql`` magic and the experiment picker.

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

import importlib
from typing import TYPE_CHECKING, Any

# name -> module that defines it (one line each, as in hoglab/__init__.py).
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        [
            "cumulative_effect",
            "plot_cumulative_effect",
            "plot_experiment",
            "plot_funnel",
            "plot_srm",
            "plot_trends",
        ],
        "hoglab.notebook.plots",
    ),
    **dict.fromkeys(["HogQLMagics", "load_ipython_extension", "unload_ipython_extension"], "hoglab.notebook._magic"),
    **dict.fromkeys(["ExperimentPicker", "pick_experiment"], "hoglab.notebook._picker"),
    **dict.fromkeys(["ExperimentReport", "experiment_report"], "hoglab.notebook._report"),
}

__all__ = [
    "ExperimentPicker",
    "ExperimentReport",
    "HogQLMagics",
    "cumulative_effect",
    "experiment_report",
    "load_ipython_extension",
    "pick_experiment",
    "plot_cumulative_effect",
    "plot_experiment",
    "plot_funnel",
    "plot_srm",
    "plot_trends",
    "unload_ipython_extension",
]

if TYPE_CHECKING:
    from ._magic import HogQLMagics, load_ipython_extension, unload_ipython_extension
    from ._picker import ExperimentPicker, pick_experiment
    from ._report import ExperimentReport, experiment_report
    from .plots import (
        cumulative_effect,
        plot_cumulative_effect,
        plot_experiment,
        plot_funnel,
        plot_srm,
        plot_trends,
    )


def __getattr__(name: str) -> Any:
    module_name = _LAZY.get(name)
    if module_name is None:
        raise AttributeError(f"module 'hoglab.notebook' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
