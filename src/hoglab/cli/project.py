"""``hoglab project create NAME [--timezone TZ]`` and ``hoglab project list``: the projects of a data dir."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .common import CommandError, Parser, open_store

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    project = commands.add_parser("project", help="manage projects")
    project_commands = project.add_subparsers(dest="action", required=True, metavar="ACTION", parser_class=Parser)
    create_project = project_commands.add_parser("create", parents=[common], help="create a project")
    create_project.add_argument("name", metavar="NAME")
    create_project.add_argument("--timezone", default="UTC", metavar="TZ", help="IANA name, e.g. Europe/Berlin")
    project_commands.add_parser("list", parents=[common], help="list projects")


def run(args: argparse.Namespace) -> int:
    return _create(args) if args.action == "create" else _list(args)


def _create(args: argparse.Namespace) -> int:
    from hoglab.server.store.records import usable_timezone

    name = args.name.strip()
    if not name or len(name) > 200:
        raise CommandError("a project name has 1 to 200 characters", status=2)
    if not usable_timezone(args.timezone):
        raise CommandError(f"unknown time zone {args.timezone!r} (use an IANA name such as Europe/Berlin)", 2)
    with open_store(args.data_dir, create=True) as store:
        project = store.projects.create(name, timezone=args.timezone)
    print(f"project id: {project.id}")
    print(f"project API key (for capture): {project.api_token}")
    print(f"name: {project.name}  timezone: {project.timezone}  data dir: {store.data_dir}")
    return 0


def _list(args: argparse.Namespace) -> int:
    with open_store(args.data_dir) as store:
        projects = store.projects.list()
    for project in projects:
        print(f"{project.id}\t{project.name}\t{project.timezone}\t{project.api_token}")
    if not projects:
        print("no projects yet: hoglab project create NAME", file=sys.stderr)
    return 0
