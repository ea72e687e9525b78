"""``python -m hoglab.cli``: the ``hoglab`` command without its console script."""

from __future__ import annotations

import sys

from hoglab.cli import main

if __name__ == "__main__":
    sys.exit(main())
