"""Private implementation of :mod:`hoglab.frames` (kept in small modules; import from ``hoglab.frames``)."""
