"""The experiment picker: the widget (``widget.py``) and what it shows as HTML (``view.py`` for an experiment and
the recomputed results of its legacy metric, ``metric_view.py`` for a metric experiment); the experiment report
shows the same views.

    picker = hoglab.ExperimentPicker(client)     # shown as a widget when it is a cell's value
"""

from __future__ import annotations

from .widget import ExperimentPicker, pick_experiment

__all__ = ["ExperimentPicker", "pick_experiment"]
