"""``hoglab load``: a file stored whole or refused whole, and an unknown project refused before any engine opens."""

from __future__ import annotations

import json
import subprocess
import sys

from clitesting import (
    hoglab_cmd as _hoglab_cmd,
    one_clear_line as _one_clear_line,
    run as _run,
)


def test_load_stores_a_file_and_refuses_a_bad_one_whole(capsys, tmp_path):
    status, out, _ = _run(capsys, "project", "create", "Loads", "--data-dir", str(tmp_path))
    assert status == 0
    project = out.split("project id:")[1].split()[0]
    good = tmp_path / "good.txt"  # a name that says nothing: --format does
    good.write_text(
        "".join(
            json.dumps({"event": "signup", "distinct_id": f"u{i}", "timestamp": f"2025-01-0{i + 1}T10:00:00Z"}) + "\n"
            for i in range(3)
        )
    )
    loaded = _hoglab_cmd("load", "--project", project, str(good), "--format", "jsonl", "--data-dir", str(tmp_path))
    assert loaded.returncode == 0, loaded.stderr
    assert "loaded 3 events (3 new persons)" in loaded.stdout

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"event": "x", "distinct_id": "a"}\n{"event": 5, "distinct_id": "b"}\nnot json\n')
    refused = _hoglab_cmd("load", "--project", project, str(bad), "--data-dir", str(tmp_path))
    assert refused.returncode == 1
    assert "Traceback" not in refused.stderr
    assert "nothing was loaded" in refused.stderr
    assert "line 2" in refused.stderr and "line 3" in refused.stderr

    count = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys; from hoglab.server.engine.chdb import ChdbEngine; "
            "e = ChdbEngine(sys.argv[1]); "
            "print(e.execute('SELECT count() AS n FROM events WHERE team_id = ' + sys.argv[2]).column('n')[0])",
            str(tmp_path / "events"),
            project,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert count.stdout.strip() == "3", count.stderr


def test_load_of_an_unknown_project_is_one_line(capsys, tmp_path):
    events = tmp_path / "events.jsonl"
    events.write_text('{"event": "x", "distinct_id": "a"}\n')
    assert _run(capsys, "project", "create", "Shop", "--data-dir", str(tmp_path))[0] == 0
    status, _, err = _run(capsys, "load", "--project", "99", str(events), "--data-dir", str(tmp_path))
    assert status == 2
    assert "no project with id 99" in _one_clear_line(err)
