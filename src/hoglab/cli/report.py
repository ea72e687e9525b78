"""``hoglab report EXPERIMENT_ID [--out DIR] [--host URL] [--project ID] [--refresh]``: an experiment's report.

Any experiment of any service the ``HOGLAB_*`` (or ``POSTHOG_*``) variables point at, PostHog included, written
through its HTTP API as any client would. ``hoglab demo`` writes it too (:func:`analyse`).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CommandError, positive_id

if TYPE_CHECKING:
    from hoglab.client import Client
    from hoglab.notebook.report import ExperimentReport

__all__ = ["DEFAULT_OUT", "add_parser", "analyse", "run"]

DEFAULT_OUT = Path("hoglab-report")


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    report = commands.add_parser(
        "report", help="analyse an experiment of the service HOGLAB_HOST/HOGLAB_API_KEY point at (PostHog too)"
    )
    report.add_argument("experiment", type=positive_id("an experiment"), metavar="EXPERIMENT_ID")
    report.add_argument("--out", type=Path, default=None, metavar="DIR", help="report folder (default: hoglab-report)")
    report.add_argument("--host", default=None, metavar="URL", help="default: $HOGLAB_HOST, else $POSTHOG_HOST")
    report.add_argument("--project", default=None, metavar="ID", help="default: $HOGLAB_PROJECT_ID, else the key's")
    report.add_argument("--refresh", action="store_true", help="recompute instead of using the server's cache")


def run(args: argparse.Namespace) -> int:
    from hoglab.errors import HoglabError

    try:
        return _write(args)
    except OSError as exc:
        raise CommandError(f"cannot write the report: {exc}") from None
    except HoglabError as exc:
        raise CommandError(str(exc)) from None


def analyse(client: Client, experiment_id: int, out: Path, *, refresh: bool) -> ExperimentReport:
    """Analyse ``experiment_id``, print its summary, then write the report (figures and page) into ``out``."""
    from dataclasses import replace

    from hoglab.client._metric_queries import is_metric_experiment
    from hoglab.notebook.report import experiment_report
    from hoglab.notebook.report.legacy import draw_figures
    from hoglab.notebook.report.metric import draw_metric_figures

    report = experiment_report(experiment_id, client, refresh=refresh, figures=False)
    print(report.summary(), flush=True)  # the verdict first: matplotlib and the figures take seconds more
    metric = is_metric_experiment(report.experiment.model_dump(mode="json", by_alias=True))
    report = replace(report, figures=(draw_metric_figures if metric else draw_figures)(report))
    path = report.write(out)
    print(f"report: {path}  (figures: {path.parent / 'figures'})", flush=True)
    return report


def _write(args: argparse.Namespace) -> int:
    """Write the report of experiment ``args.experiment`` of the configured service into ``args.out``."""
    from hoglab.client import Client

    with Client(args.host, project_id=args.project) as client:
        analyse(client, args.experiment, args.out or DEFAULT_OUT, refresh=args.refresh)
    return 0
