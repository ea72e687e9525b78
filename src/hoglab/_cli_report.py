"""``hoglab demo`` and ``hoglab report``: the experiment analysis from a shell.

``hoglab demo`` is the README's main job: the service on the embedded engine with the demo project, its
experiment analysed through the HTTP API (as any client would), the verdict printed and the report written,
then the service keeps running for notebooks until Ctrl-C. ``hoglab report ID`` writes the same report for
any experiment of any service the ``HOGLAB_*`` (or ``POSTHOG_*``) variables point at, PostHog included.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from hoglab.client import Client
    from hoglab.local import LocalService
    from hoglab.notebook._report import ExperimentReport

__all__ = ["DEFAULT_OUT", "run_demo", "run_report"]

DEFAULT_OUT = Path("hoglab-report")


def _analyse(client: Client, experiment_id: int, out: Path, *, refresh: bool) -> ExperimentReport:
    from hoglab.notebook._report import experiment_report

    report = experiment_report(experiment_id, client, refresh=refresh)
    path = report.write(out)
    print(report.summary())
    print(f"report: {path}  (figures: {path.parent / 'figures'})", flush=True)
    return report


def _demo_experiment_id(client: Client) -> int:
    from hoglab.server.demo import DEMO_EXPERIMENT

    listing = client.experiments.list(archived=None)
    chosen = listing[listing["feature_flag_key"] == DEMO_EXPERIMENT.feature_flag_key]
    if chosen.empty:
        raise LookupError(f"the demo experiment (flag {DEMO_EXPERIMENT.feature_flag_key!r}) is missing")
    return int(chosen["id"].iloc[0])


def _wait(service: LocalService) -> None:
    print(
        "serving until Ctrl-C; in a notebook: hoglab.connect() with "
        f"HOGLAB_HOST={service.url} HOGLAB_API_KEY={service.api_key} HOGLAB_PROJECT_ID={service.project_id}",
        flush=True,
    )
    try:
        while service.running:
            time.sleep(0.5)
    except KeyboardInterrupt:
        print("stopping", flush=True)


def run_demo(args: argparse.Namespace, data_dir: Path) -> int:
    """Start the demo service, analyse its experiment into ``args.out``, then serve until stopped."""
    from hoglab import __version__
    from hoglab.client import Client
    from hoglab.local import start_local_service

    print(f"hoglab {__version__}: starting the demo service on {data_dir} (the first start loads the demo data)")
    service = start_local_service(data_dir, demo=True, host=args.host, port=args.port)
    try:
        print(f"serving at {service.url}  (API schema: {service.url}/api/schema/)")
        print(f"project id:       {service.project_id}")
        print(f"personal API key: {service.api_key}  (scope *, every project)", flush=True)
        with Client(service.url, service.api_key, service.project_id) as client:
            _analyse(client, _demo_experiment_id(client), args.out or DEFAULT_OUT, refresh=True)
        if not args.no_serve:
            _wait(service)
    finally:
        service.stop()
    return 0


def run_report(args: argparse.Namespace) -> int:
    """Write the report of experiment ``args.experiment`` of the configured service into ``args.out``."""
    from hoglab.client import Client

    with Client(args.host, project_id=args.project) as client:
        _analyse(client, args.experiment, args.out or DEFAULT_OUT, refresh=args.refresh)
    return 0
