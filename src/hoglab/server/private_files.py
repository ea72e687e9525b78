"""A data dir is readable by its owner only: events, persons, group properties and capture tokens are in it.

The service creates its data dir and the folders under it ``0700`` and its files ``0600`` (the SQLite file is
created so before SQLite opens it, and its ``-wal``/``-shm`` files take its mode); what the embedded engine writes
later lies under a ``0700`` folder, which no other user can enter. A data dir made by an older version (or by
hand) with a looser mode is tightened when the service opens it, every file and folder under it too, and a
warning says so (logger ``hoglab.server``).

>>> import tempfile
>>> root = Path(tempfile.mkdtemp())
>>> (root / "data").mkdir(mode=0o755)
>>> oct(private_dir(root / "data").stat().st_mode & 0o777)
'0o700'
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import stat
from pathlib import Path

__all__ = ["DIR_MODE", "FILE_MODE", "IDENTITY_FILENAME", "identity_proof", "identity_secret", "private_dir",
           "private_file", "tighten"]  # fmt: skip

IDENTITY_FILENAME = "identity_secret"
"""A data dir's own secret (32 random bytes, ``0600``): the service proves it serves this data dir by it."""

DIR_MODE = 0o700
FILE_MODE = 0o600
_OPEN = 0o077  # the group's and others' bits

log = logging.getLogger("hoglab.server")


def tighten(root: Path) -> list[str]:
    """Take the group's and others' permissions off ``root`` and everything under it (symbolic links are left
    alone, and so is what another user owns); the entries that were open."""
    loosened: list[str] = []
    uid = os.getuid()
    for current, dirs, files in os.walk(root):
        for entry in [current, *(os.path.join(current, name) for name in (*dirs, *files))]:
            try:
                info = os.lstat(entry)
            except OSError:  # removed meanwhile (the engine merges parts while a service runs)
                continue
            if stat.S_ISLNK(info.st_mode) or info.st_uid != uid or not info.st_mode & _OPEN:
                continue
            try:
                os.chmod(entry, stat.S_IMODE(info.st_mode) & ~_OPEN)
            except OSError:
                continue
            loosened.append(entry)
        dirs[:] = [d for d in dirs if not os.path.islink(os.path.join(current, d))]
    return loosened


def private_dir(path: Path) -> Path:
    """Create the folder ``0700`` (and its missing parents), or tighten it and what it holds if it is open to
    others, with a warning naming it."""
    path = Path(path)
    path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    loosened = tighten(path)
    # The engine writes its parts with the process's umask under its closed folder: tightened quietly. An open
    # folder, or a file of its own level, is a data dir others could read until now: that is worth a warning.
    exposed = [e for e in loosened if os.path.dirname(e) in ("", str(path)) or e == str(path)]
    if exposed:
        log.warning(
            "%s was readable by other users: made owner-only (0700/0600), with %d files and folders under it",
            path,
            len(loosened),
        )
    return path


def private_file(path: Path) -> Path:
    """Create the file ``0600`` if it does not exist (an existing one is left as it is: its folder is private)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
    except FileExistsError:
        return path
    os.close(fd)
    return path


def identity_secret(data_dir: Path, *, create: bool = True) -> bytes | None:
    """The data dir's secret, made on first use (``create``); ``None`` when there is none and ``create`` is off.

    Only who can read the data dir knows it: ``hoglab lab`` checks that the service on its port proves it
    (:func:`identity_proof`, the service's ``GET /hoglab/identity/``) before it sends that service any key.
    """
    path = Path(data_dir) / IDENTITY_FILENAME
    if create and not path.exists():
        private_dir(Path(data_dir))
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE)
        except FileExistsError:
            pass  # another process made it meanwhile: read theirs
        else:
            with os.fdopen(fd, "wb") as handle:
                handle.write(os.urandom(32))
    try:
        secret = path.read_bytes()
    except OSError:
        return None
    return secret if len(secret) >= 32 else None


def identity_proof(secret: bytes, challenge: str) -> str:
    """The proof that one knows ``secret``, for ``challenge`` (HMAC-SHA256, hex): a listener that does not know the
    secret cannot answer a fresh challenge, and the answer tells it nothing of the secret.

    >>> len(identity_proof(b"s" * 32, "c0ffee"))
    64
    """
    return hmac.new(secret, b"hoglab-identity:" + challenge.encode(), hashlib.sha256).hexdigest()
