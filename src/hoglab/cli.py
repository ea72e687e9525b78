"""``hoglab``: run the service and manage its projects and keys from a shell.

    hoglab serve [--host 127.0.0.1] [--port 8000] [--data-dir DIR] [--demo] [--clickhouse-url URL]
                 [--max-memory-usage 8GiB] [--max-execution-time SECONDS] [--memory-budget 12GiB]
                 [--max-compile-seconds SECONDS]
    hoglab demo [--port 8000] [--data-dir DIR] [--out DIR] [--no-serve]
    hoglab report EXPERIMENT_ID [--out DIR] [--host URL] [--project ID] [--refresh]
    hoglab project create NAME [--timezone TZ] [--data-dir DIR]
    hoglab project list [--data-dir DIR]
    hoglab key create --project ID[,ID...]|all --scopes experiment:read,query:read [--label L] [--expires-in 30d]
    hoglab key list | hoglab key revoke KEY_ID [--data-dir DIR]
    hoglab load --project ID FILE [--format jsonl|csv|parquet] [--data-dir DIR]
    hoglab materialize --project ID [KEY...] [--person KEY]... [--status] [--data-dir DIR]
    hoglab pull --from URL --project ID [--into LOCAL_ID] [--since DATE] [--rate 120/hour] [--from-export DIR]

``--data-dir`` defaults to ``$HOGLAB_DATA_DIR``, else the per-user data dir. A mistake in the arguments gets one
line on stderr and exit status 2; a failure while running gets one line and status 1. Never a traceback.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hoglab import __version__
from hoglab.errors import HoglabError

if TYPE_CHECKING:
    import socket

    from hoglab.server.config import ServerConfig
    from hoglab.server.engine import Engine
    from hoglab.server.store import Store

__all__ = ["CommandError", "main"]


class CommandError(HoglabError):
    """A failure to report as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # argparse prints the whole usage first; one line that names the command and points at --help is clearer.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _port(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, got {value}")
    return value


def _positive_int(what: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or int(text) == 0 or int(text) >= 2**63:
            raise argparse.ArgumentTypeError(f"{what} is a positive integer, got {text!r}")
        return int(text)

    return parse


def _positive_float(what: str) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{what} is a positive number, got {text!r}")
        return value

    return parse


def _positive_id(what: str) -> Callable[[str], int]:
    return _positive_int(f"{what} id")


_project_id = _positive_id("a project")


def _byte_size(flag: str) -> Callable[[str], int]:
    def parse(text: str) -> int:
        from hoglab.server.config import parse_bytes

        try:
            return parse_bytes(text, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _build_parser() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--data-dir", type=Path, default=None, metavar="DIR", help="default: $HOGLAB_DATA_DIR, else the user data dir"
    )
    parser = _Parser(prog="hoglab", description="PostHog's Experiments and Query API, locally.")
    parser.add_argument("--version", action="version", version=f"hoglab {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND", parser_class=_Parser)

    serve = commands.add_parser("serve", parents=[common], help="run the HTTP service")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=_port, default=8000)
    serve.add_argument("--demo", action="store_true", help="make sure a demo project and a * key exist; print them")
    serve.add_argument("--clickhouse-url", default=None, metavar="URL", help="use a ClickHouse server for events")
    serve.add_argument(
        "--max-memory-usage", type=_byte_size("--max-memory-usage"), default=None, metavar="SIZE",
        help="per query, e.g. 8GiB (default: $HOGLAB_MAX_MEMORY_USAGE, else 4GiB); GROUP BY/ORDER BY spill past half",
    )  # fmt: skip
    serve.add_argument(
        "--max-execution-time", type=_positive_int("a time limit in seconds"), default=None, metavar="SECONDS",
        help="per query (default: $HOGLAB_MAX_EXECUTION_TIME, else 60)",
    )  # fmt: skip
    serve.add_argument(
        "--max-result-bytes", type=_byte_size("--max-result-bytes"), default=None, metavar="SIZE",
        help="largest answer, e.g. 64MiB (default: $HOGLAB_MAX_RESULT_BYTES, else 64MiB); over it a 400",
    )  # fmt: skip
    serve.add_argument(
        "--memory-budget", type=_byte_size("--memory-budget"), default=None, metavar="SIZE",
        help="the process's memory for queries and answers, e.g. 12GiB (default: $HOGLAB_MEMORY_BUDGET, else two "
        "thirds of the machine's memory); a project gets at most half",
    )  # fmt: skip
    serve.add_argument(
        "--max-compile-seconds", type=_positive_float("a time in seconds"), default=None, metavar="SECONDS",
        help="CPU time to compile one HogQL statement (default: $HOGLAB_MAX_COMPILE_SECONDS, else 3); over it a 400",
    )  # fmt: skip

    demo = commands.add_parser(
        "demo", parents=[common], help="the demo service with its experiment analysed; serves until Ctrl-C"
    )
    demo.add_argument("--host", default="127.0.0.1")
    demo.add_argument("--port", type=_port, default=8000)
    demo.add_argument("--out", type=Path, default=None, metavar="DIR", help="report folder (default: hoglab-report)")
    demo.add_argument("--no-serve", action="store_true", help="stop once the report is written")

    report = commands.add_parser(
        "report", help="analyse an experiment of the service HOGLAB_HOST/HOGLAB_API_KEY point at (PostHog too)"
    )
    report.add_argument("experiment", type=_positive_id("an experiment"), metavar="EXPERIMENT_ID")
    report.add_argument("--out", type=Path, default=None, metavar="DIR", help="report folder (default: hoglab-report)")
    report.add_argument("--host", default=None, metavar="URL", help="default: $HOGLAB_HOST, else $POSTHOG_HOST")
    report.add_argument("--project", default=None, metavar="ID", help="default: $HOGLAB_PROJECT_ID, else the key's")
    report.add_argument("--refresh", action="store_true", help="recompute instead of using the server's cache")

    project = commands.add_parser("project", help="manage projects")
    project_commands = project.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=_Parser)
    create_project = project_commands.add_parser("create", parents=[common], help="create a project")
    create_project.add_argument("name", metavar="NAME")
    create_project.add_argument("--timezone", default="UTC", metavar="TZ", help="IANA name, e.g. Europe/Berlin")
    project_commands.add_parser("list", parents=[common], help="list projects")

    from hoglab._cli_keys import add_key_command

    add_key_command(commands, common, _Parser)

    mat = commands.add_parser(
        "materialize", parents=[common], help="event and person properties as columns (faster filters)"
    )
    mat.add_argument("--project", required=True, type=_project_id, metavar="ID")
    mat.add_argument("keys", nargs="*", metavar="KEY", help="event property keys, e.g. '$browser' plan")
    mat.add_argument(
        "--person",
        action="append",
        default=[],
        metavar="KEY",
        help="a person property key (person.properties.KEY), e.g. --person email; repeat for more",
    )
    mat.add_argument("--status", action="store_true", help="list the materialized keys and how far each fill is")

    load = commands.add_parser("load", parents=[common], help="load events from a JSONL, CSV or Parquet file")
    load.add_argument("--project", required=True, type=_project_id, metavar="ID")
    load.add_argument("file", type=Path, metavar="FILE")
    load.add_argument("--format", choices=("jsonl", "csv", "parquet"), default=None, help="default: from the name")
    from hoglab._cli_pull import add_pull_command

    add_pull_command(commands, common)
    return parser


def _config(data_dir: Path | None, clickhouse_url: str | None = None, **limits: float | None) -> ServerConfig:
    """The service settings from the arguments and ``HOGLAB_*`` variables; a bad variable is one line, status 2."""
    from hoglab.server.config import ServerConfig
    from hoglab.server.engine.memory import MemoryBudget
    from hoglab.server.http.ratelimit import RateLimiter

    try:
        config = ServerConfig.from_env(data_dir=data_dir, clickhouse_url=clickhouse_url, **limits)
        RateLimiter.from_config(config)  # reads the rate strings: a typo in HOGLAB_RATE_LIMIT_* is caught here
        MemoryBudget.from_config(config)  # a budget too small to serve anything is caught here too
    except ValueError as exc:
        raise CommandError(str(exc), status=2) from None
    return config


def _open_store(data_dir: Path | None, *, create: bool = False) -> Store:
    """The metadata store; a command that only reads or adds to existing data (``create=False``) refuses a data
    dir that holds none rather than leaving an empty one behind."""
    from hoglab.server.store import Store, StoreError
    from hoglab.server.store.db import DATABASE_FILENAME

    directory = _config(data_dir).data_dir
    if not create and not (directory / DATABASE_FILENAME).is_file():
        raise CommandError(f"no hoglab data in {directory} (start with: hoglab project create NAME)", status=2)
    try:
        return Store.open_at(directory)
    except StoreError as exc:
        raise CommandError(str(exc)) from None


def _require_project(data_dir: Path | None, project_id: int) -> None:
    """A clear error (exit 2) when the data dir has no such project, before any engine opens."""
    with _open_store(data_dir) as store:
        if store.projects.get(project_id) is None:
            raise CommandError(f"no project with id {project_id} (see: hoglab project list)", status=2)


def _project_create(args: argparse.Namespace) -> int:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    name = args.name.strip()
    if not name or len(name) > 200:
        raise CommandError("a project name has 1 to 200 characters", status=2)
    try:
        ZoneInfo(args.timezone)
    except (ZoneInfoNotFoundError, ValueError):
        raise CommandError(f"unknown time zone {args.timezone!r} (use an IANA name such as Europe/Berlin)", 2) from None
    with _open_store(args.data_dir, create=True) as store:
        project = store.projects.create(name, timezone=args.timezone)
    print(f"project id: {project.id}")
    print(f"project API key (for capture): {project.api_token}")
    print(f"name: {project.name}  timezone: {project.timezone}  data dir: {store.data_dir}")
    return 0


def _project_list(args: argparse.Namespace) -> int:
    with _open_store(args.data_dir) as store:
        projects = store.projects.list()
    for project in projects:
        print(f"{project.id}\t{project.name}\t{project.timezone}\t{project.api_token}")
    if not projects:
        print("no projects yet: hoglab project create NAME", file=sys.stderr)
    return 0


def _load(args: argparse.Namespace) -> int:
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
    _require_project(args.data_dir, args.project)
    config = _config(args.data_dir)
    try:
        engine = open_engine(config)
    except Exception as exc:
        raise CommandError(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it first or send the events to its /batch/ endpoint"
        ) from None
    try:
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


def _open_events_engine(config: ServerConfig, sock: socket.socket) -> Engine:
    """The events engine, opened before uvicorn starts: a data dir another process owns or an unreachable
    ClickHouse is then one line (and ``sock`` is closed), where the app's lifespan would end in uvicorn's
    traceback. The app shares this handle (``acquire_engine`` counts its users); pair with :func:`_releasing`."""
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

    config = _config(
        args.data_dir,
        args.clickhouse_url,
        max_memory_usage=args.max_memory_usage,
        max_execution_time=args.max_execution_time,
        max_result_bytes=args.max_result_bytes,
        memory_budget=args.memory_budget,
        max_compile_seconds=args.max_compile_seconds,
    )
    with _open_store(config.data_dir, create=True) as store:
        credentials = ensure_local_credentials(store, demo=True) if demo else None
    hooks = [seed_demo_hook(credentials.project.id)] if credentials is not None else []
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


def _demo(args: argparse.Namespace) -> int:
    from hoglab._cli_report import run_demo
    from hoglab.errors import HoglabError
    from hoglab.server.engine import EngineError

    config = _config(args.data_dir)
    try:
        return run_demo(args, config.data_dir)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    except (EngineError, HoglabError, LookupError, RuntimeError) as exc:
        raise CommandError(str(exc)) from None


def _report(args: argparse.Namespace) -> int:
    from hoglab._cli_report import run_report
    from hoglab.errors import HoglabError

    try:
        return run_report(args)
    except OSError as exc:
        raise CommandError(f"cannot write the report: {exc}") from None
    except HoglabError as exc:
        raise CommandError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``hoglab`` command; returns the exit status.

    >>> main(["project", "create", "Shop", "--data-dir", "/tmp/hoglab-doc"])  # doctest: +SKIP
    project id: 1
    ...
    """
    parser = _build_parser()
    args = parser.parse_args(argv)
    prog = f"hoglab {args.command}" + (f" {args.action}" if getattr(args, "action", None) else "")
    try:
        if args.command == "serve":
            return _serve(args, demo=args.demo)
        if args.command == "demo":
            return _demo(args)
        if args.command == "report":
            return _report(args)
        if args.command == "project":
            return _project_create(args) if args.action == "create" else _project_list(args)
        if args.command == "key":
            from hoglab._cli_keys import run_key

            return run_key(args)
        if args.command == "materialize":
            from hoglab._cli_materialize import run_materialize

            _require_project(args.data_dir, args.project)
            return run_materialize(args, CommandError, _config(args.data_dir))
        if args.command == "pull":
            from hoglab._cli_pull import run_pull

            return run_pull(args, CommandError)
        return _load(args)
    except CommandError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return exc.status
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
