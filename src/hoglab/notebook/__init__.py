"""The notebook toolkit: matplotlib plots (and, later, the ``%%hogql`` magic and the experiment picker).

Needs the ``[notebook]`` extra. Names load on first use, so loading the IPython extension does not import
matplotlib until a plot is drawn::

    from hoglab.notebook import plot_trends, plot_funnel, plot_experiment
    plot_trends(client.query(hoglab.trends("$pageview", breakdown="$browser")))
    plot_experiment(client.experiments.results(7), kind="posteriors")
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
}

__all__ = [
    "cumulative_effect",
    "plot_cumulative_effect",
    "plot_experiment",
    "plot_funnel",
    "plot_srm",
    "plot_trends",
]

if TYPE_CHECKING:
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
