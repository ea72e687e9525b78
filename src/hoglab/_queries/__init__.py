"""Private implementation of :mod:`hoglab.queries`."""
