"""A data dir is its owner's only (issue 35, F5): the service creates it 0700 with 0600 files, and tightens one an
older version left readable by everyone, with a warning. Against ``hoglab serve`` in a subprocess."""

from __future__ import annotations

import logging
import os
import stat
from pathlib import Path

import pytest

from hoglab.server.store import Store
from served import ServedProcess


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def _open_to_others(root: Path) -> list[str]:
    """Entries another user could read: open themselves, and reachable through folders open to them."""
    found = []
    for current, dirs, files in os.walk(root):
        if _mode(Path(current)) & 0o077:
            found.append(current)
            continue
        dirs[:] = []  # a closed folder: nothing under it can be reached
        found += [os.path.join(current, f) for f in files if _mode(Path(current, f)) & 0o077 and current != str(root)]
    return found


@pytest.mark.slow
def test_a_new_data_dir_and_its_files_are_owner_only(tmp_path: Path) -> None:
    data = tmp_path / "fresh"
    with ServedProcess(data) as served:
        project = served.project("p")
        with Store.open_at(data) as store:
            token = store.projects.get(project.id).api_token  # type: ignore[union-attr]
        answer = project.http.post("/batch/", json={"api_key": token, "batch": [{"event": "e", "distinct_id": "u"}]})
        assert answer.status_code == 200, answer.text
        assert project.query("select count() from events").json()["results"] == [[1]]
        assert _mode(data) == 0o700
        top = list(data.iterdir())
        assert any(p.name == "hoglab.sqlite3" for p in top) and any(p.name == "events" for p in top)
        assert {p.name: oct(_mode(p)) for p in top} == {
            p.name: oct(0o700 if p.is_dir() else 0o600) for p in top
        }
        assert _open_to_others(data) == []


def test_an_open_data_dir_is_tightened_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    data = tmp_path / "old"
    (data / "events" / "store").mkdir(parents=True, mode=0o755)
    for folder in (data, data / "events", data / "events" / "store"):
        folder.chmod(0o755)
    (data / "events" / "store" / "part.bin").write_bytes(b"x")
    (data / "events" / "store" / "part.bin").chmod(0o644)
    with caplog.at_level(logging.WARNING, logger="hoglab.server"):
        Store.open_at(data).close()  # what the service does first when it opens its data dir
    assert any("readable by other users" in r.getMessage() and str(data) in r.getMessage() for r in caplog.records)
    assert _mode(data) == 0o700 and _mode(data / "events") == 0o700
    assert _mode(data / "events" / "store" / "part.bin") == 0o600
    assert _mode(data / "hoglab.sqlite3") == 0o600
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hoglab.server"):
        Store.open_at(data).close()
    assert not [r for r in caplog.records if "readable" in r.getMessage()]  # once tightened, no more warnings
