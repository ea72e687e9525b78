"""Where a newcomer's first ``make demo`` spends its time, from a fresh clone: the venv, the install, the demo's load,
the verdict; then a later start to serving, and ``make lab`` to the address to open.

A fresh clone (``git clone`` of this checkout's HEAD into a temporary folder, so commit first), no venv, no data; by
default an empty uv cache too (``--warm-cache`` keeps the user's), so the install downloads every wheel as on a new
machine. Each phase is timed from the lines ``make`` and ``hoglab`` print (the moment each line arrives), with the
load average at the start and the end: the machine is shared, and a figure means little without it.

Run (from the repository root): ``.venv/bin/python bench/bench_setup.py [--warm-cache] [--lab]``
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _load() -> str:
    return "load average " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def _timed(command: list[str], cwd: Path, env: dict[str, str], marks: dict[str, str], until: str,
           timeout: float = 900) -> dict[str, float]:  # fmt: skip
    """Run ``command`` until a line matches ``until``; seconds from the start to the first line matching each mark."""
    start = time.monotonic()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                               start_new_session=True)  # fmt: skip
    assert process.stdout is not None
    seen: dict[str, float] = {}
    lines: list[str] = []
    try:
        while time.monotonic() - start < timeout:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line.rstrip())
            for name, pattern in marks.items():
                if name not in seen and re.search(pattern, line):
                    seen[name] = time.monotonic() - start
            if re.search(until, line):
                break
        else:
            raise TimeoutError("\n".join(lines[-40:]))
        if not re.search(until, lines[-1] if lines else ""):
            raise RuntimeError("\n".join(lines[-40:]))
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        process.stdout.close()
    return seen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--warm-cache", action="store_true", help="keep the user's uv cache (default: an empty one)")
    parser.add_argument("--lab", action="store_true", help="then time `make lab` to the address to open")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="hoglab-setup-") as tmp:
        clone = Path(tmp) / "hoglab"
        subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("HOGLAB_", "POSTHOG_", "VIRTUAL_ENV"))}
        env["PYTHONUNBUFFERED"] = "1"
        if not args.warm_cache:
            env["UV_CACHE_DIR"] = str(Path(tmp) / "uv-cache")
        port = str(_free_port())
        head = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, text=True).strip()
        print(f"fresh clone of {head}, {'warm' if args.warm_cache else 'empty'} uv cache; {_load()}", flush=True)
        first = _timed(["make", "demo", f"PORT={port}"], clone, env, {
            "venv made": r"putting the installer uv", "installed": r"^make: \.venv is ready",
            "service starting": r"starting the demo service", "demo data loaded": r"^demo data loaded in",
            "serving": r"^serving at", "verdict": r"^Verdict:", "report written": r"^report: ",
        }, until=r"^serving until Ctrl-C")  # fmt: skip
        print(f"first make demo (seconds from the start): {_fmt(first)}; {_load()}", flush=True)
        later = _timed(["make", "demo", f"PORT={port}"], clone, env, {
            "serving": r"^serving at", "verdict": r"^Verdict:",
        }, until=r"^serving until Ctrl-C")  # fmt: skip
        print(f"later make demo: {_fmt(later)}; {_load()}", flush=True)
        if args.lab:
            lab = _timed(["make", "lab", f"PORT={port}", f"LAB_PORT={_free_port()}", "LAB_ARGS=--no-browser"], clone,
                         env, {"installed": r"^make: \.venv is ready", "address": r"JupyterLab is up; open"},
                         until=r"JupyterLab is up; open")  # fmt: skip
            print(f"make lab after make demo: {_fmt(lab)}; {_load()}")
    sys.stdout.flush()


def _fmt(marks: dict[str, float]) -> str:
    return ", ".join(f"{name} {seconds:.1f}" for name, seconds in marks.items())


if __name__ == "__main__":
    main()
