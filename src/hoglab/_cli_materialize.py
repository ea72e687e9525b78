"""``hoglab materialize --project ID KEY...``: event properties as columns, by hand (see engine/materialized.py).

    hoglab materialize --project 1 '$browser' plan      # add the columns; they fill in the background
    hoglab materialize --project 1 --status             # which keys are columns, and how far each fill is

Materialized columns belong to the events table, so they serve every project; ``--project`` names the project
whose events the command reports on (how many carry each key). Like ``hoglab load``, it opens the data dir itself:
stop ``hoglab serve`` first (a running service materializes the keys its queries use most by itself).
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["run_materialize"]


def run_materialize(args: argparse.Namespace, command_error: type[Exception], config: Any) -> int:
    from hoglab.server.engine import EngineError, open_engine
    from hoglab.server.engine.ddl import DATABASE
    from hoglab.server.engine.materialized import fill_status, materialize
    from hoglab.server.engine.settings import quote_string

    if not args.keys and not args.status:
        raise command_error("name at least one property key, or ask for --status")
    try:
        engine = open_engine(config)
    except Exception as exc:
        raise command_error(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it first (it materializes the properties its queries use most by itself)"
        ) from None
    try:
        made = materialize(engine, args.keys) if args.keys else {}
        for key, column in made.items():
            share = engine.execute(
                f"SELECT count() AS n, countIf(JSONHas(properties, {quote_string(key)})) AS has "
                f"FROM {DATABASE}.events WHERE team_id = {int(args.project)}",
                settings={"max_execution_time": 0},
            ).to_pylist()[0]
            print(f"{key!r} -> column `{column}` ({share['has']:,} of project {args.project}'s {share['n']:,} "
                  "events have it)")  # fmt: skip
        if made:
            print("the columns fill in the background; queries read them at once and answer the same either way")
        if args.status:
            for status in fill_status(engine):
                state = "filled" if status.done else f"filling ({status.parts_to_do} parts to go)"
                print(f"{status.key!r}\t`{status.column}`\t{state}")
    except (EngineError, ValueError) as exc:
        raise command_error(f"cannot materialize: {exc}") from None
    finally:
        engine.close()
    return 0
