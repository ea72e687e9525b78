"""``hoglab demo [--port P] [--out DIR] [--no-serve]``: the README's main job.

The service on the embedded engine with the demo project, its experiment analysed through the HTTP API (as any
client would), the verdict printed and the report written (:func:`hoglab.cli.report.analyse`), then the service
keeps running for notebooks until Ctrl-C.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CommandError, DemoLoadNotice, port, server_config
from .report import DEFAULT_OUT, analyse

if TYPE_CHECKING:
    from hoglab.client import Client
    from hoglab.local import LocalService

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    demo = commands.add_parser(
        "demo", parents=[common], help="the demo service with its experiment analysed; serves until Ctrl-C"
    )
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=port, default=8000)
    demo.add_argument("--out", type=Path, default=None, metavar="DIR", help="report folder (default: hoglab-report)")
    demo.add_argument("--no-serve", action="store_true", help="stop once the report is written")


def run(args: argparse.Namespace) -> int:
    from hoglab.errors import HoglabError
    from hoglab.server.engine import EngineError

    config = server_config(args.data_dir)
    try:
        return _run_demo(args, config.data_dir)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    except (EngineError, HoglabError, LookupError, RuntimeError) as exc:
        raise CommandError(str(exc)) from None


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


def _run_demo(args: argparse.Namespace, data_dir: Path) -> int:
    """Start the demo service, analyse its experiment into ``args.out``, then serve until stopped."""
    from hoglab import __version__
    from hoglab.client import Client
    from hoglab.local import start_local_service

    print(f"hoglab {__version__}: starting the demo service on {data_dir}", flush=True)
    notice = DemoLoadNotice("")
    service = start_local_service(
        data_dir, demo=True, demo_history=True, host=args.host, port=args.port, on_demo_load=notice
    )
    notice.done()
    try:
        print(f"serving at {service.url}  (API schema: {service.url}/api/schema/)")
        print(f"project id:       {service.project_id}")
        print(f"personal API key: {service.api_key}  (scope *, every project)", flush=True)
        with Client(service.url, service.api_key, service.project_id) as client:
            analyse(client, _demo_experiment_id(client), args.out or DEFAULT_OUT, refresh=True)
        if not args.no_serve:
            _wait(service)
    finally:
        service.stop()
    return 0
