"""The experiment report: one experiment analysed end to end (``report.py``), as terminal text, HTML and files
(``render.py``), with its figures (``figures.py``; ``metrics.py`` for a metric experiment's text and figures).

    hoglab.experiment_report(7).write("out/")    # report.html, figures/*.png, variants.csv
"""

from __future__ import annotations

from .report import ExperimentReport, experiment_report

__all__ = ["ExperimentReport", "experiment_report"]
