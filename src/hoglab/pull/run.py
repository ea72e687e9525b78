"""One pull, end to end: open the local data dir (or use a running service), read export files, then read the
remote and copy it into the mirror (:mod:`hoglab.pull.remote`), and say what was done."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..client import Client
from ..errors import ConfigurationError, InvalidArgument
from .remote import Pacer, Remote, mirror_events, mirror_groups, mirror_objects, mirror_persons, seconds_per_query
from .report import PullReport

if TYPE_CHECKING:
    from ..local import LocalService

__all__ = ["pull"]

_DURATION = re.compile(r"^\s*(\d+)\s*([smhdw])\s*$")
_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}


def _duration(text: str, argument: str) -> timedelta:
    match = _DURATION.match(text)
    if not match:
        raise InvalidArgument(f"{argument}: {text!r} is not like '1h', '30m' or '2d'")
    return timedelta(seconds=int(match[1]) * _SECONDS[match[2]])


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
) -> PullReport:
    """Copy a remote project (PostHog or hoglab at ``host``, project id ``project``) into a local data dir.

    The key comes from ``key`` or the ``key_env`` variable (a personal API key with ``query:read``,
    ``experiment:read``, ``feature_flag:read``, ``cohort:read``, ``action:read`` and ``group:read``; without the
    last two, actions or groups are skipped and the report says so). The copy goes into ``data_dir`` (default:
    ``$HOGLAB_DATA_DIR``) or into a ``service`` started in this process (``hoglab.local.start_local_service``);
    ``into`` names an existing local project, else the mirror's own project is made (and found again next time).
    ``since``: the earliest events to copy (a date or ISO text; default: everything). ``rate``: queries the pull
    allows itself. ``from_export``: a folder of batch-export files read first. ``say`` receives progress lines.
    ``client``: a ready :class:`hoglab.Client` of the remote (its host and project are used), e.g. with a
    transport of your own.
    """
    say = say or (lambda line: None)
    if client is not None:
        host, project = client.host, client.project_id
    if from_export is None and (host is None or project is None):
        raise ConfigurationError("pull needs --from HOST and --project ID (or an export folder)")
    interval = seconds_per_query(rate)
    window = _duration(lookback, "lookback")
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
    store, engine, close = _local(service, data_dir)
    try:
        from ..server.mirror import Mirror

        if client is None and host is not None:
            client = Client(host, secret, project, progress=False)
        name, timezone = f"Export of {from_export}", "UTC"
        if client is not None:
            info = client.get_json(client.path(""))
            name, timezone = str(info.get("name") or f"Mirror of {project}"), str(info.get("timezone") or "UTC")
        origin = host.rstrip("/") if host is not None else f"export:{Path(str(from_export)).resolve()}"
        mirror = Mirror.open(store, engine, host=origin, remote_project_id=int(project or 0), name=name,
                             timezone=timezone, into=into)  # fmt: skip
        report = PullReport(mirror.project.id)
        if from_export is not None:
            from .export import read_export

            read_export(Path(from_export), mirror, report, since=start, progress=progress, say=say)
        if client is not None:
            remote = Remote(client, Pacer(interval))
            with client:
                mirror_events(remote, mirror, report, start, window, progress, say)
                if persons:
                    mirror_persons(remote, mirror, report)
                mirror_groups(remote, mirror, report)
                mirror_objects(remote, mirror, report, say)
            report.queries = remote.pacer.count
        report.seconds = time.monotonic() - began
        say(str(report))
        return report
    finally:
        close()
