"""The experiment report: one experiment analysed end to end, as terminal text, HTML and files.

``report.py`` holds the report and picks the generation: ``legacy.py`` analyses a legacy experiment and draws its
figures, ``metric.py`` a metric experiment's; ``render.py`` writes either as text, HTML and files.

    hoglab.experiment_report(7).write("out/")    # report.html, figures/*.png, variants.csv
"""

from __future__ import annotations

from .report import ExperimentReport, experiment_report

__all__ = ["ExperimentReport", "experiment_report"]
