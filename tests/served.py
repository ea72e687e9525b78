"""``hoglab serve`` itself in a subprocess: for attacks whose proof is the serving process's own memory (the test
process holds its own engine, so its RSS says nothing about a service's), and for what a killed service keeps.

    with ServedProcess(tmp_path, "--memory-budget", "640MiB") as served:
        project = served.project("a")          # a project and an httpx client with a key to it
        served.rss(), served.peak_rss()        # the service's resident memory now, and its high-water mark

    with ServedProcess(tmp_path, python_heap=True) as served:
        served.python_heap()                   # the service's Python heap now (tracemalloc), without the engine's
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from hoglab.server.store import Store

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
HEAP_HOOK = HERE / "served_heap"  # its sitecustomize.py traces the Python heap and reports it on SIGUSR1


@dataclass
class ServedProject:
    id: int
    http: httpx.Client

    def query(self, sql: str, *, refresh: str = "force_blocking", timeout: float = 120) -> httpx.Response:
        body = {"query": {"kind": "HogQLQuery", "query": sql}, "refresh": refresh}
        return self.http.post(f"/api/projects/{self.id}/query/", json=body, timeout=timeout)

    def arrow(self, sql: str, *, timeout: float = 120) -> httpx.Response:
        body = {"query": {"kind": "HogQLQuery", "query": sql}}
        return self.http.post(f"/api/projects/{self.id}/query/arrow/", json=body, timeout=timeout)


class ServedProcess:
    """A ``hoglab serve`` process on ``data_dir`` with ``args`` and ``env`` added; a context manager.

    ``python_heap``: trace the process's Python heap (tracemalloc, from its start) for :meth:`python_heap`.
    """

    def __init__(
        self, data_dir: Path, *args: str, env: dict[str, str] | None = None, python_heap: bool = False
    ) -> None:
        self.data_dir = data_dir
        self._heap_file = data_dir.parent / f"{data_dir.name}.heap"
        self._heap_answers = 0
        data_dir.mkdir(parents=True, exist_ok=True)
        with Store.open_at(data_dir) as store:
            store.users.default()  # the store exists before the service opens it
        script = Path(sys.executable).with_name("hoglab")
        command = [str(script)] if script.exists() else [sys.executable, "-m", "hoglab.cli"]
        environ = {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(SRC), "HOGLAB_RATE_LIMITS": "off",
                   **(env or {})}  # fmt: skip
        if python_heap:
            environ["PYTHONPATH"] = f"{HEAP_HOOK}{os.pathsep}{SRC}"
            environ["HOGLAB_TEST_HEAP_FILE"] = str(self._heap_file)
        self.process = subprocess.Popen(
            [*command, "serve", "--port", "0", "--data-dir", str(data_dir), *args],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=environ,
        )  # fmt: skip
        self._clients: list[httpx.Client] = []
        assert self.process.stdout is not None
        first = self.process.stdout.readline()  # "hoglab 0.1.0 serving DIR at http://127.0.0.1:PORT  (...)"
        if " at http://" not in first:
            self.close()
            raise RuntimeError(f"hoglab serve did not start: {first!r}")
        self.url = first.split(" at ")[1].split()[0]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                httpx.get(f"{self.url}/api/projects/", timeout=1)
                return
            except httpx.HTTPError:
                time.sleep(0.05)
        self.close()
        raise RuntimeError("hoglab serve did not answer")

    def project(self, name: str) -> ServedProject:
        """A new project with a key of its own (made in the store, which the service reads at each request)."""
        with Store.open_at(self.data_dir) as store:
            project = store.projects.create(name)
            _, key = store.keys.create(store.users.default().id, ["*"], [project.id])
        http = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {key}"}, timeout=120)
        self._clients.append(http)
        return ServedProject(project.id, http)

    def _status(self, field: str) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024  # kB
        raise KeyError(field)

    def rss(self) -> int:
        """The service's resident memory now (bytes)."""
        return self._status("VmRSS")

    def python_heap(self) -> int:
        """The service's Python heap now, after a garbage collection (bytes; needs ``python_heap=True``)."""
        self._heap_answers += 1
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                answer, size = self._heap_file.read_text().split()
            except (FileNotFoundError, ValueError):
                answer, size = "0", "0"
            if int(answer) >= self._heap_answers:
                return int(size)
            time.sleep(0.02)
        raise RuntimeError("hoglab serve did not report its Python heap (started with python_heap=True?)")

    def peak_rss(self) -> int:
        """The service's resident high-water mark (bytes) since it started or since :meth:`reset_peak`."""
        return self._status("VmHWM")

    def reset_peak(self) -> None:
        """Start the high-water mark again from the current resident memory (Linux's ``clear_refs`` 5)."""
        Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")

    def kill(self) -> None:
        """Stop the service the hard way: SIGKILL, no shutdown, no flush."""
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(30)
        self.close()

    def close(self) -> None:
        for client in self._clients:
            client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)  # as a user stops it: a clean shutdown
            try:
                self.process.wait(60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(30)
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> ServedProcess:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
