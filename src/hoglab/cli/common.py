"""What every ``hoglab`` command shares: errors, the parser, the settings and the store.

That is the one-line error, the argument parser and its value types, the service settings from arguments and
``HOGLAB_*`` variables, and the metadata store of a data dir.
Each command is a module of :mod:`hoglab.cli` with ``add_parser(commands, common)`` and ``run(args)``; they all
import from here, and this module imports none of them.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from hoglab.errors import HoglabError

if TYPE_CHECKING:
    from hoglab.server.config import ServerConfig
    from hoglab.server.store import Store

__all__ = [
    "DEMO_LOAD_SECONDS",
    "CommandError",
    "DemoLoadNotice",
    "Parser",
    "byte_size",
    "open_store",
    "port",
    "positive_float",
    "positive_id",
    "positive_int",
    "project_id",
    "require_project",
    "server_config",
]


class CommandError(HoglabError):
    """A failure to report as one line; ``status`` is the exit status."""

    def __init__(self, message: str, status: int = 1) -> None:
        super().__init__(message)
        self.status = status


# How long a first start takes to generate and load the demo's events on an idle 2-core machine (README, "How
# long set-up takes"); only said when it happens.
DEMO_LOAD_SECONDS = 10


class DemoLoadNotice:
    """Says that this start loads the demo data, only when it does (a first start), then how long it took.

    Given as ``start_local_service(on_demo_load=...)``; it is called in the service's thread, before the load.

    >>> notice = DemoLoadNotice("hoglab demo: ")
    >>> notice()  # doctest: +ELLIPSIS
    hoglab demo: loading the demo data (first start only, about ... s)...
    """

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.started: float | None = None

    def __call__(self) -> None:
        self.started = time.monotonic()
        print(f"{self.prefix}loading the demo data (first start only, about {DEMO_LOAD_SECONDS} s)...", flush=True)

    def done(self) -> None:
        """After the start: the time the load took, if this start loaded."""
        if self.started is not None:
            print(f"{self.prefix}demo data loaded in {time.monotonic() - self.started:.0f} s", flush=True)


class Parser(argparse.ArgumentParser):
    """An argument parser whose mistakes are one line naming the command (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        # argparse prints the whole usage first; one line that names the command and points at --help is clearer.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def port(text: str) -> int:
    """A TCP port number (0 picks a free one)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"a port is between 0 and 65535, got {value}")
    return value


def positive_int(what: str) -> Callable[[str], int]:
    """An argparse type: a positive integer below 2**63; ``what`` names it in the error."""

    def parse(text: str) -> int:
        if not (text.isascii() and text.isdigit()) or int(text) == 0 or int(text) >= 2**63:
            raise argparse.ArgumentTypeError(f"{what} is a positive integer, got {text!r}")
        return int(text)

    return parse


def positive_float(what: str) -> Callable[[str], float]:
    """An argparse type: a positive, finite number; ``what`` names it in the error."""

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = 0.0
        if not 0 < value < float("inf"):
            raise argparse.ArgumentTypeError(f"{what} is a positive number, got {text!r}")
        return value

    return parse


def positive_id(what: str) -> Callable[[str], int]:
    """An argparse type: the positive id of ``what`` (``"a project"``)."""
    return positive_int(f"{what} id")


project_id = positive_id("a project")


def byte_size(flag: str) -> Callable[[str], int]:
    """An argparse type: a size such as ``8GiB`` or ``64MiB`` (``flag`` names it in the error)."""

    def parse(text: str) -> int:
        from hoglab.server.config import parse_bytes

        try:
            return parse_bytes(text, flag)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def server_config(data_dir: Path | None, clickhouse_url: str | None = None, **limits: float | None) -> ServerConfig:
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


def open_store(data_dir: Path | None, *, create: bool = False) -> Store:
    """The metadata store of the data dir.

    A command that only reads or adds to existing data (``create=False``) refuses a data dir that holds none
    rather than leaving an empty one behind.
    """
    from hoglab.server.store import Store, StoreError
    from hoglab.server.store.db import DATABASE_FILENAME

    directory = server_config(data_dir).data_dir
    if not create and not (directory / DATABASE_FILENAME).is_file():
        raise CommandError(f"no hoglab data in {directory} (start with: hoglab project create NAME)", status=2)
    try:
        return Store.open_at(directory)
    except StoreError as exc:
        raise CommandError(str(exc)) from None


def require_project(data_dir: Path | None, project_id: int) -> None:
    """A clear error (exit 2) when the data dir has no such project, before any engine opens."""
    with open_store(data_dir) as store:
        if store.projects.get(project_id) is None:
            raise CommandError(f"no project with id {project_id} (see: hoglab project list)", status=2)
