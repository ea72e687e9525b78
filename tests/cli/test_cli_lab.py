"""``make lab`` from a fresh clone: JupyterLab starts on ``LAB_PORT`` as the current user (root here and in CI: it
is given ``--allow-root``, and says so), prints the one address to open, and a notebook's kernel reads from the demo
service it started; a second ``hoglab lab --no-browser`` reuses that service and answers too; a port held by
something else is one clear line.

What "fresh clone" must prove is that the committed tree alone is enough: the Makefile's ``lab`` target, the
``lab`` extra of pyproject.toml, the ``hoglab lab`` command, no data dir, no venv. So the test copies exactly the
files git would check out (tracked, plus new files not ignored) into an empty folder and runs ``make lab`` there,
which makes the venv, installs hoglab with its ``lab`` extra (the Makefile's installer, uv, really runs, from the
clone's pyproject.toml), seeds a new demo data dir and opens JupyterLab. The clone's venv also sees this suite's
installed packages (one ``.pth`` line; packages only, not the suite's own editable hoglab): pip uses them to put uv
into the venv, and pip, the fallback, would find every requirement satisfied; uv installs the extra's packages
from its cache (downloading what it lacks), checking their names and versions.
A kernel is then driven as JupyterLab drives it, over the Jupyter server's REST API and kernel websocket.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from clitesting import one_clear_line, run

from hoglab.local import LocalService

ROOT = Path(__file__).resolve().parents[2]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
    pytest.mark.skipif(not (shutil.which("git") and shutil.which("make") and (ROOT / ".git").exists()),
                       reason="needs git, make and a git checkout"),
]  # fmt: skip


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _clone(target: Path) -> None:
    """The files a clone of this checkout (with its changes committed) holds: tracked, or new and not ignored."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.split(b"\0")  # fmt: skip
    for name in filter(None, (item.decode() for item in listed)):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the working tree is not in the clone either
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)


def _venv_seeing_this_suites_packages(clone: Path) -> None:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(clone / ".venv")], check=True)
    [site] = (clone / ".venv" / "lib").glob("python3*/site-packages")
    # A plain path line: the folder's own .pth files (this suite's editable hoglab) are not read.
    (site / "suite-packages.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")


def _wait_for(lines: list[str], process: subprocess.Popen[str], predicate: Any, timeout: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            break
        lines.append(line.rstrip("\n"))
        if predicate(lines[-1]):
            return lines[-1]
    raise AssertionError("\n".join(lines[-60:]))


def _stop(process: subprocess.Popen[str]) -> str:
    """Ctrl-C to the whole job (make, hoglab lab, JupyterLab), as a terminal sends it; what it printed then."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGINT)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.stdout is not None
    rest = process.stdout.read()
    process.stdout.close()
    return rest


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


def _opened(line: str) -> tuple[str, str]:
    """The address ``hoglab lab`` says to open, split into JupyterLab's base URL and its token."""
    url = re.search(r"open (http://\S+)/lab\?token=(\w+)", line)
    assert url is not None, line
    return url.group(1), url.group(2)


def _lab_up(lab: str, token: str) -> dict[str, Any]:
    """JupyterLab's ``/api/status`` at the address printed (it is printed once the server answers)."""
    answer = httpx.get(f"{lab}/api/status", params={"token": token}, timeout=30)
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


class Kernel:
    """One kernel of a JupyterLab server, driven as the browser drives it: REST to start, a websocket to run."""

    def __init__(self, lab: str, token: str, *, notebook: str | None) -> None:
        import websocket

        self.lab, self.token = lab, token
        body = {"kernel": {"name": "python3"}, "type": "notebook", "path": notebook or "Untitled.ipynb",
                "name": notebook or "Untitled.ipynb"}  # fmt: skip
        started = httpx.post(f"{lab}/api/sessions", params={"token": token}, json=body, timeout=60)
        assert started.status_code == 201, started.text
        self.session = started.json()["id"]
        kernel = started.json()["kernel"]["id"]
        self.socket = websocket.create_connection(
            f"{lab.replace('http', 'ws', 1)}/api/kernels/{kernel}/channels?token={token}", timeout=180
        )

    def run(self, code: str) -> str:
        """Run ``code``; its stdout, or the error's traceback raised."""
        msg_id = uuid.uuid4().hex
        self.socket.send(json.dumps({
            "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "test", "session": self.session,
                       "version": "5.3"},
            "parent_header": {}, "metadata": {}, "channel": "shell",
            "content": {"code": code, "silent": False, "store_history": False, "user_expressions": {},
                        "allow_stdin": False, "stop_on_error": True},
        }))  # fmt: skip
        out: list[str] = []
        while True:
            message = json.loads(self.socket.recv())
            if message.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = message["msg_type"], message["content"]
            if kind == "stream" and content["name"] == "stdout":
                out.append(content["text"])
            elif kind == "error":
                raise AssertionError("\n".join(content["traceback"]))
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)

    def close(self) -> None:
        self.socket.close()
        httpx.delete(f"{self.lab}/api/sessions/{self.session}", params={"token": self.token}, timeout=60)


def _first_code_cell(notebook: Path) -> str:
    cells = json.loads(notebook.read_text())["cells"]
    return next("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


# What a kernel reports: where its client points, whether the tour started a service of its own, a count it read.
REPORT = """
import json, os
from hoglab.notebook.tours import check_tour_target
check_tour_target(client)  # the tours may write into the demo the lab points at
print(json.dumps({"env": os.environ.get("HOGLAB_HOST"), "host": client.host, "project": client.project_id,
                  "own_service": "service" in globals(),
                  "purchases": int(client.hogql("select count() as n from events where event = 'purchase'")["n"][0])}))
"""


@pytest.fixture
def clone(tmp_path: Path) -> Iterator[Path]:
    target = tmp_path / "hoglab"
    _clone(target)
    assert not (target / ".venv").exists() and not (target / ".hoglab-data").exists()
    _venv_seeing_this_suites_packages(target)
    yield target


def test_make_lab_from_a_fresh_clone_opens_jupyterlab_whose_kernels_read_the_demo(clone: Path) -> None:
    service_port, lab_port, second_port = _free_port(), _free_port(), _free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith(("HOGLAB_", "POSTHOG_"))}
    env.update(PYTHONUNBUFFERED="1", HOGLAB_AUTO_MATERIALIZE="0")
    make = subprocess.Popen(
        ["make", "lab", f"PORT={service_port}", f"LAB_PORT={lab_port}", "LAB_ARGS=--no-browser"], cwd=clone, env=env,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    second: subprocess.Popen[str] | None = None
    kernels: list[Kernel] = []
    try:
        opened = _wait_for(lines, make, lambda line: line.startswith("hoglab lab: JupyterLab is up; open"), timeout=400)
        printed = "\n".join(lines)
        # It said what it did while making the environment, and the installer really installed the clone's hoglab.
        assert "make: creating the virtual environment" not in printed  # the venv was there (made above)
        assert "make: installing hoglab, the notebook extras and JupyterLab" in printed
        assert re.search(r"^ \+ hoglab==|Successfully installed .*hoglab", printed, re.M), printed
        assert "make: .venv is ready" in printed
        assert "hoglab lab: starting the demo service on" in printed
        assert "hoglab lab: loading the demo data (first start only, about" in printed  # a first start: it loads
        assert re.search(r"^hoglab lab: demo data loaded in \d+ s$", printed, re.M), printed
        # Root gets --allow-root, and one line says so; anyone else gets neither.
        assert ("hoglab lab: running as root, so JupyterLab is given --allow-root" in printed) == _is_root()
        lab, token = _opened(opened)
        assert lab == f"http://localhost:{lab_port}", opened  # LAB_PORT, as the Makefile passes it
        assert "started" in _lab_up(lab, token)
        assert printed.count("token=") == 1, printed  # one address to open, not JupyterLab's banner of three
        url = f"http://127.0.0.1:{service_port}"
        key = (clone / ".hoglab-data" / "local_api_key").read_text().strip()
        assert f"HOGLAB_HOST={url} HOGLAB_API_KEY={key}" in printed

        # The number straight from the service, over HTTP, for the kernels to match.
        http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60)
        [demo] = [p for p in http.get("/api/projects/").json()["results"] if p["name"] == "Demo project"]
        answer = http.post(f"/api/projects/{demo['id']}/query/", json={"query": {
            "kind": "HogQLQuery", "query": "select count() from events where event = 'purchase'"}})  # fmt: skip
        purchases = answer.json()["results"][0][0]
        assert purchases > 1000

        tour = clone / "notebooks" / "04-metric-experiments.ipynb"
        new = "import hoglab\nclient = hoglab.connect()"  # what a new notebook would say
        for notebook, setup in ((tour.name, _first_code_cell(tour)), (None, new)):
            kernel = Kernel(lab, token, notebook=notebook)
            kernels.append(kernel)
            seen = json.loads(kernel.run(setup + "\n" + REPORT).strip().splitlines()[-1])
            assert seen == {"env": url, "host": url, "project": demo["id"], "own_service": False,
                            "purchases": purchases}, notebook  # fmt: skip

        # A second lab on the same port and data dir reuses the running service rather than failing on the port;
        # `hoglab lab --no-browser` as the current user, as a newcomer would type it, reaches its own /api/status.
        second = subprocess.Popen(
            [str(clone / ".venv" / "bin" / "hoglab"), "lab", "--port", str(service_port), "--data-dir",
             str(clone / ".hoglab-data"), "--lab-port", str(second_port), "--no-browser"],
            cwd=clone, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
        )  # fmt: skip
        again: list[str] = []
        opened = _wait_for(again, second, lambda line: line.startswith("hoglab lab: JupyterLab is up; open"),
                           timeout=120)  # fmt: skip
        assert f"hoglab lab: reusing the demo service already at {url}" in again
        assert not any("loading the demo data" in line for line in again)  # nothing loads this time
        second_lab, second_token = _opened(opened)
        assert second_lab == f"http://localhost:{second_port}" and "started" in _lab_up(second_lab, second_token)
        http.close()
    finally:
        for kernel in kernels:
            kernel.close()
        if second is not None:
            _stop(second)
        ending = _stop(make)
    # make itself ends by the signal (as in a terminal); hoglab lab stopped JupyterLab, then the service.
    assert "hoglab lab: stopped" in ending and "Traceback" not in ending, ending[-3000:]
    with pytest.raises(httpx.ConnectError):  # Ctrl-C stopped the service too
        httpx.get(f"http://127.0.0.1:{service_port}/api/projects/", timeout=5)


def test_a_port_held_by_another_service_is_one_clear_line(capsys, tmp_path: Path, hoglab_service: LocalService):
    port = hoglab_service.url.rsplit(":", 1)[1]
    status, _, err = run(capsys, "lab", "--port", port, "--data-dir", str(tmp_path / "other"))
    line = one_clear_line(err)
    # Another data dir's hoglab cannot prove it is this one's: no key leaves (issue 35, F4).
    assert status == 1 and f"{hoglab_service.url} answers, but does not prove it is the hoglab of" in line
    assert "refusing to send it the key" in line
    assert "PORT=8001" in line
