"""A hoglab service in a process of its own, for tests that restart it on the same data dir.

    python materialize_service.py DATA_DIR [SQL ...]

Starts the service (settings from ``HOGLAB_*``), runs each SQL statement on its engine (to leave a data dir as an
older version or an operator would have), makes sure projects ``A``, ``B`` and ``C`` exist, prints one JSON line
``{"url", "key", "projects": {name: [id, token]}}`` and serves until a line arrives on stdin.
"""

from __future__ import annotations

import json
import logging
import sys

from hoglab.local import start_local_service
from hoglab.server.engine import materialized


def main() -> None:
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(levelname)s %(name)s %(message)s")
    data_dir, statements = sys.argv[1], sys.argv[2:]
    limits = {"rate_limit_burst": "1000000/minute", "rate_limit_sustained": "10000000/hour",
              "query_rate_limit": "1000000/hour"}  # fmt: skip
    service = start_local_service(data_dir, config_overrides=limits)
    engine = service.state.engine
    for sql in statements:
        engine.command(sql)
    if statements:
        materialized.refresh(engine)
    store = service.state.store
    projects = {}
    for name in ("A", "B", "C"):
        record = store.projects.get_by_name(name) or store.projects.create(name)
        projects[name] = [record.id, record.api_token]
    print(json.dumps({"url": service.url, "key": service.api_key, "projects": projects}), flush=True)
    sys.stdin.readline()
    service.stop()


if __name__ == "__main__":
    main()
