"""Run the hoglab service inside this Python process, for notebooks and tests.

chDB can be owned by one process only and must not be forked, so the service runs in a daemon thread of the
caller's process (uvicorn, one worker) rather than in a subprocess. ``hoglab.server`` is imported only when a
service is started, so importing this module stays cheap for the notebook half.

>>> from hoglab.local import start_local_service
>>> with start_local_service(demo=True) as service:  # doctest: +SKIP
...     print(service.url, service.project_id, service.api_key)
http://127.0.0.1:54321 1 phx_...
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import uvicorn
    from fastapi import FastAPI

    from hoglab.server.config import ServerConfig
    from hoglab.server.engine.base import Engine
    from hoglab.server.state import ServiceState

__all__ = ["LocalService", "start_local_service"]


@dataclass
class LocalService:
    """A running service: where it listens, a project and a ``*`` personal API key to use it with."""

    url: str
    project_id: int
    api_key: str
    data_dir: Path
    app: FastAPI = field(repr=False)
    _server: uvicorn.Server = field(repr=False)
    _thread: threading.Thread = field(repr=False)

    @property
    def headers(self) -> dict[str, str]:
        """``{"Authorization": "Bearer phx_..."}`` for any HTTP client."""
        return {"Authorization": f"Bearer {self.api_key}"}

    @property
    def state(self) -> ServiceState:
        """The service's store, engine and limiter (same process, so tests can prepare data directly)."""
        state: ServiceState = self.app.state.hoglab
        return state

    @property
    def running(self) -> bool:
        return self._thread.is_alive() and not self._server.should_exit

    def stop(self, timeout: float = 10.0) -> None:
        """Finish in-flight requests, close the store, stop the thread. Safe to call twice."""
        self._server.should_exit = True
        self._thread.join(timeout)

    def __enter__(self) -> LocalService:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _bind(host: str, port: int) -> socket.socket:
    family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError:
        sock.close()
        raise
    return sock


def start_local_service(
    data_dir: str | Path | None = None,
    *,
    demo: bool = False,
    host: str = "127.0.0.1",
    port: int = 0,
    config_overrides: Mapping[str, Any] | None = None,
    engine: Engine | None = None,
    timeout: float = 300.0,
    on_demo_load: Callable[[], None] | None = None,
    demo_history: bool = False,
) -> LocalService:
    """Start the service in a background thread of this process and wait until it answers.

    ``data_dir`` defaults to ``$HOGLAB_DATA_DIR`` or the per-user data dir; ``port=0`` picks a free port.
    ``demo=True`` uses (and creates) the demo project. The returned key has scope ``*`` on every project.
    ``config_overrides`` are ``ServerConfig`` fields (e.g. ``{"rate_limit_burst": "5/minute"}``). ``timeout``
    bounds the start, demo seeding included; ``on_demo_load`` is called (in the service's thread) when the demo's
    events are about to be loaded, which only a first start does. ``demo_history=True`` adds the project of 40 past
    experiments ("Demo experiment history", the program tour's), a few seconds more on a first start.

    >>> service = start_local_service("/tmp/hoglab-notebook")  # doctest: +SKIP
    >>> service.stop()  # doctest: +SKIP
    """
    from hoglab.server.app import create_app, seed_demo_hook
    from hoglab.server.config import ServerConfig
    from hoglab.server.engine import acquire_engine, release_engine
    from hoglab.server.store import Store
    from hoglab.server.store.bootstrap import ensure_local_credentials

    config = ServerConfig.from_env(data_dir=data_dir, **dict(config_overrides or {}))
    with Store.open_at(config.data_dir) as store:
        credentials = ensure_local_credentials(store, demo=demo)
    hooks = [seed_demo_hook(credentials.project.id, on_demo_load, history=demo_history)] if demo else []
    # Open the app's engine here first: a data dir another process owns (or a second one in this process) is
    # then raised as EngineInUse with its explanation, not a lifespan traceback in the log. The app's lifespan
    # shares this handle (counted); giving ours back below leaves it to the app, which closes it when it stops.
    held = acquire_engine(config) if engine is None else None
    try:
        return _start(config, credentials, create_app(config, engine=engine, startup_hooks=hooks), host, port, timeout)
    finally:
        if held is not None:
            release_engine(held)


def _start(config: ServerConfig, credentials: Any, app: FastAPI, host: str, port: int, timeout: float) -> LocalService:
    import uvicorn

    sock = _bind(host, port)
    bound_port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on", timeout_graceful_shutdown=5)
    )
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, name="hoglab-service", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            thread.join(5)
            sock.close()
            raise RuntimeError(f"the hoglab service on {config.data_dir} did not start; see the log above")
        time.sleep(0.01)
    url_host = f"[{host}]" if ":" in host else host
    return LocalService(
        url=f"http://{url_host}:{bound_port}",
        project_id=credentials.project.id,
        api_key=credentials.api_key,
        data_dir=config.data_dir,
        app=app,
        _server=server,
        _thread=thread,
    )
