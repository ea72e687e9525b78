"""``hoglab load --project ID FILE [--format jsonl|csv|parquet] [--kind events|groups|group-types]``.

Loads events (PostHog's export shape), groups or group types from a file into a project, through the engine of the
data dir (stop ``hoglab serve`` first, or send events to its ``/batch/`` endpoint). The kind is read from the
file's columns unless given: ``group_key`` (or ``key``) makes a groups file, ``group_type`` with
``group_type_index`` a group-types file; load the group types before the groups and events that use their indexes.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from .common import CommandError, project_id, require_project, server_config

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    load = commands.add_parser("load", parents=[common], help="load events from a JSONL, CSV or Parquet file")
    load.add_argument("--project", required=True, type=project_id, metavar="ID")
    load.add_argument("file", type=Path, metavar="FILE")
    load.add_argument("--format", choices=("jsonl", "csv", "parquet"), default=None, help="default: from the name")
    load.add_argument("--kind", choices=("events", "groups", "group-types"), default=None,
                      help="what the file holds (default: from its columns)")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    path: Path = args.file
    if not path.is_file():
        raise CommandError(f"cannot read {path}: {'a directory' if path.is_dir() else 'no such file'}", status=2)
    from hoglab.server import ingest
    from hoglab.server.engine import open_engine
    from hoglab.server.ingest.sources import detect_format

    try:
        detect_format(path, args.format)  # before the engine opens: a name it cannot read is a quick, clear error
    except ValueError as exc:
        raise CommandError(str(exc), status=2) from None
    require_project(args.data_dir, args.project)
    config = server_config(args.data_dir)
    try:
        engine = open_engine(config)
    except Exception as exc:
        raise CommandError(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it first or send the events to its /batch/ endpoint"
        ) from None
    from hoglab.server.ingest.group_files import file_kind, load_group_types, load_groups

    kind = (args.kind or file_kind(path, args.format)).replace("-", "_")
    try:
        if kind != "events":
            loader = load_groups if kind == "groups" else load_group_types
            loaded = loader(engine, args.project, path, format=args.format)
            noun = "groups" if kind == "groups" else "group types"
            print(f"loaded {loaded.rows:,} {noun} from {path} ({loaded.format}) into project {args.project} "
                  f"in {loaded.seconds:.2f} s")  # fmt: skip
            return 0
        result = ingest.load_file(engine, args.project, path, format=args.format)
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot load {path}: {exc}") from None
    finally:
        engine.close()
    rate = f", {result.rows / result.seconds:,.0f} events/s" if result.seconds > 0 else ""
    print(
        f"loaded {result.rows:,} events ({result.persons_created:,} new persons) from {path} ({result.format}) "
        f"into project {args.project} in {result.seconds:.2f} s{rate}"
    )
    return 0
