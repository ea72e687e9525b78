"""One process per data directory: an ``flock``-ed lock file that names its holder.

chDB cannot open a data directory that another process has open, and its own error is an opaque
``Error initializing EmbeddedServer (BAD_ARGUMENTS)`` (engine-notes §5). Taking this lock first turns that into
a message naming the process that holds it. The kernel releases an ``flock`` when its holder dies, even by
SIGKILL, so a crashed service never leaves the directory locked.

>>> import tempfile
>>> d = tempfile.mkdtemp()
>>> lock = DirLock.acquire(d)
>>> lock.release()
"""

from __future__ import annotations

import fcntl
import os
import sys
from pathlib import Path

from .errors import EngineInUse

__all__ = ["LOCK_NAME", "DirLock"]

LOCK_NAME = ".hoglab-engine.lock"


class DirLock:
    """An exclusive, non-blocking lock on ``<dir>/.hoglab-engine.lock`` holding ``pid`` and command line."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, directory: str | os.PathLike[str]) -> DirLock:
        path = Path(directory) / LOCK_NAME
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise EngineInUse(
                f"The data directory {path.parent} is in use by {holder}. The embedded engine (chDB) lets one "
                "process own a data directory: stop that process, or reach the data through its HTTP API."
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n{' '.join(sys.argv)}\n".encode())
        return cls(path, fd)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None


def _read_holder(fd: int) -> str:
    try:
        text = os.pread(fd, 4096, 0).decode(errors="replace")
    except OSError:
        return "another process"
    pid, _, command = text.partition("\n")
    pid = pid.strip()
    if not pid:
        return "another process"
    command = command.strip()
    return f"process {pid}" + (f" ({command})" if command else "")
