"""``hoglab pull``: the command-line face of :func:`hoglab.pull` (docs/pull.md).

A remote that answers something unusable (a malformed answer, a setting that cannot be stored, a redirect to
another host, an answer that stalls past ``--idle-timeout``, a pull past ``--timeout``) gets one line naming what
was wrong and exit status 2, like a mistake in the arguments; other failures exit 1.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import CommandError

__all__ = ["add_parser", "run"]


def add_parser(commands: Any, common: argparse.ArgumentParser) -> None:
    pull = commands.add_parser(
        "pull", parents=[common], help="copy a PostHog (or hoglab) project into this data dir; again to top it up"
    )
    pull.add_argument("--from", dest="host", default=None, metavar="URL", help="the remote, e.g. https://eu.posthog.com")
    pull.add_argument("--project", default=None, metavar="ID", help="the remote project id")
    pull.add_argument("--into", type=int, default=None, metavar="LOCAL_ID", help="an existing local project")
    pull.add_argument("--since", default=None, metavar="DATE", help="copy events from this date on (default: all)")
    pull.add_argument("--key-env", default="POSTHOG_PERSONAL_API_KEY", metavar="NAME",
                      help="the variable holding the remote's personal API key")  # fmt: skip
    pull.add_argument("--rate", default="120/hour", metavar="N/PERIOD", help="queries allowed on the remote")
    pull.add_argument("--lookback", default="1h", metavar="SPAN", help="re-read this much before the watermark")
    pull.add_argument("--from-export", type=Path, default=None, metavar="DIR", help="batch-export files to read first")
    pull.add_argument("--no-persons", action="store_true", help="skip persons and distinct ids")
    pull.add_argument("--timeout", default=None, metavar="SECONDS",
                      help="stop the whole pull after this long (or a span: 2h; default $HOGLAB_PULL_TIMEOUT, none)")
    pull.add_argument("--idle-timeout", default=None, metavar="SECONDS",
                      help="give up on an answer not in full after this long (default $HOGLAB_PULL_IDLE_TIMEOUT, 300)")


def run(args: argparse.Namespace) -> int:
    from hoglab.errors import AnswerTimeout, HoglabError, InvalidArgument, RedirectRefused, RemoteAnswerError
    from hoglab.pulling import pull

    try:
        report = pull(
            args.host,
            args.project,
            key_env=args.key_env,
            into=args.into,
            since=args.since,
            data_dir=args.data_dir,
            rate=args.rate,
            lookback=args.lookback,
            from_export=args.from_export,
            persons=not args.no_persons,
            progress=sys.stderr.isatty(),
            say=lambda line: print(line, flush=True),
            timeout=args.timeout,
            idle_timeout=args.idle_timeout,
        )
    except (RemoteAnswerError, RedirectRefused, AnswerTimeout, InvalidArgument) as exc:
        raise CommandError(str(exc), status=2) from None
    except HoglabError as exc:
        raise CommandError(str(exc)) from None
    except OSError as exc:
        raise CommandError(f"cannot read or write: {exc}") from None
    print(f"local project id: {report.local_project_id}")
    return 0
