"""``hoglab materialize --project ID KEY... --person KEY``: event and person properties as columns, by hand (see
engine/materialized.py).

    hoglab materialize --project 1 '$browser' plan      # event properties: columns mat_<key> of events
    hoglab materialize --project 1 --person email       # person properties: columns pmat_<key> of persons
    hoglab materialize --project 1 --status             # which keys are columns, and how far each fill is

Materialized columns belong to the events and persons tables, so they serve every project; ``--project`` names
the project whose rows the command reports on (how many carry each key). Like ``hoglab load``, it opens the data
dir itself: stop ``hoglab serve`` first (a running service materializes the keys its queries use most by itself).
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import CommandError, project_id, require_project, server_config

__all__ = ["add_parser", "run"]

# How the command names each table's rows and properties in what it prints.
_WHAT = {"events": ("events", ""), "persons": ("persons", "person ")}


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    mat = commands.add_parser(
        "materialize", parents=[common], help="event and person properties as columns (faster filters)"
    )
    mat.add_argument("--project", required=True, type=project_id, metavar="ID")
    mat.add_argument("keys", nargs="*", metavar="KEY", help="event property keys, e.g. '$browser' plan")
    mat.add_argument(
        "--person",
        action="append",
        default=[],
        metavar="KEY",
        help="a person property key (person.properties.KEY), e.g. --person email; repeat for more",
    )
    mat.add_argument("--status", action="store_true", help="list the materialized keys and how far each fill is")


def run(args: argparse.Namespace) -> int:
    require_project(args.data_dir, args.project)
    config = server_config(args.data_dir)
    from hoglab.server.engine import EngineError, open_engine
    from hoglab.server.engine.ddl import DATABASE
    from hoglab.server.engine.materialized import fill_status, materialize
    from hoglab.server.engine.settings import quote_string

    asked = {"events": list(args.keys), "persons": list(getattr(args, "person", None) or [])}
    if not any(asked.values()) and not args.status:
        raise CommandError("name at least one property key (or --person KEY), or ask for --status")
    try:
        engine = open_engine(config)
    except Exception as exc:
        raise CommandError(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it first (it materializes the properties its queries use most by itself)"
        ) from None
    try:
        made_any = False
        for table, keys in asked.items():
            if not keys:
                continue
            rows, kind = _WHAT[table]
            for key, column in materialize(engine, keys, table).items():
                made_any = True
                # persons: each person's newest version, the one queries read
                share = engine.execute(
                    f"SELECT count() AS n, countIf(JSONHas(properties, {quote_string(key)})) AS has "
                    f"FROM (SELECT properties FROM {DATABASE}.{table} WHERE team_id = {int(args.project)}"
                    + (" ORDER BY version DESC LIMIT 1 BY id)" if table == "persons" else ")"),
                    settings={"max_execution_time": 0},
                ).to_pylist()[0]
                print(f"{kind}{key!r} -> column `{column}` ({share['has']:,} of project {args.project}'s "
                      f"{share['n']:,} {rows} have it)")  # fmt: skip
        if made_any:
            print("the columns fill in the background; queries read them at once and answer the same either way")
        if args.status:
            for status in fill_status(engine):
                state = "filled" if status.done else f"filling ({status.parts_to_do} parts to go)"
                print(f"{_WHAT[status.table][1]}{status.key!r}\t`{status.column}`\t{state}")
    except (EngineError, ValueError) as exc:
        raise CommandError(f"cannot materialize: {exc}") from None
    finally:
        engine.close()
    return 0
