"""``hoglab materialize``: event and person properties as columns, reported and listed with their fill."""

from __future__ import annotations

import json
import subprocess

from clitesting import (
    hoglab as _hoglab,
    run as _run,
)


def test_materialize_adds_columns_reports_them_and_their_fill(capsys, tmp_path):
    _run(capsys, "project", "create", "Shop", "--data-dir", str(tmp_path))
    events = tmp_path / "events.jsonl"
    events.write_text("".join(
        json.dumps({"event": "e", "distinct_id": f"d{i}", "timestamp": f"2026-01-01T00:00:0{i}Z",
                    "properties": {"plan": "pro"} if i % 2 else {}}) + "\n" for i in range(6)
    ))  # fmt: skip
    common = ["--data-dir", str(tmp_path)]
    subprocess.run([*_hoglab(), "load", "--project", "1", str(events), *common], check=True, capture_output=True)
    made = subprocess.run([*_hoglab(), "materialize", "--project", "1", "plan", "$browser", *common],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "'plan' -> column `mat_plan` (3 of project 1's 6 events have it)" in made.stdout
    assert "'$browser' -> column `mat_$browser` (0 of project 1's 6 events have it)" in made.stdout
    status = subprocess.run([*_hoglab(), "materialize", "--project", "1", "--status", *common],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    listed = dict(line.split("\t")[:2] for line in status.stdout.splitlines())
    assert listed == {"'$browser'": "`mat_$browser`", "'plan'": "`mat_plan`"}
    nothing = subprocess.run([*_hoglab(), "materialize", "--project", "1", *common], capture_output=True, text=True)
    assert nothing.returncode == 1 and "name at least one property key" in nothing.stderr
    elsewhere = subprocess.run([*_hoglab(), "materialize", "--project", "99", "plan", *common],
                               capture_output=True, text=True, timeout=120)  # fmt: skip
    assert elsewhere.returncode == 2 and "no project with id 99" in elsewhere.stderr


def test_materialize_person_properties_by_hand(capsys, tmp_path):
    """``--person KEY`` makes ``pmat_<key>`` on persons, reported on the project's persons, listed by --status
    next to the event keys; an event key of the same name is a different column."""
    _run(capsys, "project", "create", "People", "--data-dir", str(tmp_path))
    events = tmp_path / "events.jsonl"
    # three persons, two of whom $set an email
    events.write_text("".join(
        json.dumps({"event": "e", "distinct_id": f"d{i}", "timestamp": f"2026-01-01T00:00:0{i}Z",
                    "properties": {"$set": {"email": f"p{i}@x.io"}} if i < 2 else {"email": "event-side"}}) + "\n"
        for i in range(3)
    ))  # fmt: skip
    common = ["--data-dir", str(tmp_path)]
    subprocess.run([*_hoglab(), "load", "--project", "1", str(events), *common], check=True, capture_output=True)
    made = subprocess.run([*_hoglab(), "materialize", "--project", "1", "email", "--person", "email", *common],
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "'email' -> column `mat_email` (1 of project 1's 3 events have it)" in made.stdout
    assert "person 'email' -> column `pmat_email` (2 of project 1's 3 persons have it)" in made.stdout
    status = subprocess.run([*_hoglab(), "materialize", "--project", "1", "--status", *common],
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert status.returncode == 0, status.stderr
    listed = dict(line.split("\t")[:2] for line in status.stdout.splitlines())
    assert listed == {"'email'": "`mat_email`", "person 'email'": "`pmat_email`"}
    helped = subprocess.run([*_hoglab(), "materialize", "--help"], capture_output=True, text=True, timeout=60)
    assert "--person KEY" in helped.stdout and "person property" in helped.stdout
