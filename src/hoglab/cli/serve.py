"""``hoglab serve [--host H] [--port P] [--demo] [--clickhouse-url URL]`` and the per-query limits: the HTTP
service on a data dir, in the foreground until Ctrl-C."""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from hoglab import __version__

from .common import (
    CommandError,
    DemoLoadNotice,
    byte_size,
    open_store,
    port,
    positive_float,
    positive_int,
    server_config,
)

if TYPE_CHECKING:
    import socket

    from hoglab.server.config import ServerConfig
    from hoglab.server.engine import Engine

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    serve = commands.add_parser("serve", parents=[common], help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=port, default=8000)
    serve.add_argument("--demo", action="store_true", help="make sure a demo project and a * key exist; print them")
    serve.add_argument("--clickhouse-url", default=None, metavar="URL", help="use a ClickHouse server for events")
    serve.add_argument(
        "--max-memory-usage", type=byte_size("--max-memory-usage"), default=None, metavar="SIZE",
        help="per query, e.g. 8GiB (default: $HOGLAB_MAX_MEMORY_USAGE, else 4GiB); GROUP BY/ORDER BY spill past half",
    )  # fmt: skip
    serve.add_argument(
        "--max-execution-time", type=positive_int("a time limit in seconds"), default=None, metavar="SECONDS",
        help="per query (default: $HOGLAB_MAX_EXECUTION_TIME, else 60)",
    )  # fmt: skip
    serve.add_argument(
        "--max-result-bytes", type=byte_size("--max-result-bytes"), default=None, metavar="SIZE",
        help="largest answer, e.g. 64MiB (default: $HOGLAB_MAX_RESULT_BYTES, else 64MiB); over it a 400",
    )  # fmt: skip
    serve.add_argument(
        "--memory-budget", type=byte_size("--memory-budget"), default=None, metavar="SIZE",
        help="the process's memory for queries and answers, e.g. 12GiB (default: $HOGLAB_MEMORY_BUDGET, else two "
        "thirds of the machine's memory); a project gets at most half",
    )  # fmt: skip
    serve.add_argument(
        "--max-compile-seconds", type=positive_float("a time in seconds"), default=None, metavar="SECONDS",
        help="CPU time to compile one HogQL statement (default: $HOGLAB_MAX_COMPILE_SECONDS, else 3); over it a 400",
    )  # fmt: skip


def run(args: argparse.Namespace) -> int:
    return _serve(args, demo=args.demo)


def _open_events_engine(config: ServerConfig, sock: socket.socket) -> Engine:
    """The events engine, opened before uvicorn starts.

    A data dir another process owns or an unreachable ClickHouse is then one line (and ``sock`` is closed), where
    the app's lifespan would end in uvicorn's traceback. The app shares this handle (``acquire_engine`` counts its
    users); pair with :func:`_releasing`.
    """
    from hoglab.server.engine import EngineError, acquire_engine

    try:
        return acquire_engine(config)
    except (EngineError, ValueError, ImportError) as exc:
        sock.close()
        raise CommandError(f"cannot open the events engine: {exc}") from None


@contextlib.contextmanager
def _releasing(engine: Engine) -> Iterator[None]:
    """Give the engine back when serving ends; the last user flushes queued capture batches and closes it."""
    from hoglab.server.engine import release_engine
    from hoglab.server.ingest import Ingestor

    try:
        yield
    finally:
        release_engine(engine, before_close=lambda opened: Ingestor.for_engine(opened).close())


def _serve(args: argparse.Namespace, *, demo: bool) -> int:
    import uvicorn

    from hoglab.local import _bind
    from hoglab.server.app import create_app, seed_demo_hook
    from hoglab.server.store.bootstrap import ensure_local_credentials

    config = server_config(
        args.data_dir,
        args.clickhouse_url,
        max_memory_usage=args.max_memory_usage,
        max_execution_time=args.max_execution_time,
        max_result_bytes=args.max_result_bytes,
        memory_budget=args.memory_budget,
        max_compile_seconds=args.max_compile_seconds,
    )
    with open_store(config.data_dir, create=True) as store:
        credentials = ensure_local_credentials(store, demo=True) if demo else None
    notice = DemoLoadNotice("")
    hooks = [seed_demo_hook(credentials.project.id, notice)] if credentials is not None else []
    app = create_app(config, startup_hooks=hooks)
    try:
        sock = _bind(args.host, args.port)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    engine = _open_events_engine(config, sock)
    host = f"[{args.host}]" if ":" in args.host else args.host
    url = f"http://{host}:{sock.getsockname()[1]}"
    print(f"hoglab {__version__} serving {config.data_dir} at {url}  (API schema: {url}/api/schema/)", flush=True)
    if credentials is not None:
        print(f"project id:       {credentials.project.id} ({credentials.project.name})")
        print(f"personal API key: {credentials.api_key}  (scope *, every project)")
        print(f"try: curl -H 'Authorization: Bearer {credentials.api_key}' {url}/api/projects/", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="info", workers=1, reload=False, lifespan="on"))
    # uvicorn re-raises Ctrl-C after a graceful shutdown; stopping the service that way is a normal end.
    with _releasing(engine), contextlib.suppress(KeyboardInterrupt):
        server.run(sockets=[sock])
    return 0
