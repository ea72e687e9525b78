"""The experiment picker: the widget (``widget.py``) and what it shows as HTML, which the report shows too.

``view.py`` is any experiment's summary; ``legacy_view.py`` the recomputed results of a legacy experiment's metric,
``metric_view.py`` a metric experiment's results.

    picker = hoglab.ExperimentPicker(client)     # shown as a widget when it is a cell's value
"""

from __future__ import annotations

from .widget import ExperimentPicker, pick_experiment

__all__ = ["ExperimentPicker", "pick_experiment"]
