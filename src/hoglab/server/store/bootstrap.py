"""The project and the ``*`` key a local service hands to its user (``hoglab serve --demo``, ``hoglab demo``,
``hoglab.local.start_local_service``).

The key's plaintext is kept in ``<data_dir>/local_api_key`` (mode 0600) so that every start prints the same key and
a notebook's key keeps working across restarts; the database itself still holds only its sha256. Delete the file
to get a new key on the next start.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

from . import Store
from .records import KeyRecord, ProjectRecord

__all__ = ["DEFAULT_PROJECT_NAME", "DEMO_PROJECT_NAME", "KEY_FILENAME", "LocalCredentials", "ensure_local_credentials"]

DEMO_PROJECT_NAME = "Demo project"
DEFAULT_PROJECT_NAME = "Default project"
KEY_FILENAME = "local_api_key"


@dataclass(frozen=True)
class LocalCredentials:
    project: ProjectRecord
    key: KeyRecord
    api_key: str
    new_key: bool


def _ensure_project(store: Store, demo: bool) -> ProjectRecord:
    if demo:
        return store.projects.get_by_name(DEMO_PROJECT_NAME) or store.projects.create(DEMO_PROJECT_NAME)
    existing = store.projects.list()
    return existing[0] if existing else store.projects.create(DEFAULT_PROJECT_NAME)


def ensure_local_credentials(store: Store, *, demo: bool = False) -> LocalCredentials:
    """The demo project (``demo=True``) or the first project, made if missing, and a ``*`` key reaching all
    projects, reused from the key file when it still authenticates.

    >>> creds = ensure_local_credentials(store, demo=True)  # doctest: +SKIP
    >>> creds.project.name, creds.api_key.startswith("phx_")  # doctest: +SKIP
    ('Demo project', True)
    """
    project = _ensure_project(store, demo)
    key_file = store.data_dir / KEY_FILENAME
    try:
        saved = key_file.read_text(encoding="ascii").strip()
    except (OSError, UnicodeError):
        saved = ""
    if saved:
        record = store.keys.authenticate(saved)
        if record is not None and "*" in record.scopes and record.project_ids is None:
            return LocalCredentials(project, record, saved, new_key=False)
    user = store.users.default()
    record, plaintext = store.keys.create(user.id, ["*"], None, label="local service")
    with contextlib.suppress(OSError):
        # Created with 0600 before the key is written, so it is never readable by others.
        with contextlib.suppress(FileNotFoundError):
            key_file.unlink()
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w", encoding="ascii") as handle:
            handle.write(plaintext + "\n")
    return LocalCredentials(project, record, plaintext, new_key=True)
