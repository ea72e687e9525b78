"""One pull, end to end: the remote read and checked, then stored in the local mirror.

The pull opens the local data dir (or uses a running service), reads the remote's project, objects and persons and
checks them all, then (only then) opens the mirror, reads export files and the events page by page, and stores the
persons and objects; it says what was done. A failure before anything is stored leaves no mirror behind.

Every wait on the remote is bounded: ``idle_timeout`` (default 300 s, ``HOGLAB_PULL_IDLE_TIMEOUT``) bounds each
answer from request to last byte, ``timeout`` (default none, ``HOGLAB_PULL_TIMEOUT``) the whole pull.

>>> timeout_seconds("90", "timeout", "HOGLAB_TEST_UNSET", None), timeout_seconds("2h", "timeout", "X", None)
(90.0, 7200.0)
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from ..client import Client
from ..errors import ConfigurationError, InvalidArgument
from .remote import (
    Pacer,
    Remote,
    mirror_events,
    mirror_groups,
    mirror_persons,
    read_groups,
    read_objects,
    read_persons,
    seconds_per_query,
)
from .report import PullReport

if TYPE_CHECKING:
    from ..local import LocalService
    from ..server.mirror import Mirror

__all__ = ["IDLE_TIMEOUT", "pull", "timeout_seconds"]

# The longest one answer may take, request to last byte. PostHog runs a blocking query for up to a minute, and a
# page of 10,000 events with their properties is megabytes: five minutes leave room for both on a slow link.
IDLE_TIMEOUT = 300.0

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _duration(text: str, argument: str) -> timedelta:
    match = _DURATION.match(text)
    if not match:
        raise InvalidArgument(f"{argument}: {text!r} is not like '1h', '30m' or '2d'")
    return timedelta(seconds=int(match[1]) * _SECONDS[match[2]])


def timeout_seconds(value: str | float | None, argument: str, env: str, default: float | None) -> float | None:
    """A timeout in seconds from ``value`` (seconds, or a span such as ``"10m"``), else the ``env`` variable, else
    ``default``; ``0`` means none."""
    if value is None:
        value = os.environ.get(env, "").strip() or None
        argument = env if value is not None else argument
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = _duration(str(value), argument).total_seconds()
    if not 0 <= seconds < math.inf:
        raise InvalidArgument(f"{argument}: {value!r} is not a number of seconds (0: no limit)", argument=argument)
    return seconds or None


def _local(service: LocalService | None, data_dir: str | Path | None) -> tuple[Any, Any, Callable[[], None]]:
    """The store and engine to write into, and how to let go of them."""
    if service is not None:
        return service.state.store, service.state.engine, lambda: None
    from ..server.config import ServerConfig
    from ..server.engine import open_engine
    from ..server.store import Store

    config = ServerConfig.from_env(data_dir=data_dir)
    store = Store.open_at(config.data_dir)
    try:
        engine = open_engine(config)
    except Exception as exc:
        store.close()
        raise ConfigurationError(
            f"cannot open the events engine on {config.data_dir} ({exc}); if `hoglab serve` runs on this data dir, "
            "stop it, or pull from Python into the running service: hoglab.pull(..., service=service)"
        ) from None

    def close() -> None:
        engine.close()
        store.close()

    return store, engine, close


def pull(
    host: str | None = None,
    project: int | str | None = None,
    *,
    key: str | None = None,
    key_env: str = "POSTHOG_PERSONAL_API_KEY",
    into: int | None = None,
    since: str | datetime | None = None,
    data_dir: str | Path | None = None,
    service: LocalService | None = None,
    rate: str = "120/hour",
    lookback: str = "1h",
    from_export: str | Path | None = None,
    persons: bool = True,
    progress: bool = True,
    say: Callable[[str], None] | None = None,
    client: Client | None = None,
    timeout: str | float | None = None,
    idle_timeout: str | float | None = None,
) -> PullReport:
    """Copy a remote project (PostHog or hoglab) into a local data dir, or top the copy up.

    An answer that is not what the remote's API answers is a :class:`~hoglab.RemoteAnswerError` naming the
    endpoint and the field; a redirect to another host is :class:`~hoglab.RedirectRefused`. Nothing of such an
    answer is stored, and a first pull that fails before storing anything leaves no local project behind.

    Parameters
    ----------
    host, project
        The remote's address and project id.
    key
        The remote's personal API key, with ``query:read``, ``experiment:read``, ``feature_flag:read``,
        ``cohort:read``, ``action:read`` and ``group:read`` (without the last, groups are skipped and the report
        says so).
    key_env
        The variable holding the key when ``key`` is not given.
    into
        An existing local project to copy into; else the mirror's own project is made (and found again next
        time).
    since
        The earliest events to copy (a date or ISO text; default: everything).
    data_dir
        The local data dir (default: ``$HOGLAB_DATA_DIR``).
    service
        A service started in this process (``hoglab.local.start_local_service``), written into instead of
        ``data_dir``.
    rate
        The queries the pull allows itself on the remote (``"120/hour"``).
    lookback
        How much before the watermark a new pull re-reads, so late events are caught (``"1h"``).
    from_export
        A folder of batch-export files, read first.
    persons
        Whether to copy persons and their distinct ids.
    progress
        Show progress bars.
    say
        Receives progress lines.
    client
        A ready :class:`hoglab.Client` of the remote (its host and project are used), e.g. with a transport of
        your own.
    timeout
        The longest the whole pull may take (seconds or a span like ``"2h"``; default ``$HOGLAB_PULL_TIMEOUT``,
        else none). Raises :class:`~hoglab.AnswerTimeout`; ``0`` turns it off.
    idle_timeout
        The longest one answer may take, request to last byte (seconds or a span like ``"5m"``; default
        ``$HOGLAB_PULL_IDLE_TIMEOUT``, else 300 s). Raises :class:`~hoglab.AnswerTimeout`; ``0`` turns it off.
    """
    say = say or (lambda line: None)
    if client is not None:
        host, project = client.host, client.project_id
    if from_export is None and (host is None or project is None):
        raise ConfigurationError("pull needs --from HOST and --project ID (or an export folder)")
    interval = seconds_per_query(rate)
    window = _duration(lookback, "lookback")
    overall = timeout_seconds(timeout, "timeout", "HOGLAB_PULL_TIMEOUT", None)
    idle = timeout_seconds(idle_timeout, "idle_timeout", "HOGLAB_PULL_IDLE_TIMEOUT", IDLE_TIMEOUT)
    start = datetime(1970, 1, 1, tzinfo=UTC)
    if since is not None:
        from ..server.mirror import parse_moment

        try:
            start = parse_moment(since)
        except ValueError:
            raise InvalidArgument(f"since: {since!r} is not a date or an ISO datetime") from None
    secret = key or os.environ.get(key_env)
    if client is None and host is not None and not secret:
        raise ConfigurationError(f"no personal API key for {host}: set {key_env} (or name another variable)")
    began = time.monotonic()
    deadline = None if overall is None else began + overall
    store, engine, close = _local(service, data_dir)
    mirror: Mirror | None = None
    try:
        from ..server.mirror import Mirror

        if client is None and host is not None:
            # The transport's own timeouts bound each read; answer_timeout bounds the whole answer.
            timeouts = httpx.Timeout(idle, connect=min(10.0, idle)) if idle else httpx.Timeout(None, connect=10.0)
            client = Client(host, secret, project, progress=False, timeout=timeouts)
        origin = host.rstrip("/") if host is not None else f"export:{Path(str(from_export)).resolve()}"
        report = PullReport(0)
        if client is None:
            mirror = Mirror.open(store, engine, host=origin, remote_project_id=int(project or 0),
                                 name=f"Export of {from_export}", into=into)  # fmt: skip
            report.local_project_id = mirror.project.id
            from .export import read_export

            read_export(Path(str(from_export)), mirror, report, since=start, progress=progress, say=say)
        else:
            client.answer_timeout, client.deadline = idle, deadline
            remote = Remote(client, Pacer(interval, deadline=deadline))
            with client:
                # Everything but the events is read and checked before anything is stored.
                info = remote.project()
                objects = read_objects(remote).check()
                people = read_persons(remote) if persons else None
                groups = read_groups(remote)
                mirror = Mirror.open(store, engine, host=origin, remote_project_id=int(project or 0),
                                     name=info["name"] or f"Mirror of {project}", timezone=info["timezone"],
                                     into=into)  # fmt: skip
                report.local_project_id = mirror.project.id
                if from_export is not None:
                    from .export import read_export

                    read_export(Path(from_export), mirror, report, since=start, progress=progress, say=say)
                mirror_events(remote, mirror, report, start, window, progress, say)
                if people is not None:
                    mirror_persons(mirror, report, *people)
                mirror_groups(mirror, report, groups)
                mirror.write_objects(objects)
            report.flags, report.cohorts = len(objects.flags), len(objects.cohorts)
            report.experiments, report.actions = len(objects.experiments), len(objects.actions)
            report.holdouts, report.saved_metrics = len(objects.holdouts), len(objects.saved_metrics)
            report.warnings = list(objects.warnings)
            report.queries = remote.pacer.count
        report.seconds = time.monotonic() - began
        for warning in report.warnings:
            say(f"warning: {warning}")
        say(str(report))
        return report
    except BaseException:
        if mirror is not None:
            if mirror.discard_if_empty():
                say(f"nothing was stored: local project {mirror.project.id} is not kept")
            else:
                copied = mirror.refresh().events_copied
                say(f"local project {mirror.project.id} keeps what was stored ({copied:,} events in all);"
                    " the next pull resumes from there")  # fmt: skip
        raise
    finally:
        close()
