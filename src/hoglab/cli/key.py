"""``hoglab key create|list|revoke``: personal API keys from a shell (``/api/personal_api_keys/`` over HTTP).

    hoglab key create --project 1 --scopes query:read --expires-in 30d
    hoglab key list
    hoglab key revoke 3
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import timedelta
from typing import Any

from .common import CommandError, Parser, open_store, positive_id, project_id

__all__ = ["add_parser", "parse_duration", "run"]

_DURATION = re.compile(r"^([0-9]{1,6})([mhdw])$")
_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
# Past this, now + the span may fall beyond the year 9999, which Python's datetime cannot hold.
_MAX_SPAN = timedelta(days=1000 * 365)


def parse_duration(text: str) -> timedelta:
    """``30d``, ``12h``, ``90m``, ``2w`` -> a timedelta; anything else is an argparse error.

    >>> parse_duration("36h")
    datetime.timedelta(days=1, seconds=43200)
    """
    match = _DURATION.match(text.strip())
    if not match or int(match.group(1)) == 0:
        raise argparse.ArgumentTypeError(f"a duration is a positive number and m, h, d or w (e.g. 30d), got {text!r}")
    span = timedelta(**{_UNITS[match.group(2)]: int(match.group(1))})
    if span > _MAX_SPAN:
        raise argparse.ArgumentTypeError(f"a key expires within 1000 years, got {text!r}")
    return span


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    key = commands.add_parser("key", help="manage personal API keys")
    key_commands = key.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=Parser)
    create_key = key_commands.add_parser("create", parents=[common], help="create a personal API key")
    create_key.add_argument("--project", required=True, metavar="ID[,ID...]|all", help="projects the key reaches")
    create_key.add_argument("--scopes", required=True, metavar="SCOPES", help="comma-separated, e.g. query:read")
    create_key.add_argument("--label", default="", metavar="LABEL")
    create_key.add_argument("--expires-in", type=parse_duration, default=None, metavar="SPAN",
                            help="the key stops working after: 90m, 12h, 30d, 2w (default: never)")  # fmt: skip
    key_commands.add_parser("list", parents=[common], help="list keys (masked) with their status")
    revoke = key_commands.add_parser("revoke", parents=[common], help="revoke a key: it answers 401 from now on")
    revoke.add_argument("key_id", type=positive_id("a key"), metavar="KEY_ID")


def run(args: argparse.Namespace) -> int:
    if args.action == "list":
        return _list(args)
    if args.action == "revoke":
        return _revoke(args)
    return _create(args)


def _create(args: argparse.Namespace) -> int:
    from hoglab.server.store import validate_scopes
    from hoglab.server.store.db import utcnow

    try:
        scopes = validate_scopes(part for part in args.scopes.split(",") if part.strip())
    except ValueError as exc:
        raise CommandError(str(exc), status=2) from None
    project_ids: list[int] | None = None
    if args.project.strip().lower() != "all":
        try:
            project_ids = [project_id(part.strip()) for part in args.project.split(",")]
        except argparse.ArgumentTypeError as exc:
            raise CommandError(str(exc), status=2) from None
    expires_at = None if args.expires_in is None else utcnow() + args.expires_in
    with open_store(args.data_dir) as store:
        if project_ids is not None:
            known = {p.id for p in store.projects.list(project_ids)}
            missing = [p for p in project_ids if p not in known]
            if missing:
                raise CommandError(f"no project with id {missing[0]} (see: hoglab project list)", status=2)
        user = store.users.default()
        record, plaintext = store.keys.create(user.id, scopes, project_ids, label=args.label, expires_at=expires_at)
    reach = "all projects" if project_ids is None else "project " + ", ".join(map(str, project_ids))
    until = "" if expires_at is None else f", until {expires_at.isoformat(timespec='seconds')}"
    print(plaintext)
    print(f"personal API key {record.id} for {reach}, scopes {','.join(scopes)}{until}: shown only this once",
          file=sys.stderr)  # fmt: skip
    return 0


def _list(args: argparse.Namespace) -> int:
    from hoglab.server.store.db import utcnow

    now = utcnow()
    with open_store(args.data_dir) as store:
        keys = store.keys.list()
    print("id\tstatus\tkey\tscopes\tprojects\texpires\tlast used\tlabel")
    for k in keys:
        projects = "all" if k.project_ids is None else ",".join(map(str, k.project_ids))
        expires = k.expires_at.isoformat(timespec="seconds") if k.expires_at else "never"
        used = k.last_used_at.isoformat(timespec="seconds") if k.last_used_at else "never"
        print(f"{k.id}\t{k.status(now)}\t{k.mask_value}\t{','.join(k.scopes)}\t{projects}\t{expires}\t{used}\t{k.label}")
    return 0


def _revoke(args: argparse.Namespace) -> int:
    with open_store(args.data_dir) as store:
        record = store.keys.revoke(args.key_id)
    if record is None:
        raise CommandError(f"no key with id {args.key_id} (see: hoglab key list)", status=2)
    print(f"key {record.id} ({record.mask_value}) revoked", file=sys.stderr)
    return 0
