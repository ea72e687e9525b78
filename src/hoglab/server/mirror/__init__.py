"""The server side of ``hoglab pull``: writing a pulled remote project into a local one, in one place.

The toolkit side (``hoglab.pulling``: ``remote.py``, ``export.py``) reads the remote PostHog-compatible project through
its Query and REST APIs, or a batch export, and hands each page to a :class:`Mirror` (``writer.py``), which
writes events, persons, flags, cohorts and experiments through ``ingest``, ``engine`` and the experiments' rules,
then moves the watermark; ``checks.py`` says what a remote's settings must be before they are stored. The
watermark and the remote-to-local id map are SQLite rows, so they live in ``store/pulls.py``: only ``server/store``
talks to SQLite. See docs/pull.md.
"""

from .writer import CheckedObjects, Mirror, MirrorError, parse_moment

__all__ = ["CheckedObjects", "Mirror", "MirrorError", "parse_moment"]
