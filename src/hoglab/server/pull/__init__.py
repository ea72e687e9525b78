"""Mirroring a remote PostHog-compatible project into a local one: the local side (``hoglab.pull`` reads the
remote through the Query API and hands pages to :class:`Mirror`). See docs/pull.md."""

from .mirror import Mirror, MirrorError, parse_moment

__all__ = ["Mirror", "MirrorError", "parse_moment"]
