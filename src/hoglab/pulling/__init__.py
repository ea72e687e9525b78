"""The toolkit side of :func:`hoglab.pull` and ``hoglab pull``: a local copy of a remote project.

The copy of a PostHog (or hoglab) project is uncapped and kept fresh by incremental pulls. A pull reads the
remote through the same API a notebook uses (:class:`hoglab.Client`: retries, 429 and ``Retry-After``) and writes
into a local hoglab data dir (``hoglab.server.mirror.Mirror``):

* events by keyset pages on ``(timestamp, uuid)`` under the 10,000-row cap (PostHog refuses OFFSET for personal
  keys), each page stored before the watermark moves past it;
* persons and their distinct ids, then feature flags, cohorts and experiments through the REST endpoints;
* at most ``rate`` queries (``"120/hour"``, the Query API's limit: docs/api.md, "Rate limits") by itself, with
  the expected time said before it starts (docs/pull.md has the arithmetic);
* a second run continues from the watermark, re-reading ``lookback`` of events before it so late-arriving ones are
  caught; events already held are skipped by uuid, so a killed or repeated pull loses and doubles nothing.

Exports (PostHog's batch exports, Parquet or JSONL files under a folder) go through the same path:
``pull(..., from_export="exports/")`` reads each file once and then tops up through the API.

Every answer of the remote is read through ``answers.py`` (its shape and every field checked, the endpoint named in
any error) and the remote's settings are judged by the service's rules before anything is stored; each answer is
bounded in time (``idle_timeout``), the whole pull may be (``timeout``), and no redirect leaves the remote's host.

``run.py`` is one pull end to end, ``remote.py`` reads the remote and copies it, ``answers.py`` reads its answers,
``export.py`` reads export files, ``report.py`` says what a pull will do and did. The writing side is the
service's (``hoglab.server.mirror``), imported only when a pull runs; ``hoglab pull`` on the command line is
:mod:`hoglab.cli.pull`.

>>> report = pull("https://eu.posthog.com", 12345, data_dir="mirror/")  # doctest: +SKIP
>>> report.events_copied, report.local_project_id  # doctest: +SKIP
(1204331, 1)
"""

from __future__ import annotations

from .report import PullPlan, PullReport
from .run import pull

__all__ = ["PullPlan", "PullReport", "pull"]
