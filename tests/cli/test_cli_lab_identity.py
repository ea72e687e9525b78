"""``hoglab lab`` sends its all-projects key only to the hoglab of its own data dir (issue 35, F4): a listener on
the port that answers like the demo, but cannot prove it knows the data dir's secret, gets no key and the command
refuses in one clear line; the real service of the data dir is reused. Against a real ``hoglab serve``."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from clitesting import hoglab, one_clear_line

from hoglab.cli.lab import running_demo
from hoglab.server.store import Store
from hoglab.server.store.bootstrap import DEMO_PROJECT_NAME, ensure_local_credentials
from served import ServedProcess


class _Impostor(BaseHTTPRequestHandler):
    """Answers as the demo service would, proofs made up; keeps every Authorization header it is sent."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if auth := self.headers.get("Authorization"):
            self.seen.append(auth)
        if self.path.startswith("/hoglab/identity"):
            body: Any = {"service": "hoglab", "proof": "0" * 64}
        else:
            body = {"results": [{"id": 1, "name": DEMO_PROJECT_NAME}], "next": None}
        data = json.dumps(body).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


@pytest.fixture
def impostor() -> Iterator[tuple[int, list[str]]]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Impostor)
    _Impostor.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], _Impostor.seen
    server.shutdown()
    server.server_close()


def _data_dir(path: Path) -> Path:
    with Store.open_at(path) as store:
        ensure_local_credentials(store, demo=True)  # the demo project and its key file, as `hoglab demo` makes
    return path


def test_lab_refuses_a_listener_that_answers_like_the_demo_and_sends_it_no_key(
    tmp_path: Path, impostor: tuple[int, list[str]]
) -> None:
    port, seen = impostor
    data = _data_dir(tmp_path / "data")
    done = subprocess.run([*hoglab(), "lab", "--port", str(port), "--data-dir", str(data)],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert done.returncode != 0
    line = one_clear_line(done.stderr)
    assert "does not prove it is the hoglab of" in line and "refusing to send it the key" in line
    assert seen == []  # no Authorization header ever reached it


@pytest.mark.slow
def test_lab_reuses_the_service_of_its_data_dir_and_refuses_another_data_dirs(tmp_path: Path) -> None:
    data, other = _data_dir(tmp_path / "data"), _data_dir(tmp_path / "other")
    with ServedProcess(data) as served:
        demo = running_demo(served.url, data)
        assert demo is not None and demo.url == served.url
        assert demo.api_key == (data / "local_api_key").read_text().strip()
        with pytest.raises(Exception, match="does not prove it is the hoglab of"):
            running_demo(served.url, other)  # a service of another data dir: the other key is never sent
    assert running_demo(served.url, data) is None  # nothing listens any more: the lab would start its own
