"""``hoglab lab [--port P] [--lab-port L] [--no-browser] [--notebooks DIR] [-- JUPYTER_ARGS...]``: JupyterLab on
the tour notebooks.

Every kernel is already pointed at the demo service; this is the one command of ``make lab``.

The demo service is reused when one already answers on the port and proves it serves this data dir (a fresh
challenge answered with the data dir's secret, before any key is sent; ``make demo`` in another terminal), else
started here, in this process (chDB belongs to one process; the kernels are others, so
they reach it over HTTP like any client). JupyterLab runs as a child process whose environment, which its kernels
inherit, holds ``HOGLAB_HOST``, ``HOGLAB_API_KEY`` and ``HOGLAB_PROJECT_ID``: ``hoglab.connect()`` in any
notebook, a tour or a new one, talks to the demo. Ctrl-C stops JupyterLab, then the service (when started here).

JupyterLab listens on ``--lab-port`` (``make lab LAB_PORT=...``), is given ``--allow-root`` when run as root (it
refuses to start as root otherwise, and containers and CI boxes run as root), logs only its warnings, and the one
address to open, token included, is printed once it answers (read from the server's own runtime file).
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from .common import CommandError, DemoLoadNotice, port, server_config

if TYPE_CHECKING:
    from hoglab.local import LocalService

__all__ = ["DemoService", "add_parser", "jupyter_command", "kernel_env", "lab_url", "run", "running_demo"]


@dataclass(frozen=True)
class DemoService:
    """Where the kernels find the demo: its URL, the ``*`` key and the demo project's id."""

    url: str
    api_key: str
    project_id: int


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    lab = commands.add_parser(
        "lab", parents=[common],
        help="JupyterLab on the notebooks, its kernels pointed at the demo service (started, or reused); until Ctrl-C",
    )  # fmt: skip
    lab.add_argument("--host", default="127.0.0.1", help="the demo service's address")
    lab.add_argument("--port", type=port, default=8000, help="the demo service's port (reused if it runs there)")
    lab.add_argument("--lab-port", type=port, default=8888, help="JupyterLab's port (default 8888)")
    lab.add_argument("--no-browser", action="store_true", help="do not open a browser (print the address only)")
    lab.add_argument(
        "--notebooks", type=Path, default=None, metavar="DIR", help="JupyterLab's folder (default: ./notebooks)"
    )
    lab.add_argument("jupyter", nargs=argparse.REMAINDER, help="after --: arguments for jupyter lab")


def kernel_env(demo: DemoService, base: dict[str, str] | None = None) -> dict[str, str]:
    """``base`` (this process's environment) with the ``HOGLAB_*`` variables that point a client at ``demo``.

    >>> kernel_env(DemoService("http://127.0.0.1:8000", "phx_k", 1), {})["HOGLAB_HOST"]
    'http://127.0.0.1:8000'
    """
    env = dict(os.environ if base is None else base)
    env.update(HOGLAB_HOST=demo.url, HOGLAB_API_KEY=demo.api_key, HOGLAB_PROJECT_ID=str(demo.project_id))
    return env


def _proves_data_dir(url: str, data_dir: Path) -> bool:
    """Whether the service at ``url`` proves it serves ``data_dir``: it answers a fresh challenge with the HMAC of
    the data dir's secret (``server/private_files.py``), which only who can read the data dir knows. No key is
    sent. ``httpx.ConnectError`` when nothing listens there."""
    import secrets

    import httpx

    from hoglab.server.http.identity import IDENTITY_PATH
    from hoglab.server.private_files import identity_proof, identity_secret

    secret = identity_secret(data_dir)  # made now if new: the service on this data dir reads the same file
    challenge = secrets.token_hex(32)
    try:
        answer = httpx.get(f"{url}{IDENTITY_PATH}", params={"challenge": challenge}, timeout=5)
        proof = answer.json().get("proof") if answer.is_success else None
    except httpx.ConnectError:
        raise
    except (httpx.HTTPError, ValueError, AttributeError):
        return False
    if secret is None or not isinstance(proof, str):
        return False
    return hmac.compare_digest(proof, identity_proof(secret, challenge))


def running_demo(url: str, data_dir: Path) -> DemoService | None:
    """The demo service answering at ``url`` with ``data_dir``'s key, or ``None`` when nothing listens there.

    Before any key is sent, the service must prove it is this data dir's hoglab (:func:`_proves_data_dir`).
    Something else on the port (another service, a hoglab on another data dir, a listener posing as the demo) is
    a :class:`CommandError` and gets no key: the kernels would talk to the wrong place, and a second service
    cannot take the port.
    """
    import httpx

    from hoglab.server.store.bootstrap import DEMO_PROJECT_NAME, KEY_FILENAME

    try:
        if not _proves_data_dir(url, data_dir):
            raise CommandError(
                f"{url} answers, but does not prove it is the hoglab of {data_dir}: refusing to send it the key; "
                "stop what runs there or choose another port (make lab PORT=8001)"
            )
    except httpx.ConnectError:
        return None
    try:
        key = (data_dir / KEY_FILENAME).read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        key = ""
    try:
        headers = {"Authorization": f"Bearer {key}"} if key else {}  # no key file yet: nothing of ours runs there
        answer = httpx.get(f"{url}/api/projects/", headers=headers, timeout=5)
    except httpx.ConnectError:
        return None
    except httpx.HTTPError as exc:
        raise CommandError(f"something on {url} does not answer like hoglab ({type(exc).__name__}); "
                           "stop it or choose another port (make lab PORT=8001)") from None  # fmt: skip
    body = answer.json() if answer.headers.get("content-type", "").startswith("application/json") else {}
    demo = [p for p in body.get("results", []) if p.get("name") == DEMO_PROJECT_NAME] if answer.is_success else []
    if not demo:
        raise CommandError(
            f"{url} answers, but not as the demo service of {data_dir} (HTTP {answer.status_code}); stop what runs "
            "there or choose another port (make lab PORT=8001)"
        )
    return DemoService(url, key, int(demo[0]["id"]))


def run(args: argparse.Namespace) -> int:
    import importlib.util

    from hoglab.errors import HoglabError
    from hoglab.server.engine import EngineError

    if importlib.util.find_spec("jupyterlab") is None:
        raise CommandError("JupyterLab is not installed here: `make lab` installs it (pip install 'hoglab[lab]')")
    config = server_config(args.data_dir)
    host = f"[{args.host}]" if ":" in args.host else args.host
    service: LocalService | None = None
    try:
        demo = running_demo(f"http://{host}:{args.port}", config.data_dir) if args.port else None
        if demo is not None:
            print(f"hoglab lab: reusing the demo service already at {demo.url}", flush=True)
        else:
            from hoglab.local import start_local_service

            print(f"hoglab lab: starting the demo service on {config.data_dir}", flush=True)
            notice = DemoLoadNotice("hoglab lab: ")
            service = start_local_service(config.data_dir, demo=True, demo_history=True, host=args.host,
                                          port=args.port, on_demo_load=notice)  # fmt: skip
            notice.done()
            demo = DemoService(service.url, service.api_key, service.project_id)
        return _lab(args, demo)
    except OSError as exc:
        raise CommandError(f"cannot listen on {args.host}:{args.port}: {exc.strerror or exc}") from None
    except (EngineError, HoglabError, RuntimeError) as exc:
        raise CommandError(str(exc)) from None
    finally:
        if service is not None:
            service.stop()


def _stop_on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt  # `kill` ends the lab as Ctrl-C does: JupyterLab first, then the service


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def jupyter_command(folder: Path, lab_port: int, extra: list[str], *, root: bool, token: str) -> list[str]:
    """The ``jupyter lab`` command line: folder, port, token, quiet log, ``--allow-root`` for root, ``extra``.

    ``extra`` (``LAB_ARGS``) comes last, so it overrides the rest (``--port``, ``--log-level=INFO``).

    >>> jupyter_command(Path("nb"), 8890, ["--no-browser"], root=True, token="t")[3:]
    ... # doctest: +NORMALIZE_WHITESPACE
    ['--ServerApp.root_dir=nb', '--ServerApp.answer_yes=True', '--ServerApp.port=8890',
     '--IdentityProvider.token=t', '--log-level=WARN', '--ServerApp.allow_root=True', '--no-browser']
    """
    # answer_yes: one Ctrl-C stops JupyterLab, without its "Shut down this Jupyter server (y/[n])?" question. A
    # token of ours (not one JupyterLab generates) spares its banner of three addresses: ours is the one printed.
    command = [sys.executable, "-m", "jupyterlab", f"--ServerApp.root_dir={folder}", "--ServerApp.answer_yes=True",
               f"--ServerApp.port={lab_port}", f"--IdentityProvider.token={token}", "--log-level=WARN"]  # fmt: skip
    if root:
        command.append("--ServerApp.allow_root=True")
    return [*command, *extra]


def _runtime_file(pid: int) -> Path:
    from jupyter_core.paths import jupyter_runtime_dir

    return Path(jupyter_runtime_dir()) / f"jpserver-{pid}.json"


def lab_url(info: dict[str, Any]) -> str:
    """The address to open from a Jupyter server's runtime file: its URL, ``lab`` and the token.

    >>> lab_url({"url": "http://localhost:8888/", "token": "abc"})
    'http://localhost:8888/lab?token=abc'
    """
    url = str(info["url"]).rstrip("/") + "/lab"
    return f"{url}?token={info['token']}" if info.get("token") else url


def _announce_when_up(lab: subprocess.Popen[bytes], timeout: float = 120.0) -> None:
    """Print the one address to open once JupyterLab has written its runtime file (it then answers)."""
    path = _runtime_file(lab.pid)
    deadline = time.monotonic() + timeout
    while lab.poll() is None and time.monotonic() < deadline:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # not written yet, or half written
            time.sleep(0.2)
            continue
        print(f"hoglab lab: JupyterLab is up; open {lab_url(info)}   (Ctrl-C stops it and the service)", flush=True)
        return


def _lab(args: argparse.Namespace, demo: DemoService) -> int:
    folder = args.notebooks or (Path("notebooks") if Path("notebooks").is_dir() else Path.cwd())
    extra = list(args.jupyter)
    if extra[:1] == ["--"]:
        extra = extra[1:]
    if args.no_browser:
        extra.insert(0, "--no-browser")
    root = _is_root() and not any(arg.startswith(("--allow-root", "--ServerApp.allow_root")) for arg in extra)
    command = jupyter_command(folder, args.lab_port, extra, root=root, token=secrets.token_hex(24))
    env = kernel_env(demo)
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])  # `!pip` is this venv's
    print(
        f"hoglab lab: JupyterLab on {folder}/, every kernel pointed at the demo: HOGLAB_HOST={demo.url} "
        f"HOGLAB_API_KEY={demo.api_key} HOGLAB_PROJECT_ID={demo.project_id}; hoglab.connect() uses them",
        flush=True,
    )
    if root:
        print("hoglab lab: running as root, so JupyterLab is given --allow-root (it refuses root otherwise)",
              flush=True)  # fmt: skip
    print(f"hoglab lab: starting JupyterLab on port {args.lab_port} (its warnings only below)...", flush=True)
    previous = signal.signal(signal.SIGTERM, _stop_on_sigterm)
    lab = subprocess.Popen(command, env=env)
    try:
        _announce_when_up(lab)
        return lab.wait()
    except KeyboardInterrupt:
        lab.terminate()  # JupyterLab shuts its kernels down on SIGTERM
        try:
            lab.wait(30)
        except subprocess.TimeoutExpired:
            lab.kill()
            lab.wait()
        print("hoglab lab: stopped", flush=True)
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
