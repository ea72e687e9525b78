"""What the command-line tests share: running ``main`` in process, the console script as a subprocess, and the one
clear error line every mistake must give."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from hoglab.cli import main

__all__ = ["hoglab", "hoglab_cmd", "interrupt", "one_clear_line", "run"]


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``hoglab ARGV...`` in this process: (exit status, stdout, stderr)."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def one_clear_line(err: str) -> str:
    """The one line of ``err`` (asserted: one line, no traceback, an ``error:``)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    assert "error:" in lines[0]
    return lines[0]


def hoglab() -> list[str]:
    """The console script (or ``python -m hoglab.cli`` without it), for subprocesses."""
    script = Path(sys.executable).with_name("hoglab")
    return [str(script)] if script.exists() else [sys.executable, "-m", "hoglab.cli"]


def hoglab_cmd(*argv: str) -> subprocess.CompletedProcess[str]:
    """``hoglab ARGV...`` in a subprocess, its output captured."""
    # Loading opens chDB on the data dir; this test process already owns another chDB path, so run it apart.
    return subprocess.run([*hoglab(), *argv], capture_output=True, text=True, timeout=120)


def interrupt(process: subprocess.Popen[str]) -> None:
    """Ctrl-C, as a user stops the service, then wait for it to end."""
    process.send_signal(signal.SIGINT)
    process.wait(timeout=30)
    if process.stdout is not None:
        process.stdout.close()
