"""``hoglab``: run the service and manage its projects and keys from a shell.

    hoglab serve [--host 127.0.0.1] [--port 8000] [--data-dir DIR] [--demo] [--clickhouse-url URL]
                 [--max-memory-usage 8GiB] [--max-execution-time SECONDS] [--memory-budget 12GiB]
                 [--max-compile-seconds SECONDS]
    hoglab demo [--port 8000] [--data-dir DIR] [--out DIR] [--no-serve]
    hoglab lab [--port 8000] [--data-dir DIR] [--notebooks DIR] [-- JUPYTER_LAB_ARGS...]
    hoglab report EXPERIMENT_ID [--out DIR] [--host URL] [--project ID] [--refresh]
    hoglab project create NAME [--timezone TZ] [--data-dir DIR]
    hoglab project list [--data-dir DIR]
    hoglab key create --project ID[,ID...]|all --scopes experiment:read,query:read [--label L] [--expires-in 30d]
    hoglab key list | hoglab key revoke KEY_ID [--data-dir DIR]
    hoglab load --project ID FILE [--format jsonl|csv|parquet] [--data-dir DIR]
    hoglab materialize --project ID [KEY...] [--person KEY]... [--status] [--data-dir DIR]
    hoglab pull --from URL --project ID [--into LOCAL_ID] [--since DATE] [--rate 120/hour] [--from-export DIR]
                [--timeout SECONDS] [--idle-timeout SECONDS]

``--data-dir`` defaults to ``$HOGLAB_DATA_DIR``, else the per-user data dir. A mistake in the arguments gets one
line on stderr and exit status 2 (so does a remote answer ``hoglab pull`` cannot use); a failure while running
gets one line and status 1. Never a traceback.

One module per command (``serve``, ``demo``, ``lab``, ``report``, ``project``, ``key``, ``materialize``, ``load``,
``pull``), each with ``add_parser(commands, common)`` and ``run(args)``; what they share is in ``common``.
Commands import the service (or the notebook toolkit) only when they run, so ``hoglab --help`` stays fast.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from hoglab import __version__

from . import demo, key, lab, load, materialize, project, pull, report, serve
from .common import CommandError, Parser

__all__ = ["CommandError", "build_parser", "main"]

# In the order `hoglab --help` lists them.
_COMMANDS = {
    "serve": serve,
    "demo": demo,
    "lab": lab,
    "report": report,
    "project": project,
    "key": key,
    "materialize": materialize,
    "load": load,
    "pull": pull,
}


def build_parser() -> Parser:
    """The ``hoglab`` argument parser: every command's arguments, ``--data-dir`` shared."""
    common = Parser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, default=None, metavar="DIR", help="default: $HOGLAB_DATA_DIR, else the user data dir"
    )
    parser = Parser(prog="hoglab", description="PostHog's Experiments and Query API, locally.")
    parser.add_argument("--version", action="version", version=f"hoglab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=Parser)
    for command in _COMMANDS.values():
        command.add_parser(commands, common)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``hoglab`` command; returns the exit status.

    >>> main(["project", "create", "Shop", "--data-dir", "/tmp/hoglab-doc"])  # doctest: +SKIP
    project id: 1
    ...
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    prog = f"hoglab {args.command}" + (f" {args.action}" if getattr(args, "action", None) else "")
    try:
        return int(_COMMANDS[args.command].run(args))
    except CommandError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130
