"""A metric experiment's report has the novelty section: its first primary funnel or mean cut by days since each
unit's first exposure, from the experiment's units, on the session's real service fed through the posthog SDK.

The per-day differences are restated with pandas from the units frame and the trend with statsmodels' WLS; the units
frame itself is checked against the results' statistics in tests/client (``client.experiments.units``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from novelty_oracle import assert_novelty_restated

from hoglab.client import Client
from hoglab.notebook import experiment_report
from hoglab.notebook.report.novelty import MIN_UNITS
from hoglab.notebook.tours import feed_metric_experiment

pytestmark = pytest.mark.slow


def test_the_metric_report_tests_the_first_primary_metric_for_a_trend(make_project: Callable[..., Any]) -> None:
    project = make_project()
    client = Client(str(project.http.base_url).rstrip("/"), project.key, project.id, progress=False)
    demo = feed_metric_experiment(client, users=900, days=3, stats_method="frequentist")
    report = experiment_report(demo.experiment.id, client)
    novelty = report.novelty
    assert novelty is not None and report.novelty_note is None, report.novelty_note
    assert novelty.metric == "checkout → purchase" and novelty.scale == "difference"

    units = client.experiments.units(demo.experiment.id, metric=0)
    units = units[units["checkout → purchase"].notna()]
    as_of = units["first_exposure_time"].max()
    day = np.floor((as_of - units["first_exposure_time"]) / pd.Timedelta(days=1)).astype(int)
    cells = units.assign(day=day).groupby(["day", "variant"])["checkout → purchase"].agg(["count", "mean", "var"])
    cells = cells.unstack("variant")
    fit, _ = assert_novelty_restated(novelty, cells, MIN_UNITS)

    text = report.summary()
    assert "Novelty (checkout → purchase): test's effect by days since first exposure" in text
    assert f"p = {fit.pvalues[1]:.2g}" in text
    assert "novelty" in report.figures
    page = report.to_html()
    assert "<h2>Novelty: the effect by days since first exposure</h2>" in page and "Health checks" in page
    client.close()
