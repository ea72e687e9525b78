"""``hoglab demo`` (the README's main job, in a subprocess) and ``hoglab report`` over HTTP."""

from __future__ import annotations

import os
import re
import subprocess
import time

import httpx
from clitesting import (
    hoglab as _hoglab,
    interrupt as _interrupt,
    one_clear_line as _one_clear_line,
    run as _run,
)


def test_demo_analyses_the_experiment_writes_the_report_then_keeps_serving(tmp_path):
    """The README's main job: the demo service, its experiment's verdict printed and the report written, then
    the service answers until Ctrl-C. Only the first start says it loads the demo data (and loads it)."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    out = tmp_path / "report"
    process = subprocess.Popen(
        [*_hoglab(), "demo", "--port", "0", "--data-dir", str(tmp_path / "data"), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
    )  # fmt: skip
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 300  # a first start under a heavy load
        while not (lines and lines[-1].startswith("serving until Ctrl-C")) and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip("\n"))
        text = "\n".join(lines)
        assert lines and lines[-1].startswith("serving until Ctrl-C"), text
        assert "Verdict: Significant:" in text and "Traffic split: as planned" in text
        assert "loading the demo data (first start only, about" in text
        assert re.search(r"^demo data loaded in \d+ s$", text, re.M), text
        assert (out / "report.html").read_text().count("data:image/png;base64,") == 6
        assert "Novelty (conversion rate): test's effect by days since first exposure" in text
        assert sorted(p.name for p in (out / "figures").iterdir()) == [
            "effect.png", "metric.png", "novelty.png", "over_time.png", "posteriors.png", "srm.png",
        ]  # fmt: skip
        url = next(line.split()[2] for line in lines if line.startswith("serving at "))
        key = next(line.split(":")[1].split()[0] for line in lines if line.startswith("personal API key:"))
        answer = httpx.get(f"{url}/api/projects/", headers={"Authorization": f"Bearer {key}"})
        assert answer.status_code == 200 and answer.json()["count"] >= 1
    finally:
        _interrupt(process)
    assert process.returncode == 0
    again = subprocess.run(
        [*_hoglab(), "demo", "--port", "0", "--data-dir", str(tmp_path / "data"), "--out", str(out), "--no-serve"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert again.returncode == 0 and "Verdict: Significant:" in again.stdout, again.stdout + again.stderr
    assert "loading the demo data" not in again.stdout and "demo data loaded" not in again.stdout, again.stdout


def test_report_of_a_draft_over_http_and_of_a_missing_experiment(capsys, tmp_path, monkeypatch, make_project):
    project = make_project()
    created = project.http.post(
        f"/api/projects/{project.id}/experiments/", json={"name": "Draft", "feature_flag_key": "cli-report-draft"}
    ).json()
    monkeypatch.setenv("HOGLAB_HOST", project.service.url)
    monkeypatch.setenv("HOGLAB_API_KEY", project.key)
    monkeypatch.delenv("HOGLAB_PROJECT_ID", raising=False)  # the key reaches one project: the client finds it
    status, out, _ = _run(capsys, "report", str(created["id"]), "--out", str(tmp_path / "r"))
    assert status == 0 and "Draft (#" in out and "is a draft" in out
    assert "is a draft" in (tmp_path / "r" / "report.html").read_text()
    status, _, err = _run(capsys, "report", "999999", "--out", str(tmp_path / "r"))
    assert status == 1 and "404" in _one_clear_line(err) and project.key not in err
